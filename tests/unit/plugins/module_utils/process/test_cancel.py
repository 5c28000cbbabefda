# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The cancel token and watch (process/cancel.py, process/lineage.py) and what the engine and the window do once a
run is cancelled."""

import copy
import os
import signal
import threading
import time

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.operations.engine import NotStarted
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, poll, record
from ansible_collections.inplace.k8s.plugins.module_utils.process import cancel, lineage, proc
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import Window
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock, spec_of, wait_until, web_pods as pods
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher

GATE = 'inplace.k8s/ready'
NEW = 'registry.example/app:2.0'


def run(cluster, token=None, **changes):
    values = dict(check_mode=False, wait=True, wait_timeout=30, max_concurrency=1, readiness_gate=None,
                  drain_seconds=0, require_readiness_gate=False, gate_on_failure='keep_false',
                  on_failure='stop', min_ready_seconds=0)
    values.update(changes)
    runner = engine.Engine(cluster, ImageOperation({'app': NEW}), engine.Options(**values), FakeWatcher(cluster),
                           sleep=lambda seconds: None, cancel=token)
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    return runner.run(listed)


@pytest.fixture
def watch():
    """A run's token, not cancelled yet."""
    return cancel.Cancel()


# ---- the watch

def test_an_ancestor_that_dies_cancels_within_the_poll(child, monkeypatch):
    started = proc.stat(child.pid)[2]
    looked = []
    monkeypatch.setattr(lineage, 'gone', lambda ancestors, gone=lineage.gone: looked.append(gone(ancestors)) or looked[-1])
    token = cancel.Cancel(ancestors=[(child.pid, started)])
    current = cancel.Watch(token, poll=0.05).start(signals=False)
    try:
        assert wait_until(lambda: len(looked) >= 3, 2.0)
        assert looked[:3] == [None, None, None] and token.cancelled() is None   # looked at it alive: nothing
        killed = time.monotonic()
        child.kill()
        assert wait_until(token.cancelled, 2.0)
        assert time.monotonic() - killed < 1.0
        assert token.cancelled() == 'ansible-playbook (pid %d) ended' % child.pid
    finally:
        current.stop()


def test_a_zombie_or_a_reused_pid_counts_as_gone(child):
    started = proc.stat(child.pid)[2]
    assert lineage.gone([(child.pid, started)]) is None
    assert lineage.gone([(child.pid, started + 1)]) == child.pid   # the pid now names another process
    child.kill()
    assert wait_until(lambda: lineage.gone([(child.pid, started)]) == child.pid)   # a zombie before it is reaped
    child.wait()
    assert lineage.gone([(child.pid, started)]) == child.pid


def test_lineage_starts_at_the_parent_and_holds_start_times(child):
    chain = lineage.walk(child.pid)
    assert chain[0][:2] == (os.getpid(), proc.stat(os.getpid())[2])
    assert lineage.lineage(chain) == [chain[0][:2]]   # no ansible process above: the parent alone
    assert lineage.walk()[0][0] == os.getppid()


@pytest.mark.parametrize('chain, ancestors, orphan', [
    # sh, sh, the worker (a session leader), ansible-playbook, the launcher: the run goes on
    ([(30, 1, False, False), (20, 1, False, False), (10, 1, True, True), (5, 1, True, True), (2, 1, False, True)],
     [(30, 1), (20, 1), (10, 1), (5, 1)], False),
    # ansible-playbook was gone when the worker started the module: cancelled at once
    ([(30, 1, False, False), (20, 1, False, False), (10, 1, True, True), (1, 1, False, True)],
     [(30, 1), (20, 1), (10, 1)], True),
    # ansible-playbook as a container's first process
    ([(20, 1, False, False), (10, 1, True, True), (1, 1, True, True)], [(20, 1), (10, 1), (1, 1)], False),
    # a playbook started by a task of another playbook: its run ends at its own ansible-playbook
    ([(30, 1, False, False), (20, 1, True, True), (10, 1, True, True), (8, 1, False, False), (5, 1, True, True),
      (4, 1, True, True)], [(30, 1), (20, 1), (10, 1)], False),
    # no ansible process: by hand, or through ssh on a remote host
    ([(20, 1, False, False), (10, 1, False, True)], [(20, 1)], False),
])
def test_lineage_and_an_orphaned_worker(chain, ancestors, orphan):
    assert lineage.lineage(chain) == ancestors
    assert lineage.orphaned(chain) is orphan
    assert lineage.run_process(chain) == ancestors[-1]
    found = lineage.run_of(chain)
    assert lineage.playbook_pid(chain) == (chain[found[1]][0] if found else None)


