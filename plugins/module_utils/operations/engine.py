# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounded-concurrency execution of one ``Operation`` over many pods, with one result shape.

Per pod: plan -> (claim the record + drain, one write) -> guarded write of the change + state
record -> wait (restart, ready) -> on failure stop or roll back and record it -> (undrain, with the
record marked done in the same write). Without a readiness gate a success costs exactly one write:
the record is settled by the pod's own state (Operation.settled). Waiting is watch-driven: no GET
per pod. Everything an operation does differently (what it compares, writes and waits for) is a
method of its ``Operation``.
"""

import os
import threading
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    AdmissionDenied, ApiError, InplaceError, PodFailure, ValidationError, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations import prepull
from ansible_collections.inplace.k8s.plugins.module_utils.pods import cancel, drain, guardian, plan as planning, podstate, record

# Pod statuses in the result. RESUMED: a run stopped before it set the readiness gate True again
# (gate False with drain.DRAIN_REASON); this one waited for the containers and set it True.
# With a window (Options.window, the rollout's): BLOCKED, the pod waited wait_timeout for its turn; NOT_STARTED,
# the window halted before its turn (a failure). Nothing of either was written.
UNCHANGED, WOULD_UPDATE, REFUSED, UPDATED, CONVERGED, WRITTEN, FAILED, ROLLED_BACK, CONFLICT, RESUMED = (
    'unchanged', 'would_update', 'refused', 'updated', 'converged', 'written', 'failed', 'rolled_back',
    'conflict', 'resumed')
BLOCKED, NOT_STARTED = 'blocked', 'not_started'
STATUSES = (UNCHANGED, WOULD_UPDATE, REFUSED, UPDATED, CONVERGED, WRITTEN, FAILED, ROLLED_BACK, CONFLICT, RESUMED,
            BLOCKED, NOT_STARTED)
ERROR_STATUSES = (FAILED, ROLLED_BACK, CONFLICT, BLOCKED)
FINISHED_OK = (UPDATED, CONVERGED, RESUMED)
NOT_READY_TIMEOUT = 30  # how long a drain waits to see the pod report NotReady
OWNER_MARGIN = 60       # seconds a pod record stays owned beyond the waits of its run


Options = namedtuple('Options', 'check_mode wait wait_timeout max_concurrency readiness_gate drain_seconds '
                                'require_readiness_gate gate_on_failure on_failure min_ready_seconds '
                                'force_takeover drain_label prepull prepull_run prepull_ahead window')
Options.__new__.__defaults__ = (False, None, False, None, None, None)


class ConcurrentChange(InplaceError):
    """What this plan was about changed after it was made: another writer is at work."""


class NotStarted(InplaceError):
    """Raised by a window's acquire(): it halted, the pod is not to be started."""


