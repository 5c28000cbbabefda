# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout: prepare, every step as batch runs it, then finish, in one call."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import cancel
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import unique
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import Step


class OneCall:
    """The whole rollout in one call (state rollout) of Rollout (rollout/steps.py)."""

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
        limit = self.options.max_failed_pods or 0
        batches = plan['batches']
        run = {'steps': [], 'failed_pods': [], 'not_started': [], 'recreated': [], 'timings': {}, 'stopped': False}
        diffs = []
        for index, names in enumerate(batches):
            batch = Step(names=tuple(names), max_failed_pods=max(limit - len(run['failed_pods']), 0),
                         prepull_next=tuple(batches[index + 1]) if index + 1 < len(batches) else (),
                         label='step %d of %d' % (index + 1, len(batches)), started=self.options.started)
            try:
                step = self.batch(batch)
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
        plan['warnings'] = unique(self.warnings)
        return plan
