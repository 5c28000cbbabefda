# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Partitions as each controller means them (rollout/partition.py), and the release that never hands the
controller another writer's template (rollout/guard.py), on the apps/v1 fake (issue 33)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.operations.engine import ConcurrentChange
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import partition
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import (
    NEW, OLD, images, rec, run_all, step, uids,
)

WRITER = 'reg/app:3-writer'


def sts(kube):
    return kube.get('StatefulSet', 'web')


def strategy(kube):
    return sts(kube)['spec']['updateStrategy']


def converged(kube):
    status = sts(kube)['status']
    return status['currentRevision'] == status['updateRevision']


def set_template_image(kube, kind, image):
    """Another writer (kubectl set image) on the workload's template."""
    obj = kube.get(kind, 'web')
    path = '/apis/apps/v1/namespaces/shop/%ss/web' % kind.lower()
    kube.request('PATCH', path, body={'spec': {'template': {'spec': {'containers': [
        dict(obj['spec']['template']['spec']['containers'][0], image=image)]}}}}, content_type=MERGE_PATCH)


# ---- the rules


@pytest.mark.parametrize('value, saved, total, expected', [
    ('2', None, 4, 2), ('99%', None, 4, 3), ('50%', None, 4, 2), ('0', {'updateStrategy': {
        'rollingUpdate': {'partition': 2}}}, 4, 0), ('', {'updateStrategy': {'rollingUpdate': {'partition': 2}}}, 4, 2),
    (None, {'updateStrategy': {'type': 'OnDelete'}}, 4, 0), ('9', None, 4, 4), ('100%', None, 4, 4),
])
def test_the_count_is_the_one_given_or_the_statefulsets_own(value, saved, total, expected):
    assert partition.sts_count(value, saved, total) == expected


@pytest.mark.parametrize('saved, asked, old, replicas, expected, warns', [
    (0, 2, [0, 1], 4, 2, False), (0, 2, [0], 4, 2, False), (0, None, [0, 1], 4, 2, False),
    (2, 0, [], 4, 0, False), (2, None, [], 4, 2, False), (0, 2, [0, 1, 3], 4, 4, True),
    (0, None, [None], 4, 4, True), (0, None, [0, 1, 2, 3], 4, 4, False),
])
def test_the_final_partition_protects_the_pods_left(saved, asked, old, replicas, expected, warns):
    final, warning = partition.final_partition(saved, asked, old, replicas)
    assert final == expected and bool(warning) == warns


# ---- StatefulSet: as spec.updateStrategy.rollingUpdate.partition


def test_a_partition_keeps_the_lowest_ordinals_and_updates_the_others_highest_first():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    before = uids(kube)
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='2')
    assert prepared['batches'] == [['web-3'], ['web-2']] and prepared['kept'] == ['web-0', 'web-1']
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': NEW, 'web-3': NEW} and uids(kube) == before
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 2}}
    assert finished['old'] == ['web-0', 'web-1']
    assert any('partition is now 2 (rollout_partition; it was 0)' in w and 'your setting' in w
               for w in finished['warnings'])
    assert rec(kube)['state'] == 'done' and rec(kube)['partition'] == 2
    # the controller protects exactly those pods: nothing of it replaces them
    kube.reconcile()
    assert uids(kube) == before


def test_partitions_99_percent_then_2_then_0_then_back_converge_without_false_conflicts():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    before = uids(kube)
    prepared, _finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='99%')
    assert prepared['batches'] == [['web-3']] and strategy(kube)['rollingUpdate'] == {'partition': 3}
    # The pods 99% left run the revision before: never "changed by another writer".
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='2')
    assert prepared['batches'] == [['web-2']] and rec(kube)['before'] == {'images': {'app': OLD}, 'resources': {}}
    assert finished['old'] == ['web-0', 'web-1'] and strategy(kube)['rollingUpdate'] == {'partition': 2}
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='0')
    assert prepared['batches'] == [['web-0'], ['web-1']] and finished['old'] == []
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}} and converged(kube)
    # back to the old image, no partition given: the StatefulSet's own (0), every pod, the strategy as it was
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': OLD})
    assert set(images(kube).values()) == {OLD} and finished['old'] == []
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}} and converged(kube)
    assert uids(kube) == before
    # a native update afterwards rolls every pod, as the controller does
    set_template_image(kube, 'StatefulSet', 'reg/app:9')
    assert set(images(kube).values()) == {'reg/app:9'} and not set(uids(kube).values()) & set(before.values())


