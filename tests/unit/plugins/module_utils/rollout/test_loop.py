# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""State rollout (rollout/loop.py): how the one call goes on after a step or the finish failed with failed pods,
and what it returns in diff mode."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ValidationError, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.budget_gate import BudgetGate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.finish import FinishStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.health import HealthWatch
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.sync import SyncStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import Workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import rec

NEW = 'reg/app:2'
OLD = 'reg/app:1'


@pytest.fixture(autouse=True)
def fake_watchers(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


def rollout(kube, diff=False, budget_gate=BudgetGate, health_watch=HealthWatch, sync_step=SyncStep,
            finish_step=FinishStep, **params):
    values = dict(state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': NEW},
                  window=False, batch_size='1', run_id='test-run', wait_timeout=30)
    values.update(params)
    clock = ManualClock()
    return Rollout(kube, RolloutOptions.from_params(values), clock=clock, sleep=clock.sleep, diff=diff,
                   budget_gate=budget_gate, health_watch=health_watch, sync_step=sync_step,
                   finish_step=finish_step).run()


class Blocking:
    """A budget gate that blocks the batches whose names ``blocks`` says, and asks the real one for the others."""

    def __init__(self, shared, blocks=lambda names: True):
        self.real, self.blocks = BudgetGate(shared), blocks

    def gate(self, names, whole=True):
        if self.blocks(names):
            raise WaitTimeout('batch %s blocked for 30s: no' % ','.join(names), blocked=['no'])
        return self.real.gate(names, whole)


def block_web_1(shared):
    """A budget gate that blocks the step of web-1 (a failed step)."""
    return Blocking(shared, lambda names: names == ['web-1'])


def test_a_step_the_gate_blocks_is_counted_and_stops_the_run_without_finishing():
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube, budget_gate=Blocking)
    run = result['run']
    assert run['stopped'] is True and 'finished' not in run and len(run['steps']) == 1
    assert run['failed_pods'] == [{'name': 'web-0', 'status': 'blocked', 'reason': 'batch web-0 blocked for 30s: no'}]
    assert run['steps'][0]['progress'][0].startswith('batch 1 of 3 (web-0): 0 done, 1 failed')


class BrokenSync(SyncStep):
    """A sync step whose server is gone."""

    def sync_pods(self, names=None):
        raise ApiError('the server is gone')


def failing_finish(error):
    """The class of a finish step that raises ``error``."""
    class Failing(FinishStep):
        def run_finish(self, final=None, synced=None, known=None, failed=()):
            raise error
    return Failing


def writer_before_finish(name, image):
    """The class of a finish step before which another writer sets pod ``name``'s image (after its batch verified
    it)."""
    class Written(FinishStep):
        def run_finish(self, final=None, synced=None, known=None, failed=()):
            self.shared.kube.pods[name]['spec']['containers'][0]['image'] = image
            return super().run_finish(final, synced, known, failed)
    return Written


def test_an_error_without_failed_pods_fails_the_call():
    with pytest.raises(ApiError):
        rollout(FakeApps([workload('StatefulSet')]), sync_step=BrokenSync)


def test_a_finish_that_finds_pods_another_writer_changed_is_reported_in_finished():
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube, finish_step=writer_before_finish('web-1', 'reg/app:9'))
    finished = result['run']['finished']
    assert result['run']['stopped'] is True and finished['failed'] is True
    assert 'changed by another writer' in finished['msg'] and 'stays held' in finished['msg']
    assert [(item['name'], item['status']) for item in finished['failed_pods']] == [('web-1', engine.CONFLICT)]
    assert 'reg/app:9' in finished['failed_pods'][0]['reason']
    assert rec(kube)['state'] == 'in-progress'   # still held
    assert images_of(kube)['web-1'] == 'reg/app:9'   # not overwritten


def test_state_finish_fails_on_a_pod_another_writer_changed_naming_it():
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, stop_after_batches=3)
    assert first['run']['stopped'] is True
    kube.pods['web-2']['spec']['containers'][0]['image'] = 'reg/app:9'
    with pytest.raises(engine.ConcurrentChange) as info:
        rollout(kube, state='finish')
    assert rec(kube)['state'] == 'in-progress'
    assert info.value.details['failed_pods'][0]['name'] == 'web-2' and 'stays held' in info.value.msg


def test_a_finish_error_without_failed_pods_fails_the_call():
    with pytest.raises(ApiError):
        rollout(FakeApps([workload('StatefulSet')]), finish_step=failing_finish(ApiError('the server is gone')))


def test_diff_mode_returns_each_steps_diff():
    result = rollout(FakeApps([workload('StatefulSet')]), diff=True)
    assert result['run']['stopped'] is False and len(result['diff']) == 3


