# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""batch: one batch (or one step of a sliding window) in one call: the gate, the in-place change(s) of its pods
with the pod modules' operations and engine in this process, the sync of the pods that did not fail, and the
verdict (failed pods, halt)."""

import copy

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    InplaceError, ValidationError, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.options import (
    Drain, ImageChange, ResizeChange, RestartChange, Strategy, Target, Task, Wait,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import spec_images, unique
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.report import progress_lines
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.stepresult import Failures, StepResult, WholeBatch
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import watch_entry, Window

# Pod statuses the batch step reports in failed_pods (the engine's errors and refused pods), and the
# statuses of a whole-batch entry: the gate did not let the batch through / a change failed as a whole.
FAILED_POD_STATUSES = engine.ERROR_STATUSES + (engine.REFUSED,)
BLOCKED, FAILED = 'blocked', 'failed'
CHANGES = ('images', 'resources', 'restart')   # the batch step's results per change, in the order reported


class BatchStep:
    """The batch step of a rollout, an object of its own: ``run_step(Step)`` (a StepResult), ``batch(Step)`` (state
    batch: the gate's error raised) and ``run_change(names, change, window, min_ready_seconds)`` (one change of pods
    through the pod modules' runner: the rollback's too) are its interface. Its dependencies are passed in:
    ``shared``, what the steps share (rollout/context.py RolloutContext: the options, the client, the workload and
    its pods, the pods counted done and their failures, the live progress, the Events, the result shape);
    ``budget_gate`` (rollout/budget_gate.py) and ``sync`` (rollout/sync.py), the steps it runs around the change."""

    def __init__(self, shared, budget_gate, sync):
        self.shared, self.budget_gate, self.sync = shared, budget_gate, sync

    def batch(self, batch=None):
        """State batch (the module's): one batch, a Step of rollout/options.py (default: the one the module's
        options name). A gate that did not let it through fails the call with the step's report."""
        shared = self.shared
        step = self.run_step(batch or shared.options.step())
        if step.error is not None:
            refused = copy.copy(step.error)   # the gate's own error, with the step's report as its details
            refused.details = {key: value for key, value in step.out.items() if key not in ('changed', 'msg')}
            raise refused
        return step.out

    def run_step(self, batch):
        """One batch (or one step of the window) in one call: gate, the in-place change(s) of its pods, sync of
        the pods that did not fail, the verdict. Failed pods do not fail it (the loop decides: halt, roll back,
        max_failed_pods); a StepResult, whose ``error`` is the gate's when it did not let the batch through
        (blocked past wait_timeout, or any other gate error: nothing written)."""
        shared = self.shared
        names = list(batch.names)
        if not names:
            raise ValidationError('state batch needs names: the pods of the batch')
        self.sync.forget()
        if shared.cancel.cancelled():   # the run was cancelled (process/cancel.py): nothing of this batch starts
            shared.cancel.skipped(names)
            out = shared.result([], **_nothing_done(not_started=list(names)))
            out.update(progress=progress_lines(batch, out, Failures(), shared.check_mode), halt=True)
            return StepResult(out)
        unhealthy = shared.failures_of_watched()
        if unhealthy:
            # A pod counted done earlier is failing now: nothing of this batch is written.
            out = shared.result([], **_nothing_done(failed_pods=unhealthy, **self._progress_now()))
            return StepResult(self._verdict(batch, out, Failures(unhealthy)))
        sliding = bool(shared.options.window) and not shared.check_mode
        shared.tell.before_step(batch, len(shared.watched))
        try:
            gated = self.budget_gate.gate(names, whole=not sliding)
        except InplaceError as exc:
            return self._refused_by_gate(batch, exc)
        return StepResult(self._changed(batch, gated, sliding))

    def _refused_by_gate(self, batch, exc):
        """The step of a batch the gate did not let through: the whole batch failed (blocked, or a conflict)."""
        shared = self.shared
        whole = WholeBatch(list(batch.names), engine.CONFLICT if isinstance(exc, engine.ConcurrentChange) else BLOCKED,
                           exc.msg)
        out = dict(exc.details, changed=False, msg=exc.msg, failed_pods=[whole.entry()])
        out.setdefault('blocked', [])
        if isinstance(exc, WaitTimeout):
            out.update(self._progress_now())
        out.update(progress=progress_lines(batch, out, Failures([whole]), shared.check_mode),
                   halt=halts(out, batch))
        return StepResult(out, exc)

    def _changed(self, batch, gated, sliding):
        """The change(s) of the batch the gate let through, the sync of its pods, the verdict."""
        shared = self.shared
        names = list(batch.names)
        window = self._window(batch) if sliding else None
        try:
            changes = self._change(batch, window)
        finally:
            if window is not None:
                window.watcher.stop()
        failures = _failures(names, changes)
        failed_names = failures.names_in(names)
        not_started = sorted(set(pod['name'] for _key, pod in change_pods(changes)
                                 if pod['status'] == engine.NOT_STARTED) - failed_names)
        gone = gone_pods(changes)
        left = failed_names | set(not_started) | set(item['name'] for item in gone)
        out, latest = self.sync.after_step([name for name in names if name not in left])
        out.update(changes)
        current = {podstate.meta(p, 'name'): p for p in latest}
        # Changed, then deleted and recreated by its controller from the old template under the same name (a
        # StatefulSet's pod evicted after its change): gone after it was done, not another writer's change nor a pod
        # we recreated; a step after the last one changes its replacement (loop._swept).
        changed_uid = dict((pod['name'], pod.get('uid')) for _key, pod in change_pods(changes) if pod.get('uid'))
        moved = [name for name in names if self._moved(name, left, current, changed_uid)]
        gone.extend(departure.gone_entry(window.watcher if window is not None else None, name, departure.AFTER,
                                         changed_uid[name], current[name]) for name in moved)
        left.update(moved)
        kept = [name for name in names if name not in left and name in current]
        verified = {} if shared.check_mode else {name: watch_entry(current[name], shared.watched_containers())
                                                 for name in kept if not shared.pending(current[name])}
        if window is not None:
            # Pods counted done that failed while the window ran (it halted then), each once.
            failures.add(item for item in window.failed if item['name'] not in failed_names)
            failed_names.update(item['name'] for item in window.failed)
            gone.extend(item for item in window.gone if item['name'] not in moved)
            out['window'] = window.report()
        failures.add(item for item in shared.failures_of_watched(current.values()) if item['name'] not in failed_names)
        # Counted done by the change, yet its spec is off the target now: another writer set it in between
        # (kubectl set image). Reported, not silently left out of the watch (and never overwritten).
        failures.add({'name': name, 'status': engine.CONFLICT, 'reason': 'changed by another writer after it was '
                      'updated (it runs %s); not overwritten' % spec_images(current[name], shared.images)}
                     for name in ([] if shared.restart or shared.check_mode else kept)
                     if not pod_matches(current[name], shared.images, shared.resources))
        out['config_checks'] = config_checks(changes)
        out.update(blocked=gated['blocked'], failed_pods=failures.entries(), verified=verified, timings=_timings(changes),
                   not_started=not_started, recreated=[name for name in recreated_pods(changes) if name not in moved],
                   gone=gone, changed=bool(out['changed'] or any(r.get('changed') for r in changes.values())))
        if shared.diff:
            out['diff'] = [r.pop('diff') for r in changes.values() if r.get('diff')]
        return self._verdict(batch, out, failures)

    def _verdict(self, batch, out, failures):
        """The end of a step that ran: its lines, whether the rollout halts, its Event (and a halt's status)."""
        shared = self.shared
        out['warnings'] = unique(out['warnings'])
        out.update(progress=progress_lines(batch, out, failures, shared.check_mode), halt=halts(out, batch))
        shared.tell_step(batch, out)
        return out

    def _progress_now(self):
        """{updated, total} of the workload's pods against the values pods should have now."""
        shared = self.shared
        images, resources = shared.values_now()
        return self.sync.counts(shared.pods(), images, resources)

    def _moved(self, name, left, current, changed_uid):
        """The pod of this name was changed, then replaced from the old template by its controller."""
        shared = self.shared
        if name in left or name not in current:
            return False
        if changed_uid.get(name) in (None, podstate.meta(current[name], 'uid')):
            return False
        return not pod_matches(current[name], shared.images, shared.resources)

    def _prepull_ahead(self, batch):
        """{node: [images]} of the pods of the next batch (``batch.prepull_next``) that still need the images."""
        shared = self.shared
        wanted = set(batch.prepull_next)
        if not wanted:
            return None
        images = set(shared.images.values())
        return prepull.targets((pod, images) for pod in shared.pods()
                               if podstate.meta(pod, 'name') in wanted and shared.pending(pod))

    def _window(self, batch):
        """The sliding window of this step (rollout.window): as wide as batch_size (capped by max_unavailable),
        over a watch of the workload's pods."""
        shared = self.shared
        watcher, pods = shared.watch_pods()
        total = len(pods)
        return Window(
            watcher, batching.batch_size(total, shared.options.batch_size or 1, shared.options.max_unavailable),
            max_unavailable=batching.resolve_count(shared.options.max_unavailable, total, 'max_unavailable',
                                                   round_up=False),
            budgets=[pdb for pdb, _names in shared.pdbs(pods)], max_failed=batch.max_failed_pods,
            timeout=shared.options.wait_timeout, watched=shared.watched, containers=shared.watched_containers(),
            overwritten=shared.overwritten(resources=False), clock=shared.clock, progress=shared.progress,
            cancel=shared.cancel)

    def _change(self, batch, window=None):
        """The in-place change(s) of the batch with the pod modules' operations (runner.run), their options
        built here as the role passed them to inplace_image, inplace_resize, container_recreate: {images|resources|
        restart: that module's result, with failed and msg when it failed}. Resources only after images succeeded.
        With a ``window`` the pods start in their turn, as many at once as it is wide; else all at once."""
        shared = self.shared
        changes = {}

        def run(change, min_ready_seconds=None):
            return _outcome(lambda: self.run_change(batch.names, change, window, min_ready_seconds))
        if shared.restart:
            changes['restart'] = run(RestartChange(
                containers=None if shared.config else list(shared.restart),
                strategy=Strategy(name=shared.options.restart_strategy or 'auto'),
                select=shared.config.select if shared.config else None, hooks=shared.config_hooks()))
        on_failure = shared.options.on_failure or 'stop'
        if shared.images:
            pulling = bool(shared.options.prepull)
            # StatefulSet / DaemonSet: the revision labels ride on the image write (one write per pod, no relabel).
            held = shared.workload is not None and shared.workload.kind in ('StatefulSet', 'DaemonSet') and \
                shared.workload.held.in_progress
            changes['images'] = run(ImageChange(
                shared.images, on_failure=on_failure, prepull=pulling, prepull_run=shared.owner['run'] if pulling else None,
                prepull_ahead=self._prepull_ahead(batch) if pulling else None,
                labels=shared.revision_labels() if held and not shared.check_mode else None))
        if shared.resources and not changes.get('images', {}).get('failed'):
            # After an image change the pods were held min_ready_seconds already; later crashes are
            # caught by the watch of the verified pods.
            changes['resources'] = run(ResizeChange(shared.resources, on_failure=on_failure),
                                       min_ready_seconds=0 if shared.images else None)
        return changes

    def run_change(self, names, change, window=None, min_ready_seconds=None):
        """One change (options.ImageChange, ResizeChange, RestartChange) of the pods ``names`` with the pod modules'
        runner and engine in this process, its options built as the role passed them to inplace_image,
        inplace_resize, container_recreate: that module's result; raises as the module would fail. With a
        ``window`` the pods start in their turn, as many at once as it is wide; else all at once."""
        shared = self.shared
        target = Target(namespace=shared.options.namespace, names=tuple(names),
                        max_concurrency=window.width if window is not None else max(len(names), 1),
                        force_takeover=bool(shared.options.force_takeover), window=window)
        wait = Wait(timeout=shared.options.wait_timeout, min_ready_seconds=shared.options.min_ready_seconds or 0
                    if min_ready_seconds is None else min_ready_seconds)
        draining = Drain(readiness_gate=shared.options.readiness_gate, drain_label=shared.options.drain_label,
                         required=bool(shared.options.require_readiness_gate), seconds=shared.options.drain_seconds or 0)
        return runner.run(Task(target, change, wait, draining), shared.kube, shared.check_mode, shared.diff,
                          shared.warnings.append, shared.run_command, shared.events, shared.cancel)


