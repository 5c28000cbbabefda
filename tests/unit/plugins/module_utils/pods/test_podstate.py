# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import status_of

DIGEST = 'sha256:' + 'a' * 64


@pytest.mark.parametrize('reference, normalised', [
    ('nginx', 'docker.io/library/nginx:latest'),
    ('nginx:1.27', 'docker.io/library/nginx:1.27'),
    ('library/nginx', 'docker.io/library/nginx:latest'),
    ('docker.io/nginx', 'docker.io/library/nginx:latest'),
    ('index.docker.io/library/nginx:1', 'docker.io/library/nginx:1'),
    ('bitnami/redis:7', 'docker.io/bitnami/redis:7'),
    ('registry.example/app:1.0', 'registry.example/app:1.0'),
    ('registry.example/app', 'registry.example/app:latest'),
    ('localhost/app', 'localhost/app:latest'),
    ('localhost:5000/team/app:v2', 'localhost:5000/team/app:v2'),
    ('Registry.Example:443/a/b/c:tag_1.2-x', 'Registry.Example:443/a/b/c:tag_1.2-x'),
    ('[::1]:5000/app:1', '[::1]:5000/app:1'),
    ('nginx@' + DIGEST, 'docker.io/library/nginx@' + DIGEST),
    ('nginx:1.27@' + DIGEST, 'docker.io/library/nginx:1.27@' + DIGEST),
    ('a__b/c---d.e_f:1', 'docker.io/a__b/c---d.e_f:1'),
    ('registry.example/app:1.0-pullfail', 'registry.example/app:1.0-pullfail'),
])
def test_normalise_valid(reference, normalised):
    assert podstate.image_error(reference) is None
    assert podstate.normalize_image(reference) == normalised


@pytest.mark.parametrize('reference, reason', [
    ('', 'non-empty'),
    (None, 'non-empty'),
    ('Nginx', 'lowercase'),
    ('registry.example/App:1', 'lowercase'),
    ('nginx:', 'invalid reference format'),
    ('nginx:-tag', 'invalid reference format'),
    ('nginx:' + 'x' * 129, 'invalid reference format'),
    ('nginx@sha256:abc', 'invalid reference format'),
    ('nginx@sha256:' + 'A' * 64, 'invalid sha256 digest'),
    ('nginx@sha256:' + 'a' * 63 + 'ab', 'invalid sha256 digest'),
    ('nginx@md5:' + 'a' * 32, 'unsupported digest algorithm'),
    ('a' * 64, 'hex identifier'),
    ('registry.example//app', 'invalid reference format'),
    ('registry.example/app_/x', 'invalid reference format'),
    (' nginx', 'invalid reference format'),
    ('nginx:1.0 ', 'invalid reference format'),
    ('registry.example/' + 'a' * 250, 'longer than'),
])
def test_invalid_references(reference, reason):
    error = podstate.image_error(reference)
    assert error is not None and reason in error


@pytest.mark.parametrize('first, second, same', [
    ('nginx', 'docker.io/library/nginx:latest', True),
    ('nginx:1', 'nginx:1.0', False),
    ('registry.example/app:1', 'registry.example/app:1', True),
    ('nginx@' + DIGEST, 'nginx:latest', False),
])
def test_same_image(first, second, same):
    assert podstate.same_image(first, second) is same


def test_containers_kinds_and_paths(web_pod):
    infos = dict((i.name, i) for i in podstate.containers(web_pod))
    assert [(n, infos[n].kind, podstate.spec_path(infos[n])) for n in ('setup', 'log-agent', 'app', 'metrics')] == [
        ('setup', 'init', '/spec/initContainers/0'), ('log-agent', 'sidecar', '/spec/initContainers/1'),
        ('app', 'container', '/spec/containers/0'), ('metrics', 'container', '/spec/containers/1')]
    assert infos['app'].status['containerID'] == 'fake://app-7c1e_0'
    assert podstate.find_container(web_pod, 'nope') is None
    assert podstate.container_names(web_pod) == ['setup', 'log-agent', 'app', 'metrics']


def test_pod_facts(web_pod):
    assert podstate.is_ready(web_pod)
    assert podstate.containers_healthy(web_pod)
    assert not podstate.is_terminating(web_pod)
    assert podstate.pod_summary(web_pod) == {
        'name': 'web-0', 'namespace': 'shop', 'uid': '0c5f3b7e-8f0b-4a4e-9a53-2d7a4e1f6b10',
        'node': 'node-1', 'pod_ip': '10.88.0.12'}
    assert podstate.kubelet_saw_generation(web_pod, 1) is True
    assert podstate.kubelet_saw_generation(web_pod, 2) is False
    del web_pod['status']['observedGeneration']
    assert podstate.kubelet_saw_generation(web_pod, 2) is None


RUNNING = {'containerID': 'fake://new_1', 'image': 'registry.example/app:2.0', 'imageID': 'x',
           'ready': True, 'started': True, 'state': {'running': {}}}


