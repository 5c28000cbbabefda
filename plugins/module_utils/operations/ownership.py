# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The run's records on its pods: who holds a pod (another run's live record refuses it), the claim before a
drain, the one guarded write of a change with its record (re-read and re-planned on a conflict), and the
record's final state.

A part of Engine (engine.py): it works on what Engine.__init__ sets (kube, op, options, watcher, clock, owner)
and reports through warn().
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import (
    NOT_READY_TIMEOUT, OWNER_MARGIN, ConcurrentChange, planned_values,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan as planning, podstate, record


class Ownership:
    """Records and guarded writes (module docstring)."""

    def _resumable(self, pod):
        """Spec already at the target, readiness gate left False by a run that stopped (gate given)."""
        return bool(self.drainer) and self.drainer.left_drained(pod)

    def _own(self, rec, waits=1):
        """``rec`` owned by this run until its ``waits`` waits (one per group of steps()), the drain and a
        margin are over; every record write renews it."""
        o = self.options
        margin = o.drain_seconds + NOT_READY_TIMEOUT + OWNER_MARGIN
        return record.claim(rec, self.owner, waits * (o.wait_timeout + o.min_ready_seconds) + margin)

    def _settled(self, pod, operation, rec):
        """Is this record of ``pod`` settled (its change complete)? Only our own operation can tell."""
        return operation == self.op.name and bool(self.op.settled(pod, rec))

    def _holder(self, pod):
        """Why another run holds the pod, or None."""
        return record.pod_holder(pod, self.owner, self.options.force_takeover,
                                 settled=lambda operation, rec: self._settled(pod, operation, rec))

    def _needs_done_write(self, run, rec):
        """After a success without a readiness gate: only a record the pod cannot settle needs its
        final state written (an unfinished one this run found, or an operation that cannot tell)."""
        return bool(rec) and rec.get('state') in record.ACTIVE and not self._settled(run.pod, self.op.name, rec)

    def _begin(self, pod, fresh, generation=None):
        """A new in-progress record for the updates of ``fresh``, before-states snapshot from ``pod``."""
        previous = record.get(pod, self.op.name)
        snapshots = {c.name: self.op.snapshot(podstate.find_container(pod, c.name)) for c in fresh.updates()}
        return record.begin(pod, self.op.name, fresh.desired(), snapshots, generation,
                            settled=bool(previous) and self._settled(pod, self.op.name, previous))

    def _check_owner(self, pod):
        busy = self._holder(pod)
        if busy:
            raise ConcurrentChange('pod %s: %s' % (podstate.meta(pod, 'name'), busy))

    def _reread(self, run):
        """After a guarded write found the pod changed: count it and read the pod again."""
        run.conflicts += 1
        run.pod = self.kube.get_pod(podstate.meta(run.pod, 'namespace'), run.plan.name)

    def _replan(self, run):
        """(pod, its fresh plan) for a guarded write: the same pod, not held by another run."""
        pod = run.pod
        self._check_same_pod(run, pod)
        self._check_owner(pod)
        return pod, planning.plan_pod(pod, self.op.desired(pod), self.op.judge)

    def _claim(self, run, gate=None):
        """Before draining: own the pod's record, keeping the before-state of an unfinished record, by a
        guarded write (of two runs one wins). With ``gate`` the same pods/status write sets the gate False
        (drain), so claiming costs no write of its own. A pod already updated with no unfinished record
        needs no claim."""
        @retry_conflict(on_retry=lambda _exc: self._reread(run))
        def attempt():
            pod, fresh = self._replan(run)
            previous = record.get(pod, self.op.name)
            if fresh.updates():
                rec = self._begin(pod, fresh)
            elif previous and previous.get('state') in record.ACTIVE and not self._settled(pod, self.op.name, previous):
                rec = record.transition(previous, previous['state'])
            else:
                rec = None
            claim = self._own(rec) if rec else None
            if gate:
                run.pod = gate.set(self.kube, pod, False,
                                   metadata=record.metadata_patch(pod, self.op.name, claim) if claim else None)
            elif claim:
                run.pod = self.kube.patch_pod(podstate.meta(pod, 'namespace'), run.plan.name,
                                              record.build_patch(pod, self.op.name, claim))
            run.claim = claim
        attempt()

    def _write(self, run):
        """Write the change with its record; re-read and re-plan on conflict. Returns the record
        the wait uses (None when nothing needed writing and no record exists)."""
        @retry_conflict(on_retry=lambda _exc: self._reread(run))
        def attempt():
            pod, fresh = self._replan(run)
            if fresh.action == planning.REFUSED:
                raise ConcurrentChange('pod %s changed while being updated: %s' % (run.plan.name, fresh.refusal))
            if fresh.action in (planning.PENDING, planning.UNCHANGED) or not run.plan.updates():
                run.plan = fresh
                return record.get(pod, self.op.name)
            if not run.plan.same_targets(fresh):
                raise ConcurrentChange('pod %s: %s changed by another writer since it was planned '
                                       '(planned from %s, now %s); not overwritten' % (
                                           run.plan.name, ', '.join(c.name for c in fresh.updates()),
                                           planned_values(run.plan), planned_values(fresh)))
            generation = podstate.meta(pod, 'generation')
            rec = self._own(self._begin(pod, fresh, None if generation is None else generation + 1),  # the write makes it +1
                            len(self.op.steps(fresh) or [None]))
            written = self.op.write(self.kube, pod, fresh, rec)
            rec['generation'] = podstate.meta(written, 'generation')
            written, fresh, rec = self.op.admitted(self.kube, written, fresh, rec)
            run.plan, run.pod, run.written = fresh, written, True
            run.write_time = self.clock()
            return rec

        if self.watcher is not None:
            run.pod = self.watcher.freshest(run.pod)
        return attempt()

    def _finish_record(self, run, rec, state, **fields):
        if not rec:
            return
        name, namespace = run.plan.name, podstate.meta(run.pod, 'namespace')

        @retry_conflict()
        def attempt():
            pod = self.kube.get_pod(namespace, name)
            current = record.get(pod, self.op.name) or rec
            self.kube.patch_pod(namespace, name, record.build_patch(
                pod, self.op.name, self._own(record.transition(current, state, **fields))))

        try:
            attempt()
        except ApiError as exc:
            self.warn('pod %s: could not record state %s: %s' % (name, state, exc))
