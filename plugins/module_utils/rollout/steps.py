# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The steps of a batched rollout (what the rollout_workload module runs, one step per call):

prepare   resolve the pods, plan (in place or not, and why), hold the controller, put the target on
          the template(s), and split the pods still to update into batches
gate      before a batch: PodDisruptionBudgets allow the disruption, max_unavailable is respected
sync      after a batch: updated pods get the new revision labels, leftover drains are undone,
          restarted pods are marked with the restart id
batch     gate, then the in-place change(s) of the batch (the operations and engine of inplace_image,
          inplace_resize or container_recreate, in this process), then sync: one call per batch
finish    restore the controller's strategy, wait until its status says it is fully updated
previous  read the revision an in-place undo goes back to (undo.py): the images/resources that differ
rollback  put the template values from before back (the pods are then updated back in batches)
release   restore the controller's strategy and end the rollout, leaving every pod as it is
watch     watch the pods this rollout verified for some seconds: any that crashed, restarted or
          turned unready since is a failed pod (the canary pause and the pause between batches)
rollout   prepare, every step and finish in one call: the role's path when nothing runs between its
          steps (a sliding window without pauses, verification tasks or analyses)

Health is watched for the whole rollout: the role passes ``watch`` (pod -> uid and the container IDs it
had when it was counted done, from each batch's ``verified``) to every later step, and batch and watch
report a pod that left that state as failed, so that on_failure applies to it.
"""

import difflib
import json
import time

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH, retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, InplaceError, ValidationError, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation, validate_images
from ansible_collections.inplace.k8s.plugins.module_utils.operations.resize import ResizeOperation
from ansible_collections.inplace.k8s.plugins.module_utils.options import (
    Drain, ImageChange, ResizeChange, RestartChange, Strategy, Target, Task, Wait,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import cancel, drain, plan, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.images import satisfies
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import (
    DONE, IN_PROGRESS, RELEASED, ROLLED_BACK, ROLLING_BACK,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods.waiter import PodWatcher
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, guard, partition, undo
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_converged, pod_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.leftovers import undrain_leftovers
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.selectors import selector_matches, selector_string
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import change_ops, template_refusals
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import Window, watch_entry, watch_failures
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import Workload, write_record

RESTART_ANNOTATION = 'inplace.k8s/restart-id'
POLL_SECONDS = 2.0
WATCH_POLL_SECONDS = 1.0
OWNER_MARGIN = 120   # seconds beyond two wait_timeouts that a workload record stays owned between steps
# Pod statuses the batch step reports in failed_pods (the engine's errors and refused pods), and the
# statuses of a whole-batch entry: the gate did not let the batch through / a change failed as a whole.
FAILED_POD_STATUSES = engine.ERROR_STATUSES + (engine.REFUSED,)
BLOCKED, FAILED = 'blocked', 'failed'
CHANGES = ('images', 'resources', 'restart')   # the batch step's results per change, in the order reported
PENDING_MEMO = 20000   # pod versions whose pending() answer is kept


class Rollout:
    """One call of the rollout_workload module: ``params`` are the module's, ``kube`` a client."""

    def __init__(self, kube, params, check_mode=False, clock=time.monotonic, sleep=time.sleep, diff=False,
                 run_command=None):
        self.kube, self.params, self.check_mode, self.diff = kube, params, check_mode, diff
        self.clock, self.sleep = clock, sleep
        self.run_command = run_command   # AnsibleModule.run_command, for restart_strategy cri (batch)
        self.images = params.get('images') or {}
        self.resources = params.get('resources') or {}
        self.restart = params.get('restart') or []
        self.watched = params.get('watch') or {}
        self.warnings = []
        self.workload = None
        self._labels = None   # _revision_labels()
        self._synced = None   # the last sync of batch(): (result, pods)
        self._pending = {}    # pending(): (uid, resourceVersion) -> its answer
        self._listing = None  # prepare's list of the workload's pods (items, resourceVersion), for the first window
        self._partition = None   # a StatefulSet's partition in this run (rollout/partition.py), set by prepare
        # The role calls one module per step: the run is its run_id and the ansible-playbook process.
        pid = record.playbook_pid()
        self.owner = record.new_owner(params.get('run_id') or ('playbook-%s' % pid if pid else None), pid=pid)
        if params.get('kind'):
            self.workload = Workload(kube, params['kind'], params['namespace'], params['name'], clock, sleep)
        if params.get('unknown_variables'):
            raise ValidationError(unknown_variables_message(params['unknown_variables'],
                                                            params.get('known_variables') or []))
        if not (self.images or self.resources or self.restart) and params['state'] in ('prepare', 'batch', 'rollout'):
            raise ValidationError('give images, resources or restart')
        if self.images:
            validate_images(self.images, 'images (rollout_images)')
        if (params.get('min_ready_seconds') or 0) < 0 or (params.get('seconds') or 0) < 0:
            raise ValidationError('min_ready_seconds and seconds must not be negative')
        if (params.get('max_failed_pods') or 0) < 0:
            raise ValidationError('max_failed_pods must not be negative: 0 halts the window at the first failure')
        if params['state'] == 'release' and self.workload is None:
            raise ValidationError('state release needs kind and name: pods chosen by label_selectors hold nothing')
        if self.restart and (self.images or self.resources):
            raise ValidationError('restart cannot be combined with images or resources in one rollout')
        self.drainer = drain.drainer(params.get('readiness_gate'), params.get('drain_label'))

    # ---- shared

    @property
    def target(self):
        return {'images': self.images, 'resources': self.resources}

    def pods(self, items=None):
        """The pods of the rollout (the workload's, or those of label_selectors), not terminating: of ``items``
        (listed by the same selector), or of a list made here."""
        if self.workload is not None:
            if self.workload.obj is None:
                self.workload.read()
            return self.workload.pods(items)
        selectors = self.params.get('label_selectors') or []
        if not selectors:
            raise ValidationError('give kind and name of a workload, or label_selectors')
        if items is None:
            items, _version = self.kube.list_pods(self.params['namespace'], ','.join(selectors))
        pods = [p for p in items if not podstate.is_terminating(p)]
        owned = sorted(podstate.meta(p, 'name') for p in pods if podstate.meta(p, 'ownerReferences'))
        if owned and self.images or owned and self.resources:
            self.warnings.append('pods are updated directly; the template of their owner was not changed, so a '
                                 'pod it recreates gets the old values: %s' % ', '.join(owned))
        return pods

    def _changed_containers(self, pod):
        """The containers of ``pod`` whose image this rollout changes (a pod Pending on such an image is
        fixed forward, not refused)."""
        return [name for name, image in self.images.items()
                if podstate.find_container(pod, name) is not None and not satisfies(pod, name, image)]

    def pending(self, pod):
        """Does this pod still need the change? The answer depends on the pod's content only, which the
        server names by uid and resourceVersion: each version is judged once (a plan and its result ask for
        every pod several times; at 1000 pods that was a third of a second)."""
        key = (podstate.meta(pod, 'uid'), podstate.meta(pod, 'resourceVersion'))
        if None not in key and key in self._pending:
            return self._pending[key]
        if self.restart:
            annotations = podstate.meta(pod, 'annotations') or {}
            answer = annotations.get(RESTART_ANNOTATION) != self.params.get('restart_id')
        else:
            answer = not pod_converged(pod, self.images, self.resources)
        if None not in key:
            if len(self._pending) >= PENDING_MEMO:
                self._pending.clear()
            self._pending[key] = answer
        return answer

    def result(self, pods, **extra):
        out = {'changed': False, 'warnings': self.warnings,
               'pods': [dict(podstate.pod_summary(p), ordinal=batching.ordinal(p),
                             updated=not self.pending(p)) for p in pods]}
        if self.workload is not None and self.workload.obj is not None:
            out['workload'] = self.workload.status_summary()
            if self.workload.history:
                out['history'] = self.workload.history
            self.warnings.extend(self.workload.warnings)
        out.update(extra)
        return out

    def pdbs(self, pods):
        """PodDisruptionBudgets of the namespace that select any of the pods: (pdb, [pod names])."""
        answer = self.kube.request('GET', '/apis/policy/v1/namespaces/%s/poddisruptionbudgets'
                                   % self.params['namespace'])
        found = []
        for pdb in answer.get('items') or []:
            selector = (pdb.get('spec') or {}).get('selector')
            names = [podstate.meta(p, 'name') for p in pods if selector_matches(selector, podstate.meta(p, 'labels'))]
            if names:
                found.append((pdb, names))
        return found

    # ---- ownership

    def _stamp(self, current, rec):
        """``rec`` owned by this run, expiring after two wait_timeouts and a margin (renewed at each step);
        raise when another live run holds the record the workload has now (``current``)."""
        if record.holder(current, self.owner, self.params.get('force_takeover')):
            w = self.workload
            raise ValidationError('%s %s/%s: %s' % (w.kind, w.namespace, w.name,
                                                    record.busy_message(current, 'workload')))
        return record.claim(rec, self.owner, 2 * self.params.get('wait_timeout', 300) + OWNER_MARGIN)

    def _renew(self):
        """Each step: refuse a workload that another run is rolling out; renew our hold on an unfinished one."""
        w = self.workload
        if w is None:
            return
        rec = w.read() and w.record
        if rec and rec.get('state') in record.ACTIVE:
            if self.check_mode:
                self._stamp(rec, rec)
            else:
                write_record(w, rec, stamp=lambda current, _rec: self._stamp(current, current))

    # ---- prepare

    def prepare(self):
        if self.params.get('prepull') and self.images and not self.check_mode:
            # The batches create pre-pull pods: refused here, before the workload is held, without the right.
            access.require(self.kube, self.params['namespace'], prepull.PERMISSIONS)
        w = self.workload
        if w is not None:
            w.read()
            if self.restart:
                return self._plan(w.pods(), mode='restart')
            refusals = template_refusals(w.template, self.images, self.resources)
            if refusals:
                return self._recreate(refusals)
            rec = w.record
            if rec:
                self._stamp(rec, rec)   # another run's rollout of this workload is refused first
            resuming = bool(rec) and rec.get('state') in (IN_PROGRESS, ROLLING_BACK)
            if resuming and rec.get('target') != self.target:
                raise ValidationError('%s %s/%s has an unfinished rollout to %s (state %s): %s' % (
                    w.kind, w.namespace, w.name, json.dumps(guard.brief(rec.get('target')), sort_keys=True), rec.get('state'),
                    WAY_OUT))
            if resuming and rec.get('state') == ROLLING_BACK:
                # The same change after a failed rollback finishes that rollback; it is never applied again.
                self.warnings.append('%s %s/%s: a rollback of this change did not finish; it is finished now and '
                                     'the change is not applied again' % (w.kind, w.namespace, w.name))
                return self.result(w.pods(), changed=True, mode='rollback', batches=[], kept=[], pdbs=[],
                                   labels={}, revision=None)
            # Kept for the first window of this call (state rollout): its watch starts from this list.
            self._listing = self.kube.list_pods(w.namespace, w.selector())
            pods = w.pods(self._listing[0])
            template_changes = w.set_template(self.images, self.resources, check_mode=True)
            saved = (rec or {}).get('saved') if resuming else partition.user_strategy(w, rec)
            kept, moved = self._sts_partition(w, saved, pods)
            pending = [p for p in pods if self.pending(p) and podstate.meta(p, 'name') not in kept]
            changed = bool(pending or template_changes or resuming or moved)
            labels, revision = {}, None
            if template_changes:
                # The server (admission webhooks and policies included) judges the template first: a refusal
                # leaves the workload exactly as it was, not held.
                w.set_template(self.images, self.resources, dry_run=True)
            if changed and not self.check_mode:
                if not resuming:
                    rec = {'state': IN_PROGRESS, 'target': self.target,
                           'before': partition.before_values(w, rec, self.images, self.resources),
                           'saved': saved, 'started': record.timestamp()}
                if self._partition is not None:
                    rec = dict(rec, partition=self._partition)
                write_record(w, rec, w.hold_spec(), stamp=self._stamp)
                w.set_template(self.images, self.resources)
                labels, revision = w.revision(self.params['wait_timeout'])
                w.relabel([p for p in pods if not self.pending(p)], labels)
            elif not changed:
                labels, revision = w.revision(self.params['wait_timeout'])
            return self._plan(pods, mode='in_place', changed=changed, labels=labels, revision=revision,
                              template_changed=template_changes)
        return self._plan(self.pods(), mode='restart' if self.restart else 'in_place')

    def _sts_partition(self, w, saved, pods):
        """A StatefulSet's partition in this run (self._partition; ``saved``: the user's strategy): the names of
        the pods it keeps, and whether the partition the run ends with differs from the strategy's now."""
        if w.kind != 'StatefulSet':
            return set(), False
        saved = saved or w.saved_strategy()
        self._partition = partition.sts_count(self.params.get('partition'), saved, len(pods))
        strategy = saved.get('updateStrategy')
        if not partition.rolling(strategy) and self._partition:
            self.warnings.append('%s %s/%s is OnDelete, whose controller ignores a partition: this run leaves the %d '
                                 'lowest ordinal(s) as they are and the strategy stays OnDelete'
                                 % (w.kind, w.namespace, w.name, self._partition))
        kept = set(podstate.meta(p, 'name') for p in pods if p not in partition.outside({'partition': self._partition}, [p]))
        moved = partition.rolling(strategy) and partition.native_partition(w.spec.get('updateStrategy')) != self._partition
        return kept, moved

    def _recreate(self, refusals):
        w = self.workload
        reasons = '; '.join('%s: %s' % (r['field'], r['reason']) for r in refusals)
        if not self.params.get('allow_recreate'):
            raise ValidationError('%s %s/%s: the change cannot be made in place (%s); set allow_recreate to hand '
                                  'it to the controller\'s own rolling update' % (w.kind, w.namespace, w.name, reasons),
                                  refusals=refusals)
        before = w.pods()
        changed = w.set_template(self.images, self.resources, check_mode=True, rolling=True)
        how = 'rolled out by the %s controller' % w.kind
        if changed and not self.check_mode:
            w.set_template(self.images, self.resources, rolling=True)
            strategy = (w.spec.get('updateStrategy') or {}).get('type')
            if strategy == 'OnDelete' or w.kind == 'ReplicaSet':
                how = 'written to the template only: %s %s has no rolling update (%s), its pods get it when they ' \
                      'are recreated' % (w.kind, w.name, strategy or 'ReplicaSet')
                self.warnings.append(how)
            else:
                w.wait_for('the rolling update to finish', lambda obj: w.converged(obj, True),
                           self.params['wait_timeout'])
        after = w.pods()
        replaced = set(podstate.meta(p, 'uid') for p in before) - set(podstate.meta(p, 'uid') for p in after)
        message = 'not in place (%s): %s, pods recreated by the controller (%d of %d replaced)' % (
            reasons, how, len(replaced), len(before))
        if self.check_mode:
            message = 'not in place (%s): would be handed to the %s controller, which recreates the pods' % (
                reasons, w.kind)
        self.warnings.append(message)
        return self.result(before, changed=changed, mode='recreate', refusals=refusals, batches=[], kept=[],
                           labels={}, revision=None, message=message,
                           after=[podstate.pod_summary(p) for p in after])

    def _plan(self, pods, mode, changed=None, **extra):
        ordered = batching.order_pods(pods, self.params.get('order') or 'ordinal', self.params.get('order_label'))
        kept, partition_value = None, self.params.get('partition')
        if self._partition:   # a StatefulSet's: the lowest ordinals kept, the rest in the controller's order
            ordered, kept = partition.split(ordered, self._partition, self.params.get('order') or 'ordinal')
            partition_value = None
        names = [podstate.meta(p, 'name') for p in ordered]
        pending = [podstate.meta(p, 'name') for p in ordered if self.pending(p)]
        refused = {podstate.meta(p, 'name'): reason for p in ordered if podstate.meta(p, 'name') in pending
                   for reason in [plan.pod_refusal(p, self._changed_containers(p))] if reason}
        if refused:
            raise ValidationError('pod(s) cannot be updated in place now: %s' % '; '.join(
                '%s: %s' % item for item in sorted(refused.items())), refused=refused)
        budgets = self.pdbs(pods)
        allowed = [(pdb.get('status') or {}).get('disruptionsAllowed', 0) for pdb, _names in budgets]
        window = bool(self.params.get('window'))
        # A window checks the budgets for each pod as it starts; batches are cut to what they allow now.
        size = batching.batch_size(len(names), self.params.get('batch_size') or 1, self.params.get('max_unavailable'),
                                   min(allowed) if allowed and not window else None)
        planned = batching.plan_batches(names, pending, size, self.params.get('canary'),
                                        partition_value, done=len(names) - len(pending), window=window)
        if changed is None:
            changed = bool(planned['batches'])
        return self.result(pods, changed=changed, mode=mode if planned['batches'] or changed else 'unchanged',
                           batch_size=size, window=size if window else 0, batches=planned['batches'],
                           kept=planned['kept'] if kept is None else kept,
                           pdbs=[_pdb_summary(pdb, names) for pdb, names in budgets], **extra)

    # ---- gate

    def gate(self, whole=True):
        """Wait until the PodDisruptionBudgets and max_unavailable allow this batch (``whole``: all its pods at
        once; a window asks for each pod in its turn, so only the workload's record and template are checked)."""
        names = self.params.get('names') or []
        deadline = self.clock() + self.params['wait_timeout']
        self._renew()
        self._check_template()
        if not whole:
            return self.result([], blocked=[])
        while True:
            pods = self.pods() if self.workload is None else (self.workload.read() and self.workload.pods())
            batch = [p for p in pods if podstate.meta(p, 'name') in names]
            blocked = self._blocked(pods, batch)
            if not blocked or self.check_mode:
                return self.result(batch, blocked=blocked)
            if self.clock() >= deadline:
                raise WaitTimeout('batch %s blocked for %ss: %s' % (', '.join(names), self.params['wait_timeout'],
                                                                    '; '.join(blocked)), blocked=blocked)
            self.sleep(POLL_SECONDS)

    def _check_template(self):
        """Another writer edited the template during this rollout (kubectl set image, an apply): raise
        ConcurrentChange naming the fields; nothing of it is overwritten and the workload stays held."""
        w = self.workload
        if w is None or self.restart or not (w.record or {}).get('state') in record.ACTIVE:
            return
        images, resources = self._current_target()
        guard.check(w, images, resources)

    def _blocked(self, pods, batch):
        reasons = []
        for pdb, covered in self.pdbs(batch):
            healthy = [p for p in batch if podstate.meta(p, 'name') in covered and podstate.is_ready(p)]
            allowed = (pdb.get('status') or {}).get('disruptionsAllowed', 0)
            if len(healthy) > allowed:
                reasons.append('PodDisruptionBudget %s allows %d disruption(s), the batch would disrupt %d'
                               % (podstate.meta(pdb, 'name'), allowed, len(healthy)))
        limit = batching.resolve_count(self.params.get('max_unavailable'), len(pods), 'max_unavailable',
                                       round_up=False)
        if limit is not None:
            batch_names = set(podstate.meta(p, 'name') for p in batch)
            unavailable = [p for p in pods if not podstate.is_ready(p) and podstate.meta(p, 'name') not in batch_names]
            if len(unavailable) + len(batch) > max(limit, 1):
                reasons.append('max_unavailable %s: %d pod(s) already unavailable (%s), the batch has %d' % (
                    self.params.get('max_unavailable'), len(unavailable),
                    ', '.join(podstate.meta(p, 'name') for p in unavailable), len(batch)))
        return reasons

    # ---- sync

    def sync(self, names=None):
        """``names``: the pods a restart marks (default: the names param). With ``prepull``, the pre-pull
        pods a stopped rollout left are deleted."""
        self._delete_prepulled()
        return self._sync(names)[0]

    def _delete_prepulled(self):
        """Pre-pull pods the batches left for the next pods (none after the last batch, unless stopped)."""
        if not self.params.get('prepull') or self.check_mode:
            return
        puller = prepull.Prepull(self.kube, self.params['namespace'], self.owner['run'])
        puller.delete()
        self.warnings.extend('pre-pull pod %s could not be deleted (%s): delete it with kubectl delete pod -l %s'
                             % (name, why, prepull.LABEL) for name, why in puller.left)

    def _sync(self, names=None):
        """sync(), and the pods as read after it (the batch step checks them without listing again)."""
        self._renew()
        images, resources = self._current_target()
        pods = self.pods()
        changed = []
        if self.restart:
            names = (self.params.get('names') or []) if names is None else names
            for pod in pods:
                if podstate.meta(pod, 'name') in names and self.pending(pod):
                    changed.append(podstate.meta(pod, 'name'))
                    if not self.check_mode:
                        self.kube.patch_pod(self.params['namespace'], podstate.meta(pod, 'name'), {'metadata': {
                            'annotations': {RESTART_ANNOTATION: self.params.get('restart_id')}}}, MERGE_PATCH)
        elif self.workload is not None and self.workload.record:
            changed = self.workload.relabel([p for p in pods if pod_converged(p, images, resources)],
                                            self._revision_labels(), self.check_mode)
        undrained = undrain_leftovers(self.kube, pods, self.drainer, images, resources, self.check_mode)
        if undrained:
            self.warnings.append('put back in service pod(s) left drained by an interrupted run: %s'
                                 % ', '.join(undrained))
        if changed or undrained:
            pods = self.pods()
        return self.result(pods, changed=bool(changed or undrained), relabelled=changed, undrained=undrained,
                           **self._progress(pods, images, resources)), pods

    def _revision_labels(self):
        """The labels the workload's updated pods carry (its revision), read once per step."""
        if self._labels is None:
            self._labels = self.workload.revision(self.params['wait_timeout'])[0]
        return self._labels

    def _progress(self, pods, images, resources):
        """{updated: pods that run the target (restart: are marked restarted), total: pods}."""
        done = [p for p in pods if pod_converged(p, images, resources)] if not self.restart else \
            [p for p in pods if not self.pending(p)]
        return {'updated': len(done), 'total': len(pods)}

    # ---- batch

    def batch(self):
        """One batch of the role in one call: gate, the in-place change(s) of ``names``, sync of the
        pods that did not fail. Failed pods do not fail the call (the role decides: halt, roll back,
        max_failed_pods); a gate that does not let the batch through (blocked past wait_timeout, or
        any other gate error: nothing written) raises with ``blocked`` and ``failed_pods``."""
        names = self.params.get('names') or []
        if not names:
            raise ValidationError('state batch needs names: the pods of the batch')
        self._synced = None
        if cancel.cancelled():   # the run was cancelled (pods.cancel): nothing of this batch starts
            cancel.skipped(names)
            out = self.result([], failed_pods=[], blocked=[], verified={}, relabelled=[], undrained=[],
                              not_started=list(names), recreated=[], timings={})
            out.update(progress=self.progress_lines(names, out), halt=True)
            return out
        unhealthy = self._watch_failures()
        if unhealthy:
            # A pod counted done earlier is failing now: nothing of this batch is written.
            images, resources = self._current_target()
            out = self.result([], failed_pods=unhealthy, blocked=[], verified={}, relabelled=[], undrained=[],
                              not_started=[], recreated=[], timings={}, **self._progress(self.pods(), images, resources))
            out['warnings'] = _unique(out['warnings'])
            out.update(progress=self.progress_lines(names, out), halt=self._halts(out))
            return out
        sliding = bool(self.params.get('window')) and not self.check_mode
        try:
            gated = self.gate(whole=not sliding)
        except InplaceError as exc:
            exc.details.setdefault('blocked', [])
            exc.details['failed_pods'] = [_batch_entry(names, engine.CONFLICT if isinstance(exc, engine.ConcurrentChange)
                                                       else BLOCKED, exc.msg)]
            if isinstance(exc, WaitTimeout):
                images, resources = self._current_target()
                exc.details.update(self._progress(self.pods(), images, resources))
            exc.details.update(progress=self.progress_lines(names, exc.details), halt=self._halts(exc.details))
            raise
        window = self._window() if sliding else None
        try:
            changes = self._change(names, window)
        finally:
            if window is not None:
                window.watcher.stop()
        failed = _failed_pods(names, changes)
        # A change that failed as a whole changed none of the pods; a halted window did not start some.
        failed_names = set(names) if _failed_as_a_whole(changes) else set(item['name'] for item in failed)
        not_started = sorted(set(pod['name'] for _key, pod in change_pods(changes)
                                 if pod['status'] == engine.NOT_STARTED) - failed_names)
        left = failed_names | set(not_started)
        out, latest = self._synced = self._sync(names=[name for name in names if name not in left])
        out.update(changes)
        current = {podstate.meta(p, 'name'): p for p in latest}
        verified = {name: watch_entry(current[name], self._watched_containers())
                    for name in names if name not in left and name in current
                    and not self.pending(current[name]) and not self.check_mode}
        if window is not None:
            # Pods counted done that failed while the window ran (it halted then), each once.
            failed.extend(item for item in window.failed if item['name'] not in failed_names)
            failed_names.update(item['name'] for item in window.failed)
            out['window'] = window.report()
        failed.extend(item for item in self._watch_failures(current.values()) if item['name'] not in failed_names)
        # Counted done by the change, yet its spec is off the target now: another writer set it in between
        # (kubectl set image). Reported, not silently left out of the watch (and never overwritten).
        failed.extend({'name': name, 'status': engine.CONFLICT, 'reason': 'changed by another writer after it was '
                       'updated (it runs %s); not overwritten' % _spec_images(current[name], self.images)}
                      for name in names if name not in left and name in current and not self.restart
                      and not self.check_mode and not pod_matches(current[name], self.images, self.resources))
        timings = {}
        for key, pod in change_pods(changes):
            timings.setdefault(pod['name'], {})[key] = pod.get('timings') or {}
        out.update(blocked=gated['blocked'], failed_pods=failed, verified=verified, timings=timings, not_started=not_started,
                   recreated=recreated_pods(changes),
                   changed=bool(out['changed'] or any(r.get('changed') for r in changes.values())))
        if self.diff:
            out['diff'] = [r.pop('diff') for r in changes.values() if r.get('diff')]
        out['warnings'] = _unique(out['warnings'])
        out.update(progress=self.progress_lines(names, out), halt=self._halts(out))
        return out

    def _halts(self, step):
        """Does the rollout stop after this step: more failed pods than max_failed_pods (what is left of the
        rollout's budget), a halted window (pods not started), or a pod recreated instead of changed in place."""
        return bool(len(step.get('failed_pods') or []) > (self.params.get('max_failed_pods') or 0)
                    or step.get('not_started') or step.get('recreated'))

    def progress_lines(self, names, step):
        """What the role shows after a step of ``names``: a line (its label ``progress_label``, its pods, how many
        are done, failed and not started, the window, the time since ``started``), then one line per failed pod."""
        failed = [item['name'] for item in step.get('failed_pods') or []]
        failed_here = set(name for item in failed for name in item.split(','))   # a whole-batch entry names all
        not_started = set(step.get('not_started') or [])
        if self.check_mode:
            counts = 'would update %d pod(s) (check mode: nothing written)' % len(names)
        else:
            earlier = len([name for name in failed if name not in names and ',' not in name])
            counts = '%d done, %d failed%s; %s/%s pods run the target' % (
                len([name for name in names if name not in failed_here and name not in not_started]),
                len([name for name in names if name in failed_here]),
                ', %d earlier pod(s) failed after they were counted done' % earlier if earlier else '',
                step.get('updated', '?'), step.get('total', '?'))
        if not_started:
            counts += ', %d not started' % len(not_started)
        window = step.get('window')
        if window:
            counts += '; window %s wide%s, pods waited %ss for their turn in all' % (
                window['width'], ', halted: %s' % window['halted'] if window.get('halted') else '',
                window['waited_seconds'])
        shown = ', '.join(names) if len(names) <= 6 else '%s ... %s, %d pods' % (
            ', '.join(names[:3]), ', '.join(names[-2:]), len(names))
        line = '%s (%s): %s' % (self.params.get('progress_label') or 'step', shown, counts)
        if self.params.get('started'):
            line += '; elapsed %.1fs' % (time.time() - self.params['started'])
        return [line] + ['failed: ' + ': '.join('%s' % item.get(key) for key in ('name', 'status', 'reason') if key in item)
                         for item in step.get('failed_pods') or []]

    # ---- the whole rollout in one call

    def rollout(self):
        """prepare, then every step as batch runs it (the pods verified by a step are watched by the next ones),
        then finish, in one call. Returns prepare's result with ``run``: each step's report (``steps``), the
        failed, not started and recreated pods, the pods' timings, ``stopped`` and, when the steps ran to the
        end, ``finished`` (finish's result, or its failure with failed_pods). It stops after the step in which
        more than max_failed_pods pods failed in all, the window halted, or a pod was recreated; then nothing
        is finished and the role goes on as after its own steps (roll back or report). A plan that is not an
        in-place change (recreate, or a rollback to finish) is returned without ``run``."""
        plan = self.prepare()
        if self.check_mode or plan['mode'] not in ('in_place', 'restart', 'unchanged'):
            return plan
        base, limit = dict(self.params), self.params.get('max_failed_pods') or 0
        batches = plan['batches']
        run = {'steps': [], 'failed_pods': [], 'not_started': [], 'recreated': [], 'timings': {}, 'stopped': False}
        diffs = []
        for index, names in enumerate(batches):
            self.params = dict(base, names=names, max_failed_pods=max(limit - len(run['failed_pods']), 0),
                               prepull_next=batches[index + 1] if index + 1 < len(batches) else [],
                               progress_label='step %d of %d' % (index + 1, len(batches)))
            try:
                step = self.batch()
            except InplaceError as exc:
                if 'failed_pods' not in exc.details:
                    raise
                step = dict(exc.details, changed=False, msg=exc.msg)
            self.watched = dict(self.watched, **(step.get('verified') or {}))
            plan['changed'] = bool(plan['changed'] or step.get('changed'))
            diffs.extend(step.get('diff') or [])
            kept = ('progress', 'failed_pods', 'not_started', 'recreated', 'window', 'updated', 'total')
            run['steps'].append(dict({key: step.get(key) for key in kept}, pods=len(names)))
            for key in ('failed_pods', 'not_started', 'recreated'):
                run[key].extend(step.get(key) or [])
            run['timings'].update(step.get('timings') or {})
            if step['halt'] or cancel.cancelled():
                run['stopped'] = True
                if cancel.cancelled():
                    cancel.skipped([name for later in batches[index + 1:] for name in later])
                break
        self.params = base
        if not run['stopped']:
            try:
                run['finished'] = self.finish(synced=self._synced if batches else None)
            except InplaceError as exc:
                if 'failed_pods' not in exc.details:
                    raise
                run['finished'] = dict(exc.details, failed=True, msg=exc.msg)
            run['finished'].pop('warnings', None)
        plan['run'] = run
        if diffs:
            plan['diff'] = diffs
        plan['warnings'] = _unique(self.warnings)
        return plan

    def _prepull_ahead(self):
        """{node: [images]} of the pods of ``prepull_next`` (the next batch) that still need the images."""
        wanted = set(self.params.get('prepull_next') or [])
        if not wanted:
            return None
        images = set(self.images.values())
        return prepull.targets((pod, images) for pod in self.pods()
                               if podstate.meta(pod, 'name') in wanted and self.pending(pod))

    def _window(self):
        """The sliding window of this step (rollout.window): as wide as batch_size (capped by max_unavailable),
        over a watch of the workload's pods."""
        selector = self.workload.selector() if self.workload is not None else \
            ','.join(self.params.get('label_selectors') or [])
        # One list: the watch starts from it, and the workload's pods are taken from it. The first window of a
        # state rollout call takes prepare's, a second older: the watch replays what changed since (prepare's own
        # writes included), and a pod's write is guarded by what it read, as after any list (at 1000 pods, half a
        # second and a list less).
        listing, self._listing = self._listing, None
        items, version = listing or self.kube.list_pods(self.params['namespace'], selector or None)
        pods = self.pods(items)
        total = len(pods)
        watcher = PodWatcher(self.kube, self.params['namespace'], selector or None).start(items, version)
        return Window(
            watcher, batching.batch_size(total, self.params.get('batch_size') or 1, self.params.get('max_unavailable')),
            max_unavailable=batching.resolve_count(self.params.get('max_unavailable'), total, 'max_unavailable',
                                                   round_up=False),
            budgets=[pdb for pdb, _names in self.pdbs(pods)], max_failed=self.params.get('max_failed_pods') or 0,
            timeout=self.params['wait_timeout'], watched=self.watched, containers=self._watched_containers(),
            overwritten=self._overwritten(resources=False), clock=self.clock)

    def _change(self, names, window=None):
        """The in-place change(s) of the batch with the pod modules' operations (runner.run), their options
        built here as the role passed them to inplace_image, inplace_resize, container_recreate: {images|resources|
        restart: that module's result, with failed and msg when it failed}. Resources only after images succeeded.
        With a ``window`` the pods start in their turn, as many at once as it is wide; else all at once."""
        target = Target(namespace=self.params['namespace'], names=tuple(names),
                        max_concurrency=window.width if window is not None else len(names),
                        force_takeover=bool(self.params.get('force_takeover')), window=window)
        wait = Wait(timeout=self.params['wait_timeout'], min_ready_seconds=self.params.get('min_ready_seconds') or 0)
        draining = Drain(readiness_gate=self.params.get('readiness_gate'), drain_label=self.params.get('drain_label'),
                         required=bool(self.params.get('require_readiness_gate')),
                         seconds=self.params.get('drain_seconds') or 0)
        changes = {}
        warn = self.warnings.append

        def run(change, wait=wait):
            return _outcome(lambda: runner.run(Task(target, change, wait, draining), self.kube, self.check_mode,
                                               self.diff, warn, self.run_command))
        if self.restart:
            changes['restart'] = run(RestartChange(
                containers=list(self.restart), strategy=Strategy(name=self.params.get('restart_strategy') or 'auto')))
        on_failure = self.params.get('on_failure') or 'stop'
        if self.images:
            pulling = bool(self.params.get('prepull'))
            # StatefulSet / DaemonSet: the revision labels ride on the image write (one write per pod, no relabel).
            held = self.workload is not None and self.workload.kind in ('StatefulSet', 'DaemonSet') and \
                (self.workload.record or {}).get('state') == IN_PROGRESS
            changes['images'] = run(ImageChange(
                self.images, on_failure=on_failure, prepull=pulling, prepull_run=self.owner['run'] if pulling else None,
                prepull_ahead=self._prepull_ahead() if pulling else None,
                labels=self._revision_labels() if held and not self.check_mode else None))
        if self.resources and not changes.get('images', {}).get('failed'):
            # After an image change the pods were held min_ready_seconds already; later crashes are
            # caught by the watch of the verified pods.
            changes['resources'] = run(ResizeChange(self.resources, on_failure=on_failure),
                                       wait=wait._replace(min_ready_seconds=0) if self.images else wait)
        return changes

    def _current_target(self):
        """The values pods should have now: the rollout's target, or the before-values while rolling back."""
        if self.workload is not None:
            self.workload.read()
            rec = self.workload.record or {}
            if rec.get('state') in (ROLLING_BACK, ROLLED_BACK):
                before = rec.get('before') or {}
                return before.get('images') or {}, before.get('resources') or {}
            if rec.get('target'):
                return rec['target'].get('images') or {}, rec['target'].get('resources') or {}
        return self.images, self.resources

    # ---- watch

    def _watched_containers(self):
        """The containers whose health counts: those the change touches."""
        if self.restart:
            return list(self.restart)
        return sorted(set(self.images) | set(self.resources))

    def _watch_failures(self, pods=None):
        """failed_pods entries for the watched pods (``watch``) that no longer run as verified."""
        if not self.watched or self.check_mode:
            return []
        pods = self.pods() if pods is None else pods
        return watch_failures(pods, self.watched, self._overwritten())

    def _overwritten(self, resources=True):
        """overwritten(pod) for watch_failures: what another writer set on a pod counted done (None: nothing).
        Without ``resources``: its images only (the window's check while the resize of its pods is under way)."""
        if self.restart or not self.images:
            return None
        wanted = self.resources if resources else None
        return lambda pod: None if pod_matches(pod, self.images, wanted) else _spec_images(pod, self.images)

    def watch(self):
        """Watch the pods verified so far for ``seconds``; return at the first failure (failed_pods)."""
        seconds = self.params.get('seconds') or 0
        if self.check_mode:
            return self.result([], failed_pods=[], watched=0, message='would watch %d pod(s) for %ss' % (
                len(self.watched), seconds))
        deadline = self.clock() + seconds
        while True:
            if cancel.cancelled():   # the pause of a cancelled run ends now (pods.cancel)
                return self.result([], failed_pods=[], watched=len(self.watched), message=cancel.cancelled())
            self._renew()
            failed = self._watch_failures()
            remaining = deadline - self.clock()
            if failed or remaining <= 0:
                return self.result([], failed_pods=failed, watched=len(self.watched),
                                   message='%d of %d watched pod(s) failed' % (len(failed), len(self.watched))
                                   if failed else '%d pod(s) stayed healthy for %ss' % (len(self.watched), seconds))
            self.sleep(min(WATCH_POLL_SECONDS, remaining))

    # ---- finish

    def release(self):
        """End the rollout where it stands: restore the controller's strategy (pods left on the old
        version stay protected, as in finish), mark the record released; no pod is changed."""
        return self.finish(final=RELEASED)

    def finish(self, final=None, synced=None):
        """``synced``: what the last step's sync found, as _sync returns it (state rollout: the step just synced
        every pod of the workload, so it is not done twice)."""
        w = self.workload
        if w is None:
            return self.sync()   # which deletes the pre-pull pods left too
        self._delete_prepulled()
        if final == RELEASED:
            w.read()
            rec = w.record or {}
            images = (rec.get('target') or {}).get('images') or {}
            resources = (rec.get('target') or {}).get('resources') or {}
            if rec.get('state') not in (IN_PROGRESS, ROLLING_BACK):
                return self.result(w.pods(), changed=False, old=[], message='%s %s/%s: no unfinished rollout to '
                                   'release (record state %s)' % (w.kind, w.namespace, w.name, rec.get('state')))
            if rec.get('state') == ROLLING_BACK:
                images = (rec.get('before') or {}).get('images') or {}
                resources = (rec.get('before') or {}).get('resources') or {}
            return self._release(rec, images, resources, final)
        images, resources = self._current_target()
        if not self.restart and (w.record or {}).get('state') in record.ACTIVE:
            guard.release_check(images, resources)(w)   # checked again on the read the release write is guarded by
        synced, pods = synced or self._sync()
        rec = w.record
        if self.restart or not rec:
            old = [p for p in pods if not pod_matches(p, images, resources)]
            # A restart changes no template and holds nothing (a record is another rollout's): wait until
            # the workload reports the restarted pods ready again.
            if self.restart and not self.check_mode:
                w.wait_for('the restarted pods to be ready', lambda obj: w.converged(obj, not old),
                           self.params['wait_timeout'])
            return self.result(w.pods(), changed=synced['changed'])
        if rec.get('state') not in record.ACTIVE:
            # Nothing of ours is held (a re-run that found nothing to do): the strategy is the user's as it is now.
            return self.result(pods, changed=synced['changed'],
                               old=[podstate.meta(p, 'name') for p in pods if not pod_matches(p, images, resources)])
        final = ROLLED_BACK if rec.get('state') in (ROLLING_BACK, ROLLED_BACK) else DONE
        if final == DONE and rec.get('state') == IN_PROGRESS:
            self._check_overwritten(partition.outside(rec, pods), images, (rec.get('before') or {}).get('images') or {})
        return self._release(rec, images, resources, final, synced['changed'], pods)

    def _check_overwritten(self, pods, images, before):
        """Before the release: a pod whose spec has neither the rollout's image nor the one from before was
        changed by another writer during the rollout (after its batch verified it). Raise ConcurrentChange
        naming each, the workload still held: releasing would let the rollout end as done with a pod on a
        third image and nothing saying why."""
        foreign = []
        for pod in pods:
            moved = [name for name, image in sorted(images.items())
                     if not pod_matches(pod, {name: image}) and not (before.get(name) and pod_matches(pod, {name: before[name]}))]
            if moved:
                foreign.append((podstate.meta(pod, 'name'), _spec_images(pod, moved)))
        if foreign:
            w = self.workload
            raise engine.ConcurrentChange(
                '%s %s/%s: pod(s) changed by another writer during this rollout: %s; nothing was overwritten and '
                'the workload stays held: when the other writer is done, run the rollout again (it brings them to '
                'its target) or end it with rollout_action=rollback or release' % (
                    w.kind, w.namespace, w.name, '; '.join('%s (spec now has %s)' % item for item in foreign)),
                failed_pods=[{'name': name, 'status': engine.CONFLICT, 'reason': 'changed by another writer during '
                              'the rollout (its spec now has %s); not overwritten' % what} for name, what in foreign])

    def _release(self, rec, images, resources, final, synced=False, pods=None):
        """Restore the saved strategy, record ``final``, wait for the controller's status (``pods``: the
        workload's pods as just listed, else they are listed here; the result reports them)."""
        w = self.workload
        pods = w.pods() if pods is None else pods
        old = [p for p in pods if not pod_matches(p, images, resources)]
        spec, two_step = w.release_spec(rec.get('saved') or {}, [batching.ordinal(p) for p in old], len(pods),
                                        asked=rec.get('partition') if final == DONE else None)
        # The release hands the controller the template we wrote, never another writer's (rollout/guard.py).
        check = guard.release_check(images, resources) if final != RELEASED else None
        changed = bool(synced or spec or rec.get('state') != final)
        if not changed or self.check_mode:
            return self.result(pods, changed=changed, old=[podstate.meta(p, 'name') for p in old])
        timeout = self.params['wait_timeout']
        if final == RELEASED:
            # Pods may be left failing: restore the strategy and wait only until the controller saw it.
            write_record(w, _ended(rec, final, w.protection), spec, stamp=self._stamp)
            w.wait_for('the controller to observe the release', w.observed, timeout)
            self.warnings.append('%s %s/%s released: %d pod(s) not on the rollout\'s target stay as they are%s' % (
                w.kind, w.namespace, w.name, len(old), (': ' + ', '.join(podstate.meta(p, 'name') for p in old))
                if old else ''))
            return self.result(pods, changed=True, old=[podstate.meta(p, 'name') for p in old])
        if two_step:
            replicas = w.spec.get('replicas', len(pods))
            write_record(w, rec, {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'partition': replicas}}},
                         stamp=self._stamp, check=check)
            w.wait_for('currentRevision to reach updateRevision', lambda obj: w.converged(obj, True), timeout)
        write_record(w, _ended(rec, final, w.protection), spec, stamp=self._stamp, check=check)
        w.wait_for('the workload status to converge', lambda obj: w.converged(obj, not old), timeout)
        if old:
            self.warnings.append('%d pod(s) left on the old version: %s' % (
                len(old), ', '.join(podstate.meta(p, 'name') for p in old)))
        # The release writes the workload only, never a pod: the pods as listed for it are reported (at 1000
        # pods, a list again would add most of a second to the rollout's end and change nothing in the result).
        return self.result(pods, changed=True, old=[podstate.meta(p, 'name') for p in old])

    # ---- rollback

    def rollback(self):
        w = self.workload
        if w is None:
            return self._rollback_pods()
        w.read()
        rec = w.record
        if not rec:
            raise ValidationError('%s %s/%s has no rollout record to roll back' % (w.kind, w.namespace, w.name))
        before = rec.get('before') or {}
        images, resources = before.get('images') or {}, before.get('resources') or {}
        target = rec.get('target') or {}
        if rec.get('state') == IN_PROGRESS and change_ops(w.template, '', images, resources) and change_ops(
                w.template, '', target.get('images') or {}, target.get('resources') or {}):
            raise engine.ConcurrentChange(
                '%s %s/%s: its template was changed by another writer during the rollout (it is neither the '
                'rollout\'s target nor the values from before); not overwritten by a rollback. The workload stays '
                'held: end it with rollout_action=release, or run the rollout again' % (w.kind, w.namespace, w.name))
        # Resuming a rollback, or asked again after it finished: write only what is not back yet.
        changed = rec.get('state') not in (ROLLING_BACK, ROLLED_BACK) or bool(
            w.set_template(images, resources, check_mode=True))
        labels, revision = {}, None
        if changed and not self.check_mode:
            write_record(w, dict(rec, state=ROLLING_BACK), w.hold_spec(), stamp=self._stamp)
            w.set_template(images, resources)
            labels, revision = w.revision(self.params['wait_timeout'])
        pods = w.pods()
        ordered = batching.order_pods(pods, self.params.get('order') or 'ordinal', self.params.get('order_label'))
        names = [podstate.meta(p, 'name') for p in partition.outside(rec, ordered) if not pod_converged(p, images, resources)]
        groups = [{'names': names, 'images': images, 'resources': resources}] if names else []
        return self.result(pods, changed=bool(changed or groups), groups=groups, labels=labels, revision=revision)

    def _rollback_pods(self):
        """Pods chosen by selectors (no template to go back to): per pod, the values from before that its
        image and resize records hold, for the changes of this rollout the pod has now; pods grouped by them."""
        groups = {}
        for pod in self.pods():
            before = {}
            for key, operation, wanted in (('images', ImageOperation, self.images),
                                           ('resources', ResizeOperation, self.resources)):
                rec = record.get(pod, operation.name)
                if not wanted or not rec or not pod_matches(pod, **{key: wanted}):
                    continue
                values = {name: value for name, value in operation.rollback_target(rec).items()
                          if name in wanted}
                if key == 'resources':
                    values = {name: {s: v for s, v in value.items() if v} for name, value in values.items()}
                if values:
                    before[key] = values
            if before and not pod_converged(pod, before.get('images'), before.get('resources')):
                groups.setdefault(json.dumps(before, sort_keys=True), []).append(podstate.meta(pod, 'name'))
        result = [dict(names=sorted(names), images=json.loads(key).get('images') or {},
                       resources=json.loads(key).get('resources') or {}) for key, names in sorted(groups.items())]
        return self.result([], changed=bool(result), groups=result)

    # ---- drain label

    def drain_label(self):
        """Make the workload drainable by ``drain_label`` in place: the label on every pod (a metadata write,
        no restart), on the template under the usual hold (the controller keeps its pods: Deployment's
        current ReplicaSet first, StatefulSet/DaemonSet pods relabelled with the new revision), then on the
        selector of ``service`` once every pod carries it. Check mode reports what is missing."""
        w, drainer = self.workload, self.drainer
        if w is None or not isinstance(drainer, drain.LabelDrain):
            raise ValidationError('state drain_label needs kind and name of a workload and drain_label')
        w.read()
        key, value = drainer.key, drainer.value
        if key in drain.selector_keys(w.spec.get('selector')):
            raise ValidationError('drain_label: %s %s/%s selects its pods by %s; choose a label only the Service '
                                  'selects; nothing was changed' % (w.kind, w.namespace, w.name, key))
        rec = w.record or {}
        labels_target = {'labels': {key: value}}
        if rec.get('state') in (IN_PROGRESS, ROLLING_BACK) and rec.get('target') != labels_target:
            raise ValidationError('%s %s/%s has an unfinished rollout to %s: finish it first (%s)' % (
                w.kind, w.namespace, w.name, json.dumps(guard.brief(rec.get('target')), sort_keys=True), WAY_OUT))
        service = self._drain_service(key, value)
        pods = w.pods()
        unlabelled = [p for p in pods if not drainer.applies(p)]
        template_labels = (w.template.get('metadata') or {}).get('labels') or {}
        report = {'label': drainer.name, 'pods': len(pods),
                  'unlabelled': [podstate.meta(p, 'name') for p in unlabelled],
                  'drained': [podstate.meta(p, 'name') for p in pods if drainer.left_drained(p)],
                  'template_labelled': template_labels.get(key) == value,
                  'service': service and podstate.meta(service, 'name'),
                  'service_selects': bool(service) and (service.get('spec') or {}).get('selector', {}).get(key) == value}
        changed = bool(unlabelled or not report['template_labelled'] or (service and not report['service_selects']))
        if self.check_mode or not changed:
            return self.result(pods, changed=changed, drain_label=report)
        for pod in unlabelled:
            self._label_pod(pod, key, value)
        if not report['template_labelled'] or rec.get('target') == labels_target:
            if rec.get('target') != labels_target or rec.get('state') not in (IN_PROGRESS, ROLLING_BACK):
                rec = {'state': IN_PROGRESS, 'target': labels_target, 'before': {'labels': {key: template_labels.get(key)}},
                       'saved': w.saved_strategy(), 'started': record.timestamp()}
            write_record(w, rec, w.hold_spec(), stamp=self._stamp)
            w.set_template_labels({key: value})
            revision_labels, _revision = w.revision(self.params['wait_timeout'])
            w.relabel(w.pods(), revision_labels)
            self._release(w.record or rec, {}, {}, DONE)
        if service and not report['service_selects']:
            left = [podstate.meta(p, 'name') for p in w.pods() if not drainer.applies(p)]
            if left:
                raise ValidationError('drain_label: pod(s) %s do not carry %s yet (created meanwhile?); the selector of '
                                      'Service %s is left as it is: run this again' % (', '.join(left), drainer.name,
                                                                                       report['service']))
            self.kube.request('PATCH', '/api/v1/namespaces/%s/services/%s' % (w.namespace, report['service']),
                              body={'metadata': {'resourceVersion': podstate.meta(service, 'resourceVersion')},
                                    'spec': {'selector': {key: value}}}, content_type=MERGE_PATCH)
        return self.result(w.pods(), changed=True, drain_label=report)

    def _drain_service(self, key, value):
        """The Service of ``service`` (None when not given); ValidationError when it does not select the
        workload's pods (its selector without the drain label must match the template's labels)."""
        name = self.params.get('service')
        if not name:
            return None
        w = self.workload
        try:
            service = self.kube.request('GET', '/api/v1/namespaces/%s/services/%s' % (w.namespace, name))
        except ApiError as exc:
            raise ValidationError('service: cannot read Service %s/%s: %s; nothing was changed'
                                  % (w.namespace, name, exc.msg))
        selector = dict((service.get('spec') or {}).get('selector') or {})
        selector.pop(key, None)
        labels = (w.template.get('metadata') or {}).get('labels') or {}
        if not selector or not selector_matches({'matchLabels': selector}, labels):
            raise ValidationError('service: Service %s/%s does not select the pods of %s %s (selector %s); '
                                  'nothing was changed' % (w.namespace, name, w.kind, w.name, json.dumps(selector)))
        return service

    def _label_pod(self, pod, key, value):
        """Put the serving label on a pod that lacks it (guarded by resourceVersion, re-read on a conflict)."""
        state = {'pod': pod}

        def reread(_exc):
            state['pod'] = self.kube.get_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'))

        @retry_conflict(on_retry=reread)
        def attempt():
            current = state['pod']
            if (podstate.meta(current, 'labels') or {}).get(key) in (value, drain.DRAINED_VALUE):
                return
            self.kube.patch_pod(podstate.meta(current, 'namespace'), podstate.meta(current, 'name'), {'metadata': {
                'resourceVersion': podstate.meta(current, 'resourceVersion'), 'labels': {key: value}}},
                content_type=MERGE_PATCH)
        attempt()

    def previous(self):
        """The revision an in-place undo goes back to and the images/resources that differ (undo.py)."""
        if self.workload is None:
            raise ValidationError('state previous needs kind and name of a Deployment, StatefulSet or DaemonSet')
        return dict(undo.previous(self.workload, self.params.get('to_revision')), warnings=self.warnings)

    def run(self):
        if cancel.cancelled() and not self.check_mode:   # ansible-playbook was gone before this step began
            raise InplaceError('state %s was not started' % self.params['state'])
        return getattr(self, self.params['state'])()


