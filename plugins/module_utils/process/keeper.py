# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A suspension does not outlive its run: the keeper gitops_suspend leaves behind.

After it suspended objects, gitops_suspend forks a keeper and returns. The keeper leaves the module's process
group and session (detach.py: a SIGKILL of the job's process group, AWX's cancel, does not reach it) and lets
go of the module's output. It looks every ``CHECK_SECONDS`` at the run's ansible-playbook (pid
and start time): once it is gone (a cancel, a kill, a crash that skipped the role's ``always``), it resumes every
object this run still holds suspended and exits. It also exits when none of them is suspended by this run any more
(the role resumed them), looked at every ``LOOK_SECONDS``, and at ``max_seconds`` it resumes them and exits: every
loop is bounded. A kill of every process of the host at once stops it too; the next run takes such a suspension
over (suspend.py) and its resume puts back the value from before.
"""

import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError
from ansible_collections.inplace.k8s.plugins.module_utils.owners import suspend
from ansible_collections.inplace.k8s.plugins.module_utils.process import detach, lineage, proc

CHECK_SECONDS = 0.5
LOOK_SECONDS = 10


def start(connect, items, run, max_seconds):
    """Fork the keeper of ``items`` (gitops_suspend's summaries of the objects it suspended) for run ``run``;
    ``connect()`` makes its client. The keeper's pid, or None when no keeper could start (no ansible-playbook
    above this module to watch, or no fork)."""
    playbook = lineage.run_process()
    if playbook is None:
        return None
    return detach.fork(lambda: keep(connect, items, run, playbook, max_seconds))


def alive(playbook):
    """Does the ansible-playbook (pid, start time) still run?"""
    return proc.running(*playbook)


def keep(connect, items, run, playbook, max_seconds, clock=time.monotonic, sleep=time.sleep, is_alive=alive):
    """The keeper's loop (module docstring): 'resumed' when it resumed the objects, else 'released'."""
    deadline = clock() + max_seconds
    kube = connect()
    looked = clock()
    while clock() < deadline:
        if not is_alive(playbook):
            break
        if clock() - looked >= LOOK_SECONDS:
            looked = clock()
            try:
                held = [k for k in suspend.reread(kube, items) if (suspend.mark(k[1]) or {}).get('run') == run]
            except InplaceError:
                held = True   # cannot tell now: looked at again later
            if not held:
                return 'released'
        sleep(CHECK_SECONDS)
    for _attempt in range(5):   # a conflict (the object changed meanwhile) is read and tried again
        try:
            suspend.resume(kube, suspend.reread(kube, items), run)
            return 'resumed'
        except InplaceError:
            sleep(1)
    return 'failed'
