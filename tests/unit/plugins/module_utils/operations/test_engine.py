# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, plan as planning, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.process import guardian
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import spec_of, status_of, web_pods as pods
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.helpers import NEW, options, run

GATE = 'inplace.k8s/ready'


def writes(cluster):
    return [c for c in cluster.calls if c[0] == 'patch' and c[2] is None]


def test_check_mode_plans_and_writes_nothing():
    cluster = FakeCluster(pods(2))
    result = run(cluster, {'app': NEW}, check_mode=True)[0]
    assert result['changed'] is True
    assert [p['status'] for p in result['pods']] == ['would_update', 'would_update']
    assert result['diff']['after'] == {'web-0': {'app': NEW}, 'web-1': {'app': NEW}}
    assert result['pods'][0]['containers']['app']['new_container_id'] is None
    assert cluster.calls == [('dry-run', 'web-0', None), ('dry-run', 'web-1', None)]   # writes nothing


def test_update_then_idempotent():
    cluster = FakeCluster(pods(3))
    result = run(cluster, {'app': NEW})[0]
    assert result['changed'] is True
    assert result['summary']['updated'] == 3 and result['summary']['changed'] == 3
    first = result['pods'][0]
    app = first['containers']['app']
    assert (app['old_image'], app['new_image'], app['restarted']) == ('registry.example/app:1.0', NEW, True)
    assert app['old_container_id'] != app['new_container_id']
    assert (app['restart_count_before'], app['restart_count_after']) == (0, 1)
    assert first['in_place'] is True and first['uid_after'] == 'uid-0'
    assert set(first['timings']) >= {'restart', 'ready', 'total'}
    # One write per pod: image + record. The record stays in-progress and is settled by the pod itself.
    assert sorted(c[1] for c in writes(cluster)) == ['web-0', 'web-1', 'web-2']
    assert not [c for c in cluster.calls if c[0] == 'get']   # watch-driven: no GET per pod
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['state'] == 'in-progress' and rec['before']['app']['image'] == 'registry.example/app:1.0'
    assert ImageOperation({'app': NEW}).settled(cluster.pods['web-0'], rec) is True
    assert rec['before']['app']['containerID'] == 'fake://app-7c1e_0'
    # other containers untouched
    assert status_of(cluster.pods['web-0'], 'metrics')['containerID'] == 'fake://metrics-41aa_0'

    cluster.calls[:] = []
    again = run(cluster, {'app': NEW})[0]
    assert again['changed'] is False and again['summary']['unchanged'] == 3
    assert writes(cluster) == []


def spy_patches(cluster):
    """The bodies of the pod patches ``cluster`` receives from now on, in order (the patches still apply)."""
    sent = []
    original = cluster.patch_pod

    def spy(namespace, name, body, content_type=None, subresource=None):
        sent.append(body)
        return original(namespace, name, body, content_type, subresource)
    cluster.patch_pod = spy
    return sent


def test_image_and_record_in_one_guarded_write():
    cluster = FakeCluster(pods(1))
    sent = spy_patches(cluster)
    run(cluster, {'app': NEW})
    first = sent[0]
    assert first[0]['op'] == 'test' and first[0]['path'] == '/metadata/resourceVersion'
    assert [op['path'] for op in first[1:]] == [
        '/metadata/annotations', '/metadata/annotations/inplace.k8s~1restarts',
        '/metadata/annotations/inplace.k8s~1planned-restarts', '/spec/containers/0/name', '/spec/containers/0/image']
    # The image change restarts the container: the planned restart is counted in the same write.
    assert json.loads(first[2]['value'])['containers']['app']['count'] == 1 and first[3]['value'] == '1'


def test_revision_labels_ride_on_the_image_write_and_a_rollback_puts_them_back():
    cluster = FakeCluster(pods(1))
    cluster.pods['web-0']['metadata'].setdefault('labels', {})['controller-revision-hash'] = 'web-old'
    operation = ImageOperation({'app': 'registry.example/app:2.0-crash'}, labels={'controller-revision-hash': 'web-new'})
    runner = engine.Engine(cluster, operation, options(on_failure='rollback'), FakeWatcher(cluster),
                           sleep=lambda seconds: None)
    sent = spy_patches(cluster)
    result = runner.run([copy.deepcopy(cluster.pods['web-0'])])
    assert result['pods'][0]['status'] == 'rolled_back'
    label = {'op': 'add', 'path': '/metadata/labels/controller-revision-hash'}
    image_writes = [body for body in sent if any(op['path'].endswith('/image') for op in body)]
    assert [dict(label, value='web-new'), dict(label, value='web-old')] == [
        {k: op[k] for k in ('op', 'path', 'value')} for body in image_writes for op in body if op['path'] == label['path']]
    assert cluster.pods['web-0']['metadata']['labels']['controller-revision-hash'] == 'web-old'


