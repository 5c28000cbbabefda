# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json

import jsonpatch
import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ConflictError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, resize
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan, podstate, record
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load, spec_of, status_of
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.helpers import options


class ResizeCluster(FakeCluster):
    """FakeCluster + pods/resize: only resources changes are kept (as on 1.36); the kubelet applies
    them at once (restarting RestartContainer containers) unless ``outcome`` says NodeCapacity (403,
    nothing stored), Deferred or Infeasible (condition, status unchanged)."""

    outcome = None

    def __init__(self, pods):
        super(ResizeCluster, self).__init__(pods)
        self.dry_runs = []

    def request(self, method, path, query=None, body=None, content_type=None):
        assert method == 'PATCH' and query == {'dryRun': 'All'}
        self.dry_runs.append((path, body))
        name, subresource = path.split('/pods/')[1].partition('/')[::2]
        self._resized(copy.deepcopy(self.pods[name]), body, subresource or None)
        return {}

    def _resized(self, pod, body, subresource):
        if self.outcome == 'NodeCapacity':
            raise ApiError('pods "%s" is forbidden: node didn\'t have enough allocatable resources: cpu, '
                           'requested: 64000, allocatable: 4000' % podstate.meta(pod, 'name'),
                           status=403, reason='Forbidden', causes=['NodeCapacity'])
        try:
            patched = jsonpatch.apply_patch(pod, body)
        except jsonpatch.JsonPatchTestFailed:
            raise ConflictError('test failed', status=422)
        if subresource == 'resize':  # the subresource keeps resource changes only
            for info in podstate.containers(patched):
                podstate.find_container(pod, info.name).spec['resources'] = info.spec.get('resources')
            return pod
        return patched

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None):
        if subresource != 'resize':
            before = self.pods[name]['spec']
            super(ResizeCluster, self).patch_pod(namespace, name, body, content_type, subresource)
            if self.pods[name]['spec'] != before:
                self.run_resize(name)
            return copy.deepcopy(self.pods[name])
        self.calls.append(('patch', name, subresource))
        pod = self.pods[name]
        patched = self._resized(copy.deepcopy(pod), body, subresource)
        if patched['spec'] != pod['spec']:
            patched['metadata']['generation'] += 1
        self.pods[name] = patched
        self._touch(patched)
        self.run_resize(name)
        return copy.deepcopy(self.pods[name])

    def run_resize(self, name):
        pod = self.pods[name]
        conditions = [c for c in pod['status']['conditions'] if 'Resize' not in c['type']]
        if self.outcome in ('Deferred', 'Infeasible'):
            conditions.append({'type': 'PodResizePending', 'status': 'True', 'reason': self.outcome,
                               'message': 'Node didn\'t have enough resource: cpu' if self.outcome == 'Deferred'
                               else 'static CPU manager policy', 'observedGeneration': pod['metadata']['generation']})
        else:
            for info in podstate.containers(pod):
                if info.kind == podstate.INIT or not info.status:
                    continue
                old = info.status.get('resources')
                info.status['resources'] = copy.deepcopy(info.spec.get('resources'))
                new = info.status['resources'] or {}
                changed = [r for r in ('cpu', 'memory') if any(
                    (old or {}).get(s, {}).get(r) != new.get(s, {}).get(r) for s in ('requests', 'limits')) and any(
                    p.get('resourceName') == r and p.get('restartPolicy') == 'RestartContainer'
                    for p in info.spec.get('resizePolicy') or [])]
                if changed:
                    info.status.update(containerID='fake://%s_%d' % (info.name, next(self._ids)),
                                       restartCount=info.status.get('restartCount', 0) + 1)
        pod['status']['conditions'] = conditions
        pod['status']['observedGeneration'] = pod['metadata']['generation']
        self._touch(pod)


def pods(count=1):
    result = [load('pod_resize.json') for _index in range(count)]
    for index, pod in enumerate(result):
        pod['metadata'].update(name='web-%d' % index, uid='uid-%d' % index)
    return result


def run(cluster, containers, allow_restart=True, version=(1, 36), **changes):
    operation = resize.ResizeOperation(containers, allow_restart, version)
    runner = engine.Engine(cluster, operation, options(**changes), FakeWatcher(cluster), sleep=lambda s: None)
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    return runner.run(listed)


