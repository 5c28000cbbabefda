# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Draining one pod around its change: take it out of service (readiness gate False, or the serving label
changed), wait to see it out, hold drain_seconds; afterwards put it back as gate_on_failure says (after a
success, in the same write that marks its record done) and wait to see it serving again.

A part of Engine (engine.py): it works on what Engine.__init__ sets (kube, op, options, watcher, clock, sleep,
owner, drainer) and reports through warn().
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, PodFailure, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import (
    CONFLICT, FINISHED_OK, NOT_READY_TIMEOUT, NOT_STARTED,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, podstate, poll, record


class Draining:
    """Drain and undrain (module docstring)."""

    def _gate_of(self, pod):
        """The Drainer for this pod: None without a drain mode, or with a warning when the pod cannot be
        drained that way."""
        if not self.drainer:
            return None
        if self.drainer.applies(pod):
            return self.drainer
        self.warn('pod %s %s: it is updated without draining' % (podstate.meta(pod, 'name'), self.drainer.missing(pod)))
        return None

    def _drain(self, run, gate):
        since = self.clock()
        run.services = gate.serving(self.kube, run.pod)
        self._claim(run, gate)
        run.gate = dict(gate.report(), observed_not_ready=False)
        self.watcher.observe(run.pod)
        timeout = min(NOT_READY_TIMEOUT, self.options.wait_timeout)
        if run.services is None:   # the drain shows on the pod (Ready False): the watch sees it
            try:
                run.pod = self.watcher.wait_for(run.plan.name, lambda p: gate.out_of_service(self.kube, p)[0],
                                                self._gone(run), timeout)
                run.gate['observed_not_ready'] = True
            except WaitTimeout:
                self.warn('pod %s did not report NotReady after its readiness gate %s was set False'
                          % (run.plan.name, gate.name))
        else:
            done, why = poll.until(lambda: gate.out_of_service(self.kube, run.pod), timeout, done=lambda r: r[0],
                                   cancelled=self.cancel.cancelled, clock=self.clock, sleep=self.sleep)
            run.gate.update(observed_not_ready=done, services=sorted(run.services))
            if not done and not self.cancel.cancelled():   # cancelled: the pod is put back as it was (podsteps)
                self.warn('pod %s: %s %s s after its label was set to %s=%s (does that Service select by %s?)'
                          % (run.plan.name, why, timeout, gate.key, drain.DRAINED_VALUE, gate.key))
        self.sleep(self.options.drain_seconds)
        run.mark('drain', since)

    def _undrain(self, run, gate):
        latest = self.watcher.get(run.plan.name) or run.pod
        policy = self.options.gate_on_failure
        ok = run.status in FINISHED_OK + (CONFLICT, NOT_STARTED) or policy == 'restore' or (
            policy == 'restore_if_healthy' and podstate.containers_healthy(latest))
        if not ok:
            run.gate['message'] = 'left drained: the pod is not healthy after the failure'
            self.warn('pod %s: left drained (%s %s) as the pod is not healthy after the failure'
                      % (run.plan.name, gate.mode.replace('_', ' '), gate.name))
            return
        since = self.clock()
        try:
            run.pod = self._set_gate_true(run, latest, gate)
            run.gate.update(status=gate.report_restored, restored=True)
            if run.status in FINISHED_OK:
                run.pod = self.watcher.wait_for(run.plan.name, podstate.is_ready, self._gone(run),
                                                self.options.wait_timeout)
                if run.services:
                    # Not stopped by a cancel: putting the pod back in service is what a cancel wants finished.
                    done, why = poll.until(lambda: gate.in_service(self.kube, run.pod, run.services),
                                           min(NOT_READY_TIMEOUT, self.options.wait_timeout), done=lambda r: r[0],
                                           clock=self.clock, sleep=self.sleep)
                    if not done:
                        run.gate['message'] = why
                        self.warn('pod %s: %s %s s after its serving label was restored'
                                  % (run.plan.name, why, min(NOT_READY_TIMEOUT, self.options.wait_timeout)))
                run.mark('undrain', since)
        except (ApiError, WaitTimeout, PodFailure) as exc:
            run.gate['message'] = str(exc)
            self.warn('pod %s: %s %s: %s' % (run.plan.name, gate.mode.replace('_', ' '), gate.name, exc))

    def _set_gate_true(self, run, latest, gate):
        """Set the gate True again; after a success the record this run owns is marked done in the same
        write, guarded by resourceVersion (on a conflict the pod is read again)."""
        if not (run.status in FINISHED_OK and run.record):
            return gate.set(self.kube, latest, True)
        run.pod = self.watcher.freshest(run.pod)

        @retry_conflict(on_retry=lambda _exc: self._reread(run))
        def attempt():
            pod = run.pod
            current = record.get(pod, self.op.name) or run.record
            free = not record.holder(current, self.owner, self.options.force_takeover)  # ours, or its run is gone
            final = (self._own(record.transition(current, record.DONE))
                     if free and current.get('state') in record.ACTIVE else None)
            return gate.set(self.kube, pod, True,
                            metadata=record.metadata_patch(pod, self.op.name, final) if final else None)
        return attempt()