def test_unknown_container_is_an_error_before_any_write():
    cluster = FakeCluster(pods(1))
    with pytest.raises(ValidationError) as caught:
        run(cluster, {'ap': NEW})
    assert 'ap' in caught.value.msg and 'app, log-agent, metrics, setup' in caught.value.msg
    assert cluster.calls == []


def test_sidecar_update():
    cluster = FakeCluster(pods(1))
    result = run(cluster, {'log-agent': 'registry.example/fluent-bit:3.1'})[0]
    sidecar = result['pods'][0]['containers']['log-agent']
    assert (sidecar['kind'], sidecar['restarted']) == ('sidecar', True)
    assert spec_of(cluster.pods['web-0'], 'log-agent')['image'] == 'registry.example/fluent-bit:3.1'


def test_a_terminating_pod_is_left_out_as_gone_not_written():
    pod = pods(1)[0]
    pod['metadata']['deletionTimestamp'] = '2025-11-21T22:00:00Z'
    cluster = FakeCluster([pod])
    result, runner = run(cluster, {'app': NEW})
    entry = result['pods'][0]
    assert entry['status'] == 'gone' and result['changed'] is False
    assert entry['gone'] == {'cause': 'deleted', 'detail': 'deleted at 2025-11-21T22:00:00Z', 'when': 'before'}
    assert result['summary']['gone'] == 1 and result['summary']['failed'] == 0
    assert writes(cluster) == []


def test_a_finished_pod_is_refused_and_warned():
    pod = pods(1)[0]
    pod['status']['phase'] = 'Succeeded'
    cluster = FakeCluster([pod])
    result, runner = run(cluster, {'app': NEW})
    assert result['pods'][0]['status'] == 'refused' and result['changed'] is False
    assert 'finished' in runner.warnings[0]
    assert writes(cluster) == []


def test_pull_failure_stops_with_reason():
    cluster = FakeCluster(pods(1))
    result = run(cluster, {'app': 'registry.example/app:2.0-pullfail'})[0]
    pod = result['pods'][0]
    assert pod['status'] == 'failed'
    assert pod['error']['container'] == 'app' and pod['error']['reason'] == 'ErrImagePull'
    assert 'pull registry.example/app:2.0-pullfail failed' in pod['reason']
    assert record.get(cluster.pods['web-0'], 'image')['state'] == 'failed'


@pytest.mark.parametrize('bad', ['registry.example/app:2.0-pullfail', 'registry.example/app:2.0-crash'])
def test_rollback_restores_recorded_image(bad):
    cluster = FakeCluster(pods(1))
    result = run(cluster, {'app': bad}, on_failure='rollback')[0]
    pod = result['pods'][0]
    assert pod['status'] == 'rolled_back'
    assert pod['rolled_back_to'] == {'app': 'registry.example/app:1.0'}
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == 'registry.example/app:1.0'
    assert status_of(cluster.pods['web-0'], 'app')['ready'] is True
    assert record.get(cluster.pods['web-0'], 'image')['state'] == 'rolled-back'


def test_conflict_is_reread_and_retried():
    cluster = FakeCluster(pods(1))

    def kubelet_status_update(fake, name):
        fake._touch(fake.pods[name])  # an unrelated write (status) moves resourceVersion
    cluster.before_write = kubelet_status_update
    result = run(cluster, {'app': NEW})[0]
    pod = result['pods'][0]
    assert pod['status'] == 'updated' and pod['conflicts'] == 1
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == NEW


def test_concurrent_change_of_the_same_container_is_not_overwritten():
    cluster = FakeCluster(pods(1))
    cluster.before_write = lambda fake, name: fake.set_image(name, 'app', 'registry.example/app:1.5')
    result = run(cluster, {'app': NEW})[0]
    pod = result['pods'][0]
    assert pod['status'] == 'conflict' and pod['conflicts'] == 1
    assert 'changed by another writer' in pod['reason'] and 'app=registry.example/app:1.5' in pod['reason']
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == 'registry.example/app:1.5'


