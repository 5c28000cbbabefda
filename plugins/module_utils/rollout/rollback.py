# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollback: put the template values from before back (the pods are then updated back in batches); pods
chosen by selectors go back to what their own records hold."""

import json

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.operations.resize import ResizeOperation
from ansible_collections.inplace.k8s.plugins.module_utils.options import ImageChange, ResizeChange
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import ROLLING_BACK
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, partition
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_converged, pod_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import change_ops
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import write_record


class RollbackStep:
    """The rollback step of a rollout, an object of its own: ``restore_before()`` and ``end_with_rollback()`` are
    its interface. Its dependencies are passed in: ``shared``, what the steps share (rollout/context.py
    RolloutContext: the options, the workload and its pods, the hold, the Events, the result shape); ``sync`` and
    ``finish``, the sync and finish steps (rollout/sync.py, finish.py); ``run_change``, how one change of pods is
    made (the batch step's, rollout/batch_step.py: names, change, min_ready_seconds -> the pod module's result)."""

    def __init__(self, shared, sync, finish, run_change):
        self.shared, self.sync, self.finish, self.run_change = shared, sync, finish, run_change

    def end_with_rollback(self):
        """The rollback as an end (state rollback): rollback, then finish (``finished``)."""
        out = self.restore_before()
        out['finished'] = self.finish.finish()
        out['finished'].pop('warnings', None)
        return out

    def restore_before(self):
        """Put the values from before back: on the template (pods chosen by selectors: what their own records
        hold), then on the pods that run the rollout's values (``groups``), each group at once through the pod
        modules' runner as the batches change pods, images then resources (``restored``: their results). A group
        that fails fails the step, the workload left rolling back (a re-run resumes the rollback)."""
        out = self._rollback_template() if self.shared.workload is not None else self._rollback_pods()
        out['restored'] = [self._restore(group) for group in out['groups']]
        return out

    def _restore(self, group):
        """One group's pods back to its values: {names, images, resources: the pod module's result}."""
        done = {'names': group['names']}
        if group['images']:
            done['images'] = self.run_change(group['names'], ImageChange(group['images']), min_ready_seconds=0)
        if group['resources']:
            done['resources'] = self.run_change(group['names'], ResizeChange(group['resources']),
                                                min_ready_seconds=0)
        return done

    def _rollback_template(self):
        """A workload's template back to the values from before (resumed or asked again: only what is not back
        yet), and the pods to update back."""
        shared = self.shared
        w = shared.workload
        w.read()
        held = w.held
        if not held:
            raise ValidationError('%s %s/%s has no rollout record to roll back' % (w.kind, w.namespace, w.name))
        images, resources = held.before_values
        if held.in_progress and change_ops(w.template, '', images, resources) and change_ops(
                w.template, '', *held.target_values):
            # An error, not a report: nothing is written, no pod is named, and every caller (state rollback, the
            # loop's rollback on failure) fails its call with it.
            raise engine.ConcurrentChange(
                '%s %s/%s: its template was changed by another writer during the rollout (it is neither the '
                'rollout\'s target nor the values from before); not overwritten by a rollback. The workload stays '
                'held: end it with rollout_action=release, or run the rollout again' % (w.kind, w.namespace, w.name))
        # Resuming a rollback, or asked again after it finished: write only what is not back yet.
        changed = not held.rolling_back or bool(
            w.set_template(images, resources, check_mode=True))
        labels, revision = {}, None
        if changed and not shared.check_mode:
            write_record(w, dict(held.raw, state=ROLLING_BACK), w.hold_spec(), stamp=shared.stamp)
            shared.tell.rolling_back(held)
            w.set_template(images, resources)
            labels, revision = w.revision(shared.options.wait_timeout)
        # The template is back on the revision from before: what the steps of this call read of it is read again.
        shared.forget_reads()
        self.sync.forget()
        pods = w.pods()
        ordered = batching.order_pods(pods, shared.options.order or 'ordinal', shared.options.order_label)
        names = [podstate.meta(p, 'name') for p in partition.outside(held.partition, ordered) if not pod_converged(p, images, resources)]
        groups = [{'names': names, 'images': images, 'resources': resources}] if names else []
        return shared.result(pods, changed=bool(changed or groups), groups=groups, labels=labels, revision=revision)

    def _rollback_pods(self):
        """Pods chosen by selectors (no template to go back to): per pod, the values from before that its
        image and resize records hold, for the changes of this rollout the pod has now; pods grouped by them."""
        shared, groups = self.shared, {}
        for pod in shared.pods():
            before = {}
            for key, operation, wanted in (('images', ImageOperation, shared.images),
                                           ('resources', ResizeOperation, shared.resources)):
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
        return shared.result([], changed=bool(result), groups=result)
