#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: inplace_image
short_description: Change container images of running pods in place
version_added: 1.0.0
description:
  - Sets new images for containers and sidecars (init containers with C(restartPolicy=Always)) of
    existing pods, without deleting them. The kubelet restarts only the changed containers; the pod
    keeps its UID, IP address, node and volumes.
  - Every image reference is validated before anything is written. A container name that none of the
    pods has is an error listing the containers they have; nothing is written.
  - Each pod is planned first. A container is V(unchanged) (spec and status already at the image),
    V(pending) (spec already set, waiting for the kubelet), V(update) (a restart of that container is
    expected) or V(refused) with the reason (pod terminating, not scheduled, finished, container missing from
    this pod, plain init container that has already run). A pod with a refused container is not changed,
    and the task fails naming it unless O(continue_on_error=true). Pods broken by their image
    (C(CrashLoopBackOff), or V(Pending) on C(ErrImagePull) / C(ImagePullBackOff)) are updated and verified.
  - The state before the change (image, imageID, containerID, restartCount of each changed container)
    and the target are recorded in the pod annotation C(inplace.k8s/state), in the same write as the
    new images. That write is a JSON patch guarded by a C(test) of C(metadata.resourceVersion). When
    the pod changed since it was read, it is read again and re-planned; when another writer changed
    the containers this task is about, the pod is not overwritten and is reported as V(conflict).
  - A change is done when each changed container runs as a new container, is started and ready, and
    reports the new image (compared after normalising C(docker.io/), C(library/) and C(:latest)) or
    the pinned digest.
  - What the API server stored is the target. When admission (a mutating webhook) rewrites the image written
    (a tag pinned to its digest, a registry mirror), the module waits for the stored image, reports it as
    C(new_image) beside C(requested_image), and records both in the pod's record (C(target), C(stored)); the
    same task run again is C(changed=false). A tag pinned to its digest, and the digest form that
    M(inplace.k8s.container_recreate) C(strategy=image_reference) switched the tag to, count as that tag.
    Check mode sends the write as a server-side dry run and says when admission would store another image.
  - A write that admission denies fails the task at once, naming the webhook or policy and its message; the
    other pods are not attempted.
  - Another writer that changes the image of a pod while the module waits for it makes that pod V(conflict);
    its record is set to V(failed) and the other writer's image is not overwritten.
  - Owners (Deployments, StatefulSets ...) are not changed; their templates still name the old images.
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
      - Container or init container name -> new image reference.
    type: dict
    required: true
  on_failure:
    description:
      - What to do with a pod whose new image fails (for example V(ErrImagePull) or V(CrashLoopBackOff))
        or does not become ready within O(wait_timeout).
      - V(stop) leaves the pod as it is and fails the task.
      - V(rollback) writes back the images recorded before the change, waits for them to run and ready,
        and still fails the task, reporting the pod as V(rolled_back).
    type: str
    default: stop
    choices: [stop, rollback]
  prepull:
    description:
      - Pull the new images on the nodes of the pods to change before any of them is drained or changed, so that
        the drained (or unserving) window covers the container restart only, not the pull.
      - One short-lived pod per node (C(inplace-prepull-<node>-<hash>), label C(inplace.k8s/prepull)) pinned by
        C(spec.nodeName), with the images' C(imagePullPolicy) V(IfNotPresent), the first C(imagePullSecrets) of the
        pods, and a command no image holds (C(/nonexistent/inplace-k8s-prepull)) - the kubelet pulls the image and
        then cannot start it, so nothing of the application runs. The pods are deleted afterwards.
      - A node where the pull fails (V(ErrImagePull), V(ImagePullBackOff)) fails its pods before they are drained or
        changed (reason V(PrePullFailed)); a pull still running after O(wait_timeout) only warns.
      - Needs C(create), C(delete), C(list) and C(watch) on C(pods) (ClusterRole C(inplace-k8s-prepull) in
        C(rbac/inplace-k8s-rbac.yml)); refused before anything is written without them. Pods of the namespace's
        PodSecurity C(restricted) level are accepted.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and return the plan without changing anything.
    support: full
    details: Returns the plan of every pod and container; C(changed) says whether a real run would change something.
  diff_mode:
    description: Returns the images before and after for every pod that changes (or would change).
    support: full
notes:
  - RBAC needs C(get), C(list), C(watch) and C(patch) on C(pods), and C(patch) on C(pods/status) when
    O(readiness_gate) is used.
  - Any change of an image string restarts the container (preStop hook, grace period), even a tag
    changed to the digest it points to. References that name the same image once normalised count as
    unchanged.
seealso:
  - name: Updating a pod's container image
    description: What Kubernetes allows to change in a running pod.
    link: https://kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement
