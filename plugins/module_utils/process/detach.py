# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A process that outlives the kill of its module: the pods' guardian (process/guardian.py) and the owners' keeper
(process/keeper.py).

The child leaves the module's process group and session (``setsid``): the SIGKILL that ansible-runner sends to
the whole process group of a canceled job (AWX's cancel) does not reach it. It lets go of the module's stdin,
stdout and stderr, so Ansible never waits for it, takes the default action of SIGTERM, SIGINT and SIGHUP again
(the module's cancel watch may have caught them), and never returns into the module's code. It ends with os._exit,
which runs no atexit handler: it removes the copies of client keys on disk it made itself (settings.private_file,
where there is no file in memory) before.
"""

import os
import signal

from ansible_collections.inplace.k8s.plugins.module_utils.connection import settings


def fork(body, child_closes=(), parent_closes=()):
    """Run ``body()`` in a detached child; its exit status is 1 when ``body`` raised. ``child_closes``: file
    descriptors the child closes first; ``parent_closes``: those this process closes after the fork (or when it
    failed). Returns once the child is out of this process group (a kill of the group right after cannot take it
    along): the child's pid, or None when it could not fork or died before."""
    ready_read, ready_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (ready_read, ready_write) + tuple(parent_closes):
            os.close(fd)
        return None
    if pid == 0:   # the child
        code = 0
        try:
            for fd in (ready_read,) + tuple(child_closes):
                os.close(fd)
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.write(ready_write, b'.')
            os.close(ready_write)
            body()
        except BaseException:   # pylint: disable=broad-except
            code = 1
        try:
            settings.remove_private_files()   # os._exit runs no atexit handler: key copies on disk go here
        except BaseException:   # pylint: disable=broad-except
            code = 1
        os._exit(code)   # never back into the module (no atexit, no exit_json of a copy)
    for fd in (ready_write,) + tuple(parent_closes):
        os.close(fd)
    with os.fdopen(ready_read, 'rb', buffering=0) as ready:
        detached = ready.read(1) == b'.'   # b'' when the child died before it was out of the group
    return pid if detached else None
