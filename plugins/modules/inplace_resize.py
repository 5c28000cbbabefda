#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: inplace_resize
short_description: Change CPU and memory of running pods in place
version_added: 1.0.0
description:
  - Changes the CPU and memory requests and limits of containers and sidecars (init containers with
    C(restartPolicy=Always)) of existing pods through the C(pods/resize) subresource, without deleting
    them. The pod keeps its UID, IP address and node; containers are not restarted unless their
    C(resizePolicy) says V(RestartContainer) for a resource that changes.
  - The values given are merged with each pod's current values; the write always carries both requests
    and limits of cpu and memory, as the API requires. Quantities are compared as quantities
    (V(1) equals V(1000m), V(128Mi) equals V(134217728)), so a pod already at the requested resources
    is not written.
  - Checked before anything is written, for every targeted pod, failing the task with every problem
    (field and fix) and changing nothing - only cpu and memory; valid, non-negative Kubernetes
    quantities; requests not above limits; requests and limits not removed; the pod's QoS class
    unchanged (computed as the API server does, requests defaulted from limits included); the container
    exists and is not a plain init container; a resize that would restart a container only with
    O(allow_restart=true); memory-limit decreases not below Kubernetes 1.34 (unless the memory
    C(resizePolicy) is V(RestartContainer)); pods with pod-level resources only on 1.36 or later.
  - The state record (annotation C(inplace.k8s/state), key C(resize)) holds the resources before the
    change and the target. C(pods/resize) accepts resource changes only, so the record is written first,
    by a separate metadata patch guarded by a C(test) of C(metadata.resourceVersion), and the resize
    follows, guarded by a C(test) of the container's current resources. A run interrupted between the
    two writes leaves the before-state on the pod; the next run keeps it and resizes again. A refused
    resize marks the record V(failed).
  - A resize is done when the pod has no C(PodResizePending) or C(PodResizeInProgress) condition, the
    kubelet reports the new resources in C(status.containerStatuses[].resources) (the kubelet's CPU
    clamps allowed - a request of 2m or less, a limit below 10m) and C(status.observedGeneration) has
    reached C(metadata.generation). A container restarted by its C(resizePolicy) must run again.
  - An infeasible resize fails at once with the message - the API server's 403 V(NodeCapacity) refusal
    (requests above the node's allocatable, Kubernetes 1.36+; nothing is changed) or a
    C(PodResizePending) V(Infeasible) condition. A V(Deferred) resize (not enough free capacity now) is
    waited for until O(wait_timeout), then fails saying why. C(PodResizeInProgress) V(Error) fails with
    its message.
  - On Kubernetes 1.27 to 1.31 (no C(pods/resize)) the resources are written by an ordinary pod patch,
    which needs the C(InPlacePodVerticalScaling) feature gate; the result and a warning say so. Older
    servers are refused.
  - Owners (Deployments, StatefulSets ...) are not changed; their templates keep the old resources.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
  - inplace.k8s.action_group
  - inplace.k8s.target
  - inplace.k8s.wait
  - inplace.k8s.drain
  - inplace.k8s.owners
  - inplace.k8s.events
options:
  containers:
    description:
      - "Container or sidecar name -> the new resources, as
        C({requests: {cpu: ..., memory: ...}, limits: {cpu: ..., memory: ...}})."
      - Any part may be left out; it keeps the pod's current value.
      - Quantities use the Kubernetes grammar, for example V(250m), V(1), V(1.5), V(512Mi), V(1G).
    type: dict
    required: true
  allow_restart:
    description:
      - Allow resizes that restart a container because its C(resizePolicy) is V(RestartContainer) for a
        resource that changes. With V(false) such a resize is refused before anything is written.
    type: bool
    default: true
  on_failure:
    description:
      - What to do with a pod whose resize fails (V(Infeasible), V(Error), a restarted container that
        crashes) or does not finish within O(wait_timeout) (for example V(Deferred)).
      - V(stop) leaves the pod as it is and fails the task.
      - V(rollback) writes back the resources recorded before the change, waits for them, and still fails
        the task, reporting the pod as V(rolled_back).
    type: str
    default: stop
    choices: [stop, rollback]
attributes:
  check_mode:
    description: Can run in check mode and return the plan without changing anything.
    support: full
    details:
      - Every planned resize is sent as a server-side dry run (C(dryRun=All)), so the API server's
        validation and admission (QoS, node capacity) answer as they would for the real write; nothing
        is stored.
  diff_mode:
    description: Returns the resources before and after for every pod that changes (or would change).
    support: full
notes:
  - RBAC needs C(get), C(list), C(watch) and C(patch) on C(pods), C(patch) on C(pods/resize) (1.32+),
    and C(patch) on C(pods/status) when O(readiness_gate) is used.
  - C(resizePolicy) cannot be changed on a running pod; set it in the pod template.
seealso:
  - name: Resize CPU and memory resources assigned to containers
    description: The Kubernetes task page on in-place pod resize.
    link: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/
  - module: inplace.k8s.inplace_image
'''

EXAMPLES = r'''
- name: Give every web pod more CPU, without restarting anything
  inplace.k8s.inplace_resize:
    namespace: shop
    label_selectors:
      - app=web
    containers:
      app:
        requests: {cpu: "1"}
        limits: {cpu: "2"}
    allow_restart: false
    max_concurrency: 20
  register: resized

- name: Show the CPU each pod got
  ansible.builtin.debug:
    msg: "{{ resized.pods | map(attribute='containers.app.requests_after.cpu') | list }}"

- name: Preview a memory change (server-side dry run, nothing is written)
  inplace.k8s.inplace_resize:
    namespace: shop
    name: web-0
    containers:
      app:
        requests: {memory: 512Mi}
        limits: {memory: 1Gi}
  check_mode: true
  diff: true

- name: Resize the log sidecar and roll back if the node cannot do it
  inplace.k8s.inplace_resize:
    namespace: shop
    names: [web-0, web-1]
    containers:
      log-agent:
        limits: {cpu: 500m, memory: 256Mi}
    on_failure: rollback
    wait_timeout: 120
'''

RETURN = r'''
# BEGIN owners: generated by hack/returns.py from docs/sources/owners-result.yml (edit there, then run hack/docs.sh)
owners:
  description:
    - Who else manages the workload or its pods, found before any write (O(owners); docs/gitops.md).
  returned: unless the change was given no pod
  type: dict
  contains:
    policy:
      description: The policy applied (O(owners)).
      type: str
    found:
      description:
        - One entry per owner - C(owner) (for example V(Helm web), V(Argo CD web), V(VerticalPodAutoscaler web-vpa)),
          C(tool), C(name), C(namespace), C(evidence) (what was seen), C(reverts) (V(continuously), V(when run)
          or V(never)), C(state), C(effect), C(fix), and C(object) for a GitOps object.
      type: list
      elements: dict
    unchecked:
      description: What could not be read (403), so was not checked.
      type: list
      elements: str
  sample: {policy: refuse, unchecked: [], found: [{owner: Helm web, tool: Helm, name: web, reverts: when run, evidence: [
          'Deployment web: annotation meta.helm.sh/release-name=web'], state: null, effect: 'its next upgrade puts
          back the old value unless its values carry app=web:2.0', fix: 'run the upgrade of release web with values
          that carry app=web:2.0 (a no-op then)'}]}
# END owners
method:
  description: How resources were written, V(pods/resize) or V(pod patch) (servers before 1.32).
  returned: success
  type: str
  sample: pods/resize
server_version:
  description: Kubernetes version of the API server (major.minor).
  returned: success
  type: str
  sample: "1.36"
# BEGIN pod results: generated by hack/returns.py from docs/sources/pod-results.yml (edit there, then run hack/docs.sh)
pods:
  description: One entry per targeted pod, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Pod name.
      type: str
      sample: web-0
    namespace:
      description: Pod namespace.
      type: str
      sample: shop
    uid:
      description: C(metadata.uid) before the change.
      type: str
      sample: 4b4f1f7e-3c1a-4a53-9d0e-0c2b7f0a9e11
    node:
      description: Node the pod runs on.
      type: str
      sample: node-1
    pod_ip:
      description: Pod IP before the change.
      type: str
      sample: 10.244.1.7
    uid_after:
      description: C(metadata.uid) after the change (null when nothing was written).
      type: str
    pod_ip_after:
      description: Pod IP after the change (null when nothing was written).
      type: str
    in_place:
      description: UID and IP unchanged after the change (null when nothing was written).
      type: bool
      sample: true
    action:
      description: The plan of the pod, V(unchanged), V(pending) (spec already resized, waiting for the kubelet),
        V(update) or V(refused).
      type: str
      sample: update
    status:
      description:
        - What happened. V(unchanged), V(would_update) (check mode), V(refused), V(updated), V(converged) (spec
          was already set; waited for it), V(written) (O(wait=false)), V(failed), V(rolled_back), V(conflict) (another
          writer changed these containers; not overwritten) or V(gone) (the pod went away during the run - deleted,
          evicted, preempted, its node lost - not a failure).
      type: str
      sample: updated
    gone:
      description:
        - With status V(gone) - why the pod went away, as the cluster says it.
        - C(cause) is V(evicted), V(deleted), V(preempted), V(node-lost) or V(failed-evicted); C(detail) the C(DisruptionTarget)
          reason and message or the deletion; C(when) V(before) (its turn), V(in_flight) or V(after).
      type: dict
      returned: when the pod went away during the run
      sample: {cause: evicted, detail: 'EvictionByEvictionAPI: Eviction API: evicting (node node-1)', when: in_flight}
    changed:
      description: This pod was written (or would be, in check mode).
      type: bool
    reason:
      description: Why the pod was refused, failed, rolled back or conflicted.
      type: str
    conflicts:
      description: How many times the guarded write found the pod changed and read it again.
      type: int
      sample: 0
    error:
      description: The failure that stopped the pod.
      type: dict
      contains:
        container:
          description: The container that failed, null for the pod.
          type: str
        reason:
          description: The reason, for example V(Infeasible), V(ResizeError) or V(WaitTimeout).
          type: str
        message:
          description: The message of the API server or the kubelet.
          type: str
    readiness_gate:
      description: The readiness gate handling (O(readiness_gate) mode; the same entry as RV(pods[].drain)); null
        when the pod was not drained that way.
      type: dict
      contains:
        type:
          description: The condition type.
          type: str
        status:
          description: Its status when the task ended (V(True) or V(False)).
          type: str
        restored:
          description: The condition was set V(True) again.
          type: bool
        observed_not_ready:
          description: The pod reported NotReady after the gate was set V(False).
          type: bool
        message:
          description: Why the gate was left V(False), or what went wrong restoring it.
          type: str
    drain:
      description: 'How the pod was drained (either mode); null when it was not. C(mode) V(readiness_gate) or V(label),
        C(type) (the gate) or C(label) (C(KEY=VALUE)), C(status) when the task ended (gate V(True)/V(False), label
        V(drained) or C(KEY=VALUE)), C(restored), C(observed_not_ready) (the pod reported NotReady, or left the
        EndpointSlices), C(services) (label mode: the Services that listed the pod before), C(resumed), C(message).'
      type: dict
      sample: {mode: label, label: inplace.k8s/serving=true, status: inplace.k8s/serving=true, restored: true, observed_not_ready: true,
        services: [web]}
    timings:
      description: Seconds spent in each phase - C(queued) waiting for one of O(max_concurrency) slots, C(drain),
        C(restart), C(ready), C(stable) (O(min_ready_seconds)), C(undrain), C(total); C(rollback_restart), C(rollback_ready),
        C(rollback_stable) for a pod rolled back.
      type: dict
      sample: {restart: 0.0, ready: 0.6, total: 0.7}
    containers:
      description: Container name -> what happened to it.
      type: dict
      sample: {app: {kind: container, action: update, reason: null, restart_expected: false, requests_before: {
            cpu: 100m, memory: 64Mi}, limits_before: {cpu: 200m, memory: 128Mi}, requests_after: {cpu: 500m, memory: 64Mi},
          limits_after: {cpu: '1', memory: 128Mi}, reported: {requests: {cpu: 500m, memory: 64Mi}, limits: {cpu: '1',
              memory: 128Mi}}, restart_resources: [], method: pods/resize, old_container_id: 'containerd://1f2e...',
          new_container_id: 'containerd://1f2e...', restart_count_before: 0, restart_count_after: 0, restarted: false}}
    rolled_back_to:
      description: Container -> resources written back by O(on_failure=rollback).
      type: dict
summary:
  description: How many pods ended in each status, plus C(total) and C(changed).
  returned: always
  type: dict
  sample: {total: 3, changed: 2, unchanged: 1, updated: 2, would_update: 0, refused: 0, converged: 0, written: 0,
    failed: 0, rolled_back: 0, conflict: 0}
# END pod results
diff:
  description: Container resources before and after, per pod that changes.
  returned: in diff mode
  type: dict
  sample:
    before: {web-0: {app: {requests: {cpu: 100m}, limits: {cpu: 200m}}}}
    after: {web-0: {app: {requests: {cpu: 500m}, limits: {cpu: "1"}}}}
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC, DRAIN_ARG_SPEC, EVENTS_ARG_SPEC, OWNERS_ARG_SPEC, TARGET_ARG_SPEC, TARGET_CONSTRAINTS,
    WAIT_ARG_SPEC, argument_spec,
)
from ansible_collections.inplace.k8s.plugins.module_utils.options import ResizeChange

MODULE_ARGS = {
    'containers': {'type': 'dict', 'required': True},
    'allow_restart': {'type': 'bool', 'default': True},
    'on_failure': {'type': 'str', 'default': 'stop', 'choices': ['stop', 'rollback']},
}


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(AUTH_ARG_SPEC, TARGET_ARG_SPEC, WAIT_ARG_SPEC, DRAIN_ARG_SPEC, OWNERS_ARG_SPEC,
                                    EVENTS_ARG_SPEC,
                                    **MODULE_ARGS),
        supports_check_mode=True, **TARGET_CONSTRAINTS)
    runner.execute(module, lambda cancel: runner.run_module(module, ResizeChange, cancel))


if __name__ == '__main__':
    main()
