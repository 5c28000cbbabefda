# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The way of one pod through a run, its state machine: refused, failed before it is touched (the pre-pull
failed on its node, admission denied the change on another pod), held by another run, unchanged, not
started (a cancel, the rollout's window) -> drain -> guarded write -> wait -> on failure stop or roll back
and record it -> undrain. Check mode previews instead.

A part of Engine (engine.py): it works on what Engine.__init__ sets (kube, op, options, watcher, clock, owner,
drainer) and reports through warn().
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    AdmissionDenied, ApiError, NotFoundError, PodFailure, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import (
    BLOCKED, CONFLICT, CONVERGED, FAILED, FINISHED_OK, GONE, NOT_READY_TIMEOUT, NOT_STARTED, REFUSED, RESUMED,
    ROLLED_BACK, UNCHANGED, UPDATED, WOULD_UPDATE, WRITTEN, ConcurrentChange, NotStarted, PodGone, PodRun,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import (
    departure, plan as planning, podstate, poll, record,
)
from ansible_collections.inplace.k8s.plugins.module_utils.process import guardian


class PodSteps:
    """One pod's steps (module docstring)."""

    def _preview(self, plan):
        run = PodRun(plan, self.clock)
        if plan.action == planning.REFUSED:
            return self._refuse(run)
        if plan.action == planning.UPDATE:
            self._gate_of(plan.pod)
            try:
                note = self.op.preview(self.kube, plan)
            except PodFailure as exc:
                run.error = exc.as_dict()
                return run.finish(FAILED, str(exc))
            except ApiError as exc:
                run.error = {'container': None, 'reason': type(exc).__name__, 'message': exc.msg}
                return run.finish(FAILED, 'the server refuses the change: %s' % exc.msg)
            return run.finish(WOULD_UPDATE, note)
        if self._resumable(plan.pod):
            return run.finish(WOULD_UPDATE, 'would finish an interrupted run: the pod was left drained (%s %s)'
                              % (self.drainer.mode.replace('_', ' '), self.drainer.name))
        return run.finish(UNCHANGED)

    def _refuse(self, run):
        self.warn('pod %s not changed: %s' % (run.plan.name, run.plan.refusal))
        return run.finish(REFUSED, run.plan.refusal)

    def _execute(self, plan):
        # Over 50 lines on purpose: one pod's outcomes (gone, refused, failed, conflict, done) are caught here, at its
        # one boundary, each turned into its result; split, a pod's failure would have several places to end.
        run = PodRun(plan, self.clock)
        # Time spent waiting for a slot among max_concurrency workers.
        run.timings['queued'] = round(max(0.0, run.started - self._started), 3)
        try:
            if plan.action == planning.REFUSED and plan.transient and self.watcher is not None:
                plan = self._running(run)   # Pending on its way to running: updated once it runs
            gone = self._departed(run)
            if gone is not None:
                return self._went_before(run, gone)
        except PodGone as exc:
            return self._went_before(run, exc)
        if plan.action == planning.REFUSED:
            return self._refuse(run)
        node = (plan.pod.get('spec') or {}).get('nodeName')
        if plan.action == planning.UPDATE and node in self._pull_failed:
            run.error = {'container': None, 'reason': 'PrePullFailed', 'message': self._pull_failed[node]}
            return run.finish(FAILED, 'the new image cannot be pulled on node %s (%s); the pod was not drained or '
                                      'changed' % (node, self._pull_failed[node]))
        if self._denied and plan.action == planning.UPDATE:
            # Admission refused this change on another pod: the same policy refuses it here too.
            run.error = {'container': None, 'reason': 'AdmissionDenied', 'message': self._denied}
            return run.finish(FAILED, 'not attempted: %s' % self._denied)
        busy = self._holder(plan.pod)
        if busy and self._cancelled_owner_gone(run):
            plan, busy = run.plan, self._holder(run.plan.pod)
        if busy:
            return run.finish(CONFLICT, 'pod %s: %s' % (plan.name, busy))
        resume = self._resumable(plan.pod)
        if plan.action == planning.UNCHANGED and not resume:
            return run.finish(UNCHANGED)
        if self.cancel.cancelled():
            self.cancel.skipped([plan.name])
            return run.finish(NOT_STARTED, 'not started: %s' % self.cancel.cancelled())
        window = self.options.window
        if window is None:
            return self._change(run, resume)
        # The rollout's sliding window: wait for this pod's turn (max_unavailable, budgets, the pods in flight).
        try:
            run.timings['turn'] = window.acquire(plan.name)
        except NotStarted as exc:
            if self.cancel.cancelled():
                self.cancel.skipped([plan.name])
            return run.finish(NOT_STARTED, exc.msg)
        except PodGone as exc:
            return self._went_before(run, exc)
        except WaitTimeout as exc:
            run.error = {'container': None, 'reason': 'Blocked', 'message': exc.msg}
            return run.finish(BLOCKED, '%s; the pod was not drained or changed' % exc.msg)
        try:
            return self._change(run, resume)
        finally:
            window.release(plan.name, run.status in FINISHED_OK, run.pod, gone=run.status == GONE)

    def _went_before(self, run, gone):
        """The pod went away before its turn (``gone``: a PodGone); the rollout's window counts it gone."""
        if self.options.window is not None:
            self.options.window.left(run.plan.name)
        return run.went(gone, departure.BEFORE)

    def _running(self, run):
        """Wait (at most wait_timeout) for a pod that is Pending on its way to running, then plan it again: its
        fresh plan (refused with the reason when it is still not running). PodGone when it went away meanwhile."""
        try:
            pod = self.watcher.wait_for(run.plan.name, lambda p: not planning.waits(p),
                                        lambda p: self._departure(run, p), self.options.wait_timeout or NOT_READY_TIMEOUT)
        except WaitTimeout:
            latest = self.watcher.get(run.plan.name) or run.plan.pod
            run.plan = planning.plan_pod(latest, self.op.desired(latest), self.op.judge)
            run.plan.reason = '%s, still after %ss (wait_timeout)' % (run.plan.refusal, self.options.wait_timeout)
            run.plan.transient = False
            return run.plan
        run.pod = pod
        run.plan = planning.plan_pod(pod, self.op.desired(pod), self.op.judge)
        return run.plan

    def _departed(self, run, read=False):
        """PodGone when the pod went away (as the watch has it; ``read``: asked of the server when no watch runs),
        else None."""
        name = run.plan.name
        if self.watcher is not None:
            pod = self.watcher.get(name)
        elif read:
            try:
                pod = self.kube.get_pod(podstate.meta(run.plan.pod, 'namespace'), name)
            except NotFoundError:
                pod = None
            except ApiError:
                return None
        else:
            return None
        return self._departure(run, pod)

    def _cancelled_owner_gone(self, run):
        """A run cancelled on this host still holds the pod (record.cancelled_owner): wait, at most wait_timeout,
        for its module to finish its pods in flight and exit, then plan the pod again; did it exit?"""
        pid = record.cancelled_owner(run.plan.pod, self.owner)
        timeout = self.options.wait_timeout or NOT_READY_TIMEOUT
        if pid is None or not poll.wait_exit(pid, timeout, self.cancel.cancelled):
            return False
        pod = self.kube.get_pod(podstate.meta(run.plan.pod, 'namespace'), run.plan.name)
        run.plan = planning.plan_pod(pod, self.op.desired(pod), self.op.judge)
        run.pod = pod
        return True

    def _change(self, run, resume):
        """Drain, write, wait, undrain one pod (its turn come); its Events (operations/events.py)."""
        if run.plan.action == planning.UPDATE:
            self.events.pod_started(run.pod, run.plan)
        try:
            return self._change_pod(run, resume)
        except PodGone as exc:
            # It went away where _change_pod's own handlers do not reach: while it was put back in service after
            # its change (the undrain's wait), or during a rollback's wait. Nothing else of it to do.
            run.went(exc, departure.AFTER if run.status in FINISHED_OK else departure.IN_FLIGHT)
            return run
        finally:
            self.cancel.in_flight_done(run.plan.name, run.status)
            self.events.pod_finished(run)

    def _change_pod(self, run, resume):
        # Over 50 lines on purpose: drain, change, wait and undrain of one pod read in order inside the one
        # try/finally that must put a drained pod back; split, that finally would span functions.
        plan = run.plan
        gate = self._gate_of(plan.pod) if plan.action == planning.UPDATE or resume else None
        rec = None
        guard = guardian.current() if gate else None
        if guard is not None:   # told before the drain: if this process is killed, the guardian puts it back
            guard.drained(plan.pod, gate, self.options.gate_on_failure, self.owner.get('run'))
        try:
            if gate and resume:
                self._claim(run)
                run.gate = dict(gate.report(), observed_not_ready=True, resumed=True)
            elif gate:
                self._drain(run, gate)
            if gate and self.cancel.cancelled():   # drained, nothing written yet: put back as it was
                self.cancel.skipped([plan.name])
                run.finish(NOT_STARTED, 'not started: %s; put back as it was' % self.cancel.cancelled())
                self._finish_record(run, run.claim, record.FAILED, error=run.reason)
                return run
            rec = run.record = self._write(run)
            groups = self.op.steps(run.plan) if run.written else None
            if groups is not None:
                self._act(run, rec, groups)
            elif self.options.wait:
                self._wait(run, run.plan, rec, run.pod)
            if self.options.wait:
                run.finish(UPDATED if run.written else RESUMED if resume else CONVERGED)
            else:
                run.finish(WRITTEN if run.written else UNCHANGED)
            if self.options.wait and not gate and self._needs_done_write(run, rec):
                self._finish_record(run, rec, record.DONE)
        except PodGone as exc:
            self._went(run, exc)
        except ConcurrentChange as exc:
            if self._went(run, self._departed(run, read=True)):
                return run
            run.finish(CONFLICT, exc.msg)
            if run.written:   # the record must not say in-progress (or settle as done) for another's change
                self._finish_record(run, rec, record.FAILED, error='conflict: %s' % exc.msg)
        except PodFailure as exc:
            if self._went(run, self._departed(run)):   # its containers stopped because it is going away
                return run
            run.error = exc.as_dict()
            self._recover(run, rec, exc)
        except (WaitTimeout, ApiError) as exc:
            if self._went(run, self._departure(run, None) if isinstance(exc, NotFoundError)
                          else self._departed(run, read=True)):
                return run
            run.error = {'container': None, 'reason': type(exc).__name__, 'message': exc.msg}
            if isinstance(exc, AdmissionDenied) and not run.written:
                self._denied = 'pod %s: %s' % (plan.name, exc.msg)
            self._recover(run, rec, exc)
        finally:
            if gate and run.gate:
                self._undrain(run, gate)
            if guard is not None:
                guard.settled(plan.pod)
        return run

    def _went(self, run, gone):
        """The pod went away in flight (``gone``: a PodGone; None: it did not): not a failure; nothing of it is
        undone (no undrain, no rollback, no record: the pod and its record go with it). Did it go?"""
        if gone is None:
            return False
        run.went(gone, departure.IN_FLIGHT)
        run.gate = None
        return True

    def _recover(self, run, rec, exc):
        """After a failure: roll back if asked and possible, record the outcome."""
        if rec is None:
            run.finish(FAILED, str(exc))
            self._finish_record(run, run.claim, record.FAILED, error=run.reason)
            return
        if self.options.on_failure == 'rollback' and self.op.can_rollback:
            try:
                self._rollback(run, rec)
                run.finish(ROLLED_BACK, 'rolled back after: %s' % exc)
                self._finish_record(run, rec, record.ROLLED_BACK, error=str(exc))
                return
            except (PodFailure, WaitTimeout, ApiError, ConcurrentChange) as again:
                run.finish(FAILED, '%s; rollback failed: %s' % (exc, again))
        else:
            run.finish(FAILED, str(exc))
        self._finish_record(run, rec, record.FAILED, error=run.reason)

    def _rollback(self, run, rec):
        target = self.op.rollback_target(rec)
        name, namespace = run.plan.name, podstate.meta(run.pod, 'namespace')

        @retry_conflict()
        def attempt():
            pod = self.kube.get_pod(namespace, name)
            self._check_same_pod(run, pod)
            self._check_owner(pod)   # another run may have taken over a pod whose change had settled
            back = planning.plan_pod(pod, target, self.op.judge)
            if back.action == planning.REFUSED:
                raise ConcurrentChange('cannot roll back pod %s: %s' % (name, back.refusal))
            failed_state = {c.name: self.op.snapshot(podstate.find_container(pod, c.name))
                            for c in back.updates()}
            if back.updates():
                pod = self.op.write(self.kube, pod, back, self._own(record.transition(rec, record.ROLLING_BACK)))
            return back, pod, failed_state

        back, pod, failed_state = attempt()
        run.rollback = {c.name: c.desired for c in back.updates()}
        run.write_time = self.clock()
        # Wait for new containers (not the failed ones) running the old values.
        self._wait(run, back, {'generation': podstate.meta(pod, 'generation'), 'before': failed_state}, pod,
                   prefix='rollback_')