def images_of(kube):
    return dict((name, pod['spec']['containers'][0]['image']) for name, pod in sorted(kube.pods.items()))


def resumed(kube, first, **params):
    """The role's next call: the run passed back, with the outcome of the analysis it ran there."""
    analysis = params.pop('analysis', None)
    internal = dict(params.pop('internal', {}), resume=first['run'])
    if analysis:
        internal['analysis'] = analysis
    return rollout(kube, internal=internal, **params)


def test_the_loop_returns_after_each_step_for_the_verification_tasks_and_resumes_where_it_stopped():
    kube = FakeApps([workload('StatefulSet')])
    calls = [rollout(kube, internal={'verify': True})]
    while 'point' in calls[-1]['run']:
        assert calls[-1]['run']['point'] == {'after': 'batch %d' % len(calls), 'verify': True, 'analysis': False}
        assert 'finished' not in calls[-1]['run']
        calls.append(resumed(kube, calls[-1], internal={'verify': True}))
    run = calls[-1]['run']
    # the role's loop of points: 3 steps and at most 2 steps added for pods the plan did not have (sweeps)
    assert [call['points_left'] for call in calls] == [5, 4, 3, 0]
    # the tasks run after the last step too, before the finish
    assert len(calls) == 4 and run['steps_run'] == 3 and run['finished']['changed'] is True
    assert [len(call['progress']) for call in calls[:3]] == [1, 1, 1] and calls[1]['resumed'] is True
    assert images_of(kube) == {'web-0': NEW, 'web-1': NEW, 'web-2': NEW}


def test_the_analysis_points_follow_rollout_analysis_after():
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, canary='1', internal={'analysis_after': ['canary', 'end']})
    assert first['run']['point'] == {'after': 'the canary', 'verify': False, 'analysis': True}
    assert first['progress'][0].startswith('canary (batch 1 of 3) (web-0): 1 done')
    second = resumed(kube, first, analysis='success', internal={'analysis_after': ['canary', 'end']})
    assert second['run']['point'] == {'after': 'the last batch', 'verify': False, 'analysis': True}
    assert second['run']['steps_run'] == 3 and 'finished' not in second['run']
    third = resumed(kube, second, analysis='success', internal={'analysis_after': ['canary', 'end']})
    assert 'point' not in third['run'] and third['run']['finished']['changed'] is True
    assert [call['points_left'] for call in (first, second, third)] == [2, 1, 0]


@pytest.mark.parametrize('on_failure', ['stop', 'rollback'])
def test_a_failed_analysis_stops_the_run_or_rolls_it_back(on_failure):
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, canary='1', on_failure=on_failure, internal={'analysis_after': ['canary']})
    after = resumed(kube, first, analysis='failure', on_failure=on_failure, internal={'analysis_after': ['canary']})
    run = after['run']
    assert run['stopped'] is True and run['analysis_failed'] is True and run['steps_run'] == 1
    assert 'analysis after the canary: failure' in after['progress']
    if on_failure == 'rollback':
        assert run['rolled_back'] is True and run['finished']['changed'] is True
        assert images_of(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': OLD}
    else:
        assert 'finished' not in run and 'rolled_back' not in run
        assert images_of(kube) == {'web-0': NEW, 'web-1': OLD, 'web-2': OLD}


def test_an_inconclusive_analysis_halts_and_never_rolls_back():
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, canary='1', on_failure='rollback', internal={'analysis_after': ['canary']})
    after = resumed(kube, first, analysis='inconclusive', on_failure='rollback', internal={'analysis_after': ['canary']})
    assert after['run']['stopped'] is True and 'rolled_back' not in after['run'] and 'finished' not in after['run']
    assert images_of(kube)['web-0'] == NEW


def test_stop_after_batches_stops_the_run_holding_the_workload():
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube, stop_after_batches=2)
    assert result['run']['stopped'] is True and result['run']['steps_run'] == 2 and 'finished' not in result['run']
    assert images_of(kube) == {'web-0': NEW, 'web-1': NEW, 'web-2': OLD}


