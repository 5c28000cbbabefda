# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout steps on workloads (StatefulSet, DaemonSet, Deployment, ReplicaSet) on the apps/v1 fake:
prepare holds the controller and writes the template, batch updates pods in place, finish restores the
controller and waits for its status, rollback and release end a rollout."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import AdmissionDenied, ValidationError, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.pods import record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import WORKLOAD_ANNOTATION
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import RESTART_ANNOTATION
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.batch_step import recreated_pods
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import RolloutError
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, template, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import NEW, OLD, images, rec, run_all, step, uids
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import workload_params as params


@pytest.fixture(autouse=True)
def fake_watcher(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)


def rolled_back_unfinished(kube, **changes):
    """The rollback step alone (state rollback finishes too): a rollback that did not finish."""
    clock = ManualClock()
    options = RolloutOptions.from_params(params(state='rollback', **changes))
    return Rollout(kube, options, False, clock=clock, sleep=clock.sleep).rollback_step.restore_before()


# ---- StatefulSet

def test_statefulset_rollout_in_place_from_prepare_to_finish():
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    old_revision = kube.get('StatefulSet', 'web')['status']['updateRevision']
    prepared = step(kube, 'prepare', images={'app': NEW})
    sts = kube.get('StatefulSet', 'web')
    assert prepared['changed'] is True and prepared['mode'] == 'in_place' and prepared['template_changed'] is True
    assert prepared['batches'] == [['web-0'], ['web-1'], ['web-2']]
    assert sts['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 3}}
    assert sts['spec']['template']['spec']['containers'][0]['image'] == NEW
    assert prepared['revision'] == sts['status']['updateRevision'] != old_revision
    assert prepared['labels'] == {'controller-revision-hash': prepared['revision']}
    assert rec(kube)['state'] == 'in-progress' and rec(kube)['before'] == {'images': {'app': OLD}, 'resources': {}}
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': OLD} and uids(kube) == before
    for names in prepared['batches']:
        kube.calls = []
        result = step(kube, 'batch', images={'app': NEW}, names=names)
        # One write per pod: the revision label rides on the image write, nothing is relabelled after it.
        assert result['failed_pods'] == [] and result['relabelled'] == []
        assert kube.pods[names[0]]['metadata']['labels']['controller-revision-hash'] == prepared['revision']
        assert [call for call in kube.calls if call[0] == 'patch' and call[1] == names[0]] == [
            ('patch', names[0], None)], kube.calls
    finished = step(kube, 'finish', images={'app': NEW})
    sts = kube.get('StatefulSet', 'web')
    assert finished['changed'] is True and finished['old'] == []
    assert rec(kube)['state'] == 'done' and 'finished' in rec(kube)
    assert sts['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}}
    assert sts['status']['currentRevision'] == sts['status']['updateRevision']
    assert finished['workload']['currentRevision'] == sts['status']['updateRevision']
    # updated in place: the same pods, never recreated by the controller
    assert uids(kube) == before and set(images(kube).values()) == {NEW}
    again = step(kube, 'prepare', images={'app': NEW})
    assert again['changed'] is False and again['mode'] == 'unchanged' and again['batches'] == []
    assert step(kube, 'finish', images={'app': NEW})['changed'] is False


def test_prepare_check_mode_writes_nothing():
    kube = FakeApps([workload('StatefulSet')])
    result = step(kube, 'prepare', check_mode=True, images={'app': NEW})
    assert result['changed'] is True and result['batches'] == [['web-0'], ['web-1'], ['web-2']]
    # the server judges the template (dry run), nothing is stored
    assert [call[3] for call in kube.apps_writes()] == [{'dryRun': 'All'}] and rec(kube) is None
    assert kube.get('StatefulSet', 'web')['metadata']['generation'] == 1


def test_prepare_runs_the_template_through_admission_first_and_a_refusal_holds_nothing():
    kube = FakeApps([workload('StatefulSet')])

    def deny(resource, obj):
        raise AdmissionDenied('admission webhook "policy" denied the request: images must be signed', status=400)
    kube.template_admission = deny
    with pytest.raises(AdmissionDenied):
        step(kube, 'prepare', images={'app': NEW})
    assert kube.apps_writes() and all(call[3] == {'dryRun': 'All'} for call in kube.apps_writes())
    sts = kube.get('StatefulSet', 'web')
    assert rec(kube) is None and sts['metadata']['generation'] == 1
    assert sts['spec']['updateStrategy']['rollingUpdate'] == {'partition': 0}


def test_a_pod_another_writer_changed_after_its_batch_stops_the_finish_held_and_a_rerun_converges():
    # Found by the chaos soak: a pod set to a third image after its batch verified it (and after the last watch)
    # let the rollout end as done, with that pod on the writer's image and nothing saying why.
    kube = FakeApps([workload('StatefulSet')])
    prepared = step(kube, 'prepare', images={'app': NEW})
    for names in prepared['batches']:
        step(kube, 'batch', images={'app': NEW}, names=names)
    kube.set_image('web-1', 'app', 'reg/app:3-writer')
    with pytest.raises(Exception) as info:
        step(kube, 'finish', images={'app': NEW})
    assert 'web-1 (spec now has app=reg/app:3-writer)' in info.value.msg and 'stays held' in info.value.msg
    assert info.value.details['failed_pods'][0]['status'] == 'conflict'
    sts = kube.get('StatefulSet', 'web')
    assert sts['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 3}}
    assert rec(kube)['state'] == 'in-progress'
    # The other writer is done: the same rollout again brings the pod to the target and finishes.
    again = step(kube, 'prepare', images={'app': NEW})
    assert again['batches'] == [['web-1']]
    step(kube, 'batch', images={'app': NEW}, names=['web-1'])
    assert step(kube, 'finish', images={'app': NEW})['changed'] is True
    assert set(images(kube).values()) == {NEW} and rec(kube)['state'] == 'done'


def test_finish_of_a_partial_rollout_keeps_the_old_pods_protected():
    kube = FakeApps([workload('StatefulSet')])
    prepared = step(kube, 'prepare', images={'app': NEW}, order='reverse_ordinal')
    assert prepared['batches'][0] == ['web-2']
    step(kube, 'batch', images={'app': NEW}, names=['web-2'])
    finished = step(kube, 'finish', images={'app': NEW})
    assert finished['old'] == ['web-0', 'web-1'] and '2 pod(s) left on the old version' in finished['warnings'][-1]
    sts = kube.get('StatefulSet', 'web')
    assert sts['spec']['updateStrategy']['rollingUpdate']['partition'] == 2
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': NEW}


def test_on_delete_statefulset_converges_through_rolling_update_and_gets_on_delete_back():
    kube = FakeApps([workload('StatefulSet', strategy={'type': 'OnDelete'})])
    before = uids(kube)
    run_all(kube, 'StatefulSet', images={'app': NEW})
    sts = kube.get('StatefulSet', 'web')
    assert sts['spec']['updateStrategy'] == {'type': 'OnDelete'}
    assert sts['status']['currentRevision'] == sts['status']['updateRevision']
    assert uids(kube) == before and rec(kube)['state'] == 'done'
    strategies = [body['spec']['updateStrategy'] for _resource, _name, body in kube.stored
                  if isinstance(body, dict) and 'updateStrategy' in (body.get('spec') or {})]
    assert strategies == [{'type': 'RollingUpdate', 'rollingUpdate': {'partition': 3}},
                          {'type': 'OnDelete', 'rollingUpdate': None}]


def test_rollback_puts_the_template_back_and_groups_the_pods_to_update_back():
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    prepared = step(kube, 'prepare', images={'app': NEW})
    step(kube, 'batch', images={'app': NEW}, names=prepared['batches'][0])
    back = rolled_back_unfinished(kube, images={'app': NEW})
    assert back['changed'] is True and rec(kube)['state'] == 'rolling-back'
    assert back['groups'] == [{'names': ['web-0'], 'images': {'app': OLD}, 'resources': {}}]
    assert kube.get('StatefulSet', 'web')['spec']['template']['spec']['containers'][0]['image'] == OLD
    # the pods are put back in the same call, through the engine, in place
    assert [r['names'] for r in back['restored']] == [['web-0']] and 'resources' not in back['restored'][0]
    assert back['restored'][0]['images']['summary']['updated'] == 1 and images(kube)['web-0'] == OLD
    result = step(kube, 'batch', images={'app': OLD}, names=['web-0'])
    assert result['failed_pods'] == [] and result['images']['summary']['updated'] == 0
    finished = step(kube, 'finish', images={'app': NEW})
    assert rec(kube)['state'] == 'rolled-back' and finished['old'] == []
    assert uids(kube) == before
    again = step(kube, 'rollback', images={'app': NEW})
    assert again['changed'] is False and again['groups'] == [] and again['finished']['changed'] is False


def test_state_rollback_puts_the_template_and_pods_back_then_finishes():
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    prepared = step(kube, 'prepare', images={'app': NEW})
    step(kube, 'batch', images={'app': NEW}, names=prepared['batches'][0])
    back = step(kube, 'rollback', images={'app': NEW})
    assert back['changed'] is True and back['finished']['changed'] is True and rec(kube)['state'] == 'rolled-back'
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': OLD} and uids(kube) == before
    assert kube.get('StatefulSet', 'web')['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {
        'partition': 0}}


def test_rollback_without_a_record_is_refused():
    kube = FakeApps([workload('StatefulSet')])
    with pytest.raises(ValidationError, match='has no rollout record to roll back'):
        step(kube, 'rollback', images={'app': NEW})


def test_an_unfinished_rollback_is_finished_when_the_same_change_is_prepared_again():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW})
    rolled_back_unfinished(kube, images={'app': NEW})
    writes = len(kube.apps_writes())
    resumed = step(kube, 'prepare', images={'app': NEW})
    assert resumed['mode'] == 'rollback' and resumed['changed'] is True and resumed['batches'] == []
    assert 'a rollback of this change did not finish' in resumed['warnings'][0]
    assert len(kube.apps_writes()) == writes