def test_a_higher_partition_after_a_lower_one_moves_nothing_and_a_rerun_changes_nothing():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    run_all(kube, 'StatefulSet', images={'app': NEW}, partition='2')
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='99%')
    assert prepared['batches'] == [] and prepared['changed'] is True and finished['changed'] is True
    assert strategy(kube)['rollingUpdate'] == {'partition': 3}
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': NEW, 'web-3': NEW}
    again = step(kube, 'prepare', images={'app': NEW}, partition='99%')
    assert again['changed'] is False and again['batches'] == []


def test_no_partition_given_keeps_what_the_statefulsets_own_partition_keeps_and_restores_it_exactly():
    kube = FakeApps([workload('StatefulSet', replicas=4, strategy={'type': 'RollingUpdate',
                                                                   'rollingUpdate': {'partition': 1}})])
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW})
    assert prepared['batches'] == [['web-3'], ['web-2'], ['web-1']] and prepared['kept'] == ['web-0']
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 1}}
    assert not any('partition is now' in w for w in finished['warnings'])


def test_a_rollback_leaves_the_kept_pods_and_restores_the_strategy_from_before_the_run():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    prepared = step(kube, 'prepare', images={'app': NEW}, partition='2')
    step(kube, 'batch', images={'app': NEW}, names=prepared['batches'][0])
    back = step(kube, 'rollback', images={'app': NEW})
    assert back['groups'] == [{'names': ['web-3'], 'images': {'app': OLD}, 'resources': {}}]
    step(kube, 'batch', images={'app': OLD}, names=['web-3'])
    step(kube, 'finish', images={'app': NEW})
    assert rec(kube)['state'] == 'rolled-back' and set(images(kube).values()) == {OLD}
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}} and converged(kube)


def test_release_after_every_pod_converged_restores_the_original_strategy():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    prepared = step(kube, 'prepare', images={'app': NEW})
    for names in prepared['batches']:
        step(kube, 'batch', images={'app': NEW}, names=names)
    step(kube, 'release', images={'app': NEW})
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}}


def test_on_delete_ignores_a_native_partition_the_run_keeps_the_ordinals_and_stays_on_delete():
    kube = FakeApps([workload('StatefulSet', replicas=4, strategy={'type': 'OnDelete'})])
    before = uids(kube)
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='2')
    assert prepared['kept'] == ['web-0', 'web-1'] and prepared['batches'] == [['web-3'], ['web-2']]
    assert any('OnDelete, whose controller ignores a partition' in w for w in prepared['warnings'])
    assert strategy(kube) == {'type': 'OnDelete'} and uids(kube) == before
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': NEW, 'web-3': NEW}


# ---- DaemonSet, Deployment: no native partition, the last pods of the order stay


@pytest.mark.parametrize('kind', ['DaemonSet', 'Deployment'])
def test_other_kinds_keep_the_last_pods_of_the_order(kind):
    kube = FakeApps([workload(kind)])
    before = uids(kube)
    prepared, finished = run_all(kube, kind, images={'app': NEW}, partition='1')
    assert len(prepared['kept']) == 1 and finished['old'] == prepared['kept']
    assert sorted(name for name, image in images(kube).items() if image == OLD) == prepared['kept']
    assert uids(kube) == before
    if kind == 'DaemonSet':
        assert kube.get(kind, 'web')['spec']['updateStrategy'] == {'type': 'OnDelete'}
    else:
        assert not kube.get(kind, 'web')['spec'].get('paused')


# ---- the release never hands over another writer's template


@pytest.mark.parametrize('kind', ['StatefulSet', 'Deployment', 'DaemonSet'])
def test_a_template_changed_after_the_last_step_is_a_conflict_held_and_no_pod_replaced(kind):
    # The soak's seed 7: another writer set the template 0.6 s after the last step; the release handed it to the
    # controller, which replaced every pod.
    kube = FakeApps([workload(kind)])
    before = uids(kube)
    prepared = step(kube, 'prepare', kind=kind, images={'app': NEW})
    for names in prepared['batches']:
        step(kube, 'batch', kind=kind, names=names, images={'app': NEW})
    held = kube.get(kind, 'web')['spec']
    set_template_image(kube, kind, WRITER)
    with pytest.raises(ConcurrentChange) as info:
        step(kube, 'finish', kind=kind, images={'app': NEW})
    assert 'spec.template.spec.containers.0.image' in info.value.msg and 'stays held' in info.value.msg
    assert info.value.details['failed_pods'][0]['status'] == 'conflict'
    assert rec(kube, kind)['state'] == 'in-progress' and uids(kube) == before
    spec = kube.get(kind, 'web')['spec']
    assert spec.get('paused') == held.get('paused') and spec.get('updateStrategy') == held.get('updateStrategy')
    # the ways out: running the rollout again writes its target again and finishes, in place
    _prepared, finished = run_all(kube, kind, images={'app': NEW})
    assert finished['old'] == [] and uids(kube) == before and rec(kube, kind)['state'] == 'done'