@pytest.mark.parametrize('changes, desired, old_id, done', [
    ({}, 'registry.example/app:2.0', 'fake://old_0', True),
    ({}, 'registry.example/app:2.0', None, True),
    ({'containerID': 'fake://old_0'}, 'registry.example/app:2.0', 'fake://old_0', False),
    ({'ready': False}, 'registry.example/app:2.0', 'fake://old_0', False),
    ({'started': False}, 'registry.example/app:2.0', 'fake://old_0', False),
    ({'state': {'waiting': {'reason': 'ContainerCreating'}}}, 'registry.example/app:2.0', 'fake://old_0', False),
    ({'image': 'registry.example/app:1.0'}, 'registry.example/app:2.0', 'fake://old_0', False),
    ({'image': 'docker.io/library/nginx:latest'}, 'nginx', 'fake://old_0', True),
    ({'image': 'sha256:1234', 'imageID': 'docker.io/library/nginx@' + DIGEST}, 'nginx@' + DIGEST, 'o', True),
    ({'image': 'sha256:1234', 'imageID': 'docker.io/library/nginx@' + DIGEST}, 'nginx:1', 'o', False),
])
def test_image_converged(changes, desired, old_id, done):
    status = dict(RUNNING, **changes)
    assert podstate.image_converged(status, desired, old_id) is done


@pytest.mark.parametrize('state, policy, failure', [
    ({'running': {}}, 'Always', None),
    ({'waiting': {'reason': 'ContainerCreating'}}, 'Always', None),
    ({'waiting': {'reason': 'PodInitializing'}}, 'Always', None),
    ({'waiting': {'reason': 'ErrImagePull', 'message': 'pull failed'}}, 'Always', ('ErrImagePull', 'pull failed')),
    ({'waiting': {'reason': 'ImagePullBackOff', 'message': 'Back-off'}}, 'Always', ('ImagePullBackOff', 'Back-off')),
    ({'waiting': {'reason': 'InvalidImageName'}}, 'Always', ('InvalidImageName', '')),
    ({'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s'}}, 'Always',
     ('CrashLoopBackOff', 'back-off 10s')),
    ({'waiting': {'reason': 'CreateContainerError'}}, 'Always', ('CreateContainerError', '')),
    ({'waiting': {'reason': 'CreateContainerConfigError'}}, 'Always', ('CreateContainerConfigError', '')),
    ({'waiting': {'reason': 'RunContainerError'}}, 'Always', ('RunContainerError', '')),
    ({'terminated': {'exitCode': 1, 'reason': 'Error'}}, 'Always', None),
    ({'terminated': {'exitCode': 2, 'reason': 'Error'}}, 'Never', ('Error', 'exit code 2')),
    ({'terminated': {'exitCode': 0, 'reason': 'Completed'}}, 'Never', None),
])
def test_container_failure(state, policy, failure):
    assert podstate.container_failure({'state': state}, policy) == failure


def test_pod_failure(web_pod):
    assert podstate.pod_failure(web_pod) is None
    assert podstate.pod_failure(None) is None   # gone: a departure (pods/departure.py), not a failure
    web_pod['status'].update(phase='Failed', reason='OutOfcpu', message='Node didn\'t have enough resource: cpu')
    assert podstate.pod_failure(web_pod) == ('OutOfcpu', "Node didn't have enough resource: cpu")
    web_pod['status'].update(reason=None, message='')
    assert podstate.pod_failure(web_pod) == ('PodFailed', '')


def test_fixture_statuses_look_real(web_pod):
    assert status_of(web_pod, 'setup')['state']['terminated']['reason'] == 'Completed'


@pytest.mark.parametrize('status, known, expected', [
    ({'state': {'waiting': {'reason': 'CrashLoopBackOff'}}, 'lastState': {'terminated': {'containerID': 'old'}}},
     ('old', None), True),
    ({'state': {'waiting': {'reason': 'CrashLoopBackOff'}}, 'lastState': {'terminated': {'containerID': 'new'}}},
     ('old', None), False),
    ({'state': {'waiting': {'reason': 'CrashLoopBackOff'}}}, ('old', None), False),
    ({'state': {'waiting': {'reason': 'ImagePullBackOff'}}, 'lastState': {'terminated': {'containerID': 'old'}}},
     ('old', None), False),
])
def test_backing_off_before(status, known, expected):
    assert podstate.backing_off_before(status, known) is expected


def test_crash_loop_failure_names_the_exit_code_and_last_log_line():
    status = {'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s'}},
              'lastState': {'terminated': {'exitCode': 3, 'message': 'starting\npanic: bad flag'}}}
    assert podstate.container_failure(status) == ('CrashLoopBackOff',
                                                  'back-off 10s (exit code 3, last log: panic: bad flag)')


@pytest.mark.parametrize('probe, expected', [
    ({'httpGet': {'path': '/ready', 'port': 'http'}}, 'readinessProbe httpGet /ready on port http not passing'),
    ({'tcpSocket': {'port': 8080}}, 'readinessProbe tcpSocket on port 8080 not passing'),
    ({'exec': {'command': ['cat', '/tmp/ready']}}, 'readinessProbe exec cat /tmp/ready not passing'),
    (None, ''),
])
def test_readiness_probe_text(probe, expected):
    container = {'name': 'app', 'image': 'app:1'}
    if probe:
        container['readinessProbe'] = probe
    pod = {'spec': {'containers': [container]}, 'status': {'containerStatuses': [{'name': 'app'}]}}
    assert podstate.readiness_probe_text(pod, 'app') == expected
