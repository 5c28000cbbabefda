# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout's sliding window: which pod may start now."""

import threading

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations.engine import NotStarted, PodGone
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import progress
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import Window, watch_entry
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils import conftest


def pod(name, ready=True, container_id='c-1', labels=None, version='1'):
    """conftest.pod with this file's defaults: one container app on web:2, running, Ready or not."""
    return conftest.pod(name, namespace=None, version=version, labels=labels or {'app': 'web'},
                        containers={'app': 'web:2'}, conditions={'Ready': 'True' if ready else 'False'},
                        statuses=[conftest.container_status('app', ready=ready, containerID=container_id)])


class Pods:
    """A watcher's reading side: items(), get(), observe() and changes()."""

    def __init__(self, *pods):
        self.pods = {p['metadata']['name']: p for p in pods}
        self.observed = []

    def items(self):
        return list(self.pods.values())

    def get(self, name):
        return self.pods.get(name)

    def observe(self, obj):
        self.observed.append(obj['metadata']['name'])
        self.pods[obj['metadata']['name']] = obj

    def changes(self, since):
        return None, None   # no change log: the window reads every pod each time


def pdb(name, desired, labels=None):
    return {'metadata': {'name': name}, 'spec': {'selector': {'matchLabels': labels or {'app': 'web'}}},
            'status': {'desiredHealthy': desired}}


def test_width_bounds_the_pods_in_flight():
    window = Window(Pods(pod('a'), pod('b'), pod('c')), width=2, timeout=0, max_failed=5)
    assert 0 <= window.acquire('a') < 1   # seconds it waited: none
    window.acquire('b')
    with pytest.raises(WaitTimeout, match='2 pod\\(s\\) in flight, the window is 2 wide'):
        window.acquire('c')
    window.release('a', True, pod('a'))
    window.acquire('c')
    assert window.flight == {'b', 'c'}


def test_a_waiting_pod_starts_as_soon_as_another_finishes():
    window = Window(Pods(pod('a'), pod('b')), width=1, timeout=10)
    window.acquire('a')
    started = []
    waiter = threading.Thread(target=lambda: started.append(window.acquire('b')))
    waiter.start()
    window.release('a', True, pod('a'))
    waiter.join(5)
    assert started and window.flight == {'b'}


def test_max_unavailable_counts_pods_not_ready_and_in_flight():
    pods = Pods(pod('a'), pod('b'), pod('c', ready=False), pod('d'))
    window = Window(pods, width=4, max_unavailable=2, timeout=0, max_failed=5)
    window.acquire('a')   # c not ready + a in flight = 2
    with pytest.raises(WaitTimeout, match='max_unavailable 2: 1 pod\\(s\\) not ready \\(c\\) and 1 in flight'):
        window.acquire('b')
    # A pod that is down already costs nothing more: it may start.
    window.acquire('c')
    window.release('a', True, pod('a'))
    window.release('c', True, pod('c'))
    pods.pods['c'] = pod('c')
    window.acquire('b')
    window.acquire('d')


def test_budgets_are_counted_from_the_pods_not_from_their_status():
    pods = Pods(pod('a'), pod('b'), pod('c'), pod('x', labels={'app': 'other'}))
    window = Window(pods, width=3, budgets=[pdb('web', 2)], timeout=0, max_failed=5)
    window.acquire('a')          # 3 healthy, 1 in flight -> 2 left, one more would leave 1 < 2
    with pytest.raises(WaitTimeout, match='PodDisruptionBudget web: 2 healthy pod\\(s\\) not in flight, it needs 2'):
        window.acquire('b')
    window.acquire('x')          # not selected by the budget


def test_a_failure_over_max_failed_halts_the_window():
    window = Window(Pods(pod('a'), pod('b'), pod('c')), width=3, max_failed=1, timeout=0)
    window.acquire('a')
    window.acquire('b')
    window.release('a', False)
    window.acquire('c')          # one failure allowed
    window.release('b', False)
    with pytest.raises(NotStarted, match='2 pod\\(s\\) failed \\(max_failed_pods 1\\)'):
        window.acquire('c')
    assert window.report()['halted'].startswith('2 pod(s) failed')


def test_a_pod_counted_done_that_crashes_halts_the_window():
    pods = Pods(pod('a', container_id='c-2'), pod('b'))
    window = Window(pods, width=2, timeout=0, containers=['app'])
    window.acquire('a')
    window.release('a', True, pod('a', container_id='c-2'))
    assert pods.observed == ['a']   # the engine's newer version is offered to the window's watch
    crashed = pod('a', ready=False, container_id='c-3')
    crashed['status']['containerStatuses'][0].update(restartCount=1, lastState={'terminated': {'exitCode': 1,
                                                                                               'reason': 'Error'}})
    pods.pods['a'] = crashed
    with pytest.raises(NotStarted, match='a: container app restarted after it was counted done'):
        window.acquire('b')
    assert [item['name'] for item in window.failed] == ['a']


