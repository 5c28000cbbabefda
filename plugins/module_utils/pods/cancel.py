# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The cancel watch: a module notices that the run that called it was cancelled, and stops starting pods.

ansible-core's workers call ``setsid()``: the module process runs in the worker's session, not in
ansible-playbook's process group, so neither ansible-runner's cancel (AWX: SIGKILL of ansible-playbook's process
group) nor the death of ansible-playbook reaches it, and a module left alone would roll to the end. The watch,
started by runner.execute() at the module's start, tells a cancelled run in two ways:

- an ancestor died: the processes between the module and the ansible-playbook of its run (the shells of the
  local connection, the worker, ansible-playbook itself), each known by its pid and its start time in
  /proc (a reused pid is not mistaken for it), looked at every ``POLL_SECONDS`` by a daemon thread;
- a signal: SIGTERM, SIGINT, SIGHUP (Ctrl-C, a graceful stop; ansible-core passes SIGTERM and SIGINT on to
  the module when its main process gets them) set the watch instead of ending the process at once.

Once cancelled, ``cancelled()`` gives the reason: the engine starts no pod any more (its pods are
``not_started``), a pod drained and not yet written is put back as it was, a pod written already is finished
and put back in its Services, the rollout starts no further step and the module fails with ``message()``.
The records stay unfinished, so that a relaunch resumes. A module run with ``async`` has the async wrapper,
which outlives the playbook on purpose, for parent: a cancel of the playbook does not stop it.
"""

import os
import signal
import threading
import time

from ansible_collections.inplace.k8s.plugins.module_utils.pods import poll, record

POLL_SECONDS = 0.25
SIGNALS = ('SIGTERM', 'SIGINT', 'SIGHUP')
LAUNCHERS = ('ansible-runner', 'ansible-navigator')   # above ansible-playbook, not part of the run's lineage

_current = None


def proc_stat(pid):
    """(state, parent pid, start time in clock ticks) of process ``pid`` from /proc, or None (gone, no /proc)."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            fields = handle.read().rpartition(')')[2].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (IOError, OSError, IndexError, ValueError):
        return None


def _is_ansible(pid):
    """Is ``pid`` an ansible-core process (ansible-playbook, its workers; not a launcher above it such as
    ansible-runner, which may outlive the playbook it ran)?"""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            argv = handle.read().split(b'\0')
    except (IOError, OSError):
        return False
    names = [os.path.basename(arg.decode('utf-8', 'replace')) for arg in argv[:2]]
    return any(n.startswith('ansible') and not n.startswith(LAUNCHERS) for n in names)


def walk(pid=None):
    """The ancestors of ``pid`` (default: this process), nearest first: [(pid, start time, ansible?, session
    leader?)], pid 1 included when it is an ansible process (ansible-playbook as a container's first process)."""
    chain = []
    current = os.getppid() if pid is None else (proc_stat(pid) or (None, 0))[1]
    for _hop in range(64):
        stat = proc_stat(current) if current >= 1 else None
        if stat is None:
            break
        ansible = _is_ansible(current)
        if current == 1 and not ansible:
            break
        chain.append((current, stat[2], ansible, _session_leader(current)))
        if current == 1:
            break
        current = stat[1]
    return chain


def _session_leader(pid):
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def _run_of(chain):
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
    found = _run_of(chain)
    return [item[:2] for item in chain[:found[1] + 1 if found else 1]]


def orphaned(chain):
    """Did ansible-playbook end before this module started? ansible-core runs a module from a worker it forked
    (two ansible processes above the module: the worker, a session leader, and ansible-playbook); a worker that
    outlived its ansible-playbook (it left its process group: the group's SIGKILL missed it) still starts the
    module of the task it had, with no ansible process above it."""
    found = _run_of(chain)
    return found is not None and found[0] == found[1] and chain[found[0]][3]


def gone(ancestors):
    """The first of ``ancestors`` ((pid, start time)) that no longer runs (exited, a zombie, or its pid now
    another process's), or None."""
    for pid, started in ancestors:
        stat = proc_stat(pid)
        if stat is None or stat[0] in ('Z', 'X') or stat[2] != started:
            return pid
    return None


