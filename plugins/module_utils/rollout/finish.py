# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""finish and release: restore the controller's strategy (never letting it replace pods left on the old
version), record how the rollout ended, wait until the controller's status says it is fully updated (finish) or
saw the release."""

from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import (
    DONE, RELEASED, ROLLED_BACK,
)
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, guard, partition
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import spec_images
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.stepresult import StepResult
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import write_record


class FinishStep:
    """The finish and release steps of a rollout, an object of its own: ``run_finish(final, synced, known, failed)``
    (a StepResult: the loop's), ``finish(...)`` (states finish and rollback: a conflict raised), ``release()`` and
    ``release_held(rec, images, resources, final)`` (the end of a held record: the label drain's too) are its
    interface. Its dependencies are passed in: ``shared``, what the steps share (rollout/context.py
    RolloutContext: the options, the workload and its pods, the hold, the values pods should have now, the pods
    counted done, the Events, the result shape), and ``sync``, the sync step (rollout/sync.py) it runs when the
    last step's is not given; it writes none of their state."""

    def __init__(self, shared, sync):
        self.shared, self.sync = shared, sync

    def release(self):
        """End the rollout where it stands: restore the controller's strategy (pods left on the old
        version stay protected, as in finish), mark the record released; no pod is changed."""
        return self.finish(final=RELEASED)

    def finish(self, final=None, synced=None, known=None, failed=()):
        """State finish (the module's), and the end of a rollback: run_finish, whose conflict fails the call with
        the step's report."""
        step = self.run_finish(final, synced, known, failed)
        if step.error is not None:
            raise step.error
        return step.out

    def run_finish(self, final=None, synced=None, known=None, failed=()):
        """The finish as a StepResult (rollout/stepresult.py). Its ``error``: another writer's change found before
        the release (the template, or a pod after its batch verified it), ``out`` then the failed step's report
        (failed, msg, failed_pods): nothing released, nothing overwritten, the workload stays held. Other errors
        raise. ``synced``: what the last step's sync found, as the sync step's sync_pods returns it (state rollout: the step just synced
        every pod of the workload, so it is not done twice). ``known``: the uids of the pods the plan had; with
        them the pods are listed once more before the release (the end re-reads what it claims: a pod changed,
        replaced or gone since it was verified is reported, never counted done silently). ``failed``: the pods that
        failed within max_failed_pods (the status is then not waited for: release_held)."""
        shared = self.shared
        w = shared.workload
        if w is None:
            return StepResult(self.sync.sync())   # which deletes the pre-pull pods left too
        shared.delete_prepulled()
        if final == RELEASED:
            return self._release_as_is()
        images, resources = shared.values_now()
        if not shared.restart and w.held.active:   # checked again on the read the release write is guarded by
            refused = guard.release_check(images, resources)(w)
            if refused is not None:
                return _held(refused)
        listed_now = synced is None   # else the pods as the last step's sync listed them
        synced, pods = synced or self.sync.sync_pods()
        rec = w.held
        if shared.restart or not rec:
            old = [p for p in pods if not pod_matches(p, images, resources)]
            # A restart changes no template and holds nothing (a record is another rollout's): wait until
            # the workload reports the restarted pods ready again.
            if shared.restart and not shared.check_mode:
                w.wait_for('the restarted pods to be ready', lambda obj: w.converged(obj, not old),
                           shared.options.wait_timeout)
            return StepResult(shared.result(w.pods(), changed=synced['changed']))
        if not rec.active:
            # Nothing of ours is held (a re-run that found nothing to do): the strategy is the user's as it is now.
            return StepResult(shared.result(pods, changed=synced['changed'], old=[
                podstate.meta(p, 'name') for p in pods if not pod_matches(p, images, resources)]))
        final = ROLLED_BACK if rec.rolling_back else DONE
        moved = {}
        if known is not None and not shared.check_mode:
            pods = pods if listed_now else w.pods()   # the one list of the end: what the result claims is now
            moved = self._reconciled(pods, known, images, resources)
        refused = self._overwritten(partition.outside(rec.partition, pods), images, rec.before_values[0]) \
            if final == DONE and rec.in_progress else None
        if refused is not None:
            return _held(refused)
        step = self.release_held(rec, images, resources, final, synced['changed'], pods, failed)
        if step.error is None:
            step.out.update(moved)
        return step

    def _release_as_is(self):
        """State release: the held record's strategy restored and the record marked released, no pod changed."""
        shared = self.shared
        w = shared.workload
        w.read()
        held = w.held
        if not held.active:
            return StepResult(shared.result(w.pods(), changed=False, old=[], message='%s %s/%s: no unfinished '
                                            'rollout to release (record state %s)' % (
                                                w.kind, w.namespace, w.name, held.state)))
        images, resources = held.values_now
        return self.release_held(held, images, resources, RELEASED)

    def _reconciled(self, pods, known, images, resources):
        """{gone, replaced, verified_at} of the end's list ``pods`` (reconcile)."""
        moved = reconcile(pods, self.shared.watched, set(known), images, resources,
                          self.shared.workload.spec.get('replicas'))
        # What the result claims holds as of this list; a write after it is for the next run to see.
        moved['verified_at'] = record.timestamp(precise=True)
        return moved

    def _overwritten(self, pods, images, before):
        """Before the release: a pod whose spec has neither the rollout's image nor the one from before was
        changed by another writer during the rollout (after its batch verified it). The ConcurrentChange naming
        each (None when there is none), the workload still held: releasing would let the rollout end as done
        with a pod on a third image and nothing saying why."""
        foreign = []
        for pod in pods:
            moved = [name for name, image in sorted(images.items())
                     if not pod_matches(pod, {name: image}) and not (before.get(name) and pod_matches(pod, {name: before[name]}))]
            if moved:
                foreign.append((podstate.meta(pod, 'name'), spec_images(pod, moved)))
        if not foreign:
            return None
        w = self.shared.workload
        return engine.ConcurrentChange(
            '%s %s/%s: pod(s) changed by another writer during this rollout: %s; nothing was overwritten and '
            'the workload stays held: when the other writer is done, run the rollout again (it brings them to '
            'its target) or end it with rollout_action=rollback or release' % (
                w.kind, w.namespace, w.name, '; '.join('%s (spec now has %s)' % item for item in foreign)),
            failed_pods=[{'name': name, 'status': engine.CONFLICT, 'reason': 'changed by another writer during '
                          'the rollout (its spec now has %s); not overwritten' % what} for name, what in foreign])

    def release_held(self, rec, images, resources, final, synced=False, pods=None, failed=()):
        """Restore the saved strategy, record ``final``, wait for the controller's status (``pods``: the
        workload's pods as just listed, else they are listed here; the result reports them). With ``failed`` pods
        (tolerated by max_failed_pods) only until the controller saw the release: the status cannot converge while
        they fail (a pod on a lost node stays unready), and waiting would only add wait_timeout to a known failure.
        A StepResult: its ``error`` the guard's refusal of the release write (rollout/guard.py), nothing released."""
        shared = self.shared
        w = shared.workload
        pods = w.pods() if pods is None else pods
        old = [p for p in pods if not pod_matches(p, images, resources)]
        spec, two_step = w.release_spec(rec.saved, [batching.ordinal(p) for p in old], len(pods),
                                        asked=rec.partition if final == DONE else None)
        # The release hands the controller the template we wrote, never another writer's (rollout/guard.py).
        check = guard.release_check(images, resources) if final != RELEASED else None
        changed = bool(synced or spec or rec.state != final)
        if not changed or shared.check_mode:
            return StepResult(shared.result(pods, changed=changed, old=[podstate.meta(p, 'name') for p in old]))
        timeout = shared.options.wait_timeout
        shared.tell.ending(pods, old)
        if final == RELEASED:
            # Pods may be left failing: restore the strategy and wait only until the controller saw it.
            write_record(w, _ended(rec.raw, final, w.protection), spec, stamp=shared.stamp)
            shared.tell.ended(rec, final, old)
            w.wait_for('the controller to observe the release', w.observed, timeout)
            shared.warnings.append('%s %s/%s released: %d pod(s) not on the rollout\'s target stay as they are%s' % (
                w.kind, w.namespace, w.name, len(old), (': ' + ', '.join(podstate.meta(p, 'name') for p in old))
                if old else ''))
            return StepResult(shared.result(pods, changed=True, old=[podstate.meta(p, 'name') for p in old]))
        if two_step:
            replicas = w.spec.get('replicas', len(pods))
            refused = write_record(w, rec.raw, {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {
                'partition': replicas}}}, stamp=shared.stamp, check=check)
            if refused is not None:
                return _held(refused)
            w.wait_for('currentRevision to reach updateRevision', lambda obj: w.converged(obj, True), timeout)
        refused = write_record(w, _ended(rec.raw, final, w.protection), spec, stamp=shared.stamp, check=check)
        if refused is not None:
            return _held(refused)
        shared.tell.ended(rec, final, old)
        if failed:
            w.wait_for('the controller to observe the release', w.observed, timeout)
        else:
            w.wait_for('the workload status to converge', lambda obj: w.converged(obj, not old), timeout)
        if old:
            shared.warnings.append('%d pod(s) left on the old version: %s' % (
                len(old), ', '.join(podstate.meta(p, 'name') for p in old)))
        # The release writes the workload only, never a pod: the pods as listed for it are reported (a list
        # again would lengthen the rollout's end, docs/performance.md, and change nothing in the result).
        return StepResult(shared.result(pods, changed=True, old=[podstate.meta(p, 'name') for p in old]))


def reconcile(pods, watched, known, images, resources, replicas=None):
    """{gone, replaced} of the end's list ``pods`` against the pods verified during the run (``watched``: name ->
    {uid, containers}) and the uids the plan had (``known``): a verified pod not there any more, or there with
    another uid, went away after it was done; a pod the plan did not have that runs the target was created by its
    controller (a replacement, a scale-up) and is reported as replaced, not as changed in place."""
    by_name = {podstate.meta(p, 'name'): p for p in pods}
    gone = []
    for name, entry in sorted((watched or {}).items()):
        pod = by_name.get(name)
        uid = (entry or {}).get('uid')
        if pod is None or (uid and podstate.meta(pod, 'uid') != uid):
            cause = departure.SCALED_DOWN if pod is None and replicas is not None and len(pods) <= replicas < len(
                known) else departure.DELETED
            gone.append({'name': name, 'uid': uid, 'node': None, 'cause': cause, 'when': departure.AFTER,
                         'detail': 'not in the workload any more at the end of the run' if pod is None else
                         'replaced by its controller (uid %s -> %s)' % (uid, podstate.meta(pod, 'uid'))})
    replaced = [dict(podstate.pod_summary(p), ready=podstate.is_ready(p)) for p in pods
                if podstate.meta(p, 'uid') not in known and pod_matches(p, images, resources)]
    return {'gone': gone, 'replaced': replaced}


def _held(refused):
    """The finish refused by another writer's change (a ConcurrentChange with failed_pods): its report as a failed
    step's, the workload still held."""
    return StepResult(dict(refused.details, failed=True, msg=refused.msg), refused)


def _ended(rec, final, protection):
    """The record of a run that ended as ``final``, naming the strategy it left to protect pods (rollout/partition.py)."""
    ended = dict(rec, state=final, finished=record.timestamp())
    ended.pop('protection', None)
    if protection:
        ended['protection'] = protection
    return ended
