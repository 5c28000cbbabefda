# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import cri, restart
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load

CRICTL_PS = json.dumps({'containers': [{
    'id': 'abc123', 'podSandboxId': 'sb', 'metadata': {'name': 'app', 'attempt': 2},
    'image': {'image': 'registry.example/app:1.0'}, 'state': 'CONTAINER_RUNNING',
    'labels': {'io.kubernetes.pod.name': 'web-0', 'io.kubernetes.pod.namespace': 'shop',
               'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'app'}}]})
CLUSTER_PS = json.dumps([{'ID': 'abc123', 'Name': 'app', 'Pod': 'web-0', 'Namespace': 'shop', 'PodUID': 'u1',
                          'State': 'CONTAINER_RUNNING', 'Image': 'registry.example/app:1.0', 'Attempt': 2}])
ROW = {'id': 'abc123', 'name': 'app', 'pod': 'web-0', 'namespace': 'shop', 'pod_uid': 'u1',
       'state': 'CONTAINER_RUNNING', 'attempt': 2}


@pytest.mark.parametrize('text', [CRICTL_PS, CLUSTER_PS])
def test_parse_ps_reads_both_clients(text):
    assert cri.parse_ps(text) == [ROW]


def test_parse_ps_rejects_other_output():
    with pytest.raises(ValueError):
        cri.parse_ps('"nope"')


def test_commands_of_each_client():
    crictl = cri.CriClient('crictl', None, '/run/containerd/containerd.sock', None)
    assert crictl.ps_args('shop', 'web-0') == [
        'crictl', '--runtime-endpoint', 'unix:///run/containerd/containerd.sock', 'ps', '-a', '-o', 'json',
        '--label', 'io.kubernetes.pod.namespace=shop', '--label', 'io.kubernetes.pod.name=web-0']
    assert crictl.stop_args('abc', 30) == [
        'crictl', '--runtime-endpoint', 'unix:///run/containerd/containerd.sock', 'stop', '--timeout', '30', 'abc']
    assert cri.CriClient('crictl', '/usr/bin/crictl', None, None).stop_args('abc', 1)[:2] == ['/usr/bin/crictl', 'stop']
    local = cri.CriClient('local-cluster', '/bin/cluster', 'unix:///n1/cri.sock', None)
    assert local.ps_args('shop', 'web-0') == ['/bin/cluster', 'cri', '--socket', '/n1/cri.sock', 'ps',
                                              '--namespace', 'shop', '--pod', 'web-0']
    assert local.stop_args('abc', 1) == ['/bin/cluster', 'cri', '--socket', '/n1/cri.sock', 'stop', '--timeout', '1', 'abc']
    with pytest.raises(ValidationError):
        cri.CriClient('local-cluster', None, None, None)


def test_find_row_accepts_shortened_ids():
    rows = [dict(ROW, id='abc1')]
    assert cri.find_row(rows, 'containerd://abc123') == rows[0]
    assert cri.find_row(rows, 'containerd://zzz') is None


class Plan(object):
    def __init__(self, name):
        self.name = name


def test_cri_strategy_stops_the_container_with_the_grace_period():
    pod = load('pod_web.json')
    status = [s for s in pod['status']['containerStatuses'] if s['name'] == 'app'][0]
    listed = json.dumps([{'ID': status['containerID'].split('://')[1], 'Name': 'app', 'PodUID': pod['metadata']['uid'],
                          'State': 'CONTAINER_RUNNING'}])
    calls = []

    def run_command(args):
        calls.append(args)
        return 0, listed if 'ps' in args else 'stopped', ''
    strategy = cri.CriStrategy(cri.CriClient('local-cluster', 'cluster', '/n1.sock', run_command))
    tracked = {'app': restart.Tracked(status, 0)}
    strategy.act(None, pod, [Plan('app')], tracked)
    assert calls[-1] == ['cluster', 'cri', '--socket', '/n1.sock', 'stop', '--timeout', '30',
                         status['containerID'].split('://')[1]]
    assert strategy.describe(Plan('app'), tracked['app'])['runtime_id'] == status['containerID'].split('://')[1]


def test_cri_strategy_explains_a_container_of_another_node():
    pod = load('pod_web.json')
    status = [s for s in pod['status']['containerStatuses'] if s['name'] == 'app'][0]
    strategy = cri.CriStrategy(cri.CriClient('crictl', None, None, lambda args: (0, '{"containers": []}', '')))
    with pytest.raises(PodFailure) as raised:
        strategy.act(None, pod, [Plan('app')], {'app': restart.Tracked(status, 0)})
    assert raised.value.reason == 'ContainerNotOnNode' and 'node-1' in raised.value.message
    failing = cri.CriStrategy(cri.CriClient('crictl', None, None, lambda args: (1, '', 'connection refused')))
    with pytest.raises(PodFailure) as raised:
        failing.act(None, pod, [Plan('app')], {'app': restart.Tracked(status, 0)})
    assert raised.value.reason == 'CriError' and 'connection refused' in raised.value.message
