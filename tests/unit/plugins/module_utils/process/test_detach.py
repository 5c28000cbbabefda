# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""detach.fork: the child runs in a session of its own, its status says whether its body raised, and a failed fork
leaves no descriptor open."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.inplace.k8s.plugins.module_utils.process import detach


def status(pid):
    code = os.waitpid(pid, 0)[1]
    return os.WEXITSTATUS(code)


def test_the_child_runs_in_a_session_of_its_own_and_closes_what_it_is_told():
    read_fd, write_fd = os.pipe()

    def body():
        os.write(write_fd, b'%d %d' % (os.getsid(0), os.getpgrp()))

    keep_read, keep_write = os.pipe()
    pid = detach.fork(body, child_closes=(keep_read,), parent_closes=(keep_write,))
    assert pid is not None and status(pid) == 0
    os.close(write_fd)
    session, group = (int(x) for x in os.read(read_fd, 64).split())
    os.close(read_fd)
    assert session == pid == group and session != os.getsid(0)
    assert os.read(keep_read, 1) == b''   # this side's write end closed here, the child's at its exit
    os.close(keep_read)


def test_a_body_that_raises_exits_1():
    def body():
        raise RuntimeError('boom')

    pid = detach.fork(body)
    assert status(pid) == 1


def test_a_failed_fork_returns_none_and_closes_the_descriptors(monkeypatch):
    opened = []
    real_pipe = os.pipe

    def pipe():
        fds = real_pipe()
        opened.extend(fds)
        return fds

    def refuse():
        raise OSError('no fork')

    monkeypatch.setattr(detach.os, 'pipe', pipe)
    monkeypatch.setattr(detach.os, 'fork', refuse)
    extra_read, extra_write = real_pipe()
    assert detach.fork(lambda: None, parent_closes=(extra_read,)) is None
    for fd in opened + [extra_read]:
        try:
            os.fstat(fd)
        except OSError:
            continue
        raise AssertionError('descriptor %d left open' % fd)
    os.close(extra_write)