def test_a_failed_step_with_on_failure_rollback_rolls_the_run_back_in_the_same_call():
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube, on_failure='rollback', budget_gate=block_web_1)
    run = result['run']
    assert run['rolled_back'] is True and run['steps_run'] == 2 and run['rollback']['groups'][0]['names'] == ['web-0']
    assert images_of(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': OLD}
    assert 'rolled 1 pod(s) back to the values from before' in result['progress']
    # the pods carry the revision the template is back on, not the one the steps of this call labelled them with
    revision = kube.get('StatefulSet', 'web')['status']['updateRevision']
    assert set(p['metadata']['labels']['controller-revision-hash'] for p in kube.pods.values()) == {revision}


class Health:
    """A health watch that notes what it was asked to watch and reports ``failed`` each time."""

    def __init__(self, shared, failed=()):
        self.shared, self.failed, self.seen = shared, list(failed), []

    def watch(self, seconds=None):
        self.seen.append((seconds, sorted(self.shared.watched)))
        return {'failed_pods': list(self.failed), 'message': '%d failed' % len(self.failed)}


def test_the_pauses_watch_the_pods_counted_done():
    made = []
    rollout(FakeApps([workload('StatefulSet')]), canary='1', canary_pause_seconds=7, pause_seconds=3,
            health_watch=lambda shared: made.append(Health(shared)) or made[-1])
    seen = made[0].seen
    assert seen == [(7, ['web-0']), (3, ['web-0']), (3, ['web-0', 'web-1'])]


def test_a_pod_that_fails_during_a_pause_stops_the_run_beyond_max_failed_pods():
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube, pause_seconds=3, health_watch=lambda shared: Health(
        shared, [{'name': 'web-0', 'status': 'failed', 'reason': 'restarted'}]))
    assert result['run']['stopped'] is True and result['run']['steps_run'] == 1
    assert result['run']['failed_pods'] == [{'name': 'web-0', 'status': 'failed', 'reason': 'restarted'}]
    assert 'failed while watched: web-0: restarted' in result['progress']


def test_pods_failed_within_max_failed_pods_do_not_keep_the_end_waiting_for_the_status(monkeypatch):
    # A pod failed on a lost node stays unready: the status never converges. The end releases the hold and waits
    # only until the controller saw it, instead of adding wait_timeout to a failure already reported.
    waited = []
    wait_for = Workload.wait_for

    def recorded(self, what, predicate, timeout):
        waited.append(what)
        if what == 'the workload status to converge':
            raise WaitTimeout('timed out waiting for %s' % what)
        return wait_for(self, what, predicate, timeout)
    monkeypatch.setattr(Workload, 'wait_for', recorded)
    kube = FakeApps([workload('Deployment')])
    result = rollout(kube, kind='Deployment', max_failed_pods=1,
                     budget_gate=lambda shared: Blocking(shared, lambda names: names[0].endswith('-1')))
    assert [item['name'][-2:] for item in result['report']['failed_pods']] == ['-1'], result['report']
    assert result['run']['stopped'] is False and 'the workload status to converge' not in waited
    assert 'the controller to observe the release' in waited
    assert not kube.get('Deployment', 'web')['spec'].get('paused')


def test_the_report_is_the_roles_rollout_result_as_the_module_knows_it():
    kube = FakeApps([workload('StatefulSet')])
    calls = [rollout(kube, internal={'verify': True})]
    while 'point' in calls[-1]['run']:
        calls.append(resumed(kube, calls[-1], internal={'verify': True}))
    report = calls[-1]['report']
    # resumed calls report the plan of the first (kept in the run), and the run's end
    assert report['mode'] == 'in_place' and report['pods'] == 3 and report['batches_planned'] == 3
    assert report['batches_run'] == 3 and report['failed_pods'] == [] and report['recreated_pods'] == 0
    assert report['stopped'] is False and report['rolled_back'] is False
    assert sorted(report['timings']) == ['web-0', 'web-1', 'web-2']
    assert report['workload']['updatedReplicas'] == 3 and report['history'] == calls[0]['history']
    # the keys the role fills in are there, in rollout_result's order
    assert list(report)[:3] == ['changed', 'check_mode', 'action'] and report['elapsed_seconds'] is None
    # the end's one list of the pods: when it was, to the millisecond (the result holds as of then)
    assert re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$', report['verified_at'])
    assert calls[0]['report']['verified_at'] is None
    # the pods verified so far are for the next call only: not in the ended run
    assert 'watch' in calls[0]['run'] and 'watch' not in calls[-1]['run']


def test_the_first_call_shows_the_plan_in_lines_and_a_resumed_call_does_not():
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, internal={'verify': True}, partition='1', min_ready_seconds=5, on_failure='rollback')
    assert first['plan_lines'] == [
        'drain mode: none (rollout_readiness_gate is not set): pods are changed while they serve traffic',
        "StatefulSet web: in_place, 3 pod(s), 0 already updated",
        "batches (2): [['web-2'], ['web-1']]",
        "left on the old version (partition): ['web-0']",
        'each pod counts as done after 5s running and ready; on failure: rollback',
        'PodDisruptionBudgets: []', 'not in place: []',
        'owners (refuse): none found']
    assert 'plan_lines' not in resumed(kube, first, internal={'verify': True})
    window = rollout(FakeApps([workload('StatefulSet')]), window=True, batch_size='2', readiness_gate='example.com/g')
    assert window['plan_lines'][0] == 'StatefulSet web: in_place, 3 pod(s), 0 already updated'
    assert window['plan_lines'][1] == 'steps (1), a sliding window of 2 pod(s) in flight: 3 pod(s)'