def writes(cluster, subresource='resize'):
    return [c for c in cluster.calls if c[0] == 'patch' and c[2] == subresource]


CPU_UP = {'app': {'requests': {'cpu': '500m'}, 'limits': {'cpu': '1'}}}


# --------------------------------------------------------------------------- versions

@pytest.mark.parametrize('info, version', [
    ({'major': '1', 'minor': '36'}, (1, 36)), ({'major': '1', 'minor': '27+'}, (1, 27)),
    ({'major': '', 'minor': '', 'gitVersion': 'v1.33.2-eks'}, (1, 33)),
])
def test_parse_version(info, version):
    assert resize.parse_version(info) == version


def test_too_old_and_fallback():
    with pytest.raises(ValidationError, match='not supported by this cluster'):
        resize.ResizeOperation(CPU_UP, version=(1, 26))
    old = resize.ResizeOperation(CPU_UP, version=(1, 31))
    assert old.method == resize.POD_PATCH and 'no pods/resize' in old.fallback_note
    new = resize.ResizeOperation(CPU_UP, version=(1, 32))
    assert new.method == resize.SUBRESOURCE and new.fallback_note is None


def test_invalid_input_is_refused_at_once():
    with pytest.raises(ValidationError) as caught:
        resize.ResizeOperation({'app': {'requests': {'cpu': '-1', 'hugepages-2Mi': '2Mi'}}})
    assert 'containers.app.requests.cpu' in caught.value.msg and 'hugepages-2Mi' in caught.value.msg


# --------------------------------------------------------------------------- planning

def judge(pod, containers, **kwargs):
    operation = resize.ResizeOperation(containers, **kwargs)
    return plan.plan_pod(pod, operation.desired(pod), operation.judge)


@pytest.mark.parametrize('containers, action, restart', [
    (CPU_UP, plan.UPDATE, False),
    ({'app': {'requests': {'cpu': '0.05'}, 'limits': {'cpu': '200m'}}}, plan.UNCHANGED, False),
    ({'app': {'limits': {'memory': '134217728'}}}, plan.UNCHANGED, False),
    ({'app': {'limits': {'memory': '256Mi'}}}, plan.UPDATE, True),
    ({'app': {'requests': {'memory': '100Mi'}}}, plan.UPDATE, True),
    ({'log': {'limits': {'cpu': '100m'}}}, plan.UPDATE, False),
])
def test_judge(containers, action, restart):
    [cplan] = judge(load('pod_resize.json'), containers).containers
    assert (cplan.action, cplan.restart) == (action, restart)


