# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Image pre-pull: the pod it creates (runs nothing of the image) and how it reads the pull's outcome."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import web_pods as pods
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher


def status(**state):
    return {'containerStatuses': [{'name': 'pull-0', 'image': 'x', 'state': state}]}


def test_pod_body_runs_nothing_of_the_image_and_is_pinned_to_its_node():
    body = prepull.pod_body('node-1', {'b:2', 'a:1'}, 'r1', [{'name': 'regcred'}])
    spec = body['spec']
    assert spec['nodeName'] == 'node-1' and spec['restartPolicy'] == 'Never'
    assert [c['image'] for c in spec['containers']] == ['a:1', 'b:2']
    assert all(c['command'] == prepull.NOOP_COMMAND and c['command'][0].startswith('/nonexistent/')
               for c in spec['containers'])
    assert all(c['securityContext']['runAsNonRoot'] and c['securityContext']['capabilities'] == {'drop': ['ALL']}
               for c in spec['containers'])
    assert spec['automountServiceAccountToken'] is False
    assert spec['imagePullSecrets'] == [{'name': 'regcred'}]
    assert body['metadata']['labels'] == {prepull.LABEL: 'r1'}
    # One name per node, images and run: the next step of the same run finds the same pod.
    assert body['metadata']['name'] == prepull.pod_name('node-1', ['a:1', 'b:2'], 'r1')
    assert prepull.pod_name('node-1', ['a:1'], 'r1') != prepull.pod_name('node-2', ['a:1'], 'r1')
    assert len(prepull.pod_name('N' * 300, ['a:1'], 'r1')) <= 63


@pytest.mark.parametrize('pod_status,expected', [
    ({}, 'pulling'),
    (status(waiting={'reason': 'ContainerCreating'}), 'pulling'),
    (status(waiting={'reason': 'CreateContainerError', 'message': 'no such file'}), 'pulled'),
    (status(waiting={'reason': 'RunContainerError'}), 'pulled'),
    (status(terminated={'reason': 'StartError', 'exitCode': 128}), 'pulled'),
    (status(running={}), 'pulled'),
    (status(waiting={'reason': 'ErrImagePull', 'message': 'not found'}), 'failed'),
    (status(waiting={'reason': 'ImagePullBackOff'}), 'failed'),
])
def test_pull_state(pod_status, expected):
    pod = {'spec': {'containers': [{'name': 'pull-0'}]}, 'status': pod_status}
    state, message = prepull.pull_state(pod)
    assert state == expected
    assert (message is not None) == (expected == 'failed')


def test_run_label_is_a_valid_label_value_and_stable():
    label = prepull.run_label('playbook-1234')
    assert label == prepull.run_label('playbook-1234') != prepull.run_label('other')
    assert len(label) <= 63 and label.isalnum()


def test_targets_groups_images_by_node():
    pods = [{'spec': {'nodeName': 'n1'}}, {'spec': {'nodeName': 'n1'}}, {'spec': {'nodeName': 'n2'}}, {'spec': {}}]
    assert prepull.targets((pod, {'a:1'}) for pod in pods) == {'n1': {'a:1'}, 'n2': {'a:1'}}
    assert prepull.targets([(pods[0], set())]) == {}   # given no image: nothing to pull


NEW, SLOW, BROKEN = 'registry.example/app:2.0', 'registry.example/app:2.0-slowpull', 'registry.example/app:2.0-pullfail'


def on_nodes(*nodes):
    """web pods, web-<i> on ``nodes[i]``."""
    result = pods(len(nodes))
    for pod, node in zip(result, nodes):
        pod['spec']['nodeName'] = node
    return result


def prepull_pods(cluster):
    return sorted(name for name, pod in cluster.pods.items() if prepull.LABEL in (pod['metadata'].get('labels') or {}))


def puller(cluster, watchers=None, make=prepull.Prepull):
    def watch(selector):
        assert selector.startswith(prepull.LABEL + '=')
        watcher = FakeWatcher(cluster)
        if watchers is not None:
            watchers.append(watcher)
        return watcher
    return make(cluster, 'default', 'run-1', watch=watch)