def test_readiness_gate_drain_and_restore():
    cluster = FakeCluster(pods(1))
    seen = []
    original = drain.set_gate

    def spy(kube, pod, gate, ready, reason=None, message=None, metadata=None):
        seen.append((ready, record.decode({'metadata': metadata}, record.ANNOTATION).get('image', {}).get('state')
                     if metadata else None))
        return original(kube, pod, gate, ready, reason, message, metadata)
    drain.set_gate = spy
    try:
        result = run(cluster, {'app': NEW}, readiness_gate=GATE, drain_seconds=3)[0]
    finally:
        drain.set_gate = original
    pod = result['pods'][0]
    # Three writes: claim + gate False, image + record, gate True + record done.
    assert seen == [(False, 'in-progress'), (True, 'done')]
    assert [c[2] for c in cluster.calls if c[0] == 'patch'] == ['status', None, 'status']
    assert record.get(cluster.pods['web-0'], 'image')['state'] == 'done'
    assert pod['readiness_gate'] == {'mode': 'readiness_gate', 'type': GATE, 'status': 'True', 'restored': True, 'observed_not_ready': True}
    assert 'drain' in pod['timings'] and 'undrain' in pod['timings']
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'True'


def test_gate_left_false_when_pod_unhealthy_after_failure():
    cluster = FakeCluster(pods(1))
    result, runner = run(cluster, {'app': 'registry.example/app:2.0-pullfail'}, readiness_gate=GATE)
    pod = result['pods'][0]
    assert pod['status'] == 'failed'
    assert pod['readiness_gate']['status'] == 'False' and pod['readiness_gate']['restored'] is False
    assert any('left drained' in w for w in runner.warnings)
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'False'


@pytest.mark.parametrize('image, gate_after', [(NEW, 'True'), ('registry.example/app:2.0-pullfail', 'False')])
def test_the_guardian_hears_of_each_drain_before_it_is_written_and_when_it_is_settled(monkeypatch, image, gate_after):
    """The guardian (process/guardian.py) is told before the gate is set False, and told it is settled after the gate is
    True again or left False on purpose (a failure): it then has nothing to put back."""
    cluster = FakeCluster(pods(1))
    heard = []

    class Recorder(object):
        def drained(self, pod, drainer, policy, run):
            heard.append(('drained', pod['metadata']['name'], drainer.name, policy, bool(run),
                          drain.gate_status(cluster.pods['web-0'], GATE)))

        def settled(self, pod):
            heard.append(('settled', pod['metadata']['name'], drain.gate_status(cluster.pods['web-0'], GATE)))
    monkeypatch.setattr(guardian, '_current', Recorder())
    run(cluster, {'app': image}, readiness_gate=GATE)
    assert heard == [('drained', 'web-0', GATE, 'restore_if_healthy', True, 'True'), ('settled', 'web-0', gate_after)]


def test_gate_restored_after_successful_rollback():
    cluster = FakeCluster(pods(1))
    result = run(cluster, {'app': 'registry.example/app:2.0-pullfail'}, readiness_gate=GATE,
                 on_failure='rollback')[0]
    assert result['pods'][0]['readiness_gate']['status'] == 'True'
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'True'


def test_missing_gate_warns_or_fails():
    pod = pods(1)[0]
    del pod['spec']['readinessGates']
    cluster = FakeCluster([pod])
    with pytest.raises(ValidationError):
        run(cluster, {'app': NEW}, readiness_gate=GATE, require_readiness_gate=True)
    assert cluster.calls == []
    result, runner = run(cluster, {'app': NEW}, readiness_gate=GATE)
    assert result['pods'][0]['status'] == 'updated' and result['pods'][0]['readiness_gate'] is None
    assert 'no readiness gate' in runner.warnings[0]


def test_resume_waits_without_writing():
    cluster = FakeCluster(pods(1), kubelet=False)
    pod = cluster.pods['web-0']
    spec_of(pod, 'app')['image'] = NEW            # a previous run wrote, the kubelet has not acted yet
    cluster.kubelet = True
    cluster.run_kubelet('web-0')
    result = run(cluster, {'app': NEW})[0]
    assert result['pods'][0]['action'] in ('unchanged', 'pending')
    assert writes(cluster) == []


