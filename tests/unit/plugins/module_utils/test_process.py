# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""process/proc.py (the one reader of /proc), process/lineage.py (which run is mine) and the cancel token's own
answers (process/cancel.py); the watch and what a cancel stops are in test_cancel.py."""

import os
import subprocess
import sys

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.process import cancel, lineage, proc
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import wait_until


@pytest.fixture
def child():
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


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
    monkeypatch.setattr(proc.os, 'kill', lambda pid, signum: (_ for _ in ()).throw(PermissionError(1, 'EPERM')))
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
