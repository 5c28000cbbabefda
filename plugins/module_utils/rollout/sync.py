# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""sync: after a batch, updated pods get the new revision labels, leftover drains are undone, restarted pods are
marked with the restart id."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import RESTART_ANNOTATION
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_converged
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.leftovers import undrain_leftovers


class SyncStep:
    """The sync step of Rollout (rollout/steps.py composes the steps over rollout/context.py)."""

    def sync(self, names=None):
        """``names``: the pods a restart marks (default: the names param). With ``prepull``, the pre-pull
        pods a stopped rollout left are deleted."""
        self._delete_prepulled()
        return self._sync(names)[0]

    def _sync(self, names=None):
        """sync(), and the pods as read after it (the batch step checks them without listing again)."""
        self.renew_hold()
        images, resources = self.values_now()
        pods = self.pods()
        changed = []
        if self.config is not None:   # what the consumers run now, recorded on their pods (config/rollout.py)
            changed = self.config.mark(pods, (self.options.names or []) if names is None else names, self.check_mode,
                                       self.warnings.append)
        elif self.restart:
            names = (self.options.names or []) if names is None else names
            for pod in pods:
                if podstate.meta(pod, 'name') in names and self.pending(pod):
                    changed.append(podstate.meta(pod, 'name'))
                    if not self.check_mode:
                        self.kube.patch_pod(self.options.namespace, podstate.meta(pod, 'name'), {'metadata': {
                            'annotations': {RESTART_ANNOTATION: self.options.restart_id}}}, MERGE_PATCH)
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

    def _progress(self, pods, images, resources):
        """{updated: pods that run the target (restart: are marked restarted), total: pods}."""
        done = [p for p in pods if pod_converged(p, images, resources)] if not self.restart else \
            [p for p in pods if not self.pending(p)]
        return {'updated': len(done), 'total': len(pods)}