def test_a_different_change_while_a_rollout_is_unfinished_is_refused_with_the_way_out():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW})
    with pytest.raises(ValidationError) as caught:
        step(kube, 'prepare', images={'app': 'reg/app:3'})
    message = caught.value.msg
    assert 'StatefulSet shop/web has an unfinished rollout to {"images": {"app": "reg/app:2"}}' in message
    assert 'rollout_action=rollback' in message and 'rollout_action=release' in message
    assert kube.get('StatefulSet', 'web')['spec']['template']['spec']['containers'][0]['image'] == NEW


def test_another_live_run_holding_the_workload_is_refused():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW}, run_id='other-run')
    with pytest.raises(ValidationError, match='wait, or set force_takeover'):
        step(kube, 'batch', images={'app': NEW}, names=['web-0'])
    taken = step(kube, 'batch', images={'app': NEW}, names=['web-0'], force_takeover=True)
    assert taken['failed_pods'] == [] and rec(kube)['owner']['run'] == 'test-run'


def test_release_restores_the_strategy_and_leaves_every_pod_as_it_is():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW})
    step(kube, 'batch', images={'app': NEW}, names=['web-0'])
    released = step(kube, 'release', images={'app': NEW})
    assert released['changed'] is True and released['old'] == ['web-1', 'web-2']
    assert 'StatefulSet shop/web released: 2 pod(s) not on the rollout\'s target stay as they are: web-1, web-2' \
        in released['warnings']
    assert any('are not the lowest ordinals: the partition stays at 3' in w for w in released['warnings'])
    assert rec(kube)['state'] == 'released'
    # pods 1 and 2 are not the lowest ordinals: the partition stays at replicas
    assert kube.get('StatefulSet', 'web')['spec']['updateStrategy']['rollingUpdate']['partition'] == 3
    assert images(kube) == {'web-0': NEW, 'web-1': OLD, 'web-2': OLD}
    nothing = step(kube, 'release', images={'app': NEW})
    assert nothing['changed'] is False and 'no unfinished rollout to release (record state released)' in nothing['message']


