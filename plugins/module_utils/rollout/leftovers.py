# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What an interrupted run leaves behind on pods that the rollout clears up (its sync step)."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_converged


def undrain_leftovers(kube, pods, drainer, images=None, resources=None, check_mode=False):
    """Pods an interrupted run left drained (``drainer``: drain.Drainer; readiness gate False with reason
    InplaceUpdate, or the drain label at its drained value) that are converged and healthy: put them back.
    Names of the pods."""
    names = []
    if not drainer:
        return names
    for pod in pods:
        if not drainer.left_drained(pod):
            continue
        if pod_converged(pod, images, resources) and podstate.containers_healthy(pod) and not _record_busy(pod):
            names.append(podstate.meta(pod, 'name'))
            if not check_mode:
                drainer.set(kube, pod, True)
    return names


def _record_busy(pod):
    """Another live run holds one of the pod's records. A record left in progress by a run that was killed
    (its process gone, or expired) holds nothing: its drained pod must be put back."""
    anyone = record.new_owner()
    return any(isinstance(r, dict) and record.holder(r, anyone) is not None for r in record.records(pod).values())
