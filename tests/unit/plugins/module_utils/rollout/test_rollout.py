# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout_workload state=batch: gate, the in-place change(s), sync in one call (pods chosen by selectors,
on the fake cluster)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.options import ImageChange, Target, Task
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.batch_step import BatchStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import RESTART_ANNOTATION
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import watch_failures as rollout_watch_failures
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import BATCH, Kube, batch, options

NEW = 'registry.example/app:2.0'


@pytest.fixture(autouse=True)
def fake_watcher(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


def test_batch_updates_the_pods_of_the_batch_and_reports_progress():
    kube = Kube()
    result = batch(kube, images={'app': NEW})
    assert result['changed'] is True and result['blocked'] == [] and result['failed_pods'] == []
    assert result['images']['summary']['updated'] == 2 and not result['images'].get('failed')
    assert [p['name'] for p in result['images']['pods']] == BATCH
    assert 'resources' not in result and 'restart' not in result and 'diff' not in result['images']
    assert (result['updated'], result['total']) == (2, 3) and result['halt'] is False
    assert [kube.image(name) for name in ('web-0', 'web-1', 'web-2')] == [NEW, NEW, 'registry.example/app:1.0']


def test_batch_twice_changes_nothing():
    kube = Kube()
    batch(kube, images={'app': NEW})
    written = len(kube.writes())
    again = batch(kube, images={'app': NEW})
    assert again['changed'] is False and again['images']['summary']['unchanged'] == 2
    assert len(kube.writes()) == written


def test_failed_pods_are_reported_not_raised_and_resources_are_skipped():
    kube = Kube()
    result = batch(kube, images={'app': 'registry.example/app:2.0-pullfail'},
                   resources={'app': {'requests': {'cpu': '200m'}}})
    assert result['images']['failed'] is True and '2 of 2 pod(s) failed' in result['images']['msg']
    assert result['images']['summary']['failed'] == 2
    assert [(p['name'], p['status']) for p in result['failed_pods']] == [('web-0', 'failed'), ('web-1', 'failed')]
    assert all('ErrImagePull' in p['reason'] for p in result['failed_pods'])
    assert sorted(result['failed_pods'][0]) == ['name', 'reason', 'status']
    assert 'resources' not in result
    assert result['updated'] == 0
    assert result['halt'] is True   # max_failed_pods 0


def test_on_failure_rollback_puts_the_image_back():
    kube = Kube()
    result = batch(kube, names=['web-0'], images={'app': 'registry.example/app:2.0-pullfail'}, on_failure='rollback')
    assert [(p['name'], p['status']) for p in result['failed_pods']] == [('web-0', 'rolled_back')]
    assert kube.image('web-0') == 'registry.example/app:1.0'


def test_a_change_that_fails_as_a_whole_is_one_entry_for_the_batch():
    kube = Kube()
    result = batch(kube, images={'nope': NEW})
    assert result['images']['failed'] is True and 'pods' not in result['images']
    assert 'unknown container(s) nope' in result['images']['msg']
    assert result['failed_pods'] == [{'name': 'web-0,web-1', 'status': 'failed', 'reason': result['images']['msg']}]
    assert kube.writes() == []


def test_blocked_gate_raises_with_blocked_and_failed_pods_and_writes_nothing():
    pdb = {'metadata': {'name': 'web'}, 'spec': {'selector': {'matchLabels': {'app': 'web'}}},
           'status': {'disruptionsAllowed': 1}}
    kube = Kube(pdbs=[pdb])
    with pytest.raises(WaitTimeout) as caught:
        batch(kube, images={'app': NEW}, wait_timeout=5)
    details = caught.value.details
    assert 'batch web-0, web-1 blocked for 5s' in caught.value.msg
    assert details['blocked'] == ['PodDisruptionBudget web allows 1 disruption(s), the batch would disrupt 2']
    assert details['failed_pods'] == [{'name': 'web-0,web-1', 'status': 'blocked', 'reason': caught.value.msg}]
    assert (details['updated'], details['total']) == (0, 3)
    assert kube.writes() == []


def test_a_cancel_ends_the_wait_of_a_blocked_batch_and_starts_none_of_its_pods(monkeypatch):
    from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel
    pdb = {'metadata': {'name': 'web'}, 'spec': {'selector': {'matchLabels': {'app': 'web'}}},
           'status': {'disruptionsAllowed': 0}}
    kube = Kube(pdbs=[pdb])
    watch = Cancel()
    clock = ManualClock()

    def sleep(seconds):
        clock.sleep(seconds)
        if clock() >= 3:
            watch.cancel('SIGTERM received')
    result = Rollout(kube, options(images={'app': NEW}, wait_timeout=600), False, clock=clock, sleep=sleep,
                     cancel=watch).run()
    assert clock() < 10   # not the 600 s of wait_timeout
    assert kube.writes() == []
    assert sorted(p['name'] for p in result['images']['pods'] if p['status'] == 'not_started') == BATCH


def test_check_mode_gates_and_previews_without_writing():
    pdb = {'metadata': {'name': 'web'}, 'spec': {'selector': {'matchLabels': {'app': 'web'}}},
           'status': {'disruptionsAllowed': 0}}
    kube = Kube(pdbs=[pdb])
    result = batch(kube, check_mode=True, diff=True, images={'app': NEW})
    assert result['changed'] is True and len(result['blocked']) == 1
    assert result['images']['summary']['would_update'] == 2 and result['failed_pods'] == []
    assert result['diff'] == [{'before': {'web-0': {'app': 'registry.example/app:1.0'},
                                          'web-1': {'app': 'registry.example/app:1.0'}},
                               'after': {'web-0': {'app': NEW}, 'web-1': {'app': NEW}}}]
    assert 'diff' not in result['images']
    assert kube.writes() == []


def test_restart_marks_the_restarted_pods():
    kube = Kube()
    result = batch(kube, restart=['app'], restart_id='r1', restart_strategy='image_reference')
    assert result['restart']['strategy'] == 'image_reference' and not result['restart'].get('failed')
    assert result['restart']['summary']['updated'] == 2 and result['failed_pods'] == []
    assert result['relabelled'] == BATCH and (result['updated'], result['total']) == (2, 3)
    assert [(kube.pods[n]['metadata'].get('annotations') or {}).get(RESTART_ANNOTATION)
            for n in ('web-0', 'web-1', 'web-2')] == ['r1', 'r1', None]


def test_a_restart_that_fails_as_a_whole_marks_no_pod():
    kube = Kube()
    result = batch(kube, restart=['app'], restart_id='r1', restart_strategy='kruise')
    assert 'ContainerRecreateRequest' in result['restart']['msg']
    assert [p['status'] for p in result['failed_pods']] == ['failed']
    assert result['relabelled'] == [] and kube.writes() == []


@pytest.mark.parametrize('changes, message', [
    ({'images': {'app': NEW}, 'names': []}, 'needs names'),
    ({}, 'give images, resources or restart'),
    ({'images': {'app': NEW}, 'restart': ['app']}, 'cannot be combined'),
])
def test_bad_input(changes, message):
    with pytest.raises(ValidationError) as caught:
        batch(Kube(), **changes)
    assert message in caught.value.msg


def test_run_operation_needs_no_module():
    kube = Kube()
    warnings = []
    task = Task(Target('shop', names=('web-0', 'web-9'), max_concurrency=2), ImageChange({'app': NEW}))
    result = runner.run(task, kube, warn=warnings.append)
    assert [p['name'] for p in result['pods']] == ['web-0'] and 'diff' not in result
    assert warnings == ['pod(s) not found in namespace shop: web-9']


# ---- health watched for the whole rollout

def running(container_id, ready=True, restarts=0, **extra):
    status = {'name': 'app', 'containerID': container_id, 'ready': ready, 'restartCount': restarts,
              'state': {'running': {}}}
    status.update(extra)
    return status


def watched_pod(name, status, uid=None):
    return {'metadata': {'name': name, 'uid': uid or 'uid-' + name},
            'spec': {'containers': [{'name': 'app', 'image': NEW}]}, 'status': {'containerStatuses': [status]}}


WATCHED = {'a': {'uid': 'uid-a', 'containers': {'app': 'c1'}}}


@pytest.mark.parametrize('status, uid, expected', [
    (running('c1'), None, None),
    (running('c1', ready=False), None, 'turned unready'),
    (running('c2', restarts=1, lastState={'terminated': {'exitCode': 1, 'reason': 'Error', 'containerID': 'c1'}}),
     None, 'restarted after it was counted done'),
    ({'name': 'app', 'containerID': 'c1', 'ready': False, 'restartCount': 1,
      'state': {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s'}},
      'lastState': {'terminated': {'exitCode': 1, 'reason': 'Error', 'message': 'boom\nfatal: no config'}}},
     None, 'CrashLoopBackOff: back-off 10s (exit code 1, last log: fatal: no config)'),
    (running('c9'), 'uid-other', None),   # replaced by someone else: not ours, not reported
])
def test_watch_failures(status, uid, expected):
    found = rollout_watch_failures([watched_pod('a', status, uid)], WATCHED)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0]['name'] == 'a' and found[0]['status'] == 'failed'
        assert expected in found[0]['reason']


def test_a_watched_pod_another_writer_changed_is_a_conflict():
    pod = watched_pod('a', running('c2', restarts=1))
    pod['spec']['containers'][0]['image'] = 'other:3.0'
    found = rollout_watch_failures([pod], WATCHED, lambda p: 'app=%s' % p['spec']['containers'][0]['image'])
    assert found == [{'name': 'a', 'status': 'conflict', 'reason': 'changed by another writer after it was counted '
                      'done (its spec now has app=other:3.0); not overwritten'}]


def test_a_watched_pod_that_is_gone_is_not_a_failure():
    assert rollout_watch_failures([], WATCHED) == []


def test_batch_returns_verified_pods_and_changes_nothing_when_a_watched_pod_fails():
    kube = Kube()
    first = batch(kube, images={'app': NEW}, names=['web-0'], min_ready_seconds=0)
    assert set(first['verified']) == {'web-0'}
    assert first['timings']['web-0']['images']['queued'] >= 0
    status = kube.pods['web-0']['status']['containerStatuses'][0]
    status.update(ready=False)
    writes = len(kube.writes())
    second = batch(kube, images={'app': NEW}, names=['web-1'], watch=first['verified'])
    assert [p['name'] for p in second['failed_pods']] == ['web-0']
    assert 'turned unready' in second['failed_pods'][0]['reason']
    assert len(kube.writes()) == writes and kube.image('web-1') == 'registry.example/app:1.0'


def test_watch_returns_at_the_first_failure_and_sleeps_otherwise():
    kube = Kube()
    first = batch(kube, images={'app': NEW}, names=['web-0'])
    clock = ManualClock()
    quiet = Rollout(kube, options(state='watch', seconds=5, watch=first['verified'], images={'app': NEW}),
                    clock=clock, sleep=clock.sleep).run()
    assert quiet['failed_pods'] == [] and clock.now >= 5
    kube.pods['web-0']['status']['containerStatuses'][0].update(ready=False)
    clock = ManualClock()
    caught = Rollout(kube, options(state='watch', seconds=30, watch=first['verified'], images={'app': NEW}),
                     clock=clock, sleep=clock.sleep).run()
    assert [p['name'] for p in caught['failed_pods']] == ['web-0'] and clock.now < 30


def test_a_pod_another_writer_changed_after_its_update_is_a_conflict_not_dropped():
    # Found by the chaos soak (tests/soak): `kubectl set image` on a pod of the batch after the change counted
    # it done left it neither verified nor failed, and the rollout ended "successfully" with it on the
    # writer's image.
    kube = Kube()

    class OtherWriterAfter(BatchStep):
        """The batch step, then another writer's image on web-0 before the sync."""

        def run_change(self, names, change, window=None, min_ready_seconds=None):
            out = super().run_change(names, change, window, min_ready_seconds)
            kube.set_image('web-0', 'app', 'registry.example/app:3.0')
            return out
    result = batch(kube, images={'app': NEW}, batch_step=OtherWriterAfter)
    assert [(p['name'], p['status']) for p in result['failed_pods']] == [('web-0', 'conflict')]
    assert 'another writer' in result['failed_pods'][0]['reason']
    assert 'app=registry.example/app:3.0' in result['failed_pods'][0]['reason']
    assert 'web-0' not in result['verified'] and kube.image('web-0') == 'registry.example/app:3.0'


def test_pending_judges_each_pod_version_once():
    """pending() is kept per (uid, resourceVersion): the same version is not judged again, a new version
    (the server changed the pod) is, and a pod without a version (nothing names its content) always is."""
    kube = Kube(count=1)
    rollout = Rollout(kube, options(images={'app': NEW}), clock=ManualClock())
    pod = copy.deepcopy(kube.pods['web-0'])
    pod['metadata']['resourceVersion'] = '7'
    assert rollout.pending(pod) is True
    assert rollout._pending == {('uid-0', '7'): True}
    # The same version again: its kept answer (a local edit that the server never made is not looked at).
    pod['spec']['containers'][0]['image'] = NEW
    assert rollout.pending(pod) is True
    # A newer version of the pod, now on the target: judged again, and its answer kept beside the old one.
    done = copy.deepcopy(pod)
    done['metadata']['resourceVersion'] = '8'
    done['spec']['containers'][0]['image'] = NEW
    for status in done['status']['containerStatuses']:
        if status['name'] == 'app':
            status.update(image=NEW, imageID='registry.example/app@sha256:' + 'b' * 64, ready=True, started=True)
    assert rollout.pending(done) is False
    assert rollout._pending[('uid-0', '8')] is False and rollout._pending[('uid-0', '7')] is True
    # Without a resourceVersion nothing is kept.
    bare = copy.deepcopy(pod)
    del bare['metadata']['resourceVersion']
    assert rollout.pending(bare) is True
    assert len(rollout._pending) == 2
