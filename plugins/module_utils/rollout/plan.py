# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""prepare: resolve the pods, plan (in place or not, and why), hold the controller, put the target on the
template(s), and split the pods still to update into batches."""

import json

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import prepull
from ansible_collections.inplace.k8s.plugins.module_utils.owners import check as owners
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, plan, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import IN_PROGRESS, ROLLING_BACK
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, budgets, guard, partition
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import WAY_OUT
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import template_refusals
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import write_record


class PlanStep:
    """The prepare step of Rollout (rollout/steps.py)."""

    def prepare(self):
        known = self._owners()   # who else manages the workload, before any write; a refusal raises here
        result = self._prepare()
        if known is not None:
            result['owners'] = known
        return result

    def _owners(self):
        """The owners report of this change (owners/check.py), or None for a restart, which no owner reverts."""
        changes = ([owners.image_change(self.images)] if self.images else []) + (
            [owners.resources_change(self.resources)] if self.resources else [])
        if self.restart or not changes:
            return None
        w = self.workload
        if w is not None:
            return owners.workload(self.kube, w.kind, w.namespace, w.name, changes, self.options.owners,
                                   self.warnings.append)
        found = self.pods()
        reports = [owners.pods(self.kube, found, change, self.options.owners, self.warnings.append)
                   for change in changes]
        return dict(reports[0], found=[e for r in reports for e in r['found']])

    def _prepare(self):
        if self.options.prepull and self.images and not self.check_mode:
            # The batches create pre-pull pods: refused here, before the workload is held, without the right.
            access.require(self.kube, self.options.namespace, prepull.PERMISSIONS)
        written = self.apply_config_data() or None   # the config change itself first (rollout/configdata.py)
        w = self.workload
        if w is not None:
            w.read()
            if self.restart:
                return self._plan(w.pods(), mode='restart', changed=written)
            refusals = template_refusals(w.template, self.images, self.resources)
            if refusals:
                return self._recreate(refusals)
            rec, held = w.record, w.held
            if rec:
                self._stamp(rec, rec)   # another run's rollout of this workload is refused first
            resuming = held.active
            if resuming and self._unfinished_rollback(w, held):
                return self.result(w.pods(), changed=True, mode='rollback', batches=[], kept=[], pdbs=[],
                                   labels={}, revision=None)
            # Kept for the first window of this call (state rollout): its watch starts from this list.
            self._listing = self.kube.list_pods(w.namespace, w.selector())
            pods = w.pods(self._listing[0])
            template_changes = w.set_template(self.images, self.resources, check_mode=True)
            saved = held.saved if resuming else partition.user_strategy(w, held)
            kept, moved = self._sts_partition(w, saved, pods)
            pending = [p for p in pods if self.pending(p) and podstate.meta(p, 'name') not in kept]
            changed = bool(pending or template_changes or resuming or moved)
            labels, revision = {}, None
            if template_changes:
                # The server (admission webhooks and policies included) judges the template first: a refusal
                # leaves the workload exactly as it was, not held.
                w.set_template(self.images, self.resources, dry_run=True)
            if changed and not self.check_mode:
                labels, revision = self._hold_and_write_template(w, rec, held, saved, pods, len(pending))
            elif not changed:
                labels, revision = w.revision(self.options.wait_timeout)
            return self._plan(pods, mode='in_place', changed=changed, labels=labels, revision=revision,
                              template_changed=template_changes)
        return self._plan(self.pods(), mode='restart' if self.restart else 'in_place', changed=written)

    def _unfinished_rollback(self, w, held):
        """Resuming the workload's held rollout: refuse another target (ValidationError, nothing written); True
        when the held rollout is a rollback that did not finish (this call finishes it, never applying the change
        again)."""
        if held.target != self.target:
            raise ValidationError('%s %s/%s has an unfinished rollout to %s (state %s): %s' % (
                w.kind, w.namespace, w.name, json.dumps(guard.brief(held.target), sort_keys=True), held.state,
                WAY_OUT))
        if held.state != ROLLING_BACK:
            return False
        self.warnings.append('%s %s/%s: a rollback of this change did not finish; it is finished now and '
                             'the change is not applied again' % (w.kind, w.namespace, w.name))
        return True

    def _hold_and_write_template(self, w, rec, held, saved, pods, pending):
        """Hold the workload (its record: a new one, or ``rec`` resumed), write its template, and label the pods
        already on the target with the new revision: (labels, revision)."""
        resuming = held.active
        if not resuming:
            rec = {'state': IN_PROGRESS, 'target': self.target,
                   'before': partition.before_values(w, held, self.images, self.resources),
                   'saved': saved, 'started': record.timestamp()}
        if self._partition is not None:
            rec = dict(rec, partition=self._partition)
        self.tell.progress(len(pods) - len([p for p in pods if self.pending(p)]), len(pods))
        write_record(w, rec, w.hold_spec(), stamp=self._stamp)
        self.tell.started(w.held, resuming, pending, len(pods))
        w.set_template(self.images, self.resources)
        labels, revision = w.revision(self.options.wait_timeout)
        w.relabel([p for p in pods if not self.pending(p)], labels)
        return labels, revision

    def _sts_partition(self, w, saved, pods):
        """A StatefulSet's partition in this run (self._partition; ``saved``: the user's strategy): the names of
        the pods it keeps, and whether the partition the run ends with differs from the strategy's now."""
        if w.kind != 'StatefulSet':
            return set(), False
        saved = saved or w.saved_strategy()
        self._partition = partition.sts_count(self.options.partition, saved, len(pods))
        strategy = saved.get('updateStrategy')
        if not partition.rolling(strategy) and self._partition:
            self.warnings.append('%s %s/%s is OnDelete, whose controller ignores a partition: this run leaves the %d '
                                 'lowest ordinal(s) as they are and the strategy stays OnDelete'
                                 % (w.kind, w.namespace, w.name, self._partition))
        kept = set(podstate.meta(p, 'name') for p in pods if p not in partition.outside(self._partition, [p]))
        moved = partition.rolling(strategy) and partition.native_partition(w.spec.get('updateStrategy')) != self._partition
        return kept, moved

    def _recreate(self, refusals):
        w = self.workload
        reasons = '; '.join('%s: %s' % (r['field'], r['reason']) for r in refusals)
        if not self.options.allow_recreate:
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
                           self.options.wait_timeout)
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
        # A pod going away (terminating, evicted) is left out and reported: its replacement, if any, is another pod.
        gone = [departure.entry(p, *left, when=departure.BEFORE) for p in pods
                for left in [departure.departure(p)] if left is not None]
        if gone:
            leaving = set(item['name'] for item in gone)
            pods = [p for p in pods if podstate.meta(p, 'name') not in leaving]
        ordered = batching.order_pods(pods, self.options.order or 'ordinal', self.options.order_label)
        kept, partition_value = None, self.options.partition
        if self._partition:   # a StatefulSet's: the lowest ordinals kept, the rest in the controller's order
            ordered, kept = partition.split(ordered, self._partition, self.options.order or 'ordinal')
            partition_value = None
        names = [podstate.meta(p, 'name') for p in ordered]
        pending = [podstate.meta(p, 'name') for p in ordered if self.pending(p)]
        # A pod Pending on its way to running is not refused: the change waits for it (on the target already) or
        # makes it once it runs, within wait_timeout (pods/plan.py transient).
        waiting = set(podstate.meta(p, 'name') for p in ordered if plan.waits(p))
        refused = {podstate.meta(p, 'name'): reason for p in ordered if podstate.meta(p, 'name') in set(pending) - waiting
                   for reason in [plan.pod_refusal(p, self._changed_containers(p))] if reason}
        if refused:
            raise ValidationError('pod(s) cannot be updated in place now: %s' % '; '.join(
                '%s: %s' % item for item in sorted(refused.items())), refused=refused)
        found = self.pdbs(pods)
        allowed = [budgets.allowed(pdb) for pdb, _names in found]
        window = bool(self.options.window)
        # A window checks the budgets for each pod as it starts; batches are cut to what they allow now.
        size = batching.batch_size(len(names), self.options.batch_size or 1, self.options.max_unavailable,
                                   min(allowed) if allowed and not window else None)
        planned = batching.plan_batches(names, pending, size, self.options.canary,
                                        partition_value, done=len(names) - len(pending), window=window)
        if changed is None:
            changed = bool(planned['batches'])
        return self.result(pods, changed=changed, mode=mode if planned['batches'] or changed else 'unchanged',
                           batch_size=size, window=size if window else 0, batches=planned['batches'],
                           kept=planned['kept'] if kept is None else kept,
                           pdbs=[budgets.summary(pdb, names) for pdb, names in found], gone=gone, **extra)