def test_a_pending_pod_is_reported_as_it_is_after_the_wait(monkeypatch):
    cluster = FakeCluster(pods(1), kubelet=False)
    spec_of(cluster.pods['web-0'], 'app')['image'] = NEW     # written by an earlier run, kubelet not done
    waited = FakeWatcher.wait_for

    def kubelet_acts_during_the_wait(self, name, done, failed=None, timeout=300):
        cluster.run_kubelet(name)
        return waited(self, name, done, failed, timeout)
    monkeypatch.setattr(FakeWatcher, 'wait_for', kubelet_acts_during_the_wait)
    pod = run(cluster, {'app': NEW})[0]['pods'][0]
    assert pod['action'] == 'pending' and pod['status'] == 'converged' and not pod['changed']
    assert pod['containers']['app']['running_image'] == NEW and pod['in_place'] is True
    assert writes(cluster) == []


def test_no_wait_writes_and_returns():
    cluster = FakeCluster(pods(1), kubelet=False)
    result = run(cluster, {'app': NEW}, wait=False)[0]
    assert result['pods'][0]['status'] == 'written' and result['changed'] is True


def test_min_ready_seconds_catches_a_crash_after_start():
    cluster = FakeCluster(pods(1))
    watcher = FakeWatcher(cluster)

    def crash_later(name, failed, seconds):
        status = status_of(cluster.pods[name], 'app')
        status.update(state={'terminated': {'exitCode': 1, 'reason': 'Error', 'message': 'boom'}}, ready=False)
        return FakeWatcher.hold(watcher, name, failed, seconds)
    watcher.hold = crash_later
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), options(min_ready_seconds=5), watcher,
                           sleep=lambda seconds: None)
    pod = runner.run([copy.deepcopy(cluster.pods['web-0'])])['pods'][0]
    assert pod['status'] == 'failed'
    assert pod['error'] == {'container': 'app', 'reason': 'Error', 'message': 'boom'}


@pytest.mark.parametrize('status, result', [
    ({'containerID': 'a', 'state': {'running': {}}}, None),
    ({'containerID': 'b', 'state': {'running': {}}, 'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error'}}},
     ('Error', 'exit code 1')),
    ({'containerID': 'a', 'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}}},
     ('CrashLoopBackOff', 'back-off')),
    ({'containerID': 'a', 'state': {'terminated': {'exitCode': 137}}}, ('terminated', 'exit code 137')),
    ({'containerID': 'b', 'state': {'running': {}}}, ('Restarted', 'the container was replaced after it was verified')),
])
def test_left_running(status, result):
    assert podstate.left_running(status, 'a') == result


@pytest.mark.parametrize('state, image, counts', [
    ({'waiting': {'reason': 'ImagePullBackOff', 'message': 'Back-off pulling image "registry.example/app:1.5-pullfail"'}},
     'registry.example/app:1.0', False),
    ({'waiting': {'reason': 'ErrImagePull', 'message': 'failed to pull "registry.example/app:2.0"'}},
     'registry.example/app:1.0', True),
    ({'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s'}}, 'registry.example/app:1.5-crash', False),
    ({'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s'}}, 'registry.example/app:2.0', True),
])
def test_image_failures_count_only_for_the_desired_image(web_pod, state, image, counts):
    """The kubelet keeps reporting the error of an earlier image for a while after a new change."""
    operation = ImageOperation({'app': NEW})
    status_of(web_pod, 'app').update(state=state, image=image)
    cplan = operation_plan(operation, web_pod).containers[0]
    found = operation.failure(web_pod, cplan, {'containerID': 'x'}, generation=1)
    assert (found is not None) is counts


@pytest.mark.parametrize('message, counts', [
    ('failed to pull and unpack image "%s": not found' % NEW, True),
    ('Back-off pulling image "%s"' % NEW, True),
    ('Back-off pulling image "registry.example/app:1.5-pullfail"', False),
])
def test_failed_pull_counts_without_observed_generation(web_pod, message, counts):
    """Kubernetes 1.33 reports no status.observedGeneration, and a failing pull leaves the old container's
    ID in the status: the error naming the desired image shows the kubelet acted on the change."""
    operation = ImageOperation({'app': NEW})
    web_pod['status'].pop('observedGeneration', None)
    app = status_of(web_pod, 'app')
    app.update(state={'waiting': {'reason': 'ErrImagePull' if 'unpack' in message else 'ImagePullBackOff',
                                  'message': message}})
    cplan = operation_plan(operation, web_pod).containers[0]
    found = operation.failure(web_pod, cplan, {'containerID': app['containerID']}, generation=2)
    assert (found is not None) is counts