def test_health_is_judged_again_only_on_a_new_version_of_a_pod(monkeypatch):
    """Each check looks up the pods counted done and judges only those the watch delivered anew."""
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout import window as windows
    judged = []
    original = windows.watch_failures
    monkeypatch.setattr(windows, 'watch_failures', lambda pods, watched, overwritten=None: judged.append(
        sorted(watched)) or original(pods, watched, overwritten))
    now = [0.0]
    pods = Pods(pod('a'), pod('b'), pod('c'))
    window = Window(pods, width=3, timeout=0, containers=['app'], max_failed=0, clock=lambda: now[0],
                    watched={'a': watch_entry(pod('a'), ['app']), 'b': watch_entry(pod('b'), ['app'])})
    now[0] = 1.0
    window.acquire('c')
    now[0] = 2.0
    window.release('c', True, pod('c'))
    window._check_health()
    assert judged == [['a', 'b'], ['c']]          # c: released since; a and b: no new version
    crashed = pod('b', ready=False, container_id='c-2', version='2')
    crashed['status']['containerStatuses'][0].update(restartCount=1)
    pods.pods['b'] = crashed
    now[0] = 3.0
    window._check_health()
    assert judged[-1] == ['b'] and window.halted and 'b: container app restarted' in window.halted


def test_pods_watched_from_earlier_steps_count_too():
    earlier = pod('a', container_id='c-1')
    pods = Pods(pod('a', ready=False, container_id='c-1'), pod('b'))
    window = Window(pods, width=2, timeout=0, watched={'a': watch_entry(earlier, ['app'])}, containers=['app'],
                    max_failed=1)
    window.acquire('b')   # one failure is allowed: not halted
    assert window.failed[0]['reason'].startswith('container app turned unready')
    assert window.halted is None


def test_a_pod_blocked_past_its_timeout_fails_and_halts_past_max_failed():
    window = Window(Pods(pod('a'), pod('b'), pod('c')), width=1, timeout=0)
    window.acquire('a')
    with pytest.raises(WaitTimeout, match='pod b waited 0s for its turn: 1 pod\\(s\\) in flight'):
        window.acquire('b')
    # The blocked pod was the one failure allowed (max_failed 0): nothing else starts.
    window.release('a', True, pod('a'))
    with pytest.raises(NotStarted, match='the window halted: pod b waited 0s for its turn'):
        window.acquire('c')
    assert window.flight == set()


class LoggedPods(Pods):
    """Pods with a change log, as waiter.Watcher keeps one; counts the pods read."""

    def __init__(self, *pods):
        super().__init__(*pods)
        self.log, self.reads = [], 0

    def set(self, obj):
        self.pods[obj['metadata']['name']] = obj
        self.log.append(obj['metadata']['name'])

    def get(self, name):
        self.reads += 1
        return super().get(name)

    def items(self):
        self.reads += len(self.pods)
        return super().items()

    def changes(self, since):
        return len(self.log), (None if since is None else self.log[since:])


def test_only_the_pods_the_watch_changed_are_read_again():
    pods = LoggedPods(*[pod('p%d' % i) for i in range(100)])
    window = Window(pods, width=10, max_unavailable=2, budgets=[pdb('web', 98)], timeout=0, max_failed=5)
    window.acquire('p0')
    assert pods.reads == 101                       # the first turn reads every pod (and the pod itself: gone?)
    pods.set(pod('p1', ready=False, version='2'))   # p1 turns unready: only it is read again
    with pytest.raises(WaitTimeout, match='max_unavailable 2: 1 pod\\(s\\) not ready \\(p1\\) and 1 in flight'):
        window.acquire('p2')
    assert pods.reads == 103
    pods.set(pod('p1', version='3'))
    window.acquire('p2')                           # 99 healthy before it, the budget needs 98
    with pytest.raises(WaitTimeout, match='PodDisruptionBudget web: 98 healthy pod\\(s\\) not in flight, it needs 98'):
        window.acquire('p3')
    deleting = pod('p4', version='4')
    deleting['metadata']['deletionTimestamp'] = 'now'
    pods.set(deleting)                             # a terminating pod no longer counts as healthy or unready
    window.release('p0', True, pod('p0'))
    with pytest.raises(WaitTimeout, match='98 healthy pod'):
        window.acquire('p3')
    assert pods.reads < 114   # five turns: 100 pods read once, the pods changed, each turn its own pod


def test_a_pod_gone_before_its_turn_is_counted_gone_by_the_progress_not_waiting(tmp_path):
    report = progress.Progress(str(tmp_path / 'p'), total=3)
    report.label, report.waiting = 'step 1 of 1', 3
    going = dict(pod('c'), metadata=dict(pod('c')['metadata'], deletionTimestamp='2026-01-01T00:00:00Z'))
    window = Window(Pods(pod('a'), pod('b'), going), width=1, timeout=0, max_failed=0, progress=report)
    window.acquire('a')
    with pytest.raises(PodGone):
        window.acquire('c')
    window.left('c')      # what the engine does with a pod that went away before its turn (operations/podsteps.py)
    window.left('a')      # a pod in flight is not "before its turn": its release counts it
    counts = report.counts()
    assert (counts['gone'], counts['waiting'], counts['in_flight']) == (1, 1, 1)
    assert '1 gone (deleted or evicted: not failed), 1 in flight, 1 waiting for a slot' in progress.line(counts)