def test_prepull_waits_on_one_watch_for_each_node_and_reads_the_outcome():
    cluster = FakeCluster([])
    watchers = []
    pull = puller(cluster, watchers)
    by_node = {'n1': {NEW}, 'n2': {BROKEN}, 'n3': {SLOW}}
    names = pull.start(by_node)
    assert names == prepull_pods(cluster) and len(names) == 3
    assert pull.start(by_node) == names   # created by an earlier step: kept
    states = pull.wait(by_node, 5)
    assert states['n1'] == ('pulled', None) and states['n3'] == ('pulling', None)
    assert states['n2'][0] == 'failed' and 'ErrImagePull' in states['n2'][1]
    assert len(watchers) == 1 and watchers[0].stopped and sorted(watchers[0].waits) == names
    del cluster.pods[prepull.pod_name('n1', [NEW], pull.label)]
    assert pull.wait({'n1': {NEW}}, 5) == {'n1': ('missing', 'the pre-pull pod is gone')}


def test_prepull_delete_reports_what_it_could_not_delete():
    cluster = FakeCluster([])
    pull = puller(cluster)
    pull.start({'n1': {NEW}, 'n2': {NEW}})
    stuck = prepull.pod_name('n2', [NEW], pull.label)
    cluster.undeletable = (stuck,)
    assert sorted(pull.delete()) == sorted([prepull.pod_name('n1', [NEW], pull.label), stuck])
    assert prepull_pods(cluster) == [stuck] and pull.left == [(stuck, 'pods "%s" is forbidden' % stuck)]
    assert pull.delete({'n9': {NEW}}) == [prepull.pod_name('n9', [NEW], pull.label)]   # already gone: fine


def engine_options(**changes):
    values = dict(check_mode=False, wait=True, wait_timeout=5, max_concurrency=2, readiness_gate=None,
                  drain_seconds=0, require_readiness_gate=False, gate_on_failure='restore_if_healthy',
                  on_failure='stop', min_ready_seconds=0, prepull=True)
    values.update(changes)
    return engine.Options(**values)


def run_engine(cluster, image, monkeypatch, cancel=None, **changes):
    """An engine run of inplace_image with prepull over ``cluster``'s pods; (result, warnings)."""
    monkeypatch.setattr(prepull, 'Prepull', lambda kube, namespace, run, clock: puller(kube))
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    runner = engine.Engine(cluster, ImageOperation({'app': image}), engine_options(**changes), FakeWatcher(cluster),
                           sleep=lambda seconds: None, cancel=cancel)
    return runner.run(listed), runner.warnings


def test_a_failed_pull_fails_the_pods_of_its_node_before_they_are_touched(monkeypatch):
    cluster = FakeCluster(on_nodes('n1', 'n2'))
    cluster.pods['web-1']['spec']['imagePullSecrets'] = [{'name': 'regcred'}]
    result, warnings = run_engine(cluster, BROKEN, monkeypatch, prepull_ahead={'n3': [NEW]})
    assert [p['status'] for p in result['pods']] == ['failed', 'failed']
    assert all(p['error']['reason'] == 'PrePullFailed' and 'was not drained or changed' in p['reason']
               for p in result['pods'])
    assert cluster.pods['web-0']['spec']['containers'][0]['image'] != BROKEN   # not written
    report = result['prepull']
    assert report['nodes'] == ['n1', 'n2'] and report['ahead'] == ['n3'] and sorted(report['failed']) == ['n1', 'n2']
    # The pods of this run's nodes are deleted, the next pods' (ahead) kept; the pull secret rides along.
    left = prepull_pods(cluster)
    assert len(left) == 1 and cluster.pods[left[0]]['spec']['nodeName'] == 'n3'
    assert cluster.pods[left[0]]['spec']['imagePullSecrets'] == [{'name': 'regcred'}]
    assert not warnings


def test_a_pull_not_finished_in_time_is_warned_about_and_the_pods_changed_anyway(monkeypatch):
    cluster = FakeCluster(on_nodes('n1'))
    cluster.undeletable = (prepull.pod_name('n1', [SLOW], prepull.run_label('run-1')),)
    result, warnings = run_engine(cluster, SLOW, monkeypatch)
    assert [p['status'] for p in result['pods']] == ['updated']
    assert any('pre-pull on node n1 not finished after 5s' in w for w in warnings)
    assert any('could not be deleted' in w and 'kubectl delete pod -l %s' % prepull.LABEL in w for w in warnings)


def test_a_cancel_during_the_pull_is_not_a_pull_that_did_not_finish(monkeypatch):
    cluster = FakeCluster(on_nodes('n1'))
    watch = Cancel()
    watch.cancel('SIGTERM received')
    result, warnings = run_engine(cluster, SLOW, monkeypatch, cancel=watch)
    assert [p['status'] for p in result['pods']] == ['not_started']
    assert not any('not finished' in w for w in warnings)