def operation_plan(operation, pod):
    return planning.plan_pod(pod, operation.desired(pod), operation.judge)


# ---- interrupted runs and ownership

def killed_after_write(pod, owner=None, state='in-progress'):
    """What a run killed after its write leaves: new image in the spec, gate False (our reason), record."""
    spec_of(pod, 'app')['image'] = NEW
    podstate.condition(pod, GATE).update(status='False', reason=drain.DRAIN_REASON)
    rec = record.begin(pod, 'image', {'app': NEW}, {'app': {'image': 'registry.example/app:1.0',
                                                            'containerID': 'fake://app-7c1e_0'}})
    if owner:
        rec = record.claim(rec, owner, 600)
    rec['state'] = state
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = record.encode(pod, 'image', rec)
    return pod


DEAD = {'run': 'dead-run', 'host': record.new_owner()['host'], 'pid': 2 ** 22 + 12345, 'started': 'T0'}


@pytest.mark.parametrize('kubelet_done', [False, True])   # plan pending / unchanged
def test_killed_run_with_gate_left_false_is_resumed(kubelet_done):
    cluster = FakeCluster([killed_after_write(pods(1)[0], DEAD)], kubelet=False)
    cluster.kubelet = True
    if kubelet_done:
        cluster.run_kubelet('web-0')
    result = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    pod = result['pods'][0]
    assert result['changed'] is True and pod['changed'] is True
    assert pod['status'] == 'resumed' and pod['action'] in ('unchanged', 'pending')
    assert pod['readiness_gate']['status'] == 'True' and pod['readiness_gate']['resumed'] is True
    assert pod['in_place'] is True
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'True'
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['state'] == 'done' and rec['before']['app']['image'] == 'registry.example/app:1.0'
    assert rec['owner']['run'] != 'dead-run'
    again = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    assert again['changed'] is False and again['pods'][0]['status'] == 'unchanged'


def test_resume_in_check_mode_is_reported_and_writes_nothing():
    cluster = FakeCluster([killed_after_write(pods(1)[0])])
    cluster.calls[:] = []
    result = run(cluster, {'app': NEW}, readiness_gate=GATE, check_mode=True)[0]
    assert result['pods'][0]['status'] == 'would_update' and 'interrupted run' in result['pods'][0]['reason']
    assert cluster.calls == []


def test_gate_false_for_another_reason_is_not_touched():
    pod = killed_after_write(pods(1)[0], state='done')
    podstate.condition(pod, GATE).update(reason='SomeoneElse')
    cluster = FakeCluster([pod])
    cluster.run_kubelet('web-0')
    result = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    assert result['pods'][0]['status'] == 'unchanged'
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'False'


def test_a_pod_held_by_another_live_run_is_refused_untouched():
    other = {'run': 'other', 'host': 'elsewhere', 'pid': 1, 'started': '2026-01-31T12:00:00Z'}
    cluster = FakeCluster([killed_after_write(pods(1)[0], other)], kubelet=False)
    cluster.calls[:] = []
    result = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    pod = result['pods'][0]
    assert pod['status'] == 'conflict' and pod['readiness_gate'] is None
    assert pod['reason'].startswith('pod web-0: another run (host elsewhere, pid 1, started 2026-01-31T12:00:00Z) '
                                    'is updating this pod; it expires at ')
    assert pod['reason'].endswith('; wait, or set force_takeover')
    assert writes(cluster) == [] and cluster.calls == []
    cluster.kubelet = True
    forced = run(cluster, {'app': NEW}, readiness_gate=GATE, force_takeover=True)[0]
    assert forced['pods'][0]['status'] == 'resumed'


def test_the_claim_before_draining_wins_over_a_second_run():
    cluster = FakeCluster(pods(1))
    other = {'run': 'other', 'host': 'elsewhere', 'pid': 1, 'started': 'T0'}

    def second_run_claims_first(fake, name):
        pod = fake.pods[name]
        rec = record.claim(record.begin(pod, 'image', {'app': NEW}, {}), other, 600)
        pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = record.encode(pod, 'image', rec)
        fake._touch(pod)
    cluster.before_write = second_run_claims_first
    result = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    pod = result['pods'][0]
    assert pod['status'] == 'conflict' and 'another run (host elsewhere' in pod['reason']
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == 'registry.example/app:1.0'   # not written
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'True'                        # never drained


