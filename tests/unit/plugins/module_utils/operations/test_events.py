# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes Events (operations/events.py): series aggregation, the one warning of a failed write, check mode,
the pod Events of the engine; the workload's status line (rollout/status.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, TransientError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, events
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import status
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import Step
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import web_pods

DEPLOY = {'apiVersion': 'apps/v1', 'kind': 'Deployment',
          'metadata': {'name': 'web', 'namespace': 'shop', 'uid': 'uid-web', 'resourceVersion': '7'}}


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now


class Refusing:
    """An API server that refuses every request with ``error``."""

    def __init__(self, error):
        self.error, self.calls = error, 0

    def request_once(self, *args, **kwargs):
        self.calls += 1
        raise self.error


def recorder(cluster, **kwargs):
    warnings = []
    clock = Clock()
    return events.Recorder(cluster, run='run-1', warn=warnings.append, clock=clock, **kwargs), warnings, clock


def written(cluster):
    return sorted(getattr(cluster, 'kube_events', {}).values(), key=lambda e: e['metadata']['name'])


def test_first_event_is_created_as_the_built_in_controllers_write_it():
    cluster = FakeCluster([])
    rec, warnings, _clock = recorder(cluster)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_STARTED, 'Rolling out in place to app=web:2.0: 30 of 30 pods')
    (event,) = written(cluster)
    assert event['apiVersion'] == 'events.k8s.io/v1' and event['metadata']['namespace'] == 'shop'
    assert event['metadata']['name'].startswith('web.')
    assert event['reason'] == 'RolloutStarted' and event['action'] == 'Rollout' and event['type'] == 'Normal'
    assert event['reportingController'] == 'inplace.k8s' and event['reportingInstance'].endswith('/run-1')
    assert event['regarding'] == {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'namespace': 'shop', 'name': 'web',
                                  'uid': 'uid-web', 'resourceVersion': '7'}
    assert event['eventTime'].endswith('Z') and '.' in event['eventTime'] and 'series' not in event
    assert warnings == []


def test_a_repeat_patches_the_series_instead_of_a_new_event():
    cluster = FakeCluster([])
    rec, _warnings, clock = recorder(cluster)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_PAUSED, 'Paused for 5s, watching the 3 pod(s) updated so far')
    clock.now += 10
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_PAUSED, 'Paused for 5s, watching the 9 pod(s) updated so far')
    clock.now += 10
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_PAUSED, 'Paused for 5s, watching the 12 pod(s) updated so far')
    (event,) = written(cluster)
    assert event['series']['count'] == 3
    assert event['series']['lastObservedTime'] == events.micro_time(clock.now)
    # The note is immutable on the server: the first one stays.
    assert '3 pod(s)' in event['note']
    assert rec.requests == 3


def test_another_reason_or_another_object_or_an_old_series_is_a_new_event():
    cluster = FakeCluster([])
    rec, _warnings, clock = recorder(cluster)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_STEP, 'Step 1 of 2 done', exact=True)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_STEP, 'Step 2 of 2 done', exact=True)   # exact: not a repeat
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_FINISHED, 'Step 2 of 2 done')
    other = copy.deepcopy(DEPLOY)
    other['metadata'].update(name='api', uid='uid-api')
    rec.record(other, 'Deployment', events.ROLLOUT_FINISHED, 'Step 2 of 2 done')
    clock.now += events.SERIES_SECONDS + 1
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_FINISHED, 'Step 2 of 2 done')
    found = written(cluster)
    assert len(found) == 5 and not any('series' in e for e in found)
    assert sorted(e['reason'] for e in found) == ['RolloutFinished'] * 3 + ['RolloutStep'] * 2


def test_an_expired_event_is_written_again():
    cluster = FakeCluster([])
    rec, warnings, _clock = recorder(cluster)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_PAUSED, 'Paused for 5s')
    cluster.kube_events.clear()   # the server's event TTL
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_PAUSED, 'Paused for 5s')
    assert len(written(cluster)) == 1 and warnings == []