def recreated_pods(changes):
    """Pods of the batch's changes that came back with another UID: recreated, not changed in place (a pod whose
    sandbox the kubelet made again, after a node restart, has a new IP but is the same pod). A pod that went away
    (deleted, evicted: gone_pods) is not one of them."""
    return sorted(set(pod['name'] for _key, pod in change_pods(changes)
                      if pod.get('uid_after') and pod['uid_after'] != pod.get('uid') and pod.get('status') != engine.GONE))


def gone_pods(changes):
    """``gone`` entries (pods/departure.entry) of the pods of the batch's changes that went away during the run,
    each once, and of the pods asked for that were not found any more (deleted before their turn)."""
    found, seen = [], set()
    for _key, pod in change_pods(changes):
        if pod['status'] == engine.GONE and pod['name'] not in seen:
            seen.add(pod['name'])
            gone = pod.get('gone') or {}
            found.append({'name': pod['name'], 'uid': pod.get('uid'), 'node': pod.get('node'),
                          'cause': gone.get('cause'), 'detail': gone.get('detail'), 'when': gone.get('when')})
    for key in CHANGES:
        for item in (changes.get(key) or {}).get('missing') or []:
            if item['name'] not in seen:
                seen.add(item['name'])
                found.append(item)
    return found


def change_pods(changes):
    """(change, pod entry) of every pod the batch's changes report, in CHANGES order."""
    for key in CHANGES:
        for pod in (changes.get(key) or {}).get('pods') or []:
            yield key, pod


