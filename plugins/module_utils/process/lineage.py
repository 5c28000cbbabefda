# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which run is mine: the processes above a module, up to the ansible-playbook of its run.

ansible-core runs a module from a worker it forked (a session leader); above the worker is ansible-playbook, above
that maybe a launcher (ansible-runner, ansible-navigator) or a task of another playbook (whose ansible processes
are another run). The questions, one function each:

- ``walk()``: the ancestors of this process, nearest first, each with its start time;
- ``lineage(chain)``: the ancestors whose death cancels the run (the cancel watch, process/cancel.py);
- ``orphaned(chain)``: did ansible-playbook end before this module started?
- ``gone(ancestors)``: the first of them that no longer runs;
- ``run_process()``: (pid, start time) of the process whose end ends this run: its ansible-playbook, else the
  parent (a module run by hand); the keeper watches it, a suspension and a pod record name it;
- ``playbook_pid()``: the pid of this run's ansible-playbook, None when no ansible process is above (the
  rollout's run id and record owner).
"""

import os

from ansible_collections.inplace.k8s.plugins.module_utils.process import proc

MAX_HOPS = 64


def walk(pid=None):
    """The ancestors of ``pid`` (default: this process), nearest first: [(pid, start time, ansible?, session
    leader?)], pid 1 included when it is an ansible process (ansible-playbook as a container's first process)."""
    chain = []
    current = os.getppid() if pid is None else (proc.stat(pid) or (None, 0))[1]
    for _hop in range(MAX_HOPS):
        found = proc.stat(current) if current >= 1 else None
        if found is None:
            break
        ansible = proc.ansible(current)
        if current == 1 and not ansible:
            break
        chain.append((current, found[2], ansible, proc.session_leader(current)))
        if current == 1:
            break
        current = found[1]
    return chain


def run_of(chain):
    """(first, last) index in ``chain`` (walk()) of the nearest run of ansible processes above the module: the
    worker and the ansible-playbook that forked it (a playbook started by a task of another playbook stops
    there: the outer one is not this run); None when there is none."""
    first = next((index for index, item in enumerate(chain) if item[2]), None)
    if first is None:
        return None
    last = first
    while last + 1 < len(chain) and chain[last + 1][2]:
        last += 1
    return first, last


def lineage(chain):
    """The ancestors whose death cancels the run: [(pid, start time)] of ``chain`` (walk()) up to this run's
    ansible-playbook; the parent alone when there is no ansible process (a module run by hand, or on a remote
    host through ssh)."""
    found = run_of(chain)
    return [item[:2] for item in chain[:found[1] + 1 if found else 1]]


def orphaned(chain):
    """Did ansible-playbook end before this module started? ansible-core runs a module from a worker it forked
    (two ansible processes above the module: the worker, a session leader, and ansible-playbook); a worker that
    outlived its ansible-playbook (it left its process group: the group's SIGKILL missed it) still starts the
    module of the task it had, with no ansible process above it."""
    found = run_of(chain)
    return found is not None and found[0] == found[1] and chain[found[0]][3]


def gone(ancestors):
    """The first of ``ancestors`` ((pid, start time)) that no longer runs (exited, a zombie, or its pid now
    another process's), or None."""
    for pid, started in ancestors:
        if not proc.running(pid, started):
            return pid
    return None


def run_process(chain=None):
    """(pid, start time) of the process whose end ends this run (the last of lineage(); ``chain``: walk(),
    default: walked here): this run's ansible-playbook, the parent when no ansible process is above; None
    without /proc."""
    ancestors = lineage(walk() if chain is None else chain)
    return ancestors[-1] if ancestors else None


def playbook_pid(chain=None):
    """The pid of this run's ansible-playbook (``chain``: walk(), default: walked here), or None outside Ansible
    or without /proc."""
    chain = walk() if chain is None else chain
    found = run_of(chain)
    return chain[found[1]][0] if found else None