def test_forbidden_is_one_warning_then_no_more_requests():
    kube = Refusing(ForbiddenError('events.events.k8s.io is forbidden: User "u" cannot create resource "events"',
                                   status=403))
    rec, warnings, _clock = recorder(kube)
    for reason in (events.ROLLOUT_STARTED, events.ROLLOUT_STEP, events.ROLLOUT_FINISHED):
        rec.record(DEPLOY, 'Deployment', reason, 'note')
    assert kube.calls == 1
    assert len(warnings) == 1
    assert 'forbidden' in warnings[0] and 'create and patch on events (events.k8s.io)' in warnings[0]
    assert 'rbac/inplace-k8s-rbac.yml' in warnings[0] and 'events=false' in warnings[0]


def test_any_other_error_is_one_warning_too():
    kube = Refusing(TransientError('cannot reach the API server'))
    rec, warnings, _clock = recorder(kube)
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_STARTED, 'a')
    rec.record(DEPLOY, 'Deployment', events.ROLLOUT_STEP, 'b')
    assert kube.calls == 1 and warnings == ['Kubernetes Events were not written (cannot reach the API server); '
                                            'the run went on without them']


def test_a_long_note_is_cut_to_the_servers_limit():
    note = events.short('é' * 2000)
    assert len(note.encode('utf-8')) <= events.NOTE_BYTES and note.endswith('...')


def engine_run(cluster, images, check_mode=False, on_failure='stop', successes=events.POD_SUCCESSES):
    rec = events.Recorder(cluster, enabled=not check_mode, clock=Clock(), successes=successes)
    options = engine.Options(check_mode=check_mode, wait=True, wait_timeout=30, max_concurrency=2,
                             readiness_gate=None, drain_seconds=0, require_readiness_gate=False,
                             gate_on_failure='restore_if_healthy', on_failure=on_failure, min_ready_seconds=0)
    runner = engine.Engine(cluster, ImageOperation(images), options, FakeWatcher(cluster), sleep=lambda s: None,
                           events=rec)
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    return runner.run(listed), rec


def test_check_mode_writes_no_event():
    cluster = FakeCluster(web_pods(2))
    result, rec = engine_run(cluster, {'app': 'registry.example/app:2.0'}, check_mode=True)
    assert result['summary']['would_update'] == 2
    assert written(cluster) == [] and rec.requests == 0


def test_pod_events_of_a_success_are_bounded_and_failures_always_told():
    cluster = FakeCluster(web_pods(3))
    result, rec = engine_run(cluster, {'app': 'registry.example/app:2.0'}, successes=1)
    assert result['summary']['updated'] == 3
    told = [(e['regarding']['name'], e['reason']) for e in written(cluster)]
    # One pod of three told its start and success (the budget), the others none.
    assert sorted(told) == [('web-0', 'InPlaceUpdateStarted'), ('web-0', 'InPlaceUpdated')] or \
        len(told) == 2 and len(set(name for name, _reason in told)) == 1
    assert rec.requests == 2
    event = written(cluster)[0]
    assert event['regarding']['kind'] == 'Pod' and event['regarding']['uid'].startswith('uid-')
    assert 'registry.example/app:1.0 -> registry.example/app:2.0' in event['note']

    cluster = FakeCluster(web_pods(2))
    result, rec = engine_run(cluster, {'app': 'registry.example/app:2.0-crash'}, successes=0)
    failed = [e for e in written(cluster) if e['reason'] == 'InPlaceUpdateFailed']
    assert sorted(e['regarding']['name'] for e in failed) == ['web-0', 'web-1']
    assert all(e['type'] == 'Warning' and 'CrashLoopBackOff' in e['note'] for e in failed)


def test_a_rollback_is_told_on_the_pod():
    cluster = FakeCluster(web_pods(1))
    result, _rec = engine_run(cluster, {'app': 'registry.example/app:2.0-crash'}, on_failure='rollback')
    assert result['pods'][0]['status'] == 'rolled_back'
    reasons = [e['reason'] for e in written(cluster)]
    assert reasons.count('InPlaceRolledBack') == 1 and 'InPlaceUpdated' not in reasons
    (back,) = [e for e in written(cluster) if e['reason'] == 'InPlaceRolledBack']
    assert back['type'] == 'Warning' and 'app=registry.example/app:1.0' in back['note']


# ---- the status line