@pytest.mark.parametrize('name', ['SIGTERM', 'SIGINT'])
def test_a_signal_cancels_instead_of_ending_the_process(name):
    number = getattr(signal, name)
    before = signal.getsignal(number)
    token = cancel.Cancel()
    current = cancel.Watch(token).start()
    try:
        os.kill(os.getpid(), number)
        assert wait_until(token.cancelled, 2.0)
        assert token.cancelled() == '%s received' % name
    finally:
        current.stop()
    assert signal.getsignal(number) == before


def test_the_message_names_the_pods(watch):
    watch.cancel('SIGTERM received')
    watch.cancel('a later reason')   # the first one counts
    watch.skipped(['web-3', 'web-2'])
    watch.in_flight_done('web-1', 'updated')
    watch.in_flight_done('web-4', 'not_started')   # not in flight: not named
    assert watch.message().startswith('cancelled (SIGTERM received): 2 pod(s) not started (web-2, web-3), in-flight '
                                      'pods finished: web-1 (updated);')


# ---- the engine and the window

def test_a_cancelled_run_starts_no_pod(watch):
    cluster = FakeCluster(pods(3))
    watch.cancel('SIGTERM received')
    result = run(cluster, watch, readiness_gate=GATE)
    assert [p['status'] for p in result['pods']] == ['not_started'] * 3
    assert not [c for c in cluster.calls if c[0] == 'patch']
    assert sorted(watch.not_started) == ['web-0', 'web-1', 'web-2']


def test_the_pod_in_flight_finishes_and_no_other_starts(watch, monkeypatch):
    cluster = FakeCluster(pods(3))
    original = ImageOperation.write

    def write(self, kube, pod, pod_plan, rec):
        written = original(self, kube, pod, pod_plan, rec)
        watch.cancel('ansible-playbook (pid 1) ended')   # the cancel comes right after the first pod's write
        return written
    monkeypatch.setattr(ImageOperation, 'write', write)
    result = run(cluster, watch, readiness_gate=GATE)
    assert [p['status'] for p in result['pods']] == ['updated', 'not_started', 'not_started']
    assert drain.gate_status(cluster.pods['web-0'], GATE) == 'True'   # finished and put back
    assert watch.finished == ['web-0 (updated)'] and sorted(watch.not_started) == ['web-1', 'web-2']
    assert [spec_of(cluster.pods[n], 'app')['image'] for n in ('web-1', 'web-2')] == \
        ['registry.example/app:1.0'] * 2


def test_a_pod_drained_at_the_cancel_is_put_back_as_it_was(watch, monkeypatch):
    """Even under gate_on_failure keep_false: a cancel never leaves a pod drained."""
    cluster = FakeCluster(pods(2))
    original = drain.set_gate

    def set_gate(kube, pod, gate, ready, *args, **kwargs):
        answer = original(kube, pod, gate, ready, *args, **kwargs)
        if not ready:
            watch.cancel('SIGINT received')
        return answer
    monkeypatch.setattr(drain, 'set_gate', set_gate)
    result = run(cluster, watch, readiness_gate=GATE)
    assert [p['status'] for p in result['pods']] == ['not_started', 'not_started']
    assert 'put back as it was' in result['pods'][0]['reason']
    pod = cluster.pods['web-0']
    assert drain.gate_status(pod, GATE) == 'True'
    assert spec_of(pod, 'app')['image'] == 'registry.example/app:1.0'
    rec = record.get(pod, 'image')
    assert rec['state'] == 'failed' and 'SIGINT' in rec['error']   # holds nothing: a relaunch takes it at once
    assert record.holder(rec, record.new_owner()) is None


