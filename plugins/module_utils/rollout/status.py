# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a person sees of a rollout on its workload: the status annotation (``inplace.k8s/status``, one line
written with the rollout record, never a write of its own but at a halt) and the workload's Kubernetes Events
(operations/events.py): RolloutStarted or RolloutResumed, RolloutStep after each step, RolloutPaused (the role's
pause), RolloutHalted, RollbackStarted, RolledBack, Released, RolloutFinished.

``kubectl get deploy web -o jsonpath='{.metadata.annotations.inplace\\.k8s/status}'`` shows the status;
``kubectl describe deploy web`` and ``kubectl events --for deploy/web`` the Events (docs/events.md).
"""

from ansible_collections.inplace.k8s.plugins.module_utils.operations import events
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rolloutrecord import RolloutRecord
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import (
    DONE, IN_PROGRESS, RELEASED, ROLLED_BACK, ROLLING_BACK,
)

ANNOTATION = 'inplace.k8s/status'
WAY_OUT = ('resume: run the same change again; end it: rollout_action=rollback or rollout_action=release '
           '(module: state=rollback, state=release)')


def target_text(values):
    """'app=registry/web:2.0' of a record's target (or before) values."""
    parts = ['%s=%s' % (name, image) for name, image in sorted((values.get('images') or {}).items())]
    parts += ['%s %s' % (name, events.brief(res)) for name, res in sorted((values.get('resources') or {}).items())]
    return ', '.join(parts) or 'its target'


def _typed(rec):
    """The record through its typed reader (a dict as written, or a RolloutRecord)."""
    return rec if isinstance(rec, RolloutRecord) else RolloutRecord(rec)


def clock(stamp):
    """'10:02:11Z' of a record timestamp (2026-11-27T10:02:11Z), or '?'."""
    return stamp.partition('T')[2] or stamp if stamp else '?'


def text(rec, progress=None):
    """The status line of a rollout record (``progress``: {done, total, step, halted, failed} known to this run)."""
    rec = _typed(rec)
    state = rec.state
    progress = progress or {}
    pods = '%s/%s pods' % (progress['done'], progress['total']) if progress.get('total') is not None else \
        '%s pods done' % progress['done'] if progress.get('done') is not None else 'pods'
    run = rec.owner_run or '?'
    target, before = target_text(rec.target or {}), target_text(rec.before or {})
    since = 'started %s by run %s' % (clock(rec.started), run)
    step = ', %s' % progress['step'] if progress.get('step') else ''
    if progress.get('gone'):   # pods that went away during the run (evicted, deleted): not failed
        pods += ' (%d gone: deleted or evicted, not failed)' % progress['gone']
    if state == IN_PROGRESS and progress.get('halted'):
        return 'halted: %s on %s%s, %s failed; %s; %s' % (pods, target, step, progress.get('failed', 0), since, WAY_OUT)
    if state == IN_PROGRESS:
        return 'rolling: %s on %s%s, %s; if it stopped - %s' % (pods, target, step, since, WAY_OUT)
    if state == ROLLING_BACK:
        return 'rolling back: to %s (from %s), %s; if it stopped - run rollout_action=rollback again' % (
            before, target, since)
    ended = 'finished %s' % clock(rec.finished)
    if state == DONE:
        return 'done: %s on %s, %s, %s' % (pods, target, since, ended)
    if state == ROLLED_BACK:
        return 'rolled back: %s on %s again (the rollout to %s ended), %s, %s' % (pods, before, target, since, ended)
    if state == RELEASED:
        return 'released: ended where it stood, %s on %s, the others as they were; %s, %s' % (
            pods, target, since, ended)
    return '%s: %s on %s, %s' % (state, pods, target, since)


class Teller:
    """The workload's side of a rollout for people: its Events (``recorder``, events.Recorder) and the progress
    its status annotation shows (``workload.progress``, written with the next record write)."""

    def __init__(self, recorder, workload):
        self.recorder, self.workload = recorder, workload

    def _tell(self, reason, note, warning=False, exact=False):
        w = self.workload
        if w is not None:
            self.recorder.record(w.obj, w.kind, reason, note, warning, exact)

    def progress(self, done, total, step=None, halted=False, failed=0, gone=0):
        if self.workload is not None:
            self.workload.progress = {'done': done, 'total': total, 'step': step, 'halted': halted, 'failed': failed,
                                      'gone': gone}

    def before_step(self, batch, done):
        """A step called on its own (the role's): what its status tells until it ends - the pods counted done so far."""
        if self.workload is not None and self.workload.progress is None:
            self.progress(done, None, 'at %s' % (batch.label or 'a step'))

    def started(self, rec, resuming, pending, total):
        text = '%s in place to %s: %d of %d pods to update (run %s)' % (
            'Resuming the rollout' if resuming else 'Rolling out', target_text(rec.target or {}), pending, total,
            rec.owner_run)
        self._tell(events.ROLLOUT_RESUMED if resuming else events.ROLLOUT_STARTED, text)

    def step(self, batch, out):
        """After a step (its result ``out``): RolloutStep, or RolloutHalted with the failed pods; True if halted."""
        failed = out.get('failed_pods') or []
        gone = out.get('gone') or []
        self.progress(out.get('updated'), out.get('total'), ('at %s' if out.get('halt') else '%s done') % (batch.label or 'a step'),
                      bool(out.get('halt')), len(failed), len(gone))
        counts = '%s of %s pods run the target, %d failed' % (out.get('updated', '?'), out.get('total', '?'), len(failed))
        if gone:
            counts += ', %d gone (not failed: %s)' % (len(gone), '; '.join(
                '%s %s' % (item.get('name'), item.get('cause')) for item in gone[:3]) + (' ...' if len(gone) > 3 else ''))
        if out.get('halt'):
            why = '; '.join('%s: %s' % (item.get('name'), item.get('reason')) for item in failed[:3]) or \
                '%d pod(s) not started' % len(out.get('not_started') or [])
            text = 'Halted after %s: %s (%s); %s' % (batch.label or 'a step', counts, why, WAY_OUT)
            self._tell(events.ROLLOUT_HALTED, text, warning=True, exact=True)
            return True
        self._tell(events.ROLLOUT_STEP, '%s done: %s' % ((batch.label or 'step').capitalize(), counts), exact=True)
        return False

    def paused(self, seconds, watched):
        """The role's pause (the watch step) begins: its Event; its status tells the pods counted done so far."""
        if self.workload is not None and self.workload.progress is None:
            self.progress(watched, None, 'paused')
        self._tell(events.ROLLOUT_PAUSED, 'Paused for %ss, watching the %d pod(s) updated so far' % (seconds, watched))

    def rolling_back(self, rec):
        self._tell(events.ROLLBACK_STARTED, 'Rolling back in place to %s (from %s)' % (
            target_text(rec.before or {}), target_text(rec.target or {})), warning=True)

    def ending(self, pods, old):
        """Before the record's last write: its progress."""
        self.progress(len(pods) - len(old), len(pods))

    def ended(self, rec, final, old):
        target = target_text(rec.target or {})
        if final == RELEASED:
            self._tell(events.RELEASED, 'Released: the rollout to %s ended where it stood, %d pod(s) left as they '
                       'were' % (target, len(old)), warning=bool(old))
        elif final == ROLLED_BACK:
            self._tell(events.ROLLED_BACK_REASON, 'Rolled back to %s' % target_text(rec.before or {}),
                       warning=True)
        else:
            self._tell(events.ROLLOUT_FINISHED, 'Rollout to %s finished%s' % (
                target, ', %d pod(s) left on the old version' % len(old) if old else ''))
