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
    """The prepare step of a rollout, an object of its own: ``prepare()`` is its interface. Its dependencies are
    passed in: ``shared``, what the steps share (rollout/context.py RolloutContext: the options, the client, the
    workload and its pods, the hold, the Events, the result shape; prepare's list of the pods is kept there for the
    first window, keep_listing), and ``config_data``, the config_data step (rollout/configdata.py) that writes a
    config rollout's change first. It owns a StatefulSet's partition in this run (``partition``, set by prepare)."""

    def __init__(self, shared, config_data):
        self.shared, self.config_data = shared, config_data
        self.partition = None

    def prepare(self):
        """The plan (mode, batches, pods, kept, refusals, owners), the workload held and its template written."""
        known = self._owners()   # who else manages the workload, before any write; a refusal raises here
        result = self._prepare()
        if known is not None:
            result['owners'] = known
        return result

    def _owners(self):
        """The owners report of this change (owners/check.py), or None for a restart, which no owner reverts."""
        shared = self.shared
        changes = ([owners.image_change(shared.images)] if shared.images else []) + (
            [owners.resources_change(shared.resources)] if shared.resources else [])
        if shared.restart or not changes:
            return None
        w = shared.workload
        if w is not None:
            return owners.workload(shared.kube, w.kind, w.namespace, w.name, changes, shared.options.owners,
                                   shared.warnings.append)
        found = shared.pods()
        reports = [owners.pods(shared.kube, found, change, shared.options.owners, shared.warnings.append)
                   for change in changes]
        return dict(reports[0], found=[e for r in reports for e in r['found']])

    def _prepare(self):
        shared = self.shared
        if shared.options.prepull and shared.images and not shared.check_mode:
            # The batches create pre-pull pods: refused here, before the workload is held, without the right.
            access.require(shared.kube, shared.options.namespace, prepull.PERMISSIONS)
        written = self.config_data.apply_config_data() or None   # the config change itself first (rollout/configdata.py)
        w = shared.workload
        if w is not None:
            w.read()
            if shared.restart:
                return self._plan(w.pods(), mode='restart', changed=written)
            refusals = template_refusals(w.template, shared.images, shared.resources)
            if refusals:
                return self._recreate(refusals)
            rec, held = w.record, w.held
            if rec:
                shared.stamp(rec, rec)   # another run's rollout of this workload is refused first
            resuming = held.active
            if resuming and self._unfinished_rollback(w, held):
                return shared.result(w.pods(), changed=True, mode='rollback', batches=[], kept=[], pdbs=[],
                                     labels={}, revision=None)
            # Kept for the first window of this call (state rollout): its watch starts from this list.
            listing = shared.keep_listing(shared.kube.list_pods(w.namespace, w.selector()))
            pods = w.pods(listing[0])
            template_changes = w.set_template(shared.images, shared.resources, check_mode=True)
            saved = held.saved if resuming else partition.user_strategy(w, held)
            kept, moved = self._sts_partition(w, saved, pods)
            pending = [p for p in pods if shared.pending(p) and podstate.meta(p, 'name') not in kept]
            changed = bool(pending or template_changes or resuming or moved)
            labels, revision = {}, None
            if template_changes:
                # The server (admission webhooks and policies included) judges the template first: a refusal
                # leaves the workload exactly as it was, not held.
                w.set_template(shared.images, shared.resources, dry_run=True)
            if changed and not shared.check_mode:
                labels, revision = self._hold_and_write_template(w, rec, held, saved, pods, len(pending))
            elif not changed:
                labels, revision = w.revision(shared.options.wait_timeout)
            return self._plan(pods, mode='in_place', changed=changed, labels=labels, revision=revision,
                              template_changed=template_changes)
        return self._plan(shared.pods(), mode='restart' if shared.restart else 'in_place', changed=written)

    def _unfinished_rollback(self, w, held):
        """Resuming the workload's held rollout: refuse another target (ValidationError, nothing written); True
        when the held rollout is a rollback that did not finish (this call finishes it, never applying the change
        again)."""
        shared = self.shared
        if held.target != shared.target:
            raise ValidationError('%s %s/%s has an unfinished rollout to %s (state %s): %s' % (
                w.kind, w.namespace, w.name, json.dumps(guard.brief(held.target), sort_keys=True), held.state,
                WAY_OUT))
        if held.state != ROLLING_BACK:
            return False
        shared.warnings.append('%s %s/%s: a rollback of this change did not finish; it is finished now and '
                               'the change is not applied again' % (w.kind, w.namespace, w.name))
        return True

    def _hold_and_write_template(self, w, rec, held, saved, pods, pending):
        """Hold the workload (its record: a new one, or ``rec`` resumed), write its template, and label the pods
        already on the target with the new revision: (labels, revision)."""
        shared = self.shared
        resuming = held.active
        if not resuming:
            rec = {'state': IN_PROGRESS, 'target': shared.target,
                   'before': partition.before_values(w, held, shared.images, shared.resources),
                   'saved': saved, 'started': record.timestamp()}
        if self.partition is not None:
            rec = dict(rec, partition=self.partition)
        shared.tell.progress(len(pods) - len([p for p in pods if shared.pending(p)]), len(pods))
        write_record(w, rec, w.hold_spec(), stamp=shared.stamp)
        shared.tell.started(w.held, resuming, pending, len(pods))
        w.set_template(shared.images, shared.resources)
        labels, revision = w.revision(shared.options.wait_timeout)
        w.relabel([p for p in pods if not shared.pending(p)], labels)
        return labels, revision

    def _sts_partition(self, w, saved, pods):
        """A StatefulSet's partition in this run (self.partition; ``saved``: the user's strategy): the names of
        the pods it keeps, and whether the partition the run ends with differs from the strategy's now."""
        shared = self.shared
        if w.kind != 'StatefulSet':
            return set(), False
        saved = saved or w.saved_strategy()
        self.partition = partition.sts_count(shared.options.partition, saved, len(pods))
        strategy = saved.get('updateStrategy')
        if not partition.rolling(strategy) and self.partition:
            shared.warnings.append('%s %s/%s is OnDelete, whose controller ignores a partition: this run leaves the %d '
                                   'lowest ordinal(s) as they are and the strategy stays OnDelete'
                                   % (w.kind, w.namespace, w.name, self.partition))
        kept = set(podstate.meta(p, 'name') for p in pods if p not in partition.outside(self.partition, [p]))
        moved = partition.rolling(strategy) and partition.native_partition(w.spec.get('updateStrategy')) != self.partition
        return kept, moved

    def _recreate(self, refusals):
        shared = self.shared
        w = shared.workload
        reasons = '; '.join('%s: %s' % (r['field'], r['reason']) for r in refusals)
        if not shared.options.allow_recreate:
            raise ValidationError('%s %s/%s: the change cannot be made in place (%s); set allow_recreate to hand '
                                  'it to the controller\'s own rolling update' % (w.kind, w.namespace, w.name, reasons),
                                  refusals=refusals)
        before = w.pods()
        changed = w.set_template(shared.images, shared.resources, check_mode=True, rolling=True)
        how = 'rolled out by the %s controller' % w.kind
        if changed and not shared.check_mode:
            w.set_template(shared.images, shared.resources, rolling=True)
            strategy = (w.spec.get('updateStrategy') or {}).get('type')
            if strategy == 'OnDelete' or w.kind == 'ReplicaSet':
                how = 'written to the template only: %s %s has no rolling update (%s), its pods get it when they ' \
                      'are recreated' % (w.kind, w.name, strategy or 'ReplicaSet')
                shared.warnings.append(how)
            else:
                w.wait_for('the rolling update to finish', lambda obj: w.converged(obj, True),
                           shared.options.wait_timeout)
        after = w.pods()
        replaced = set(podstate.meta(p, 'uid') for p in before) - set(podstate.meta(p, 'uid') for p in after)
        message = 'not in place (%s): %s, pods recreated by the controller (%d of %d replaced)' % (
            reasons, how, len(replaced), len(before))
        if shared.check_mode:
            message = 'not in place (%s): would be handed to the %s controller, which recreates the pods' % (
                reasons, w.kind)
        shared.warnings.append(message)
        return shared.result(before, changed=changed, mode='recreate', refusals=refusals, batches=[], kept=[],
                             labels={}, revision=None, message=message,
                             after=[podstate.pod_summary(p) for p in after])

    def _plan(self, pods, mode, changed=None, **extra):
        shared = self.shared
        # A pod going away (terminating, evicted) is left out and reported: its replacement, if any, is another pod.
        gone = [departure.entry(p, *left, when=departure.BEFORE) for p in pods
                for left in [departure.departure(p)] if left is not None]
        if gone:
            leaving = set(item['name'] for item in gone)
            pods = [p for p in pods if podstate.meta(p, 'name') not in leaving]
        ordered = batching.order_pods(pods, shared.options.order or 'ordinal', shared.options.order_label)
        kept, partition_value = None, shared.options.partition
        if self.partition:   # a StatefulSet's: the lowest ordinals kept, the rest in the controller's order
            ordered, kept = partition.split(ordered, self.partition, shared.options.order or 'ordinal')
            partition_value = None
        names = [podstate.meta(p, 'name') for p in ordered]
        pending = [podstate.meta(p, 'name') for p in ordered if shared.pending(p)]
        # A pod Pending on its way to running is not refused: the change waits for it (on the target already) or
        # makes it once it runs, within wait_timeout (pods/plan.py transient).
        waiting = set(podstate.meta(p, 'name') for p in ordered if plan.waits(p))
        refused = {podstate.meta(p, 'name'): reason for p in ordered if podstate.meta(p, 'name') in set(pending) - waiting
                   for reason in [plan.pod_refusal(p, shared.changed_containers(p))] if reason}
        if refused:
            raise ValidationError('pod(s) cannot be updated in place now: %s' % '; '.join(
                '%s: %s' % item for item in sorted(refused.items())), refused=refused)
        found = shared.pdbs(pods)
        allowed = [budgets.allowed(pdb) for pdb, _names in found]
        window = bool(shared.options.window)
        # A window checks the budgets for each pod as it starts; batches are cut to what they allow now.
        size = batching.batch_size(len(names), shared.options.batch_size or 1, shared.options.max_unavailable,
                                   min(allowed) if allowed and not window else None)
        planned = batching.plan_batches(names, pending, size, shared.options.canary,
                                        partition_value, done=len(names) - len(pending), window=window)
        if changed is None:
            changed = bool(planned['batches'])
        return shared.result(pods, changed=changed, mode=mode if planned['batches'] or changed else 'unchanged',
                             batch_size=size, window=size if window else 0, batches=planned['batches'],
                             kept=planned['kept'] if kept is None else kept,
                             pdbs=[budgets.summary(pdb, names) for pdb, names in found], gone=gone, **extra)