def test_spec_resized_but_not_reported_is_pending():
    pod = load('pod_resize_deferred.json')
    [cplan] = judge(pod, {'app': {'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}}).containers
    assert cplan.action == plan.PENDING


def test_plain_init_container_is_refused():
    pod = load('pod_resize.json')
    pod['spec']['initContainers'][0].pop('restartPolicy')
    [cplan] = judge(pod, {'log': {'limits': {'cpu': '100m'}}}).containers
    assert cplan.action == plan.REFUSED and 'init container' in cplan.reason


def test_desired_is_merged_with_each_pod():
    operation = resize.ResizeOperation(CPU_UP)
    assert operation.desired(load('pod_resize.json'))['app'] == {
        'requests': {'cpu': '500m', 'memory': '64Mi'}, 'limits': {'cpu': '1', 'memory': '128Mi'}}


# --------------------------------------------------------------------------- checks before any write

def check_errors(pod, containers, **kwargs):
    operation = resize.ResizeOperation(containers, **kwargs)
    try:
        operation.check([plan.plan_pod(pod, operation.desired(pod), operation.judge)])
    except ValidationError as exc:
        return exc.msg
    return None


def guaranteed_pod():
    pod = load('pod_resize.json')
    for item in pod['spec']['containers'] + pod['spec']['initContainers']:
        item['resources']['requests'] = dict(item['resources']['limits'], cpu=item['resources']['limits'].get('cpu', '100m'))
        item['resources']['limits'] = dict(item['resources']['requests'])
    return pod


@pytest.mark.parametrize('pod_changes, containers, kwargs, message', [
    (None, CPU_UP, {}, None),
    (None, {'app': {'requests': {'cpu': '300m'}}}, {}, 'containers.app.requests.cpu: 300m is above the limit 200m'),
    (None, {'app': {'limits': {'memory': '256Mi'}}}, {'allow_restart': False}, 'allow_restart is false'),
    (None, {'app': {'limits': {'memory': '256Mi'}}}, {'allow_restart': True}, None),
    (None, {'metrics': {'limits': {'memory': '16Mi'}}}, {'version': (1, 33)},
     'containers.metrics.limits.memory: Kubernetes 1.33 refuses to lower a memory limit'),
    (None, {'metrics': {'limits': {'memory': '16Mi'}}}, {'version': (1, 34)}, None),
    (None, {'app': {'limits': {'memory': '100Mi'}}}, {'version': (1, 33)}, None),  # RestartContainer
    ('pod_level', CPU_UP, {'version': (1, 35)}, 'pod-level resources'),
    ('pod_level', CPU_UP, {'version': (1, 36)}, None),
    ('guaranteed', {'app': {'limits': {'cpu': '1'}}}, {}, 'QoS class would change from Guaranteed to Burstable'),
    ('guaranteed', {'app': {'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}}, {}, None),
    ('init', {'log': {'limits': {'cpu': '100m'}}}, {}, 'pod web container log: plain init container'),
    (None, {'sidecar': {'limits': {'cpu': '1'}}}, {}, 'container sidecar: container missing'),
])
def test_check(pod_changes, containers, kwargs, message):
    pod = guaranteed_pod() if pod_changes == 'guaranteed' else load('pod_resize.json')
    if pod_changes == 'pod_level':
        pod['spec']['resources'] = {'limits': {'cpu': '2', 'memory': '1Gi'}}
    if pod_changes == 'init':
        pod['spec']['initContainers'][0].pop('restartPolicy')
    found = check_errors(pod, containers, **kwargs)
    if message is None:
        assert found is None
    else:
        assert message in found and 'nothing was changed' in found


# --------------------------------------------------------------------------- the patches

def test_changes_set_cpu_and_memory_only_guarded_by_the_current_resources():
    pod = load('pod_resize.json')
    spec_of(pod, 'app')['resources']['limits']['ephemeral-storage'] = '1Gi'
    operation = resize.ResizeOperation(CPU_UP)
    ops = operation.changes(pod, plan.plan_pod(pod, operation.desired(pod), operation.judge))
    assert ops[0] == {'op': 'test', 'path': '/spec/containers/0/name', 'value': 'app'}
    assert ops[1]['op'] == 'test' and ops[1]['path'] == '/spec/containers/0/resources'
    assert {'op': 'add', 'path': '/spec/containers/0/resources/requests/cpu', 'value': '500m'} in ops
    assert {'op': 'add', 'path': '/spec/containers/0/resources/limits/memory', 'value': '128Mi'} in ops
    assert not [o for o in ops if 'ephemeral' in o['path']]
    patched = jsonpatch.apply_patch(pod, ops)
    assert spec_of(patched, 'app')['resources']['limits'] == {'cpu': '1', 'memory': '128Mi', 'ephemeral-storage': '1Gi'}


# --------------------------------------------------------------------------- whole runs on the fake cluster

def test_resize_writes_record_first_then_the_subresource():
    cluster = ResizeCluster(pods(1))
    result = run(cluster, CPU_UP)
    pod = cluster.pods['web-0']
    # record, resize; no final write: the record is settled by the pod's spec and status
    assert [c[2] for c in cluster.calls if c[0] == 'patch'] == [None, 'resize']
    assert spec_of(pod, 'app')['resources']['requests']['cpu'] == '500m'
    item = result['pods'][0]
    assert item['status'] == 'updated' and item['in_place']
    app = item['containers']['app']
    assert app['requests_before'] == {'cpu': '50m', 'memory': '64Mi'}
    assert app['requests_after'] == {'cpu': '500m', 'memory': '64Mi'}
    assert app['restarted'] is False and app['method'] == 'pods/resize'
    rec = record.get(pod, 'resize')
    assert rec['state'] == record.IN_PROGRESS and rec['before']['app']['resources']['requests']['cpu'] == '50m'
    assert resize.ResizeOperation(CPU_UP).settled(pod, rec) is True
    assert result['diff']['after']['web-0']['app']['limits'] == {'cpu': '1', 'memory': '128Mi'}


def test_second_run_is_unchanged_and_writes_nothing():
    cluster = ResizeCluster(pods(1))
    run(cluster, CPU_UP)
    cluster.calls[:] = []
    again = run(cluster, {'app': {'requests': {'cpu': '0.5'}, 'limits': {'cpu': '1000m'}}})
    assert again['changed'] is False and again['pods'][0]['status'] == 'unchanged'
    assert writes(cluster) == [] and writes(cluster, None) == []


def test_memory_with_restart_container_restarts_that_container():
    cluster = ResizeCluster(pods(1))
    result = run(cluster, {'app': {'limits': {'memory': '256Mi'}}})
    app = result['pods'][0]['containers']['app']
    assert app['restart_expected'] and app['restarted'] and app['restart_resources'] == ['memory']
    assert status_of(cluster.pods['web-0'], 'metrics')['restartCount'] == 0


def test_check_mode_dry_runs_the_subresource_and_writes_nothing():
    cluster = ResizeCluster(pods(2))
    result = run(cluster, CPU_UP, check_mode=True)
    assert [p['status'] for p in result['pods']] == ['would_update', 'would_update']
    assert [path.rsplit('/', 1)[1] for path, _body in cluster.dry_runs] == ['resize', 'resize']
    assert writes(cluster) == [] and writes(cluster, None) == []


def test_node_capacity_is_infeasible_at_once_and_nothing_changes():
    cluster = ResizeCluster(pods(1))
    cluster.outcome = 'NodeCapacity'
    result = run(cluster, {'app': {'requests': {'cpu': '64'}, 'limits': {'cpu': '64'}}})
    item = result['pods'][0]
    assert item['status'] == 'failed' and item['error']['reason'] == 'Infeasible'
    assert 'allocatable' in item['error']['message']
    pod = cluster.pods['web-0']
    assert spec_of(pod, 'app')['resources']['requests']['cpu'] == '50m'
    assert record.get(pod, 'resize')['state'] == record.FAILED


def test_node_capacity_in_check_mode_fails():
    cluster = ResizeCluster(pods(1))
    cluster.outcome = 'NodeCapacity'
    result = run(cluster, CPU_UP, check_mode=True)
    assert result['pods'][0]['status'] == 'failed' and result['pods'][0]['error']['reason'] == 'Infeasible'


class Recovering(FakeWatcher):
    """After the first wait, the node can do resizes again (capacity freed, for the rollback)."""

    def wait_for(self, name, done, failed=None, timeout=300):
        try:
            return FakeWatcher.wait_for(self, name, done, failed, timeout)
        finally:
            self.cluster.outcome = None


@pytest.mark.parametrize('outcome, on_failure, status, reason, message', [
    ('Infeasible', 'stop', 'failed', 'Infeasible', 'static CPU manager policy'),
    ('Infeasible', 'rollback', 'rolled_back', 'Infeasible', 'static CPU manager policy'),
    ('Deferred', 'stop', 'failed', 'WaitTimeout', 'resize Deferred by the kubelet'),
    ('Deferred', 'rollback', 'rolled_back', 'WaitTimeout', 'too little free capacity'),
])
def test_kubelet_refusals(outcome, on_failure, status, reason, message):
    cluster = ResizeCluster(pods(1))
    cluster.outcome = outcome
    runner = engine.Engine(cluster, resize.ResizeOperation(CPU_UP), options(on_failure=on_failure),
                           Recovering(cluster), sleep=lambda s: None)
    item = runner.run([copy.deepcopy(cluster.pods['web-0'])])['pods'][0]
    assert (item['status'], item['error']['reason']) == (status, reason)
    assert message in item['error']['message']
    cpu = spec_of(cluster.pods['web-0'], 'app')['resources']['requests']['cpu']
    if on_failure == 'rollback':
        assert item['rolled_back_to']['app']['requests']['cpu'] == '50m' and cpu == '50m'
        assert record.get(cluster.pods['web-0'], 'resize')['state'] == record.ROLLED_BACK
    else:
        assert cpu == '500m' and record.get(cluster.pods['web-0'], 'resize')['state'] == record.FAILED


def test_concurrent_resize_between_plan_and_write_is_not_overwritten():
    cluster = ResizeCluster(pods(1))

    def other_writer(cl, name):
        spec_of(cl.pods[name], 'app')['resources']['requests']['cpu'] = '150m'
        cl.pods[name]['metadata']['generation'] += 1
        cl._touch(cl.pods[name])
    cluster.before_write = other_writer
    result = run(cluster, CPU_UP)
    assert result['pods'][0]['status'] == 'conflict'
    assert spec_of(cluster.pods['web-0'], 'app')['resources']['requests']['cpu'] == '150m'


def test_old_server_falls_back_to_one_pod_patch():
    cluster = ResizeCluster(pods(1))
    result = run(cluster, CPU_UP, version=(1, 30))
    assert writes(cluster) == []
    assert result['pods'][0]['containers']['app']['method'] == 'pod patch'
    assert spec_of(cluster.pods['web-0'], 'app')['resources']['requests']['cpu'] == '500m'


def test_many_pods_concurrently():
    cluster = ResizeCluster(pods(6))
    result = run(cluster, CPU_UP, max_concurrency=3)
    assert result['summary']['updated'] == 6 and len(writes(cluster)) == 6


# --------------------------------------------------------------------------- wait predicates

def cplan_for(pod, containers):
    operation = resize.ResizeOperation(containers)
    return operation, plan.plan_pod(pod, operation.desired(pod), operation.judge).containers[0]


def test_done_needs_conditions_cleared_status_and_generation():
    pod = load('pod_resize_deferred.json')
    operation, cplan = cplan_for(pod, {'app': {'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}})
    assert not operation.done(pod, cplan, {})
    assert 'Deferred' in operation.stalled(pod, [cplan])
    assert operation.failure(pod, cplan, {}, podstate.meta(pod, 'generation')) is None
    pod['status']['conditions'] = [c for c in pod['status']['conditions'] if 'Resize' not in c['type']]
    assert not operation.done(pod, cplan, {})
    assert 'app reports' in operation.stalled(pod, [cplan])
    status_of(pod, 'app')['resources'] = {'requests': {'cpu': '1000m', 'memory': '64Mi'},
                                          'limits': {'cpu': '1', 'memory': '128Mi'}}
    assert operation.done(pod, cplan, {})
    pod['status']['observedGeneration'] = pod['metadata']['generation'] - 1
    assert not operation.done(pod, cplan, {})
    assert 'not observed generation' in operation.stalled(pod, [cplan])


@pytest.mark.parametrize('kind, reason, observed, failure', [
    ('PodResizePending', 'Infeasible', 4, 'Infeasible'),
    ('PodResizePending', 'Infeasible', 3, None),        # about an older generation
    ('PodResizePending', 'Deferred', 4, None),
    ('PodResizeInProgress', 'Error', 4, 'ResizeError'),
    ('PodResizeInProgress', None, 4, None),
])
def test_failure_from_conditions(kind, reason, observed, failure):
    pod = load('pod_resize_deferred.json')
    pod['status']['conditions'] = [c for c in pod['status']['conditions'] if 'Resize' not in c['type']] + [
        {'type': kind, 'status': 'True', 'reason': reason, 'message': 'why', 'observedGeneration': observed}]
    operation, cplan = cplan_for(pod, {'app': {'requests': {'cpu': '1'}, 'limits': {'cpu': '1'}}})
    found = operation.failure(pod, cplan, {}, 4)
    assert (found[0] if found else None) == failure


# --------------------------------------------------------------------------- API answers seen on 1.36

@pytest.mark.parametrize('status, body, conflict, node_capacity', [
    (422, {'message': 'the server rejected our request due to an error in our request', 'reason': 'Invalid',
           'details': {}}, True, False),                                   # a failed JSON-patch test on 1.36
    (403, {'message': 'pods "p" is forbidden: node didn\'t have enough allocatable resources: cpu, requested: '
                      '64000, allocatable: 4000', 'reason': 'Forbidden',
           'details': {'causes': [{'reason': 'NodeCapacity'}]}}, False, True),
    (422, {'message': 'Pod "p" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change',
           'reason': 'Invalid', 'details': {'causes': [{'reason': 'FieldValueInvalid'}]}}, False, False),
])
def test_api_answers(status, body, conflict, node_capacity):
    from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import _error_from_response
    error = _error_from_response(status, json.dumps(body), {})
    assert isinstance(error, ConflictError) is conflict
    assert resize.is_node_capacity(error) is node_capacity