REC = {'state': 'in-progress', 'target': {'images': {'app': 'registry.example/web:2.0'}},
       'before': {'images': {'app': 'registry.example/web:1.0'}}, 'started': '2026-11-27T10:02:11Z',
       'owner': {'run': 'rollout-abc'}}


def test_status_while_rolling_says_where_it_is_and_the_way_out():
    line = status.text(REC, {'done': 12, 'total': 30, 'step': 'step 3 of 5 done'})
    assert line.startswith('rolling: 12/30 pods on app=registry.example/web:2.0, step 3 of 5 done, started 10:02:11Z '
                           'by run rollout-abc')
    assert 'run the same change again' in line and 'rollout_action=rollback' in line


def test_status_when_halted_names_the_failures_and_the_way_out():
    line = status.text(REC, {'done': 1, 'total': 30, 'step': 'at step 1 of 5', 'halted': True, 'failed': 1})
    assert line.startswith('halted: 1/30 pods on app=registry.example/web:2.0, at step 1 of 5, 1 failed;')
    assert 'resume: run the same change again' in line and 'rollout_action=release' in line


def test_status_of_each_end():
    done = dict(REC, state='done', finished='2026-11-27T10:05:00Z')
    assert status.text(done, {'done': 30, 'total': 30}) == (
        'done: 30/30 pods on app=registry.example/web:2.0, started 10:02:11Z by run rollout-abc, finished 10:05:00Z')
    back = status.text(dict(done, state='rolled-back'), {'done': 30, 'total': 30})
    assert back.startswith('rolled back: 30/30 pods on app=registry.example/web:1.0 again')
    assert status.text(dict(done, state='released'), {'done': 12, 'total': 30}).startswith(
        'released: ended where it stood, 12/30 pods on app=registry.example/web:2.0')
    assert status.text(dict(REC, state='rolling-back')).startswith(
        'rolling back: to app=registry.example/web:1.0 (from app=registry.example/web:2.0)')


def test_teller_tells_a_step_and_a_halt():
    cluster = FakeCluster([])

    class Workload:
        obj, kind, progress = DEPLOY, 'Deployment', None
    w = Workload()
    teller = status.Teller(events.Recorder(cluster, clock=Clock()), w)
    step = Step(names=('web-0',), label='step 1 of 3')
    assert teller.step(step, {'updated': 1, 'total': 3, 'failed_pods': [], 'halt': False}) is False
    assert w.progress == {'done': 1, 'total': 3, 'step': 'step 1 of 3 done', 'halted': False, 'failed': 0, 'gone': 0}
    halted = {'updated': 1, 'total': 3, 'halt': True,
              'failed_pods': [{'name': 'web-1', 'reason': 'container app: CrashLoopBackOff'}]}
    assert teller.step(Step(names=('web-1',), label='step 2 of 3'), halted) is True
    reasons = [(e['reason'], e['type']) for e in written(cluster)]
    assert sorted(reasons) == [('RolloutHalted', 'Warning'), ('RolloutStep', 'Normal')]
    (halt,) = [e for e in written(cluster) if e['reason'] == 'RolloutHalted']
    assert 'web-1: container app: CrashLoopBackOff' in halt['note'] and 'rollout_action=rollback' in halt['note']
    assert w.progress['halted'] is True and w.progress['step'] == 'at step 2 of 3'


def test_resources_read_as_requests_and_limits():
    values = {'resources': {'app': {'requests': {'cpu': '500m', 'memory': '192Mi'}, 'limits': {'cpu': '1'}}}}
    assert status.target_text(values) == 'app limits cpu=1 requests cpu=500m,memory=192Mi'


def test_a_step_called_alone_tells_the_pods_done_so_far():
    class Workload:
        obj, kind, progress = DEPLOY, 'Deployment', None
    w = Workload()
    teller = status.Teller(events.Recorder.off(), w)
    teller.before_step(Step(names=('web-3',), label='step 3 of 5'), 12)
    assert status.text(REC, w.progress).startswith('rolling: 12 pods done on app=registry.example/web:2.0, at step 3 of 5')
    w.progress = {'done': 20, 'total': 30}
    teller.before_step(Step(names=('web-4',), label='step 4 of 5'), 20)   # the one call's own count stays
    assert w.progress == {'done': 20, 'total': 30}