def test_the_plan_says_how_long_a_drain_of_budgeted_pods_can_be_blocked_by_our_pods_in_flight():
    pdb = {'metadata': {'name': 'web'}, 'spec': {'selector': {'matchLabels': {'app': 'web'}}},
           'status': {'disruptionsAllowed': 1, 'currentHealthy': 3, 'desiredHealthy': 2}}
    lines = rollout(FakeApps([workload('StatefulSet')], pdbs=[pdb]), window=True, wait_timeout=120)['plan_lines']
    budget = [line for line in lines if line.startswith('PodDisruptionBudgets: ')]
    assert budget == ["PodDisruptionBudgets: ['web']; a drain (kubectl drain, an autoscaler) evicting their pods is "
                      "refused (429) while our pods in flight use up a budget: each time at most as long as one "
                      "pod's change, up to wait_timeout (120s), until the rollout ends"]


def test_the_report_of_a_run_rolled_back_names_the_failed_pods():
    report = rollout(FakeApps([workload('StatefulSet')]), on_failure='rollback', budget_gate=block_web_1)['report']
    assert report['rolled_back'] is True and [item['name'] for item in report['failed_pods']] == ['web-1']
    assert report['pods'] == 3 and report['batches_run'] == 2


@pytest.mark.parametrize('state', ['rollback', 'release'])
def test_the_report_of_rollout_action_rollback_or_release(state):
    kube = FakeApps([workload('StatefulSet')])
    rollout(kube, stop_after_batches=1)
    report = rollout(kube, state=state)['report']
    assert report['mode'] == state and report['batches_planned'] == 0 and report['timings'] == {}
    assert report['pods'] == 3 and report['recreated_pods'] == 0   # the workload's pods, as the role counted them


def test_the_run_returned_carries_its_schema_version_and_only_its_schema():
    first = rollout(FakeApps([workload('StatefulSet')]), internal={'verify': True})
    assert first['run']['version'] == 1 and first['run']['next'] == 1 and first['run']['batches'] == [
        ['web-0'], ['web-1'], ['web-2']]


@pytest.mark.parametrize('change, why', [
    (lambda run: run.pop('version'), 'its schema version is None'),
    (lambda run: run.update(version=2), 'its schema version is 2'),
    (lambda run: run.update(injected=True), 'unknown key(s) injected'),
    (lambda run: run.pop('batches'), 'key(s) missing: batches'),
    (lambda run: run.update(next='1'), 'next is a str, not a int'),
    (lambda run: run.update(stopped=1), 'stopped is a int, not a bool'),
    (lambda run: run.update(steps_run=True), 'steps_run is a bool, not a int'),
    (lambda run: run.update(next=7), 'next (7) or steps_run (1) is out of range of its 3 batch(es)'),
    (lambda run: run.update(batches=[['web-0'], [1]]), 'batches is not a list of lists of pod names'),
])
def test_a_run_passed_back_changed_or_of_another_version_is_refused_and_nothing_is_written(change, why):
    kube = FakeApps([workload('StatefulSet')])
    first = rollout(kube, internal={'verify': True})
    before = images_of(kube)
    change(first['run'])
    with pytest.raises(ValidationError) as raised:
        resumed(kube, first, internal={'verify': True})
    assert raised.value.msg.startswith('internal.resume is not a run state this module can resume: ' + why)
    assert images_of(kube) == before


def test_a_resume_that_is_not_a_mapping_is_refused():
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout.runstate import Run
    with pytest.raises(ValidationError, match='it is a list, not the run a previous call returned'):
        Run.load([1])


def test_a_whole_batch_the_gate_blocks_counts_each_of_its_pods_failed_and_none_earlier():
    run = rollout(FakeApps([workload('StatefulSet')]), batch_size='2', budget_gate=Blocking)['run']
    assert run['failed_pods'] == [{'name': 'web-0,web-1', 'status': 'blocked',
                                   'reason': 'batch web-0,web-1 blocked for 30s: no'}]
    line = run['steps'][0]['progress'][0]
    assert line.startswith('batch 1 of 2 (web-0, web-1): 0 done, 2 failed; 0/3 pods run the target') and 'earlier' not in line
