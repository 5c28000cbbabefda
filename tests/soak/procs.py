# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The soak's view of local processes and ports: what it started, what is left, what to stop."""

from __future__ import absolute_import, division, print_function

import os
import socket


def mentions(path, word):
    try:
        with open(path) as handle:
            return word in handle.read()
    except OSError:
        return False


def processes():
    """{pid: (parent pid, command line)} of the live processes (zombies left out)."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                fields = handle.read().rpartition(')')[2].split()
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                cmdline = handle.read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except OSError:
            continue
        if fields[0] != 'Z':
            found[int(entry)] = (int(fields[1]), cmdline)
    return found


def kill_tree(pid, sig):
    """Signal ``pid`` and every process under it (whatever their session); the pids signalled."""
    table = processes()
    pids, queue = [], [pid]
    while queue:
        current = queue.pop()
        pids.append(current)
        queue.extend(child for child, (parent, _cmd) in table.items() if parent == current and child not in pids)
    for each in pids:
        try:
            os.kill(each, sig)
        except ProcessLookupError:
            pass
    return pids


def leftovers(marker):
    """Live processes of one run: those whose command line names its vars file (ansible-playbook and its
    workers), and every process under them (the modules)."""
    table = processes()
    roots = [pid for pid, (_parent, cmdline) in table.items() if marker in cmdline]
    found, queue = [], list(roots)
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(child for child, (parent, _cmd) in table.items() if parent == current and child not in found)
    return sorted(found)


def port_open(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=1).close()
        return True
    except OSError:
        return False
