# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one reader of /proc: what the rest of the collection asks of a process of this host.

A process is known by its pid and its start time (clock ticks since boot, field 22 of /proc/PID/stat): a pid
reused by another process is not mistaken for it. Without /proc (another system) every answer says "unknown":
stat() None, ansible() False; alive() falls back to kill(pid, 0).
"""

import os

LAUNCHERS = ('ansible-runner', 'ansible-navigator')   # above ansible-playbook, not part of the run's lineage
DEAD = ('Z', 'X')   # a zombie, or dead


def stat(pid):
    """(state, parent pid, start time in clock ticks) of process ``pid`` from /proc, or None (gone, no /proc)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            fields = handle.read().rpartition(')')[2].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (IOError, OSError, IndexError, ValueError):
        return None


def ansible(pid):
    """Is ``pid`` an ansible-core process (ansible-playbook, its workers; not a launcher above it such as
    ansible-runner, which may outlive the playbook it ran)?"""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            argv = handle.read().split(b'\0')
    except (IOError, OSError):
        return False
    names = [os.path.basename(arg.decode('utf-8', 'replace')) for arg in argv[:2]]
    return any(n.startswith('ansible') and not n.startswith(LAUNCHERS) for n in names)


def session_leader(pid):
    """Does ``pid`` lead its session (an ansible-core worker calls setsid)?"""
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def running(pid, started):
    """Does the process (``pid``, ``started``: its start time) still run: not exited, not a zombie, its pid not
    another process's now?"""
    found = stat(pid)
    return found is not None and found[0] not in DEAD and found[2] == started


def alive(pid):
    """Does process ``pid`` of this host still run (a zombie does not)? Without its start time: a record names
    only the pid."""
    found = stat(pid)
    if found is not None:
        return found[0] != 'Z'
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == 1   # EPERM: it exists, owned by another user
    return True