def test_records_carry_owner_and_expiry():
    cluster = FakeCluster(pods(1))
    owner = {'run': 'r1', 'host': 'h', 'pid': 7, 'started': 'T0'}
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), options(readiness_gate=GATE),
                           FakeWatcher(cluster), sleep=lambda seconds: None, owner=owner)
    runner.run([copy.deepcopy(cluster.pods['web-0'])])
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['owner'] == owner and record.parse_timestamp(rec['expires']) is not None


def test_a_settled_record_of_another_live_run_holds_nothing():
    """Run 1 (another host, still within its expiry) wrote 2.0 and the pod runs it: its in-progress
    record is settled, so run 2 may change the pod at once, and its before-state is 2.0, not 1.0."""
    other = {'run': 'other', 'host': 'elsewhere', 'pid': 1, 'started': 'T0'}
    cluster = FakeCluster([killed_after_write(pods(1)[0], other)])
    cluster.run_kubelet('web-0')
    podstate.condition(cluster.pods['web-0'], GATE).update(status='True', reason=None)
    held = record.get(cluster.pods['web-0'], 'image')
    assert held['state'] == 'in-progress' and ImageOperation({'app': NEW}).settled(cluster.pods['web-0'], held)
    result = run(cluster, {'app': 'registry.example/app:3.0'})[0]
    assert result['pods'][0]['status'] == 'updated'
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['target'] == {'app': 'registry.example/app:3.0'} and rec['before']['app']['image'] == NEW


def test_an_unsettled_record_of_another_live_run_still_holds():
    other = {'run': 'other', 'host': 'elsewhere', 'pid': 1, 'started': 'T0'}
    cluster = FakeCluster([killed_after_write(pods(1)[0], other)], kubelet=False)
    podstate.condition(cluster.pods['web-0'], GATE).update(status='True', reason=None)
    result = run(cluster, {'app': 'registry.example/app:3.0'})[0]
    assert result['pods'][0]['status'] == 'conflict' and writes(cluster) == []


# ---- what the API server stored is the target (admission, restarts by image_reference)

PINNED = NEW + '@sha256:' + 'ef' * 32
MIRROR = 'mirror.example/app:2.0'


def _pin(pod):
    for info in podstate.containers(pod):
        if info.spec['image'] == NEW:
            info.spec['image'] = PINNED


def _mirror(pod):
    for info in podstate.containers(pod):
        if info.spec['image'].startswith('registry.example/'):
            info.spec['image'] = 'mirror.example/' + info.spec['image'].split('/', 1)[1]


@pytest.mark.parametrize('mutate, stored', [(_pin, PINNED), (_mirror, MIRROR)])
def test_admission_rewrite_is_the_target_and_a_rerun_changes_nothing(mutate, stored):
    cluster = FakeCluster(pods(2))
    cluster.admission = mutate
    result = run(cluster, {'app': NEW})[0]
    assert result['summary']['updated'] == 2, result
    app = result['pods'][0]['containers']['app']
    assert (app['requested_image'], app['new_image'], app['running_image']) == (NEW, stored, stored)
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['target'] == {'app': NEW} and rec['stored'] == {'app': stored}
    assert ImageOperation({'app': NEW}).settled(cluster.pods['web-0'], rec) is True
    count = len(writes(cluster))
    again = run(cluster, {'app': NEW})[0]
    assert again['changed'] is False and again['summary']['unchanged'] == 2
    assert len(writes(cluster)) == count


def test_check_mode_says_what_admission_would_store():
    cluster = FakeCluster(pods(1))
    cluster.admission = _mirror
    result = run(cluster, {'app': NEW}, check_mode=True)[0]
    assert result['pods'][0]['status'] == 'would_update'
    assert 'admission would store app=%s' % MIRROR in result['pods'][0]['reason']
    assert not writes(cluster)


