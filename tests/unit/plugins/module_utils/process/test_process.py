# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""process/proc.py (the one reader of /proc), process/lineage.py (which run is mine) and the cancel token's own
answers (process/cancel.py); the watch and what a cancel stops are in test_cancel.py."""

import os

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError
from ansible_collections.inplace.k8s.plugins.module_utils.process import cancel, detach, guardian, keeper, lineage, proc
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock, wait_until


def test_a_process_is_known_by_its_pid_and_start_time(child):
    state, parent, started = proc.stat(child.pid)
    assert parent == os.getpid() and state in 'RSD'
    assert proc.running(child.pid, started) and not proc.running(child.pid, started + 1)
    assert proc.alive(child.pid) and proc.alive(os.getpid())
    child.kill()
    assert wait_until(lambda: not proc.alive(child.pid))   # a zombie does not count
    assert not proc.running(child.pid, started)
    child.wait()
    assert proc.stat(child.pid) is None and not proc.alive(child.pid)
    assert not proc.alive(2 ** 22 + 12345)   # above pid_max


def test_alive_without_proc_asks_the_kernel(monkeypatch):
    monkeypatch.setattr(proc, 'stat', lambda pid: None)
    assert proc.alive(os.getpid())
    assert not proc.alive(2 ** 22 + 12345)

    def refuse(pid, signum):
        raise PermissionError(1, 'EPERM')
    monkeypatch.setattr(proc.os, 'kill', refuse)
    assert proc.alive(1)   # another user's process exists


def test_ansible_processes_and_session_leaders(child):
    assert not proc.ansible(child.pid)   # python -c ...
    assert not proc.ansible(2 ** 22 + 12345)
    assert proc.session_leader(os.getsid(0))
    assert not proc.session_leader(child.pid)
    assert not proc.session_leader(2 ** 22 + 12345)


def test_outside_ansible_the_run_process_is_the_parent():
    assert lineage.run_process()[0] == os.getppid()
    assert lineage.playbook_pid() is None   # pytest is no ansible process
    assert lineage.run_process([]) is None   # no /proc


def test_a_module_started_after_its_playbook_ended_is_cancelled_at_once(monkeypatch):
    chain = [(30, 1, False, False), (10, 7, True, True), (1, 1, False, True)]
    monkeypatch.setattr(lineage, 'walk', lambda pid=None: chain)
    token, watch = cancel.watch(signals=False)
    try:
        assert token.cancelled() == 'ansible-playbook ended before this module started (its worker, pid 10, ' \
                                    'outlived it)'
        assert token.playbook == 10 and watch.ancestors == [(30, 1), (10, 7)]
    finally:
        watch.stop()


def test_the_token():
    token = cancel.Cancel(playbook=42)
    token.raise_if_cancelled()
    assert token.playbook == 42 and cancel.Cancel().playbook == lineage.playbook_pid()
    token.cancel('SIGHUP received')
    with pytest.raises(cancel.Cancelled, match='SIGHUP received'):
        token.raise_if_cancelled()
    with pytest.raises(ValueError, match='^not started: SIGHUP received$'):
        token.raise_if_cancelled(ValueError, 'not started: %s')


# ---- the detached processes, their in-process parts (the forks themselves: test_detach.py, test_guardian.py)

class Exited(Exception):
    pass


def in_process_child(monkeypatch):
    """detach.fork's child path run in this process: the fork answers 0, nothing leaves the session, stdio stays."""
    monkeypatch.setattr(detach.os, 'fork', lambda: 0)
    monkeypatch.setattr(detach.os, 'setsid', lambda: None)
    monkeypatch.setattr(detach.os, 'dup2', lambda fd, fd2: None)
    monkeypatch.setattr(detach.signal, 'signal', lambda signum, handler: None)

    def exit_(code):
        raise Exited(code)
    monkeypatch.setattr(detach.os, '_exit', exit_)


@pytest.mark.parametrize('fails, cleanup_fails, code', [(False, False, 0), (True, False, 1), (False, True, 1)])
def test_the_child_runs_its_body_then_removes_its_key_copies_and_exits(monkeypatch, fails, cleanup_fails, code):
    in_process_child(monkeypatch)
    ran, removed = [], []

    def body():
        ran.append(True)
        if fails:
            raise RuntimeError('boom')

    def remove():
        removed.append(True)
        if cleanup_fails:
            raise OSError('busy')
    monkeypatch.setattr(detach.settings, 'remove_private_files', remove)
    first, second, closes = os.pipe(), os.pipe(), os.pipe()
    os.set_blocking(second[0], False)
    # The child closes the read end of its "ready" pipe: here another pipe's than the end it writes to.
    monkeypatch.setattr(detach.os, 'pipe', lambda: (first[0], second[1]))
    with pytest.raises(Exited) as exited:
        detach.fork(body, child_closes=(closes[0],))
    assert os.read(second[0], 1) == b'.'   # the child told it is out of the group
    for fd in (closes[1], first[1], second[0]):
        os.close(fd)
    assert exited.value.args == (code,) and ran == [True] and removed == [True]


def test_the_keeper_watches_the_run_process_or_does_not_start(monkeypatch):
    monkeypatch.setattr(keeper.lineage, 'run_process', lambda: None)
    assert keeper.start(lambda: None, [], 'run-1', 60) is None
    forked = []
    monkeypatch.setattr(keeper.lineage, 'run_process', lambda: (4242, 7))
    monkeypatch.setattr(keeper.detach, 'fork', lambda body: forked.append(body) or 99)
    monkeypatch.setattr(keeper, 'keep', lambda connect, items, run, playbook, max_seconds: (run, playbook, max_seconds))
    assert keeper.start(lambda: None, [], 'run-1', 60) == 99
    assert forked[0]() == ('run-1', (4242, 7), 60)
    assert keeper.alive((os.getpid(), proc.stat(os.getpid())[2])) and not keeper.alive((os.getpid(), 0))


def test_the_keeper_gives_up_after_five_failed_resumes(monkeypatch):
    def fail(*args):
        raise InplaceError('conflict')
    monkeypatch.setattr(keeper.suspend, 'reread', fail)
    clock = ManualClock()
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock.sleep(seconds)
    assert keeper.keep(lambda: None, [], 'run-1', (1, 1), keeper.LOOK_SECONDS + 1, clock, sleep,
                       is_alive=lambda playbook: True) == 'failed'   # could not look (held), could not resume
    assert slept[-5:] == [1] * 5 and clock.now == keeper.LOOK_SECONDS + 1 + 5


def test_the_guardian_of_the_module_side(monkeypatch):
    monkeypatch.setattr(guardian.detach, 'fork', lambda body, child_closes, parent_closes: None)
    assert guardian.start(lambda: None) is None and guardian.current() is None
    monkeypatch.setattr(guardian.detach, 'fork', lambda body, child_closes, parent_closes: 99)
    guard = guardian.start(lambda: None)
    assert guardian.current() is guard
    guardian.stop()   # says done and closes its end
    assert guardian.current() is None and guard._fd is None
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    lost = guardian.Guardian(write_fd)
    lost.settled({'metadata': {'namespace': 'shop', 'name': 'web-0'}})   # the guardian is gone: no error
    assert lost._fd is None
    os.close(write_fd)