def test_release_of_a_rollback_uses_the_values_from_before():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW})
    rolled_back_unfinished(kube, images={'app': NEW})
    released = step(kube, 'release')
    assert released['old'] == [] and rec(kube)['state'] == 'released'


def test_release_needs_a_workload():
    with pytest.raises(ValidationError, match='state release needs kind and name'):
        step(FakeApps(), 'release', kind=None, name=None, label_selectors=['app=web'])


def test_a_missing_workload_and_a_missing_namespace_are_named():
    with pytest.raises(ValidationError, match='StatefulSet nope not found in namespace shop'):
        step(FakeApps([workload('StatefulSet')]), 'prepare', name='nope', images={'app': NEW})
    with pytest.raises(ValidationError, match='namespace elsewhere does not exist'):
        step(FakeApps([workload('StatefulSet')]), 'prepare', namespace='elsewhere', images={'app': NEW})


def test_a_change_that_cannot_be_made_in_place_needs_allow_recreate():
    kube = FakeApps([workload('StatefulSet')])
    with pytest.raises(ValidationError) as caught:
        step(kube, 'prepare', images={'setup': 'reg/setup:2'})
    assert 'cannot be made in place (spec.initContainers[setup].image' in caught.value.msg
    assert 'set allow_recreate' in caught.value.msg and kube.apps_writes() == []


