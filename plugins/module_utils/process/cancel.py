# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The cancellation of a run: a token (``Cancel``) made once per module run and passed down to the code that
starts pods, and the watch that cancels it.

ansible-core's workers call ``setsid()``: the module process runs in the worker's session, not in
ansible-playbook's process group, so neither ansible-runner's cancel (AWX: SIGKILL of ansible-playbook's process
group) nor the death of ansible-playbook reaches it, and a module left alone would roll to the end. The watch,
started by runner.execute() at the module's start, tells a cancelled run in two ways:

- an ancestor died: the processes between the module and the ansible-playbook of its run (the shells of the
  local connection, the worker, ansible-playbook itself: process/lineage.py), each known by its pid and its
  start time, looked at every ``POLL_SECONDS`` by a daemon thread;
- a signal: SIGTERM, SIGINT, SIGHUP (Ctrl-C, a graceful stop; ansible-core passes SIGTERM and SIGINT on to
  the module when its main process gets them) set the watch instead of ending the process at once.

Once cancelled, ``cancelled()`` gives the reason: the engine starts no pod any more (its pods are
``not_started``), a pod drained and not yet written is put back as it was, a pod written already is finished
and put back in its Services, the rollout starts no further step and the module fails with ``message()``.
The records stay unfinished, so that a relaunch resumes. A module run with ``async`` has the async wrapper,
which outlives the playbook on purpose, for parent: a cancel of the playbook does not stop it.
"""

import signal
import threading
import time

from ansible_collections.inplace.k8s.plugins.module_utils.process import lineage

POLL_SECONDS = 0.25
SIGNALS = ('SIGTERM', 'SIGINT', 'SIGHUP')


class Cancelled(Exception):
    """raise_if_cancelled()'s default error."""


class Cancel:
    """One run's cancellation, passed down from the module's entry point (a fresh one is never cancelled unless
    cancel() is called: a library caller or a test). The first reason counts. ``playbook``: the pid of the run's
    ansible-playbook, when a watch knows it (else process/lineage.py's answer); ``ancestors``: the processes that
    started this module run, (pid, start time) each (lineage.lineage(): the shells, the worker, ansible-playbook)."""

    def __init__(self, playbook=None, ancestors=None):
        self.reason = None
        self.at = None              # time.time() of the cancel
        self.not_started = []       # pods not started because of the cancel
        self.finished = []          # pods in flight at the cancel, finished since: 'name (status)'
        self._playbook = playbook
        self._ancestors = list(ancestors or [])
        self._lock = threading.RLock()   # a signal handler may run while the main thread holds it

    @property
    def ancestors(self):
        """The processes that started this module run ((pid, start time), nearest first), as a new list."""
        return list(self._ancestors)

    @property
    def playbook(self):
        return self._playbook if self._playbook is not None else lineage.playbook_pid()

    def cancel(self, reason):
        with self._lock:
            if self.reason is None:
                self.reason, self.at = reason, time.time()

    def cancelled(self):
        """Why this run was cancelled, or None."""
        return self.reason

    def abandoned(self):
        """Has a process that started this module run ended (its worker, whose action reads what the run writes for
        it, among them)? Asked at the end: what only that action would have removed is then the run's to remove."""
        return bool(self._ancestors) and lineage.gone(self._ancestors) is not None

    def raise_if_cancelled(self, error=Cancelled, template='%s'):
        """Raise ``error(template % reason)`` once cancelled."""
        if self.reason is not None:
            raise error(template % self.reason)

    def skipped(self, names):
        """Pods ``names`` were not started because of the cancel."""
        with self._lock:
            self.not_started.extend(n for n in names if n not in self.not_started)

    def in_flight_done(self, name, status):
        """Pod ``name`` ended with ``status``: noted when it was in flight at the cancel."""
        if self.reason is not None and status != 'not_started':
            with self._lock:
                self.finished.append('%s (%s)' % (name, status))

    def message(self):
        return 'cancelled (%s): %d pod(s) not started (%s), in-flight pods finished: %s; the records say the ' \
               'rollout is in progress: run the same job again to resume it' % (
                   self.reason, len(self.not_started), ', '.join(sorted(self.not_started)) or '-',
                   ', '.join(sorted(self.finished)) or 'none')


class Watch:
    """One module run's watch (see the module docstring): cancels ``token`` when one of the token's ancestors
    (lineage.lineage()) ends or a signal of SIGNALS comes."""

    def __init__(self, token, poll=POLL_SECONDS):
        self.token = token
        self.poll = poll
        self._stop = threading.Event()
        self._thread = None
        self._handlers = {}

    @property
    def ancestors(self):
        return self.token.ancestors

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
        self.token.cancel('%s received' % signal.Signals(number).name)

    def _loop(self):
        while not self._stop.wait(self.poll):
            pid = lineage.gone(self.ancestors)
            if pid is not None:
                outermost = self.ancestors[-1][0]
                self.token.cancel('%s (pid %d) ended' % ('ansible-playbook' if pid == outermost else 'the caller',
                                                         pid))
                return


def watch(signals=True):
    """The token of this module run and its started watch (runner.execute; after the guardian's fork): stop the
    watch at the module's end."""
    chain = lineage.walk()
    ancestors = lineage.lineage(chain)
    token = Cancel(playbook=ancestors[-1][0] if ancestors else None, ancestors=ancestors)
    if lineage.orphaned(chain):
        token.cancel('ansible-playbook ended before this module started (its worker, pid %d, outlived it)'
                     % chain[lineage.run_of(chain)[0]][0])
    return token, Watch(token).start(signals)