def config_checks(changes):
    """{pod: {container: {projection: [notes], config_check: note}}} of a config rollout's checks in the pods of the
    batch's changes (config/checks.py), for the pods that have any."""
    found = {}
    for _key, pod in change_pods(changes):
        for name, container in (pod.get('containers') or {}).items():
            notes = dict((key, container[key]) for key in ('projection', 'config_check') if container.get(key))
            if notes:
                found.setdefault(pod['name'], {})[name] = notes
    return found


def _outcome(step):
    """A pod module's result from ``step()``, or, when it raised, what the module would have failed with."""
    try:
        return step()
    except InplaceError as exc:
        return dict(exc.details, failed=True, msg=exc.msg)


def _nothing_done(**report):
    """The report of a step that wrote nothing (cancelled, or a pod counted done earlier failing now)."""
    return dict(dict(failed_pods=[], blocked=[], verified={}, relabelled=[], undrained=[], not_started=[],
                     recreated=[], timings={}), **report)


def _timings(changes):
    """{pod: {change: its timings}} of the batch's changes."""
    timings = {}
    for key, pod in change_pods(changes):
        timings.setdefault(pod['name'], {})[key] = pod.get('timings') or {}
    return timings


def _failed_as_a_whole(changes):
    """The messages of the changes that failed as a whole (their result has no pods)."""
    return [changes[key]['msg'] for key in CHANGES
            if key in changes and changes[key].get('failed') and 'pods' not in changes[key]]


def _failures(names, changes):
    """The pods of the changes that failed, were rolled back, conflicted or were refused, then the whole batch
    for the changes that failed as a whole."""
    failures = Failures(dict(name=pod['name'], status=pod['status'], reason=pod.get('reason'))
                        for _key, pod in change_pods(changes) if pod['status'] in FAILED_POD_STATUSES)
    whole = _failed_as_a_whole(changes)
    if whole:
        failures.add([WholeBatch(list(names), FAILED, '; '.join(whole))])
    return failures


def halts(out, batch):
    """Does the rollout stop after this step (``out``, of ``batch``): more failed pods than its
    max_failed_pods (what is left of the rollout's budget), a halted window (pods not started), or a pod
    recreated instead of changed in place."""
    too_many = len(out.get('failed_pods') or []) > batch.max_failed_pods
    return bool(too_many or out.get('not_started') or out.get('recreated'))