WAY_OUT = ('resume it by running the same change again, or end it - roll it back (role: rollout_action=rollback, '
           'module: state=rollback then finish) to restore the template and pods from before, or release it '
           '(rollout_action=release, state=release) to restore the controller and leave every pod as it is')


def _ended(rec, final, protection):
    """The record of a run that ended as ``final``, naming the strategy it left to protect pods (rollout/partition.py)."""
    ended = dict(rec, state=final, finished=record.timestamp())
    ended.pop('protection', None)
    if protection:
        ended['protection'] = protection
    return ended


def _spec_images(pod, names):
    """'app=registry/app:3.0' for the containers ``names`` of the pod's spec."""
    found = [podstate.find_container(pod, name) for name in sorted(names)]
    return ', '.join('%s=%s' % (info.spec.get('name'), info.spec.get('image')) for info in found if info is not None)


def recreated_pods(changes):
    """Pods of the batch's changes that came back with another UID: recreated, not changed in place (a pod whose
    sandbox the kubelet made again, after a node restart, has a new IP but is the same pod)."""
    return sorted(set(pod['name'] for _key, pod in change_pods(changes)
                      if pod.get('uid_after') and pod['uid_after'] != pod.get('uid')))


def change_pods(changes):
    """(change, pod entry) of every pod the batch's changes report, in CHANGES order."""
    for key in CHANGES:
        for pod in (changes.get(key) or {}).get('pods') or []:
            yield key, pod


