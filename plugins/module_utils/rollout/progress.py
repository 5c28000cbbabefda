# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Live progress of a rollout while its one call runs: the pods done, failed, in flight and waiting for a slot,
the time elapsed and an estimate of the time left, written as JSON lines to a file (internal.progress_file)
that the action plugin of rollout_workload reads and shows while the module runs (plugins/action/).

A line is written when a step begins or ends, and every INTERVAL seconds while pods change (at least every
HEARTBEAT seconds while a step runs, so a watcher of the job sees it is alive). Nothing is written without a
file; a file that cannot be written ends the reporting, never the rollout."""

import json
import os
import re
import stat
import tempfile
import threading
import time

INTERVAL = 2.0     # seconds between two lines while pods change
HEARTBEAT = 8.0    # seconds after which the same counts are written again


class Progress:
    """The counts of one run (``total`` pods, ``done`` of them already on the target when the call began)."""

    def __init__(self, path, total=0, done=0, failed=0, started=None, clock=time.time):
        self.path, self.clock = path, clock
        self.started = started or clock()
        self.total, self.done, self.failed = total, done, failed
        self.flight, self.waiting, self.gone = set(), 0, 0
        self.label, self.base = None, done   # the step running; the pods done when this call began (estimate)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._written = (None, 0.0)   # (the counts last written, when)

    @classmethod
    def to(cls, path, **kwargs):
        """A Progress writing to ``path``, or a Silent one without a path."""
        return cls(path, **kwargs) if path else Silent()

    # ---- what the loop and the window tell

    def step(self, label, names):
        """A step begins: its pods wait for a slot until they start."""
        with self._lock:
            self.label, self.waiting = label, len(names)
        self._write('step', force=True)
        if self._thread is None:
            self._thread = threading.Thread(target=self._beat, name='inplace-progress')
            self._thread.daemon = True
            self._thread.start()

    def note(self, text):
        """A line of its own (the plan, a pause, the end)."""
        if self.path is not None:
            self._append({'kind': 'note', 'line': text})

    def start(self, name):
        with self._lock:
            self.flight.add(name)
            self.waiting = max(self.waiting - 1, 0)

    def end(self, name, ok, gone=False):
        """Pod ``name`` left the window: done (``ok``), gone away (``gone``: neither done nor failed), or failed."""
        with self._lock:
            self.flight.discard(name)
            if gone:
                self.gone += 1
            elif ok:
                self.done += 1
            else:
                self.failed += 1

    def left(self, name):
        """Pod ``name`` went away before its turn: gone, no longer waiting for a slot."""
        with self._lock:
            if name not in self.flight:
                self.waiting = max(self.waiting - 1, 0)
                self.gone += 1

    def step_done(self, done, failed):
        """A step ended: the counts it reported are the truth (a batch without a window reports only here)."""
        with self._lock:
            self.flight, self.waiting = set(), 0
            self.done, self.failed = done, failed
        self._write('step-end', force=True)

    def close(self, remove=False):
        """Stop writing; ``remove``: the file too (the action that made it, and would remove it, is gone)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if remove and self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self.path = None

    # ---- what is written

    def counts(self):
        with self._lock:
            elapsed = self.clock() - self.started
            left = self.total - self.done - self.failed - self.gone
            gained = self.done - self.base
            eta = round(elapsed / gained * left, 1) if gained > 0 and left > 0 else None
            return {'label': self.label, 'done': self.done, 'failed': self.failed, 'gone': self.gone,
                    'in_flight': len(self.flight),
                    'waiting': self.waiting, 'total': self.total, 'elapsed': round(elapsed, 1), 'eta': eta}

    def _beat(self):
        while not self._stop.wait(INTERVAL):
            self._write('progress')

    def _write(self, kind, force=False):
        if self.path is None:
            return
        counts = self.counts()
        key = tuple(counts[k] for k in ('label', 'done', 'failed', 'gone', 'in_flight', 'waiting'))
        last, when = self._written
        if not force and key == last and self.clock() - when < HEARTBEAT:
            return
        self._written = (key, self.clock())
        self._append(dict(counts, kind=kind, line=line(counts)))

    def _append(self, entry):
        try:
            with open(self.path, 'a') as out:
                out.write(json.dumps(entry) + '\n')
        except (IOError, OSError):
            self.path = None   # reporting ends; the rollout goes on


# The only files the module writes its progress to: the ones the action makes (tempfile.mkstemp with this prefix
# and suffix, plugins/action/rollout_workload.py), in the temporary directory, regular, not linked, empty at first.
_PROGRESS_NAME = re.compile(r'inplace-progress-[A-Za-z0-9_]{1,64}\.jsonl\Z')


def file_error(path):
    """Why ``path`` is not a progress file the action made (internal.progress_file), or None."""
    if not isinstance(path, str) or not path:
        return 'internal.progress_file: a path is expected'
    name, directory = os.path.basename(path), os.path.dirname(path)
    if not _PROGRESS_NAME.match(name) or not os.path.isabs(path) or \
            os.path.realpath(directory) != os.path.realpath(tempfile.gettempdir()):
        return ('internal.progress_file: %s is not a file the action of rollout_workload made (%s*%s in %s); it is '
                'the role\'s plumbing: remove it' % (path[:200], 'inplace-progress-', '.jsonl', tempfile.gettempdir()))
    try:
        info = os.lstat(path)
    except OSError:
        return 'internal.progress_file: %s does not exist; it is made by the action of rollout_workload' % path
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size:
        return ('internal.progress_file: %s is not the empty regular file the action made (a link, or written '
                'already); it is the role\'s plumbing: remove it' % path)
    return None


class Silent:
    """No progress file: every call does nothing."""

    def __getattr__(self, _name):
        return lambda *args, **kwargs: None


def line(counts):
    """One progress line: 'step 2 of 4: 412/1000 pods done, 2 failed, 25 in flight, 30 waiting for a slot;
    elapsed 3m12s, about 4m30s left'."""
    parts = ['%d/%d pods done' % (counts['done'], counts['total'])]
    if counts['failed']:
        parts.append('%d failed' % counts['failed'])
    if counts.get('gone'):
        parts.append('%d gone (deleted or evicted: not failed)' % counts['gone'])
    parts.append('%d in flight' % counts['in_flight'])
    if counts['waiting']:
        parts.append('%d waiting for a slot' % counts['waiting'])
    text = '%s; elapsed %s' % (', '.join(parts), duration(counts['elapsed']))
    if counts['eta'] is not None:
        text += ', about %s left' % duration(counts['eta'])
    return '%s: %s' % (counts['label'] or 'rollout', text)


def duration(seconds):
    seconds = int(round(seconds or 0))
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%02ds' % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return '%dh%02dm' % (hours, rest // 60)
