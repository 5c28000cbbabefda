# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Readiness-gate draining: a pod whose spec.readinessGates lists a condition type is taken out of
its Services by setting that condition False through pods/status, and put back by setting it True.
The kubelet folds the condition into Ready; conditions merge by ``type`` (strategic merge patch)."""

from ansible_collections.inplace.k8s.plugins.module_utils import podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.client import STRATEGIC_MERGE_PATCH

DRAIN_REASON = 'InplaceUpdate'
READY_REASON = 'InplaceUpdateDone'


def has_gate(pod, gate):
    """The pod was created with this readiness gate."""
    return any(g.get('conditionType') == gate for g in (pod.get('spec') or {}).get('readinessGates') or [])


def gate_status(pod, gate):
    """'True', 'False' or None (condition not set)."""
    item = podstate.condition(pod, gate)
    return item.get('status') if item else None


def left_drained(pod, gate):
    """The gate condition is False with our drain reason: a run was stopped before it set it True again."""
    item = podstate.condition(pod, gate) if gate and has_gate(pod, gate) else None
    return bool(item) and item.get('status') == 'False' and item.get('reason') == DRAIN_REASON


def gate_patch(gate, ready, reason=None, message=None, now=None):
    """Strategic merge patch for pods/status setting the gate condition."""
    item = {
        'type': gate,
        'status': 'True' if ready else 'False',
        'reason': reason or (READY_REASON if ready else DRAIN_REASON),
        'lastTransitionTime': now or record.timestamp(),
    }
    if message:
        item['message'] = message
    return {'status': {'conditions': [item]}}


def set_gate(kube, pod, gate, ready, reason=None, message=None, metadata=None):
    """Set the gate condition on the pod; the pod after the write. ``metadata`` (record.metadata_patch)
    goes in the same write: pods/status accepts annotations, so a state record costs no write of its own."""
    body = gate_patch(gate, ready, reason, message)
    if metadata:
        body['metadata'] = metadata
    return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), body,
                          content_type=STRATEGIC_MERGE_PATCH, subresource='status')