def test_admission_denial_fails_the_pod_and_leaves_it_as_it_was():
    from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import AdmissionDenied

    def deny(pod):
        raise AdmissionDenied('admission webhook "deny.example" denied the request: no', status=403)
    cluster = FakeCluster(pods(1))
    for item in cluster.pods.values():
        item['spec']['readinessGates'] = [{'conditionType': GATE}]
        item['status']['conditions'].append({'type': GATE, 'status': 'True'})
    cluster.admission = deny
    result = run(cluster, {'app': NEW}, readiness_gate=GATE)[0]
    pod = result['pods'][0]
    assert pod['status'] == 'failed' and 'deny.example' in pod['reason']
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == 'registry.example/app:1.0'
    assert podstate.condition_is(cluster.pods['web-0'], GATE, 'True')   # not left drained


def test_a_tag_switched_to_its_digest_by_a_restart_is_that_tag():
    digest = 'registry.example/app@sha256:' + 'ab' * 32
    cluster = FakeCluster(pods(1))
    pod = cluster.pods['web-0']
    spec_of(pod, 'app')['image'] = digest
    status_of(pod, 'app')['image'] = digest
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = json.dumps({'recreate': {
        'state': record.DONE, 'target': {'app': digest}, 'before': {'app': {'image': 'registry.example/app:1.0'}},
        'uid': pod['metadata']['uid']}})
    result = run(cluster, {'app': 'registry.example/app:1.0'})[0]
    assert result['changed'] is False and result['summary']['unchanged'] == 1
    assert not writes(cluster)
    # another tag is a change
    assert run(cluster, {'app': NEW})[0]['summary']['updated'] == 1


def test_after_an_admission_denial_the_other_pods_are_not_attempted():
    from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import AdmissionDenied

    def deny(pod):
        raise AdmissionDenied('admission webhook "deny.example" denied the request: no', status=403)
    cluster = FakeCluster(pods(3))
    cluster.admission = deny
    result = run(cluster, {'app': NEW}, max_concurrency=1)[0]
    assert [p['status'] for p in result['pods']] == ['failed'] * 3
    assert 'not attempted: pod web-0' in result['pods'][2]['reason']
    assert len(writes(cluster)) == 1


def test_an_image_changed_by_another_writer_during_the_wait_is_a_conflict():
    cluster = FakeCluster(pods(2), kubelet=False)
    watcher = FakeWatcher(cluster)

    def other_writer(fake, name):
        fake.kubelet = True
        fake.set_image(name, 'app', 'registry.example/app:other')
    watcher.during_wait = other_writer
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), options(max_concurrency=1), watcher,
                           sleep=lambda seconds: None)
    result = runner.run([copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])])
    first, second = result['pods']
    assert first['status'] == 'conflict' and 'changed to registry.example/app:other by another writer' in first['reason']
    assert second['status'] == 'updated'
    assert spec_of(cluster.pods['web-0'], 'app')['image'] == 'registry.example/app:other'   # never overwritten
    rec = record.get(cluster.pods['web-0'], 'image')
    assert rec['state'] == 'failed' and 'conflict' in rec['error']


class LaggingWatcher(FakeWatcher):
    """A watch that has not delivered the write yet: the pods as listed until the engine offers a newer
    version (observe), then the cluster's."""

    def __init__(self, cluster):
        super(LaggingWatcher, self).__init__(cluster)
        self.stale = copy.deepcopy(cluster.pods)
        self.offered = set()

    def observe(self, pod):
        self.offered.add(pod['metadata']['name'])

    def get(self, name):
        return super(LaggingWatcher, self).get(name) if name in self.offered else copy.deepcopy(self.stale.get(name))


def test_a_watch_behind_the_write_is_no_conflict():
    cluster = FakeCluster(pods(2))
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), options(), LaggingWatcher(cluster),
                           sleep=lambda seconds: None)
    result = runner.run([copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])])
    assert [p['status'] for p in result['pods']] == ['updated', 'updated']


# ---- pods that go away during a run (pods/departure.py): gone, never failed, nothing undone

def run_watched(cluster, images, watcher, **changes):
    runner = engine.Engine(cluster, ImageOperation(images), options(**changes), watcher, sleep=lambda seconds: None)
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    return runner.run(listed)


def evict(cluster, name):
    """What the Eviction API leaves of a pod while it terminates."""
    pod = cluster.pods[name]
    pod['metadata']['deletionTimestamp'] = '2026-01-01T00:00:00Z'
    pod['status'].setdefault('conditions', []).append({'type': 'DisruptionTarget', 'status': 'True',
                                                       'reason': 'EvictionByEvictionAPI',
                                                       'message': 'Eviction API: evicting'})