class Operation:
    """What an engine does to each pod. Subclasses set ``name`` and implement ``judge`` and ``done``;
    the other methods have defaults that suit a change written to the pod spec."""

    name = None            # key of the state record and label in messages ('image', 'resize', ...)
    can_rollback = False   # rollback_target() is implemented
    target = None          # {container: desired value}, unless desired() is overridden
    # What the writes need besides reading pods: (verb, 'resource[/subresource]', API group),
    # checked before anything is written (access.require).
    permissions = (('patch', 'pods', ''),)

    def desired(self, pod):
        """{container: desired value} for this pod."""
        return self.target

    def judge(self, info, value):
        """plan.Verdict for one existing container (podstate.ContainerInfo) and its desired value."""
        raise NotImplementedError

    def snapshot(self, info):
        """The before-state of one container kept in the record (rollback and resume use it)."""
        status = info.status
        last = (status.get('lastState') or {}).get('terminated') or {}
        return {'containerID': status.get('containerID'), 'restartCount': status.get('restartCount'),
                'lastContainerID': last.get('containerID')}

    def changes(self, pod, pod_plan):
        """JSON patch operations written together with the record (default: none)."""
        return []

    def write(self, kube, pod, pod_plan, rec):
        """Write the change and the record (one guarded JSON patch); the pod after the write."""
        return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'),
                              record.build_patch(pod, self.name, rec, self.changes(pod, pod_plan)))

    def restarted(self, pod, cplan, before):
        """Wait stage 'restart': the container now runs as a new container (when a restart is expected)."""
        if not cplan.restart:
            return True
        status = podstate.container_status(pod, cplan.name)
        if before.get('containerID'):
            return podstate.restarted(status, before['containerID'])
        return 'running' in (status.get('state') or {})

    def done(self, pod, cplan, before):
        """Wait stage 'ready': the container reached the desired value."""
        raise NotImplementedError

    def failure(self, pod, cplan, before, generation):
        """(reason, message) if the container failed after the change, else None."""
        seen = podstate.kubelet_saw_generation(pod, generation)
        if seen is False or (seen is None and not self.applied(pod, cplan, before)):
            return None  # the kubelet has not acted on this change yet: older states do not count
        info = podstate.find_container(pod, cplan.name)
        policy = 'Always' if info is None or info.kind == podstate.SIDECAR else (pod.get('spec') or {}).get(
            'restartPolicy', 'Always')
        status = info.status if info else {}
        if podstate.backing_off_before(status, (before.get('containerID'), before.get('lastContainerID'))):
            return None  # the kubelet's restart back-off of a container from before the change: wait it out
        return podstate.container_failure(status, policy)

    def overwritten(self, pod, cplan):
        """While waiting: why another writer has changed what this run set on the container (its spec
        no longer holds ``cplan.desired``), or None. Default: cannot tell."""
        return None

    def applied(self, pod, cplan, before):
        """Without status.observedGeneration: does the status show the kubelet acted on the change?"""
        status = podstate.container_status(pod, cplan.name)
        return bool(status.get('containerID')) and status.get('containerID') != before.get('containerID')

    def unstable(self, pod, cplan, verified):
        """After verification (``verified``: its container status then): (reason, message) if the
        container stopped running since, else None."""
        return podstate.left_running(podstate.container_status(pod, cplan.name), verified.get('containerID'))

    @staticmethod
    def rollback_target(rec):
        """{container: value} that undoes the change, from the record's before-state."""
        raise NotImplementedError

    def settled(self, pod, rec):
        """Does the pod show ``rec``'s change complete, spec and status at its target? A settled record
        counts as done (record module docstring), so success needs no final record write. None: the pod
        cannot tell (the engine then writes the final state). Default: re-plan the record's target."""
        target = rec.get('target') if isinstance(rec, dict) else None
        if not isinstance(target, dict) or not target:
            return None
        return planning.plan_pod(pod, target, self.judge).action == planning.UNCHANGED

    def steps(self, pod_plan):
        """None (the default): write() makes the whole change. Otherwise groups (lists of ContainerPlan)
        that act() handles after write() has written the record: one group after another, each waited
        for before the next (an operation whose change is not a spec write, or must be ordered)."""
        return None

    def act(self, kube, pod, pod_plan, group):
        """Make the change for one group of steps(); the pod after it."""
        raise NotImplementedError

    def images(self, pod_plan):
        """The images this change makes the pod run (pre-pull pulls them first; default: none)."""
        return set()

    def describe(self, cplan, before_info, after_info):
        """Extra per-container result fields (for example old_image / new_image)."""
        return {}

    def report(self, failed=False):
        """Extra fields of the whole result (``failed``: of the details of OperationFailed)."""
        return {}

    def close(self):
        """Release what the operation holds (watches) once the run is over."""

    def admitted(self, kube, written, pod_plan, rec):
        """After write(): ``written`` is the pod as the server stored it, which admission may have made
        differ from what was sent. (pod, plan, record) to wait for: the default keeps what was written."""
        return written, pod_plan, rec

    def check(self, plans):
        """Raise ValidationError to stop the whole run before anything is written (default: accept)."""

    def preview(self, kube, pod_plan):
        """Check mode: have the server validate the change without writing it (default: nothing).
        Raise ApiError or PodFailure when the real run would fail; a string returned is a note for
        the pod's reason (for example what admission would store instead)."""

    def stalled(self, pod, cplans):
        """Why a wait that timed out has not finished (added to the timeout message), or None.
        Default: where each container was left (image, state, ready) as the pod's status last said."""
        states = []
        for cplan in cplans:
            status = podstate.container_status(pod, cplan.name)
            state = status.get('state') or {}
            kind = next(iter(state), 'unknown')
            reason = (state.get(kind) or {}).get('reason')
            probe = ''
            if kind == 'running' and not status.get('ready'):
                probe = podstate.readiness_probe_text(pod, cplan.name)
            states.append('%s %s%s (image %s, ready %s%s), wanted %s' % (
                cplan.name, kind, ' ' + reason if reason else '', status.get('image'), bool(status.get('ready')),
                ': ' + probe if probe else '', cplan.desired))
        return 'pod left with %s' % '; '.join(states) if states else None


