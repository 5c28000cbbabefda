# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""gate: before a batch, PodDisruptionBudgets allow the disruption, max_unavailable is respected, and the template
is still the rollout's."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.pods import poll, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, budgets, guard

# The most between two looks while a batch is blocked: each look lists the workload's pods and the budgets.
POLL_SECONDS = 2.0


class GateStep:
    """The gate step of Rollout (rollout/steps.py)."""

    def gate(self, names=None, whole=True):
        """Wait until the PodDisruptionBudgets and max_unavailable allow the batch ``names`` (default: the
        module's names) (``whole``: all its pods at once; a window asks for each pod in its turn, so only the
        workload's record and template are checked)."""
        names = list(self.options.names if names is None else names)
        self._renew()
        self._check_template()
        if not whole:
            return self.result([], blocked=[])

        def look():
            pods = self.pods() if self.workload is None else (self.workload.read() and self.workload.pods())
            batch = [p for p in pods if podstate.meta(p, 'name') in names]
            return batch, self._blocked(pods, batch)
        # A cancelled run stops waiting at once: the engine then starts none of the batch's pods (process/cancel.py).
        batch, blocked = poll.until(look, self.options.wait_timeout, done=lambda found: not found[1] or self.check_mode,
                                    cancelled=self.cancel.cancelled, most=POLL_SECONDS, clock=self.clock, sleep=self.sleep)
        if blocked and not self.check_mode and not self.cancel.cancelled():
            raise WaitTimeout('batch %s blocked for %ss: %s' % (', '.join(names), self.options.wait_timeout,
                                                                '; '.join(blocked)), blocked=blocked)
        return self.result(batch, blocked=blocked)

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
            disrupted = [p for p in batch if podstate.meta(p, 'name') in covered and podstate.is_ready(p)]
            reasons.append(budgets.refusal(pdb, len(disrupted)))
        reasons = [reason for reason in reasons if reason]
        limit = batching.resolve_count(self.options.max_unavailable, len(pods), 'max_unavailable',
                                       round_up=False)
        if limit is not None:
            batch_names = set(podstate.meta(p, 'name') for p in batch)
            unavailable = [p for p in pods if not podstate.is_ready(p) and podstate.meta(p, 'name') not in batch_names]
            if len(unavailable) + len(batch) > max(limit, 1):
                reasons.append('max_unavailable %s: %d pod(s) already unavailable (%s), the batch has %d' % (
                    self.options.max_unavailable, len(unavailable),
                    ', '.join(podstate.meta(p, 'name') for p in unavailable), len(batch)))
        return reasons