def test_allow_recreate_hands_the_change_to_the_controller():
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    preview = step(kube, 'prepare', check_mode=True, images={'setup': 'reg/setup:2'}, allow_recreate=True)
    assert preview['mode'] == 'recreate' and 'would be handed to the StatefulSet controller' in preview['message']
    result = step(kube, 'prepare', images={'setup': 'reg/setup:2'}, allow_recreate=True)
    assert result['mode'] == 'recreate' and result['changed'] is True
    assert '3 of 3 replaced' in result['message']
    assert all(before[name] != uid for name, uid in uids(kube).items())


def test_allow_recreate_on_delete_only_writes_the_template():
    kube = FakeApps([workload('StatefulSet', strategy={'type': 'OnDelete'})])
    before = uids(kube)
    result = step(kube, 'prepare', images={'setup': 'reg/setup:2'}, allow_recreate=True)
    assert 'written to the template only' in result['message'] and uids(kube) == before


def test_a_controller_that_does_not_observe_the_template_times_out():
    kube = FakeApps([workload('StatefulSet')])
    kube.observe = False
    with pytest.raises(WaitTimeout, match='waiting for the controller to observe the new template'):
        step(kube, 'prepare', images={'app': NEW}, wait_timeout=3)


# ---- DaemonSet

def test_daemonset_rollout_in_place():
    kube = FakeApps([workload('DaemonSet')])
    before = uids(kube)
    prepared, finished = run_all(kube, 'DaemonSet', images={'app': NEW})
    ds = kube.get('DaemonSet', 'web')
    assert prepared['labels']['pod-template-generation'] == '2'
    assert prepared['labels']['controller-revision-hash'] == ds['metadata']['annotations']['inplace.test/hash']
    assert ds['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': 1, 'maxSurge': 0}}
    assert finished['changed'] is True and uids(kube) == before and set(images(kube).values()) == {NEW}
    assert all(p['metadata']['labels']['pod-template-generation'] == '2' for p in kube.pods.values())


def test_daemonset_left_partly_updated_stays_on_delete():
    kube = FakeApps([workload('DaemonSet')])
    prepared = step(kube, 'prepare', kind='DaemonSet', images={'app': NEW})
    step(kube, 'batch', kind='DaemonSet', images={'app': NEW}, names=prepared['batches'][0])
    finished = step(kube, 'finish', kind='DaemonSet', images={'app': NEW})
    assert len(finished['old']) == 2
    assert kube.get('DaemonSet', 'web')['spec']['updateStrategy']['type'] == 'OnDelete'


# ---- Deployment and ReplicaSet

def test_deployment_rollout_keeps_the_replicaset_and_its_pods():
    kube = FakeApps([workload('Deployment')])
    before, sets = uids(kube), [rs['metadata']['name'] for rs in kube.of_kind('ReplicaSet')]
    prepared, finished = run_all(kube, 'Deployment', images={'app': NEW}, batch_size=2)
    assert prepared['revision'] == sets[0] and len(prepared['batches']) == 2
    # the pods' ReplicaSet is reused; the template from before is kept as history, without replicas (test_history.py)
    kept = prepared['history']['previous']['name']
    assert [rs['metadata']['name'] for rs in kube.of_kind('ReplicaSet')] == sorted(sets + [kept])
    assert kube.get('ReplicaSet', kept)['spec']['replicas'] == 0
    deploy = kube.get('Deployment', 'web')
    assert 'paused' not in deploy['spec'] or deploy['spec']['paused'] is False
    assert finished['workload']['replicasets'] == sorted(sets + [kept]) and uids(kube) == before
    assert kube.get('ReplicaSet', sets[0])['spec']['template']['spec']['containers'][0]['image'] == NEW