class PodRun:
    """What happened to one pod; becomes one entry of the result's ``pods``."""

    def __init__(self, plan, clock):
        self.plan = plan
        self.clock = clock
        self.started = clock()
        self.status = None
        self.reason = None
        self.error = None
        self.written = False
        self.conflicts = 0
        self.pod = plan.pod          # latest version seen
        self.gate = None             # the drain entry of the result (Drainer.report()), once drained
        self.services = None         # label drain: the Services that listed the pod before the drain
        self.timings = {}
        self.write_time = None
        self.rollback = None
        self.claim = None            # the record written to own the pod before draining
        self.record = None           # the record of the change, once written (or found)

    def mark(self, name, since):
        self.timings[name] = round(self.clock() - since, 3)

    def finish(self, status, reason=None):
        self.status = status
        if reason:
            self.reason = reason
        self.timings['total'] = round(self.clock() - self.started, 3)
        return self


class Engine:
    """Runs one operation over many pods. ``watcher`` (waiter.PodWatcher) is needed unless check
    mode or no waiting is asked; ``warnings`` collects what the module should warn about. ``owner``
    (record.new_owner) is written into every record; another run's live record refuses the pod."""

    def __init__(self, kube, operation, options, watcher=None, sleep=time.sleep, clock=time.monotonic, owner=None):
        self.kube = kube
        self.op = operation
        self.options = options
        self.watcher = watcher
        self.sleep = sleep
        self.clock = clock
        self.owner = owner or record.new_owner(pid=os.getpid())
        # The ansible process of this run: once it is gone a relaunch waits for this one to finish (cancel.py).
        self.owner.setdefault('playbook', cancel.outermost())
        self.warnings = []
        self._lock = threading.Lock()
        self._started = clock()
        self._denied = None   # admission denied the change on a pod: the others are not attempted
        self.drainer = drain.drainer(options.readiness_gate, options.drain_label)
        self._pull_failed = {}   # node -> why the pre-pull of the new image(s) failed there
        self.prepulled = None    # the pre-pull's report (options.prepull)

    def warn(self, message):
        with self._lock:
            self.warnings.append(message)

    # ---- the whole run

    def plan(self, pods):
        """Plans for the pods; raise ValidationError (nothing written) on unknown containers or,
        with require_readiness_gate, pods to update that lack the gate."""
        plans = [planning.plan_pod(pod, self.op.desired(pod), self.op.judge) for pod in pods]
        names = set()
        for pod in pods:
            names.update(self.op.desired(pod))
        unknown = planning.unknown_containers(pods, sorted(names))
        if unknown:
            raise ValidationError('unknown container(s) %s; the targeted pods have: %s' % (
                ', '.join(sorted(unknown)), ', '.join(next(iter(unknown.values())))))
        drainer = self.drainer
        if drainer and self.options.require_readiness_gate:
            missing = ['%s (%s)' % (p.name, drainer.missing(p.pod)) for p in plans
                       if p.action == planning.UPDATE and not drainer.applies(p.pod)]
            if missing:
                raise ValidationError('require_readiness_gate: draining by %s %s is required but not possible on '
                                      'pod(s): %s; nothing was changed' % (drainer.mode.replace('_', ' '), drainer.name,
                                                                           ', '.join(missing)))
        if drainer:
            drainer.check(self.kube, podstate.meta(pods[0], 'namespace') if pods else None,
                          [p.pod for p in plans if p.action == planning.UPDATE and drainer.applies(p.pod)])
        self.op.check(plans)
        return plans

    def run(self, pods):
        """Plan and execute; the result dict (changed, pods, summary, diff)."""
        plans = self.plan(pods)
        self._started = self.clock()
        if self.options.check_mode:
            runs = [self._preview(p) for p in plans]
        else:
            pulled = self._prepull(plans) if self.options.prepull else None
            try:
                with ThreadPoolExecutor(max_workers=self.options.max_concurrency) as pool:
                    runs = list(pool.map(self._execute, plans))
            finally:
                if pulled is not None:
                    self._prepull_done(*pulled)
        result = self.result(runs)
        if self.prepulled is not None:
            result['prepull'] = self.prepulled
        return result

    def _prepull(self, plans):
        """Pull the new images on the nodes of the pods to change (and start it on the nodes of
        ``prepull_ahead``, the next pods, without waiting) before any pod is drained; a node where the
        pull fails fails its pods before they are touched. (puller, by_node, ahead) for _prepull_done."""
        by_node = prepull.targets((p.pod, self.op.images(p)) for p in plans if p.action == planning.UPDATE)
        ahead = {node: set(images) for node, images in (self.options.prepull_ahead or {}).items()}
        namespace = podstate.meta(plans[0].pod, 'namespace') if plans else None
        puller = prepull.Prepull(self.kube, namespace, self.options.prepull_run or self.owner['run'], self.clock, self.sleep)
        since = self.clock()
        secrets = next(((p.pod.get('spec') or {}).get('imagePullSecrets') for p in plans
                        if (p.pod.get('spec') or {}).get('imagePullSecrets')), None)
        started = {node: set(images) for node, images in ahead.items()}
        for node, images in by_node.items():
            started.setdefault(node, set()).update(images)
        puller.start(started, secrets)
        states = puller.wait(by_node, self.options.wait_timeout) if by_node else {}
        for node, (state, message) in states.items():
            if state in ('failed', 'missing'):
                self._pull_failed[node] = message
            elif state == 'pulling':
                self.warn('pre-pull on node %s not finished after %ss: its pods are changed anyway (they wait for the '
                          'pull)' % (node, self.options.wait_timeout))
        self.prepulled = {'nodes': sorted(by_node), 'ahead': sorted(set(ahead) - set(by_node)),
                          'seconds': round(self.clock() - since, 3),
                          'failed': dict((n, m) for n, m in sorted(self._pull_failed.items()))}
        return puller, by_node, ahead

    def _prepull_done(self, puller, by_node, ahead):
        """Delete the pre-pull pods of this run's nodes that the next pods do not need."""
        done = {n: i for n, i in by_node.items() if n not in ahead}
        if done:
            puller.delete(done)
        for name, why in puller.left:
            self.warn('pre-pull pod %s could not be deleted (%s): it runs nothing; delete it with kubectl delete pod '
                      '-l %s' % (name, why, prepull.LABEL))

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

    # ---- one pod

    def _execute(self, plan):
        run = PodRun(plan, self.clock)
        # Time spent waiting for a slot among max_concurrency workers.
        run.timings['queued'] = round(max(0.0, run.started - self._started), 3)
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
        if cancel.cancelled():
            cancel.skipped([plan.name])
            return run.finish(NOT_STARTED, 'not started: %s' % cancel.cancelled())
        window = self.options.window
        if window is None:
            return self._change(run, resume)
        # The rollout's sliding window: wait for this pod's turn (max_unavailable, budgets, the pods in flight).
        try:
            run.timings['turn'] = window.acquire(plan.name)
        except NotStarted as exc:
            if cancel.cancelled():
                cancel.skipped([plan.name])
            return run.finish(NOT_STARTED, exc.msg)
        except WaitTimeout as exc:
            run.error = {'container': None, 'reason': 'Blocked', 'message': exc.msg}
            return run.finish(BLOCKED, '%s; the pod was not drained or changed' % exc.msg)
        try:
            return self._change(run, resume)
        finally:
            window.release(plan.name, run.status in FINISHED_OK, run.pod)

    def _cancelled_owner_gone(self, run):
        """A run cancelled on this host still holds the pod (cancel.cancelled_owner): wait, at most wait_timeout,
        for its module to finish its pods in flight and exit, then plan the pod again; did it exit?"""
        pid = cancel.cancelled_owner(run.plan.pod, self.owner)
        if pid is None or not cancel.wait_exit(pid, self.options.wait_timeout or NOT_READY_TIMEOUT):
            return False
        pod = self.kube.get_pod(podstate.meta(run.plan.pod, 'namespace'), run.plan.name)
        run.plan = planning.plan_pod(pod, self.op.desired(pod), self.op.judge)
        run.pod = pod
        return True

    def _change(self, run, resume):
        """Drain, write, wait, undrain one pod (its turn come)."""
        try:
            return self._change_pod(run, resume)
        finally:
            cancel.in_flight_done(run.plan.name, run.status)

    def _change_pod(self, run, resume):
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
            if gate and cancel.cancelled():   # drained, nothing written yet: put back as it was
                cancel.skipped([plan.name])
                run.finish(NOT_STARTED, 'not started: %s; put back as it was' % cancel.cancelled())
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
        except ConcurrentChange as exc:
            run.finish(CONFLICT, exc.msg)
            if run.written:   # the record must not say in-progress (or settle as done) for another's change
                self._finish_record(run, rec, record.FAILED, error='conflict: %s' % exc.msg)
        except PodFailure as exc:
            run.error = exc.as_dict()
            self._recover(run, rec, exc)
        except (WaitTimeout, ApiError) as exc:
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

    def _resumable(self, pod):
        """Spec already at the target, readiness gate left False by a run that stopped (gate given)."""
        return bool(self.drainer) and self.drainer.left_drained(pod)

    def _own(self, rec, waits=1):
        """``rec`` owned by this run until its ``waits`` waits (one per group of steps()), the drain and a
        margin are over; every record write renews it."""
        o = self.options
        return record.claim(rec, self.owner, waits * (o.wait_timeout + o.min_ready_seconds) + o.drain_seconds
                            + NOT_READY_TIMEOUT + OWNER_MARGIN)

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

    def _gate_of(self, pod):
        """The Drainer for this pod: None without a drain mode, or with a warning when the pod cannot be
        drained that way."""
        if not self.drainer:
            return None
        if self.drainer.applies(pod):
            return self.drainer
        self.warn('pod %s %s: it is updated without draining' % (podstate.meta(pod, 'name'), self.drainer.missing(pod)))
        return None

    def _poll(self, check, timeout, interval=0.2):
        """Call ``check()`` -> (done, why) until done or ``timeout`` seconds; (done, why) of the last call."""
        deadline = self.clock() + timeout
        while True:
            done, why = check()
            if done or self.clock() >= deadline:
                return done, why
            self.sleep(interval)

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
            done, why = self._poll(lambda: gate.out_of_service(self.kube, run.pod), timeout)
            run.gate.update(observed_not_ready=done, services=sorted(run.services))
            if not done:
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
                    done, why = self._poll(lambda: gate.in_service(self.kube, run.pod, run.services),
                                           min(NOT_READY_TIMEOUT, self.options.wait_timeout))
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
                                           _values(run.plan), _values(fresh)))
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

    def _check_same_pod(self, run, pod):
        failure = podstate.pod_failure(pod, podstate.meta(run.plan.pod, 'uid'))
        if failure:
            raise PodFailure(run.plan.name, *failure)

    def _gone(self, run):
        uid = podstate.meta(run.plan.pod, 'uid')

        def failed(pod):
            failure = podstate.pod_failure(pod, uid)
            return PodFailure(run.plan.name, *failure) if failure else None
        return failed

    def _wait(self, run, plan, rec, pod, prefix=''):
        """Wait for the containers of ``plan``: each stage in turn, failing early. ``prefix``: of the
        timings' names (a rollback's waits are told apart from the change's)."""
        before = (rec or {}).get('before') or {}
        generation = (rec or {}).get('generation') or podstate.meta(pod, 'generation')
        containers = plan.to_wait()
        self.watcher.observe(pod)   # the answer of the write: the watch may not have delivered it yet
        gone = self._gone(run)

        def failed(latest):
            failure = gone(latest)
            if failure is not None:
                return failure
            for cplan in containers:
                moved = self.op.overwritten(latest, cplan) if latest is not None else None
                if moved:
                    return ConcurrentChange('pod %s: %s; not overwritten' % (plan.name, moved))
                found = self.op.failure(latest, cplan, before.get(cplan.name, {}), generation)
                if found:
                    return PodFailure(plan.name, found[0], found[1], container=cplan.name)
            return None

        since = run.write_time or self.clock()
        deadline = since + self.options.wait_timeout
        checks = {'restart': self.op.restarted, 'ready': self.op.done}
        for stage in ('restart', 'ready'):
            check = checks[stage]
            try:
                run.pod = self.watcher.wait_for(
                    plan.name, lambda p, check=check: all(check(p, c, before.get(c.name, {})) for c in containers),
                    failed, max(0.0, deadline - self.clock()))
            except WaitTimeout as exc:
                latest = self.watcher.get(plan.name)
                why = self.op.stalled(latest, containers) if latest is not None else None
                if why:
                    raise WaitTimeout('%s: %s' % (exc.msg, why))
                raise
            run.mark(prefix + stage, since)
        if self.options.min_ready_seconds > 0:
            verified = {c.name: podstate.container_status(run.pod, c.name) for c in containers}

            def unstable(latest):
                failure = gone(latest)
                if failure is not None:
                    return failure
                for cplan in containers:
                    found = self.op.unstable(latest, cplan, verified[cplan.name])
                    if found:
                        return PodFailure(plan.name, found[0], found[1], container=cplan.name)
                return None
            run.pod = self.watcher.hold(plan.name, unstable, self.options.min_ready_seconds)
            run.mark(prefix + 'stable', since)
        return run.pod

    def _act(self, run, rec, groups):
        """Operations with steps(): act on each group in turn and, with wait, wait for it before the next."""
        for group in groups:
            run.pod = self.op.act(self.kube, run.pod, run.plan, group)
            run.write_time = self.clock()
            if self.options.wait:
                self._wait(run, planning.PodPlan(run.plan.pod, group), rec, run.pod)

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

    # ---- results

    def result(self, runs):
        pods = [self.pod_result(run) for run in sorted(runs, key=lambda r: r.plan.name)]
        summary = {status: 0 for status in STATUSES}
        for item in pods:
            summary[item['status']] += 1
        summary['total'] = len(pods)
        summary['changed'] = sum(1 for item in pods if item['changed'])
        diff = {'before': {}, 'after': {}}
        for run in runs:
            if run.status in (WOULD_UPDATE, UPDATED, WRITTEN, FAILED, ROLLED_BACK) and run.plan.updates():
                diff['before'][run.plan.name] = {c.name: c.current for c in run.plan.updates()}
                diff['after'][run.plan.name] = {c.name: c.desired for c in run.plan.updates()}
        changed = summary['changed'] > 0 or summary[WOULD_UPDATE] > 0
        return {'changed': changed, 'pods': pods, 'summary': summary, 'diff': diff}

    def pod_result(self, run):
        plan = run.plan
        before_pod = plan.pod
        after_pod = run.pod if run.pod is not None else before_pod
        acted = run.written or run.status == RESUMED
        # A pod whose spec was already set and that this run waited for (converged) is reported as
        # it is after the wait, like a pod this run wrote.
        observed = acted or run.status == CONVERGED
        if self.watcher is not None and observed:
            after_pod = self.watcher.get(plan.name) or after_pod
        result = podstate.pod_summary(before_pod)
        after = podstate.pod_summary(after_pod)
        ran = run.status not in (WOULD_UPDATE, REFUSED) and observed
        result.update({
            'action': plan.action,
            'status': run.status,
            'changed': acted or run.status == WOULD_UPDATE,
            'reason': run.reason,
            'uid_after': after['uid'] if ran else None,
            'pod_ip_after': after['pod_ip'] if ran else None,
            'in_place': (after['uid'] == result['uid'] and after['pod_ip'] == result['pod_ip']) if ran else None,
            'conflicts': run.conflicts,
            'readiness_gate': run.gate if self.drainer and self.drainer.mode == 'readiness_gate' else None,
            'drain': run.gate,
            'timings': run.timings,
            'error': run.error,
            'containers': {c.name: self.container_result(c, before_pod, after_pod if ran else None)
                           for c in plan.containers},
        })
        if run.rollback:
            result['rolled_back_to'] = run.rollback
        return result

    def container_result(self, cplan, before_pod, after_pod):
        before = podstate.find_container(before_pod, cplan.name)
        after = podstate.find_container(after_pod, cplan.name) if after_pod is not None else None
        old, new = (before.status if before else {}), (after.status if after else {})
        result = {
            'kind': cplan.kind,
            'action': cplan.action,
            'reason': cplan.reason,
            'restart_expected': cplan.restart,
            'old_container_id': old.get('containerID'),
            'new_container_id': new.get('containerID') if after else None,
            'restart_count_before': old.get('restartCount'),
            'restart_count_after': new.get('restartCount') if after else None,
            'restarted': bool(after and new.get('containerID') and new.get('containerID') != old.get('containerID')),
        }
        result.update(self.op.describe(cplan, before, after))
        return result


def _values(plan):
    return ', '.join('%s=%s' % (c.name, c.current) for c in plan.updates()) or 'nothing to change'
