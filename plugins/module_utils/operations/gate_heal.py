# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The healing of stranded readiness gates (inplace.k8s.readiness_gate state=healed; operations/gates.py checks the
gate and dispatches): gated pods without the condition - created before the policy that opens the gate of new
pods, in the seconds before the API server applied it, or on a server without it - get it True through
``pods/status``, guarded by the pod's resourceVersion, never touching a pod whose condition is present (False
means a drain is in progress). RBAC: the ``inplace-k8s`` role's ``list pods`` and ``patch pods/status``.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import STRATEGIC_MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConflictError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, podstate

HEAL_REASON = 'Healed'
HEAL_ATTEMPTS = 5


def pod_gate_state(pod, gate):
    """'not_gated' (the spec does not list the gate), 'terminating', 'stranded' (gated, condition absent),
    'open' (True) or 'closed' (False: a drain in progress, or a gate someone closed)."""
    if not drain.has_gate(pod, gate):
        return 'not_gated'
    if podstate.is_terminating(pod):
        return 'terminating'
    return {None: 'stranded', 'True': 'open'}.get(drain.gate_status(pod, gate), 'closed')


def open_patch(pod, gate, now=None):
    """Strategic merge patch for pods/status: the gate condition True, guarded by the resourceVersion read."""
    body = drain.gate_patch(gate, True, reason=HEAL_REASON,
                            message='opened by inplace.k8s.readiness_gate: the condition was absent', now=now)
    body['metadata'] = {'resourceVersion': podstate.meta(pod, 'resourceVersion')}
    return body


def open_stranded(kube, pod, gate):
    """Set the gate True on a pod whose condition is absent. Re-reads on conflict and stops as soon as the pod
    has the condition (someone else opened or closed it) or is gone. Returns (status, pod):
    'opened', or the pod_gate_state it was found in ('open', 'closed', 'terminating', 'gone')."""
    namespace, name = podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name')
    for _attempt in range(HEAL_ATTEMPTS):
        state = pod_gate_state(pod, gate)
        if state != 'stranded':
            return state, pod
        try:
            return 'opened', kube.patch_pod(namespace, name, open_patch(pod, gate),
                                            content_type=STRATEGIC_MERGE_PATCH, subresource='status')
        except ConflictError:
            try:
                pod = kube.get_pod(namespace, name)
            except NotFoundError:
                return 'gone', pod
        except NotFoundError:
            return 'gone', pod
    raise ConflictError('pod %s/%s: the readiness gate could not be opened: the pod changed %d times while it was '
                        'written; run again' % (namespace, name, HEAL_ATTEMPTS), status=409)


def select(kube, namespace, label_selectors=None, kind=None, name=None, workload_pods=None):
    """The pods to look at: a workload's pods (``workload_pods(kube, kind, namespace, name)``, given by the caller:
    the workload layer is above this one), or the namespace's pods matching the label selectors."""
    if kind:
        return workload_pods(kube, kind, namespace, name)
    pods, _version = kube.list_pods(namespace, ','.join(label_selectors or []) or None)
    return pods


def heal(kube, namespace, gate, label_selectors=None, kind=None, name=None, check_mode=False, workload_pods=None):
    """Open the gate of every stranded pod of the target; report every gated pod.

    Returns {'changed', 'pods': [{name, uid, state, status}], 'summary', 'stranded', 'opened', 'not_gated'}.
    ``state`` is what the pod was found in (pod_gate_state); ``status`` what was done: opened / would_open,
    or the state when nothing was done."""
    pods = sorted(select(kube, namespace, label_selectors, kind, name, workload_pods),
                  key=lambda p: podstate.meta(p, 'name'))
    if not check_mode and any(pod_gate_state(p, gate) == 'stranded' for p in pods):
        access.require(kube, namespace, [('patch', 'pods/status', '')])
    report = []
    for pod in pods:
        state = pod_gate_state(pod, gate)
        status = state
        if state == 'stranded':
            status = 'would_open' if check_mode else open_stranded(kube, pod, gate)[0]
        report.append({'name': podstate.meta(pod, 'name'), 'uid': podstate.meta(pod, 'uid'), 'state': state,
                       'status': status})
    summary = {}
    for item in report:
        summary[item['status']] = summary.get(item['status'], 0) + 1
    summary['total'] = len(report)
    return {
        'changed': any(p['status'] in ('opened', 'would_open') for p in report),
        'pods': report, 'summary': summary,
        'stranded': [p['name'] for p in report if p['state'] == 'stranded'],
        'opened': [p['name'] for p in report if p['status'] in ('opened', 'would_open')],
        'not_gated': [p['name'] for p in report if p['state'] == 'not_gated'],
    }