def unknown_variables_message(unknown, known):
    """Name each unknown role variable with the closest known one."""
    parts = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        parts.append('%s (did you mean %s?)' % (name, close[0]) if close else name)
    return 'unknown variable(s) of the rollout role: %s; the role knows: %s' % (
        ', '.join(parts), ', '.join(sorted(known)))


def _outcome(step):
    """A pod module's result from ``step()``, or, when it raised, what the module would have failed with."""
    try:
        return step()
    except InplaceError as exc:
        return dict(exc.details, failed=True, msg=exc.msg)


def _batch_entry(names, status, reason):
    """A failed_pods entry for the whole batch."""
    return {'name': ','.join(names), 'status': status, 'reason': reason}


def _failed_as_a_whole(changes):
    """The messages of the changes that failed as a whole (their result has no pods)."""
    return [changes[key]['msg'] for key in CHANGES
            if key in changes and changes[key].get('failed') and 'pods' not in changes[key]]


def _failed_pods(names, changes):
    """[{name, status, reason}]: the pods of the changes that failed, were rolled back, conflicted or were
    refused, then one whole-batch entry for the changes that failed as a whole."""
    found = [dict(name=pod['name'], status=pod['status'], reason=pod.get('reason'))
             for _key, pod in change_pods(changes) if pod['status'] in FAILED_POD_STATUSES]
    whole = _failed_as_a_whole(changes)
    if whole:
        found.append(_batch_entry(names, FAILED, '; '.join(whole)))
    return found


def _unique(items):
    seen = set()
    return [item for item in items if not (item in seen or seen.add(item))]


def _pdb_summary(pdb, names):
    status = pdb.get('status') or {}
    return {'name': podstate.meta(pdb, 'name'), 'disruptions_allowed': status.get('disruptionsAllowed', 0),
            'current_healthy': status.get('currentHealthy'), 'desired_healthy': status.get('desiredHealthy'),
            'pods': names, 'selector': selector_string((pdb.get('spec') or {}).get('selector'))}
