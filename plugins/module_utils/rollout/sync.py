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
    """The sync step of a rollout, an object of its own: ``sync(names)``, ``sync_pods(names)``, ``after_step(names)``
    (whose sync ``last`` keeps), ``forget()`` and ``counts(pods, images, resources)`` are its interface. Its
    dependencies are passed in: ``shared``, what the steps share (rollout/context.py RolloutContext: the options,
    the client, the workload and its pods, the hold, the values pods should have now, the result shape). It owns
    ``last``: the sync of the last step of this call, (report, pods), or None."""

    def __init__(self, shared):
        self.shared = shared
        self.last = None

    def sync(self, names=None):
        """``names``: the pods a restart marks (default: the names param). With ``prepull``, the pre-pull
        pods a stopped rollout left are deleted."""
        self.shared.delete_prepulled()
        return self.sync_pods(names)[0]

    def forget(self):
        """No step synced in this call yet (a step begins, or the template went back to the values from before)."""
        self.last = None

    def after_step(self, names):
        """sync_pods() of a step's pods ``names``, kept as ``last`` (the loop's sweep and finish read it)."""
        self.last = self.sync_pods(names)
        return self.last

    def sync_pods(self, names=None):
        """sync(), and the pods as read after it (the batch step checks them without listing again)."""
        shared = self.shared
        options = shared.options
        shared.renew_hold()
        images, resources = shared.values_now()
        pods = shared.pods()
        changed = []
        if shared.config is not None:   # what the consumers run now, recorded on their pods (config/rollout.py)
            changed = shared.config.mark(pods, (options.names or []) if names is None else names, shared.check_mode,
                                         shared.warnings.append)
        elif shared.restart:
            names = (options.names or []) if names is None else names
            for pod in pods:
                if podstate.meta(pod, 'name') in names and shared.pending(pod):
                    changed.append(podstate.meta(pod, 'name'))
                    if not shared.check_mode:
                        shared.kube.patch_pod(options.namespace, podstate.meta(pod, 'name'), {'metadata': {
                            'annotations': {RESTART_ANNOTATION: options.restart_id}}}, MERGE_PATCH)
        elif shared.workload is not None and shared.workload.record:
            changed = shared.workload.relabel([p for p in pods if pod_converged(p, images, resources)],
                                              shared.revision_labels(), shared.check_mode)
        undrained = undrain_leftovers(shared.kube, pods, shared.drainer, images, resources, shared.check_mode)
        if undrained:
            shared.warnings.append('put back in service pod(s) left drained by an interrupted run: %s'
                                   % ', '.join(undrained))
        if changed or undrained:
            pods = shared.pods()
        return shared.result(pods, changed=bool(changed or undrained), relabelled=changed, undrained=undrained,
                             **self.counts(pods, images, resources)), pods

    def counts(self, pods, images, resources):
        """{updated: pods that run the target (restart: are marked restarted), total: pods}."""
        shared = self.shared
        done = [p for p in pods if pod_converged(p, images, resources)] if not shared.restart else \
            [p for p in pods if not shared.pending(p)]
        return {'updated': len(done), 'total': len(pods)}