def test_deployment_in_the_middle_of_its_own_rollout_is_refused():
    kube = FakeApps([workload('Deployment')])
    kube.get('Deployment', 'web')['spec']['paused'] = True
    old = kube.of_kind('ReplicaSet')[0]
    kube.create(dict(old, metadata=dict(old['metadata'], name='web-other'), spec=dict(
        old['spec'], replicas=1, template=template('reg/app:0'))))
    with pytest.raises(RolloutError, match=r'in the middle of a rollout \(ReplicaSets web-other still have replicas\)'):
        step(kube, 'prepare', kind='Deployment', images={'app': NEW})


def test_replicaset_template_and_pods():
    kube = FakeApps([workload('ReplicaSet')])
    before = uids(kube)
    prepared, finished = run_all(kube, 'ReplicaSet', images={'app': NEW}, batch_size=3)
    assert prepared['revision'] is None and prepared['labels'] == {}
    assert kube.get('ReplicaSet', 'web')['spec']['template']['spec']['containers'][0]['image'] == NEW
    assert finished['changed'] is True and uids(kube) == before and rec(kube, 'ReplicaSet')['state'] == 'done'


# ---- restart and resources on a workload

def test_restart_of_a_workload_marks_pods_and_waits_for_the_status():
    kube = FakeApps([workload('StatefulSet')])
    prepared = step(kube, 'prepare', restart=['app'], restart_id='r1')
    assert prepared['mode'] == 'restart' and len(prepared['batches']) == 3
    for names in prepared['batches']:
        result = step(kube, 'batch', restart=['app'], restart_id='r1', names=names, restart_strategy='image_reference')
        assert result['failed_pods'] == [], result
    finished = step(kube, 'finish', restart=['app'], restart_id='r1')
    assert all(p['metadata']['annotations'][RESTART_ANNOTATION] == 'r1' for p in kube.pods.values())
    assert finished['changed'] is False and WORKLOAD_ANNOTATION not in kube.get('StatefulSet', 'web')['metadata'].get(
        'annotations', {})


def test_resources_rollout_on_a_statefulset():
    kube = FakeApps([workload('StatefulSet')])
    change = {'app': {'requests': {'cpu': '150m'}}}
    prepared, finished = run_all(kube, 'StatefulSet', resources=change)
    assert rec(kube)['before']['resources']['app']['requests']['cpu'] == '100m'
    assert all(p['spec']['containers'][0]['resources']['requests']['cpu'] == '150m' for p in kube.pods.values())
    assert finished['old'] == []


def test_gate_blocks_on_a_budget_and_lets_the_batch_through_in_check_mode():
    pdb = {'metadata': {'name': 'web'}, 'spec': {'selector': {'matchLabels': {'app': 'web'}}},
           'status': {'disruptionsAllowed': 0, 'currentHealthy': 3, 'desiredHealthy': 3}}
    kube = FakeApps([workload('StatefulSet')], pdbs=[pdb])
    prepared = step(kube, 'prepare', images={'app': NEW})
    assert prepared['pdbs'][0]['pods'] == ['web-0', 'web-1', 'web-2'] and prepared['pdbs'][0]['selector'] == 'app=web'
    with pytest.raises(WaitTimeout, match='PodDisruptionBudget web allows 0 disruption'):
        step(kube, 'gate', images={'app': NEW}, names=['web-0'], wait_timeout=3)
    assert step(kube, 'gate', check_mode=True, images={'app': NEW}, names=['web-0'])['blocked']


def test_gate_max_unavailable():
    kube = FakeApps([workload('StatefulSet')])
    kube.pods['web-1']['status']['conditions'][0]['status'] = 'False'
    with pytest.raises(WaitTimeout, match=r'max_unavailable 1: 1 pod\(s\) already unavailable \(web-1\)'):
        step(kube, 'gate', images={'app': NEW}, names=['web-0'], max_unavailable=1, wait_timeout=2)
    assert step(kube, 'gate', images={'app': NEW}, names=['web-0'], max_unavailable=2)['blocked'] == []


def test_a_template_write_that_conflicts_is_recomputed_on_a_fresh_read():
    kube = FakeApps([workload('StatefulSet')])

    def controller_writes(cluster, resource, name):
        obj = cluster.objects[(resource, name)]
        obj['status']['observedGeneration'] = obj['metadata']['generation']
        cluster._touch(obj)
    step(kube, 'prepare', images={'app': NEW}, check_mode=False)
    kube.before_apps_write = controller_writes
    step(kube, 'rollback', images={'app': NEW})
    assert kube.get('StatefulSet', 'web')['spec']['template']['spec']['containers'][0]['image'] == OLD