def test_a_template_changed_between_the_check_and_the_release_write_fails_the_write_and_is_found():
    kube = FakeApps([workload('StatefulSet')])
    before = uids(kube)
    prepared = step(kube, 'prepare', images={'app': NEW})
    for names in prepared['batches']:
        step(kube, 'batch', names=names, images={'app': NEW})
    writes = []

    def writer(cluster, resource, name):
        writes.append(resource)
        if len(writes) < 2:   # finish renews its record first; the release write is the second
            cluster.before_apps_write = writer
            return
        set_template_image(cluster, 'StatefulSet', WRITER)
    kube.before_apps_write = writer
    with pytest.raises(ConcurrentChange, match='before the release'):
        step(kube, 'finish', images={'app': NEW})
    assert strategy(kube)['rollingUpdate'] == {'partition': 3} and uids(kube) == before


def test_an_explicit_release_still_hands_the_controller_back():
    kube = FakeApps([workload('StatefulSet')])
    step(kube, 'prepare', images={'app': NEW})
    set_template_image(kube, 'StatefulSet', WRITER)
    released = step(kube, 'release', images={'app': NEW})
    assert released['changed'] is True and rec(kube)['state'] == 'released'


def test_after_a_native_update_kept_by_a_partition_the_run_starts_from_the_current_revision():
    # kubectl set image under partition 2 (no record of ours): web-2 and web-3 replaced natively; our run to the
    # same image with partition 0 takes "before" from status.currentRevision, so web-0 and web-1 are not another
    # writer's.
    kube = FakeApps([workload('StatefulSet', replicas=4, strategy={'type': 'RollingUpdate',
                                                                   'rollingUpdate': {'partition': 2}})])
    set_template_image(kube, 'StatefulSet', NEW)
    assert images(kube) == {'web-0': OLD, 'web-1': OLD, 'web-2': NEW, 'web-3': NEW} and not converged(kube)
    kept = uids(kube)
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW}, partition='0')
    assert rec(kube)['before'] == {'images': {'app': OLD}, 'resources': {}}
    assert prepared['batches'] == [['web-0'], ['web-1']] and finished['old'] == [] and converged(kube)
    assert uids(kube) == kept and strategy(kube)['rollingUpdate'] == {'partition': 0}


# ---- a protection our release left never becomes the user's strategy


def test_a_protective_partition_left_by_a_release_is_ended_by_the_next_run_that_leaves_no_pod():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    before = uids(kube)
    step(kube, 'prepare', images={'app': NEW})
    step(kube, 'batch', images={'app': NEW}, names=['web-0'])
    step(kube, 'release', images={'app': NEW})
    # web-1..3 are not the lowest ordinals: held at replicas, and the record says it is ours
    assert strategy(kube)['rollingUpdate'] == {'partition': 4}
    assert rec(kube)['protection']['user'] == {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}}}
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW})
    assert prepared['kept'] == [] and finished['old'] == [] and set(images(kube).values()) == {NEW}
    assert strategy(kube) == {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}} and converged(kube)
    assert 'protection' not in rec(kube) and uids(kube) == before


def test_a_daemonset_kept_on_delete_for_a_partition_gets_rolling_update_back_when_no_pod_is_left():
    kube = FakeApps([workload('DaemonSet')])
    original = kube.get('DaemonSet', 'web')['spec']['updateStrategy']
    run_all(kube, 'DaemonSet', images={'app': NEW}, partition='1')
    assert kube.get('DaemonSet', 'web')['spec']['updateStrategy'] == {'type': 'OnDelete'}
    _prepared, finished = run_all(kube, 'DaemonSet', images={'app': NEW})
    assert finished['old'] == [] and kube.get('DaemonSet', 'web')['spec']['updateStrategy'] == original


def test_a_strategy_the_user_changed_after_our_protection_is_the_users():
    kube = FakeApps([workload('StatefulSet', replicas=4)])
    step(kube, 'prepare', images={'app': NEW})
    step(kube, 'batch', images={'app': NEW}, names=['web-0'])
    step(kube, 'release', images={'app': NEW})
    kube.request('PATCH', '/apis/apps/v1/namespaces/shop/statefulsets/web', body={'spec': {'updateStrategy': {
        'rollingUpdate': {'partition': 3}}}}, content_type=MERGE_PATCH)
    # the controller replaced web-3 natively (ordinal 3 is not protected any more); a re-run keeps web-0..2 as the
    # user's partition 3 says and leaves the user's strategy as it is
    prepared, finished = run_all(kube, 'StatefulSet', images={'app': NEW})
    assert prepared['kept'] == ['web-0', 'web-1', 'web-2'] and prepared['batches'] == [] and not finished['changed']
    assert strategy(kube)['rollingUpdate'] == {'partition': 3}
