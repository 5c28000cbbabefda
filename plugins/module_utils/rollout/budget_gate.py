# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""gate: before a batch, PodDisruptionBudgets allow the disruption, max_unavailable is respected, and the template
is still the rollout's."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.pods import poll, podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, budgets, guard

# The most between two looks while a batch is blocked: each look lists the workload's pods and the budgets.
POLL_SECONDS = 2.0


class BudgetGate:
    """The budget gate of a rollout, an object of its own: ``gate(names, whole)`` is its interface. Its
    dependencies are passed in: ``shared``, what the steps share (rollout/context.py RolloutContext: the options,
    the workload and its pods, the budgets, the hold on the workload record, the values pods should have now,
    the result shape, the clock); it writes none of their state."""

    def __init__(self, shared):
        self.shared = shared

    def gate(self, names, whole=True):
        """Wait until the PodDisruptionBudgets and max_unavailable allow the batch ``names`` (``whole``: all its
        pods at once; a window asks for each pod in its turn, so only the workload's record and template are
        checked). Raises WaitTimeout naming why when blocked past wait_timeout (nothing written)."""
        shared, options = self.shared, self.shared.options
        names = list(names)
        shared.renew_hold()
        self._check_template()
        if not whole:
            return shared.result([], blocked=[])
        workload = shared.workload

        def look():
            pods = shared.pods() if workload is None else (workload.read() and workload.pods())
            batch = [p for p in pods if podstate.meta(p, 'name') in names]
            return batch, self._blocked(pods, batch)
        # A cancelled run stops waiting at once: the engine then starts none of the batch's pods (process/cancel.py).
        batch, blocked = poll.until(look, options.wait_timeout, done=lambda found: not found[1] or shared.check_mode,
                                    cancelled=shared.cancel.cancelled, most=POLL_SECONDS, clock=shared.clock,
                                    sleep=shared.sleep)
        if blocked and not shared.check_mode and not shared.cancel.cancelled():
            raise WaitTimeout('batch %s blocked for %ss: %s' % (', '.join(names), options.wait_timeout,
                                                                '; '.join(blocked)), blocked=blocked)
        return shared.result(batch, blocked=blocked)

    def _check_template(self):
        """Another writer edited the template during this rollout (kubectl set image, an apply): raise
        ConcurrentChange naming the fields; nothing of it is overwritten and the workload stays held."""
        w = self.shared.workload
        if w is None or self.shared.restart or not w.held.active:
            return
        images, resources = self.shared.values_now()
        guard.check(w, images, resources)

    def _blocked(self, pods, batch):
        options = self.shared.options
        reasons = []
        for pdb, covered in self.shared.pdbs(batch):
            disrupted = [p for p in batch if podstate.meta(p, 'name') in covered and podstate.is_ready(p)]
            reasons.append(budgets.refusal(pdb, len(disrupted)))
        reasons = [reason for reason in reasons if reason]
        limit = batching.resolve_count(options.max_unavailable, len(pods), 'max_unavailable', round_up=False)
        if limit is not None:
            batch_names = set(podstate.meta(p, 'name') for p in batch)
            unavailable = [p for p in pods if not podstate.is_ready(p) and podstate.meta(p, 'name') not in batch_names]
            if len(unavailable) + len(batch) > max(limit, 1):
                reasons.append('max_unavailable %s: %d pod(s) already unavailable (%s), the batch has %d' % (
                    options.max_unavailable, len(unavailable),
                    ', '.join(podstate.meta(p, 'name') for p in unavailable), len(batch)))
        return reasons