def test_watch_of_a_workload_renews_the_hold_and_reports_failed_pods():
    kube = FakeApps([workload('StatefulSet')])
    prepared = step(kube, 'prepare', images={'app': NEW})
    batch = step(kube, 'batch', images={'app': NEW}, names=prepared['batches'][0])
    clock = ManualClock()
    quiet = step(kube, 'watch', clock=clock, images={'app': NEW}, seconds=3, watch=batch['verified'])
    assert quiet['failed_pods'] == [] and quiet['watched'] == 1 and clock.now >= 3
    kube.set_image('web-0', 'app', 'reg/app:2-crash')   # another writer: a conflict, reported as such
    failed = step(kube, 'watch', images={'app': NEW}, seconds=3, watch=batch['verified'])
    assert [(p['name'], p['status']) for p in failed['failed_pods']] == [('web-0', 'conflict')]
    assert 'changed by another writer after it was counted done (its spec now has app=reg/app:2-crash)' in \
        failed['failed_pods'][0]['reason']
    preview = step(kube, 'watch', check_mode=True, images={'app': NEW}, seconds=3, watch=batch['verified'])
    assert preview['message'] == 'would watch 1 pod(s) for 3s'
    # Nothing to watch: the pause is still kept, as a plain wait.
    assert step(kube, 'watch', images={'app': NEW}, seconds=3)['message'] == '0 pod(s) stayed healthy for 3s'


def test_template_of_a_different_workload_kind_is_refused():
    with pytest.raises(ValidationError, match='kind must be one of'):
        step(FakeApps(), 'prepare', kind='CronJob', images={'app': NEW})


# ---- pods chosen by label selectors, leftovers, bad input

def test_pods_chosen_by_selectors_are_updated_directly_and_rolled_back_from_their_records():
    kube = FakeApps([workload('StatefulSet')])
    selected = dict(kind=None, name=None, label_selectors=['app=web'], images={'app': NEW})
    prepared = step(kube, 'prepare', **selected)
    assert prepared['mode'] == 'in_place' and prepared['batches'] == [['web-0'], ['web-1'], ['web-2']]
    assert 'the template of their owner was not changed' in prepared['warnings'][0]
    assert step(kube, 'batch', names=['web-0'], **selected)['failed_pods'] == []
    assert step(kube, 'finish', **selected)['changed'] is False
    back = step(kube, 'rollback', **selected)
    assert back['changed'] is True and back['groups'] == [{'names': ['web-0'], 'images': {'app': OLD}, 'resources': {}}]
    assert kube.get('StatefulSet', 'web')['spec']['template']['spec']['containers'][0]['image'] == OLD
    with pytest.raises(ValidationError, match='give kind and name of a workload, or label_selectors'):
        step(kube, 'prepare', kind=None, name=None, images={'app': NEW})


def web_1_left_drained():
    """A gated StatefulSet whose pod web-1 was left with its readiness gate False (drained)."""
    gated = template()
    gated['spec']['readinessGates'] = [{'conditionType': 'inplace.k8s/ready'}]
    kube = FakeApps([workload('StatefulSet', tmpl=gated)])
    for pod in kube.pods.values():
        pod['status']['conditions'].append({'type': 'inplace.k8s/ready', 'status': 'True'})
    kube.pods['web-1']['status']['conditions'][-1].update(status='False', reason='InplaceUpdate')
    return kube


def test_sync_sets_the_readiness_gate_of_pods_left_drained_by_an_interrupted_run_true_again():
    kube = web_1_left_drained()
    synced = step(kube, 'sync', images={'app': OLD}, readiness_gate='inplace.k8s/ready')
    assert synced['undrained'] == ['web-1'] and synced['changed'] is True
    assert 'left drained by an interrupted run: web-1' in synced['warnings'][-1]
    assert kube.pods['web-1']['status']['conditions'][-1]['status'] == 'True'