def test_a_pod_evicted_while_its_change_is_waited_for_is_gone_in_flight_and_not_failed():
    cluster = FakeCluster(pods(2))
    watcher = FakeWatcher(cluster)
    watcher.during_wait = evict
    result = run_watched(cluster, {'app': NEW}, watcher)
    gone = [p for p in result['pods'] if p['status'] == 'gone']
    assert len(gone) == 1 and gone[0]['gone']['cause'] == 'evicted' and gone[0]['gone']['when'] == 'in_flight'
    assert 'EvictionByEvictionAPI' in gone[0]['gone']['detail']
    assert result['summary']['gone'] == 1 and result['summary']['failed'] == 0 and result['summary']['updated'] == 1


def test_a_pod_deleted_before_its_write_is_gone_and_not_written():
    cluster = FakeCluster(pods(1))

    def delete(cluster, name):   # deleted between the plan and the write: the write is answered 404
        del cluster.pods[name]
        raise NotFoundError('pods "%s" not found' % name, status=404)
    cluster.before_write = delete
    result = run_watched(cluster, {'app': NEW}, FakeWatcher(cluster))
    entry = result['pods'][0]
    assert entry['status'] == 'gone' and entry['gone']['cause'] == 'deleted'
    assert result['summary']['failed'] == 0


def test_a_pending_pod_on_its_way_to_running_is_waited_for_then_updated():
    pending = pods(1)[0]
    running = copy.deepcopy(pending)
    pending['status']['phase'] = 'Pending'
    for status in pending['status'].get('containerStatuses') or []:
        status['state'] = {'waiting': {'reason': 'ContainerCreating'}}
    cluster = FakeCluster([pending])
    watcher = FakeWatcher(cluster)

    def starts(cluster, name):
        cluster.pods[name] = copy.deepcopy(running)
    watcher.during_wait = starts
    result = run_watched(cluster, {'app': NEW}, watcher)
    assert result['pods'][0]['status'] == 'updated'


def test_a_pod_that_stays_pending_is_refused_past_wait_timeout_with_the_reason():
    pending = pods(1)[0]
    pending['status']['phase'] = 'Pending'
    pending['spec'].pop('nodeName', None)
    cluster = FakeCluster([pending])
    result, _runner = run(cluster, {'app': NEW}, wait_timeout=7)
    entry = result['pods'][0]
    assert entry['status'] == 'refused' and 'not scheduled yet' in entry['reason']
    assert 'still after 7s (wait_timeout)' in entry['reason']
    assert writes(cluster) == []


def test_a_lost_node_fails_the_wait_naming_the_node():
    cluster = FakeCluster(pods(1))
    watcher = FakeWatcher(cluster)
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), options(), watcher, sleep=lambda seconds: None)
    runner.nodes._trouble[cluster.pods['web-0']['spec']['nodeName']] = 'node n is not ready: Ready=Unknown since T'
    cluster.kubelet = False   # the pod never restarts: only the node's trouble can end the wait early
    result = runner.run([copy.deepcopy(cluster.pods['web-0'])])
    entry = result['pods'][0]
    assert entry['status'] == 'failed' and 'NodeNotReady' in entry['reason'] and 'Ready=Unknown' in entry['reason']


def test_a_pod_evicted_while_it_is_put_back_in_service_is_gone_after_its_change():
    gated = pods(1)
    gated[0]['spec']['readinessGates'] = [{'conditionType': GATE}]
    gated[0]['status']['conditions'].append({'type': GATE, 'status': 'True'})
    cluster = FakeCluster(gated)
    watcher = FakeWatcher(cluster)
    waits = []
    real_wait = watcher.wait_for

    def wait_for(name, done, failed=None, timeout=300):
        waits.append(name)
        if len(waits) == 4:   # drain, restart, ready, then the undrain's wait for Ready
            evict(cluster, name)
        return real_wait(name, done, failed, timeout)
    watcher.wait_for = wait_for
    result = run_watched(cluster, {'app': NEW}, watcher, readiness_gate=GATE)
    entry = result['pods'][0]
    assert (entry['status'], entry['gone']['cause'], entry['gone']['when']) == ('gone', 'evicted', 'after'), entry