def test_the_window_lets_no_pod_start_once_cancelled(watch):
    window = Window(FakePods(), width=2, timeout=10, clock=lambda: 0.0, cancel=watch)
    assert window.acquire('a') == 0
    watch.cancel('SIGTERM received')
    with pytest.raises(NotStarted, match='SIGTERM received'):
        window.acquire('b')


class FakePods:
    def items(self):
        return []

    def get(self, name):
        return None

    def changes(self, serial):
        return 0, []


# ---- the relaunch right after a cancel

def test_a_relaunch_waits_for_the_cancelled_module_then_resumes(child):
    """The cancelled module (alive: ``child``) still holds the pod; its ansible-playbook is gone. The relaunch
    waits for it to exit, then updates the pod instead of refusing it as another run's."""
    pod = pods(1)[0]
    owner = dict(record.new_owner(run_id='cancelled'), pid=child.pid, playbook=2 ** 22 + 4321)
    rec = record.claim(record.begin(pod, 'image', {'app': NEW}, {'app': {'image': 'registry.example/app:1.0'}}),
                       owner, 600)
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = record.encode(pod, 'image', rec)
    cluster = FakeCluster([pod])
    assert record.cancelled_owner(pod, record.new_owner()) == child.pid
    threading.Timer(0.5, child.kill).start()
    since = time.monotonic()
    result = run(cluster)
    assert result['pods'][0]['status'] == 'updated'
    assert time.monotonic() - since >= 0.4
    assert record.get(cluster.pods['web-0'], 'image')['owner']['run'] != 'cancelled'


def test_a_live_run_still_refuses_the_pod(child):
    pod = pods(1)[0]
    owner = dict(record.new_owner(run_id='other'), pid=child.pid, playbook=child.pid)   # its playbook runs
    rec = record.claim(record.begin(pod, 'image', {'app': NEW}, {}), owner, 600)
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = record.encode(pod, 'image', rec)
    assert record.cancelled_owner(pod, record.new_owner()) is None
    result = run(FakeCluster([pod]))
    assert result['pods'][0]['status'] == 'conflict'


# ---- the rollout's steps

def test_a_pause_ends_at_once_and_a_batch_starts_nothing_once_cancelled(watch, monkeypatch):
    from ansible_collections.inplace.k8s.plugins.module_utils import runner
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
    from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
    from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout import helpers as fixtures
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(context, 'PodWatcher', FakePodWatcher)
    kube = fixtures.Kube()
    clock = ManualClock()
    first = Rollout(kube, fixtures.options(images={'app': NEW}, names=['web-0']), clock=clock, sleep=clock.sleep,
                    cancel=watch).run()
    watch.cancel('SIGTERM received')
    clock = ManualClock()
    paused = Rollout(kube, fixtures.options(state='watch', seconds=30, watch=first['verified'], images={'app': NEW}),
                     clock=clock, sleep=clock.sleep, cancel=watch)
    assert paused.watch()['message'] == 'SIGTERM received' and clock.now == 0
    writes = len(kube.writes())
    step = Rollout(kube, fixtures.options(images={'app': NEW}, names=['web-1', 'web-2']), clock=clock,
                   sleep=clock.sleep, cancel=watch).batch_step.batch()
    assert step['not_started'] == ['web-1', 'web-2'] and step['halt'] is True
    assert len(kube.writes()) == writes and watch.not_started == ['web-1', 'web-2']
    with pytest.raises(InplaceError, match='state batch was not started'):
        Rollout(kube, fixtures.options(images={'app': NEW}, names=['web-1']), clock=clock, sleep=clock.sleep,
                cancel=watch).run()


def test_wait_exit_sees_the_exit_and_is_bounded_and_stopped_by_a_cancel():
    clock = ManualClock()
    alive = iter([True, True, False])
    assert poll.wait_exit(4242, 30, alive=lambda pid: next(alive), clock=clock, sleep=clock.sleep) is True
    assert clock.now < 1
    clock = ManualClock()
    assert poll.wait_exit(4242, 30, alive=lambda pid: True, clock=clock, sleep=clock.sleep) is False
    assert clock.now == 30
    token = cancel.Cancel()
    token.cancel('SIGTERM received')
    clock = ManualClock()
    assert poll.wait_exit(4242, 30, token.cancelled, alive=lambda pid: True, clock=clock, sleep=clock.sleep) is False
    assert clock.now == 0