@pytest.mark.parametrize('alive', [False, True])
def test_a_pod_drained_by_a_killed_run_gets_its_gate_back_but_not_one_a_live_run_holds(alive):
    # Found by the chaos soak (tests/soak): ansible-playbook SIGKILLed after a batch wrote its images and before
    # it set the gates True again left those pods converged, drained and with an in-progress record; the next
    # runs counted them updated and skipped them as busy, and ended successfully with the pods out of service.
    kube = web_1_left_drained()
    owner = record.new_owner(pid=os.getpid() if alive else 2 ** 22 + 1)   # no such pid when not alive
    left = record.claim(record.begin(kube.pods['web-1'], 'image', {'app': OLD}, {}), owner, 600)
    kube.pods['web-1']['metadata'].setdefault('annotations', {})[record.ANNOTATION] = json.dumps({'image': left})
    synced = step(kube, 'sync', images={'app': OLD}, readiness_gate='inplace.k8s/ready')
    assert synced['undrained'] == ([] if alive else ['web-1'])
    assert kube.pods['web-1']['status']['conditions'][-1]['status'] == ('False' if alive else 'True')


def test_a_deployment_whose_replicasets_do_not_match_its_template_is_refused():
    kube = FakeApps([workload('Deployment')])
    deploy = kube.get('Deployment', 'web')
    deploy['spec']['paused'] = True
    deploy['spec']['template']['spec']['containers'][0]['image'] = 'reg/app:0'
    with pytest.raises(RolloutError, match='no ReplicaSet matches its template'):
        step(kube, 'prepare', kind='Deployment', images={'app': NEW})


def test_pods_that_cannot_change_now_are_named():
    kube = FakeApps([workload('StatefulSet')])
    kube.pods['web-2']['metadata']['deletionTimestamp'] = '2026-01-01T00:00:00Z'
    kube.pods['web-1']['spec'].pop('nodeName')
    with pytest.raises(ValidationError) as caught:
        step(kube, 'prepare', kind=None, name=None, label_selectors=['app=web'], images={'app': NEW})
    assert 'pod(s) cannot be updated in place now: web-1: pod is not scheduled yet' in caught.value.msg
    assert list(caught.value.details['refused']) == ['web-1']


@pytest.mark.parametrize('changes, message', [
    ({'min_ready_seconds': -1}, 'must not be negative'),
    ({'max_failed_pods': -1}, 'max_failed_pods must not be negative'),
    ({'images': {'app': NEW}, 'restart': ['app']}, 'cannot be combined'),
    ({'images': None}, 'give images, resources or restart'),
    ({'images': {'nope': NEW}}, 'unknown container(s) nope'),
])
def test_bad_input_is_refused_before_any_write(changes, message):
    kube = FakeApps([workload('StatefulSet')])
    with pytest.raises(ValidationError) as caught:
        step(kube, 'prepare', **dict({'images': {'app': NEW}}, **changes))
    assert message in caught.value.msg and kube.apps_writes() == []


def test_a_pod_back_with_another_uid_is_reported_recreated():
    changes = {'images': {'pods': [{'name': 'a', 'uid': 'u1', 'uid_after': 'u1'},
                                   {'name': 'b', 'uid': 'u2', 'uid_after': 'u9'},
                                   {'name': 'c', 'uid': 'u3', 'uid_after': None}]},
               'resources': {'pods': [{'name': 'b', 'uid': 'u9', 'uid_after': 'u9'}]}}
    assert recreated_pods(changes) == ["b"]


# ---- state rollout: prepare, every step and finish in one call (the role's window)

@pytest.fixture
def window_watcher(monkeypatch):
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


def test_rollout_runs_prepare_the_steps_and_finish_in_one_call(window_watcher):
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    result = step(kube, 'rollout', images={'app': NEW}, window=True, batch_size='2', canary='1', started=None)
    run = result['run']
    assert result['changed'] is True and result['mode'] == 'in_place' and result['batches'] == [['web-0'], ['web-1', 'web-2']]
    assert [s['pods'] for s in run['steps']] == [1, 2] and run['stopped'] is False
    assert run['failed_pods'] == [] and run['not_started'] == [] and run['recreated'] == []
    assert sorted(run['timings']) == ['web-0', 'web-1', 'web-2']
    assert run['steps'][0]['progress'] == ['canary (step 1 of 2) (web-0): 1 done, 0 failed; 1/3 pods run the target; window 2 wide, '
                                           'pods waited %ss for their turn in all' % run['steps'][0]['window']['waited_seconds']]
    assert run['steps'][1]['progress'][0].startswith('step 2 of 2 (web-1, web-2): 2 done, 0 failed; 3/3 pods run the target')
    assert run['finished']['changed'] is True and run['finished']['old'] == []
    assert rec(kube)['state'] == 'done' and uids(kube) == before and set(images(kube).values()) == {NEW}
    again = step(kube, 'rollout', images={'app': NEW}, window=True)
    assert again['changed'] is False and again['mode'] == 'unchanged' and again['run']['steps'] == []
    assert again['run']['finished']['changed'] is False