class Watch:
    """One module run's watch (see the module docstring); ``ancestors``: lineage()."""

    def __init__(self, ancestors, poll=POLL_SECONDS):
        self.ancestors = list(ancestors)
        self.poll = poll
        self.reason = None
        self.at = None              # time.time() of the cancel
        self.not_started = []       # pods not started because of the cancel
        self.finished = []          # pods in flight at the cancel, finished since: 'name (status)'
        self._lock = threading.RLock()   # the signal handler may run while the main thread holds it
        self._stop = threading.Event()
        self._thread = None
        self._handlers = {}

    def start(self, signals=True):
        """Watch the ancestors (a daemon thread) and, from the main thread, catch SIGNALS."""
        if signals and threading.current_thread() is threading.main_thread():
            for name in SIGNALS:
                number = getattr(signal, name, None)
                if number is not None:
                    self._handlers[number] = signal.signal(number, self._signalled)
        if self.ancestors:
            self._thread = threading.Thread(target=self._loop, name='inplace-cancel-watch', daemon=True)
            self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        for number, handler in self._handlers.items():
            try:
                signal.signal(number, handler)
            except (ValueError, TypeError):
                pass
        self._handlers = {}

    def _signalled(self, number, _frame):
        self.cancel('%s received' % signal.Signals(number).name)

    def _loop(self):
        while not self._stop.wait(self.poll):
            pid = gone(self.ancestors)
            if pid is not None:
                outermost = self.ancestors[-1][0]
                self.cancel('%s (pid %d) ended' % ('ansible-playbook' if pid == outermost else 'the caller', pid))
                return

    def cancel(self, reason):
        with self._lock:
            if self.reason is None:
                self.reason, self.at = reason, time.time()

    def cancelled(self):
        return self.reason

    def skipped(self, names):
        with self._lock:
            self.not_started.extend(n for n in names if n not in self.not_started)

    def done(self, name, status):
        with self._lock:
            self.finished.append('%s (%s)' % (name, status))

    def message(self):
        return 'cancelled (%s): %d pod(s) not started (%s), in-flight pods finished: %s; the records say the ' \
               'rollout is in progress: run the same job again to resume it' % (
                   self.reason, len(self.not_started), ', '.join(sorted(self.not_started)) or '-',
                   ', '.join(sorted(self.finished)) or 'none')


def start(signals=True):
    """Start the watch of this module run (runner.execute; after the guardian's fork)."""
    global _current
    stop()
    chain = walk()
    _current = Watch(lineage(chain)).start(signals)
    if orphaned(chain):
        _current.cancel('ansible-playbook ended before this module started (its worker, pid %d, outlived it)'
                        % chain[_run_of(chain)[0]][0])
    return _current


def stop():
    global _current
    if _current is not None:
        _current.stop()
        _current = None


def current():
    return _current


def cancelled():
    """Why this run was cancelled, or None (not cancelled, or no watch)."""
    return _current.cancelled() if _current is not None else None


def skipped(names):
    if _current is not None:
        _current.skipped(names)


def in_flight_done(name, status):
    if _current is not None and _current.cancelled() and status != 'not_started':
        _current.done(name, status)


def outermost():
    """The pid of this run's ansible-playbook (the last of the watch's ancestors, else record.playbook_pid())."""
    if _current is not None and _current.ancestors:
        return _current.ancestors[-1][0]
    return record.playbook_pid()


# --------------------------------------------------------------------------- a relaunch after a cancel

def cancelled_owner(pod, owner, alive=record.pid_alive):
    """The pid of a cancelled run on this host that still holds one of the pod's records (its ansible process,
    ``playbook`` in its owner, is gone, its module still finishes the pods it had in flight), or None."""
    for rec in record.records(pod).values():
        other = record.holder(rec, owner, alive=alive)
        if other and other.get('host') == owner.get('host') and isinstance(other.get('pid'), int) and \
                isinstance(other.get('playbook'), int) and not alive(other['playbook']):
            return other['pid']
    return None


def wait_exit(pid, timeout, alive=record.pid_alive, clock=time.monotonic, sleep=time.sleep):
    """Wait at most ``timeout`` seconds for process ``pid`` to exit (a cancel of this run stops the wait); did it?"""
    return poll.until(lambda: not alive(pid), timeout, cancelled=cancelled, clock=clock, sleep=sleep)