'''

EXAMPLES = r'''
- name: Upgrade the log sidecar of every web pod, draining each pod first
  inplace.k8s.inplace_image:
    namespace: shop
    label_selectors:
      - app=web
    containers:
      log-agent: registry.example.com/fluent-bit:3.1
    readiness_gate: inplace.k8s/ready
    drain_seconds: 5
    max_concurrency: 20
  register: upgrade

- name: Show which pods kept their identity
  ansible.builtin.debug:
    msg: "{{ upgrade.pods | map(attribute='name') | zip(upgrade.pods | map(attribute='in_place')) }}"

- name: Preview a change (nothing is written)
  inplace.k8s.inplace_image:
    namespace: shop
    name: web-0
    containers:
      app: registry.example.com/web:2.0
  check_mode: true
  diff: true
  register: plan

- name: Update two pods and roll back a pod whose new image fails
  inplace.k8s.inplace_image:
    kubeconfig: ~/.kube/staging
    namespace: shop
    names: [web-0, web-1]
    containers:
      app: registry.example.com/web@sha256:2f6c6c1d4a3e8f9b0c7d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b
    on_failure: rollback
    wait_timeout: 120

- name: Set defaults for every module of the collection
  module_defaults:
    group/inplace.k8s.inplace:
      kubeconfig: /etc/kube/admin.conf
      namespace: shop
  block:
    - name: Update the app container of the canary pod
      inplace.k8s.inplace_image:
        name: web-canary
        containers:
          app: registry.example.com/web:2.1
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
prepull:
  description: With O(prepull), what the pre-pull did.
  returned: when O(prepull=true) and not in check mode
  type: dict
  contains:
    nodes:
      description: Nodes the images were pulled on.
      type: list
      elements: str
    seconds:
      description: Seconds until every node had the images (or failed).
      type: float
    failed:
      description: Node -> why the pull failed there (its pods failed with V(PrePullFailed), untouched).
      type: dict
  sample: {nodes: [node-1, node-2], seconds: 3.2, failed: {}}
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
      description: The plan of the pod, V(unchanged), V(pending), V(update) or V(refused).
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
      description: The failure that stopped the wait.
      type: dict
      contains:
        container:
          description: The container that failed, null for the pod.
          type: str
        reason:
          description: The reason, for example V(ErrImagePull) or V(CrashLoopBackOff).
          type: str
        message:
          description: The message of the kubelet.
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
      sample: {drain: 5.1, restart: 1.2, ready: 1.9, undrain: 0.4, total: 7.6}
    containers:
      description: Container name -> what happened to it.
      type: dict
      sample: {app: {kind: container, action: update, reason: null, restart_expected: true, old_image: 'registry.example.com/web:1.0',
          new_image: 'registry.example.com/web:2.0', requested_image: 'registry.example.com/web:2.0', running_image: 'registry.example.com/web:2.0',
          image_id: 'registry.example.com/web@sha256:1b2c...', old_container_id: 'containerd://1f2e...', new_container_id: 'containerd://9a8b...',
          restart_count_before: 0, restart_count_after: 1, restarted: true}}
    rolled_back_to:
      description: Container -> image written back by O(on_failure=rollback).
      type: dict
summary:
  description: How many pods ended in each status, plus C(total) and C(changed).
  returned: always
  type: dict
  sample: {total: 3, changed: 2, unchanged: 1, updated: 2, would_update: 0, refused: 0, converged: 0, written: 0,
    failed: 0, rolled_back: 0, conflict: 0}
# END pod results
diff:
  description: Container images before and after, per pod that changes.
  returned: in diff mode
  type: dict
  sample: {before: {web-0: {app: "registry.example.com/web:1.0"}}, after: {web-0: {app: "registry.example.com/web:2.0"}}}
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC, DRAIN_ARG_SPEC, EVENTS_ARG_SPEC, OWNERS_ARG_SPEC, TARGET_ARG_SPEC, TARGET_CONSTRAINTS,
    WAIT_ARG_SPEC, argument_spec,
)
from ansible_collections.inplace.k8s.plugins.module_utils.options import ImageChange

MODULE_ARGS = {
    'containers': {'type': 'dict', 'required': True},
    'on_failure': {'type': 'str', 'default': 'stop', 'choices': ['stop', 'rollback']},
    'prepull': {'type': 'bool', 'default': False},
}


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(AUTH_ARG_SPEC, TARGET_ARG_SPEC, WAIT_ARG_SPEC, DRAIN_ARG_SPEC, OWNERS_ARG_SPEC,
                                    EVENTS_ARG_SPEC,
                                    **MODULE_ARGS),
        supports_check_mode=True, **TARGET_CONSTRAINTS)
    runner.execute(module, lambda cancel: runner.run_module(module, ImageChange, cancel))


if __name__ == '__main__':
    main()