def test_the_engine_shares_the_window_watch_and_lists_no_pods_of_its_own(monkeypatch):
    """One watch (and cache) of the workload's pods per window step: the engine takes its pods from it."""
    started = []

    class Counted(FakePodWatcher):
        def __init__(self, kube, namespace, label_selector=None, field_selector=None):
            super(Counted, self).__init__(kube, namespace, label_selector, field_selector)
            started.append(label_selector)

    monkeypatch.setattr(rollout_context, 'PodWatcher', Counted)
    monkeypatch.setattr(runner, 'PodWatcher', Counted)
    kube = FakeApps([workload('StatefulSet')])
    lists = []
    listing = kube.list_pods
    monkeypatch.setattr(kube, 'list_pods', lambda *args: lists.append(args) or listing(*args))
    step(kube, 'prepare', images={'app': NEW})
    before = len(lists)
    result = step(kube, 'batch', images={'app': NEW}, names=['web-0', 'web-1'], window=True, batch_size='2')
    assert result['failed_pods'] == [] and images(kube)['web-0'] == NEW and images(kube)['web-1'] == NEW
    assert started == ['app=web']   # the window's watch, by the workload's selector; none for the engine
    # the step's own lists (its pods, the sync) by the workload's selector; no list of the namespace for the engine
    assert lists[before:] and all(args[1:2] == ('app=web',) for args in lists[before:]), lists[before:]


def test_the_first_window_of_a_rollout_call_starts_from_prepares_list(monkeypatch):
    """State rollout: prepare lists the workload's pods once and the first step's window watch starts from that
    list (its resourceVersion); a later step lists again."""
    starts = []

    class Started(FakePodWatcher):
        def start(self, pods=None, resource_version=None):
            starts.append(resource_version)
            return self

    monkeypatch.setattr(rollout_context, 'PodWatcher', Started)
    kube = FakeApps([workload('StatefulSet')])
    versions = []
    listing = kube.list_pods

    def counted(*args):
        answer = listing(*args)
        versions.append(answer[1])
        return answer
    monkeypatch.setattr(kube, 'list_pods', counted)
    result = step(kube, 'rollout', images={'app': NEW}, window=True, batch_size='2', canary='1', started=None)
    assert [s['pods'] for s in result['run']['steps']] == [1, 2] and set(images(kube).values()) == {NEW}
    assert len(starts) == 2 and starts[0] == versions[0], (starts, versions)   # prepare's list, not one of its own
    assert starts[1] in versions[1:] and starts[1] != starts[0]


def test_rollout_stops_after_the_step_with_too_many_failures_and_leaves_the_workload_held(window_watcher):
    kube = FakeApps([workload('StatefulSet')])
    result = step(kube, 'rollout', images={'app': 'reg/app:2-pullfail'}, window=True, batch_size='1', canary='1',
                  max_failed_pods=0)
    run = result['run']
    assert run['stopped'] is True and len(run['steps']) == 1 and 'finished' not in run
    assert [(p['name'], p['status']) for p in run['failed_pods']] == [('web-0', 'failed')]
    assert run['steps'][0]['progress'][0].startswith('canary (step 1 of 2) (web-0): 0 done, 1 failed; 0/3 pods run the target')
    assert run['steps'][0]['progress'][1].startswith('failed: web-0: failed: ')
    sts = kube.get('StatefulSet', 'web')
    assert sts['spec']['updateStrategy'] == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 3}}
    assert rec(kube)['state'] == 'in-progress' and images(kube)['web-1'] == OLD and images(kube)['web-2'] == OLD


def test_rollout_in_check_mode_plans_and_previews_every_step_writing_nothing():
    kube = FakeApps([workload('StatefulSet')])
    result = step(kube, 'rollout', check_mode=True, images={'app': NEW}, window=True)
    assert result['batches'] == [['web-0', 'web-1', 'web-2']] and rec(kube) is None
    assert [w for w in kube.apps_writes() if not (w[3] or {}).get('dryRun')] == []
    assert [s['progress'][0] for s in result['run']['steps']] == [
        'step 1 of 1 (web-0, web-1, web-2): would update 3 pod(s) (check mode: nothing written)']
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': OLD}
