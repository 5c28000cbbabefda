#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: container_recreate
short_description: Restart chosen containers of running pods without recreating the pods
version_added: 1.0.0
description:
  - Kubernetes has no API to restart one container. This module restarts the chosen containers of
    existing pods; the pods keep their UID, IP address, node and volumes, and the other containers keep running.
  - A container is restarted when it runs as a new container (new C(containerID), C(restartCount) + 1),
    is running, started and ready, and kept running for O(min_ready_seconds). A crash or failed pull after the
    restart fails the pod at once with the reason and message of the kubelet.
  - Restarting is not idempotent by nature; every run restarts again. Use O(restarted_after) to skip containers
    that already started after a point in time, so that a re-run after a success restarts nothing.
  - Each pod is planned first. A container is restarted (V(update)), skipped (V(unchanged), with the reason) or
    refused with the reason (not running, restart policy, what the strategy cannot do). A pod with a refused
    container is not changed, and the task fails naming it (so a run that refused every pod fails) unless
    O(continue_on_error=true).
  - Before restarting, the state of each container (containerID, restartCount, image, imageID, start time) is
    recorded in the pod annotation C(inplace.k8s/state) under C(recreate), guarded by a C(test) of
    C(metadata.resourceVersion).
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
  - inplace.k8s.action_group
  - inplace.k8s.target
  - inplace.k8s.wait
  - inplace.k8s.drain
  - inplace.k8s.events
options:
  containers:
    description:
      - Names of the containers to restart, in order (see O(ordered)). Sidecars (init containers with
        C(restartPolicy=Always)) may be named; plain init containers are refused.
      - Default is every app container (C(spec.containers)) of each pod.
    type: list
    elements: str
  strategy:
    description:
      - How containers are restarted.
      - V(kruise) creates an OpenKruise C(ContainerRecreateRequest) per pod and follows it to its end. Needs
        OpenKruise (the C(apps.kruise.io/v1alpha1) API and kruise-daemon on the nodes). O(ordered) becomes
        C(orderedRecreate), O(min_ready_seconds) C(minStartedSeconds), O(wait_timeout) C(activeDeadlineSeconds),
        C(failurePolicy) is V(Fail). With O(readiness_gate=KruisePodReady), O(drain_seconds) becomes
        C(unreadyGracePeriodSeconds) and OpenKruise drains the pod itself. Only C(spec.containers) can be restarted.
      - V(image_reference) switches the container's image between its tag and the digest it runs
        (C(status.imageID)), for example C(registry.example/app:1.0) <-> C(registry.example/app@sha256:...). The
        kubelet restarts the container through its normal path (preStop hook, grace period) with the same image
        content, whatever the restart policy. The switch is recorded, so the next run switches back to the tag.
      - V(exec) runs a signal command in the container through C(pods/exec) (O(exec_command), by default
        C(kill -TERM 1)); see the notes for why it often does nothing.
      - V(cri) stops the container through the container runtime of the node; the task must run on the pod's node
        (C(delegate_to)), see O(cri_client). No preStop hook runs.
      - V(auto) is V(kruise) when the ContainerRecreateRequest API is served (API discovery), else V(image_reference).
    type: str
    default: auto
    choices: [auto, kruise, image_reference, exec, cri]
  ordered:
    description:
      - Restart the containers of a pod one after another, in the order of O(containers), each started, ready and
        up for O(min_ready_seconds) before the next. Needs O(wait=true) (except with V(kruise)).
      - The containers of one pod are restarted at the same time otherwise.
      - Pods are still worked on O(max_concurrency) at a time.
    type: bool
    default: false
  min_ready_seconds:
    description:
      - A restart counts only after the new container, once started and ready, kept running (same container, no
        restart) this many seconds; otherwise the pod fails.
      - With V(kruise), also the C(minStartedSeconds) of the ContainerRecreateRequest.
    type: int
    default: 0
    aliases: [min_started_seconds]
  restarted_after:
    description:
      - An ISO 8601 timestamp, for example V(2026-01-31T12:00:00Z) (no offset means UTC). Containers started at or
        after it (C(state.running.startedAt)) are skipped. Take it before the first run to make re-runs no-ops.
    type: str
  exec_signal:
    description:
      - The signal V(exec) sends to PID 1 (V(TERM), V(SIGTERM) or V(15); also V(HUP), V(INT), V(QUIT), V(KILL),
        V(USR1), V(USR2)).
    type: str
    default: TERM
  exec_command:
    description:
      - The command V(exec) runs instead of C(kill -<exec_signal> 1), as a list (no shell), for example
        V([/app/bin/ctl, restart]).
    type: list
    elements: str
  cri_client:
    description:
      - The command-line client of strategy V(cri). V(crictl) runs C(crictl [--runtime-endpoint E] ps -a -o json)
        and C(crictl stop --timeout S ID). V(local-cluster) runs C(cluster cri --socket PATH ps|stop), the
        crictl-like client of this collection's test cluster.
    type: str
    default: crictl
    choices: [crictl, local-cluster]
  cri_command:
    description:
      - The path of the client, by default V(crictl) (or V(cluster) for V(local-cluster)) from E(PATH).
    type: path
  cri_endpoint:
    description:
      - The CRI endpoint of the node, for example V(unix:///run/containerd/containerd.sock) or a socket path.
      - Without it, crictl uses its own configuration (C(/etc/crictl.yaml)). Required for V(local-cluster).
    type: str
  kruise_ttl_seconds_after_finished:
    description:
      - C(ttlSecondsAfterFinished) of the ContainerRecreateRequests (V(kruise)); they are deleted that long after
        they complete.
    type: int
    default: 1800
  kruise_termination_grace_period_seconds:
    description:
      - C(strategy.terminationGracePeriodSeconds) of the ContainerRecreateRequests (V(kruise)); by default the
        pod's grace period.
    type: int
attributes:
  check_mode:
    description: Can run in check mode and return the plan without changing anything.
    support: full
    details: Returns which containers of which pods would restart and why others would not; nothing is written.
  diff_mode:
    description: Returns, per pod, the containerIDs (or images, for V(image_reference)) before and the restart after.
    support: full
notes:
  - Not idempotent - a restart is an action, not a state. C(changed) is true when a container was restarted (or
    would be, in check mode). Use O(restarted_after) for re-runnable tasks.
  - RBAC needs C(get), C(list), C(watch) and C(patch) on C(pods); C(patch) on C(pods/status) with O(readiness_gate);
    C(get) and C(create) on C(pods/exec) for V(exec); C(get), C(list), C(watch), C(create) on
    C(containerrecreaterequests.apps.kruise.io) for V(kruise); C(get) on the discovery of C(apps.kruise.io) for V(auto).
  - V(exec) does nothing in three usual cases, each reported with its reason. The image has no C(kill) binary
    (distroless, scratch). PID 1 has no handler for the signal - a process running as PID 1 gets no default signal
    handling, so SIGTERM (and SIGKILL sent from inside the container) is ignored; programs started by a shell or
    without an init such as tini are typical. The pod shares its process namespace (C(shareProcessNamespace)) - PID 1
    is the pod's pause process (refused up front for C(kill ... 1)). A signal that was delivered but restarted
    nothing is reported as V(SignalIgnored) after the grace period plus 10 seconds.
  - V(exec) needs the API server to reach the kubelet of the pod's node (C(pods/exec) is a websocket proxied to the
    kubelet and the runtime). It cannot impersonate (the kubernetes client's websocket sends only the
    authorization header).
  - V(cri), V(exec) and V(kruise) stop the container; the kubelet then starts it again only with restart policy
    V(Always) (or for sidecars); other pods are refused. A container stopped several times in a row is started
    after the kubelet's crash-loop back-off (10s, 20s, ...); that back-off is waited for, not reported as a failure.
  - V(cri) needs the Kubernetes API from the node too (kubeconfig or C(K8S_AUTH_*) there).
  - With V(image_reference), the rollout role and O(restarted_after) re-runs see a switched container as up to date;
    switching back to a tag pulls again only if the tag moved and the pull policy pulls.
seealso:
  - name: OpenKruise ContainerRecreateRequest
    description: The OpenKruise API the V(kruise) strategy uses.
    link: https://openkruise.io/docs/user-manuals/containerrecreaterequest
  - module: inplace.k8s.inplace_image
'''

EXAMPLES = r'''
- name: Take the time before restarting, so that re-runs restart nothing
  ansible.builtin.set_fact:
    restart_from: "{{ now(utc=true).strftime('%Y-%m-%dT%H:%M:%SZ') }}"
  run_once: true

- name: Restart the app container of every web pod, two pods at a time, each up for 10 seconds
  inplace.k8s.container_recreate:
    namespace: shop
    label_selectors:
      - app=web
    containers: [app]
    min_ready_seconds: 10
    max_concurrency: 2
    restarted_after: "{{ restart_from }}"
  register: restarted

- name: Restart the sidecar, then the app, draining the pod first
  inplace.k8s.container_recreate:
    namespace: shop
    name: web-0
    containers: [log-agent, app]
    ordered: true
    strategy: image_reference
    readiness_gate: inplace.k8s/ready
    drain_seconds: 5

- name: Preview what would restart
  inplace.k8s.container_recreate:
    namespace: shop
    label_selectors: [app=web]
  check_mode: true

- name: Restart through OpenKruise, letting it drain the pod through KruisePodReady
  inplace.k8s.container_recreate:
    namespace: shop
    label_selectors: [app=web]
    strategy: kruise
    readiness_gate: KruisePodReady
    drain_seconds: 3

- name: Send SIGHUP to PID 1 of the proxy containers
  inplace.k8s.container_recreate:
    namespace: shop
    label_selectors: [app=proxy]
    containers: [envoy]
    strategy: exec
    exec_signal: HUP

- name: Restart through the runtime of the node the pod runs on
  inplace.k8s.container_recreate:
    namespace: shop
    name: web-0
    strategy: cri
    cri_endpoint: unix:///run/containerd/containerd.sock
  delegate_to: "{{ pod_node }}"
'''

RETURN = r'''
strategy:
  description: The strategy used (V(auto) resolved).
  returned: always
  type: str
  sample: image_reference
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
      description: C(metadata.uid) before the restart.
      type: str
      sample: 4b4f1f7e-3c1a-4a53-9d0e-0c2b7f0a9e11
    node:
      description: Node the pod runs on.
      type: str
      sample: node-1
    pod_ip:
      description: Pod IP before the restart.
      type: str
      sample: 10.244.1.7
    uid_after:
      description: C(metadata.uid) after the restart (null when nothing was restarted).
      type: str
    pod_ip_after:
      description: Pod IP after the restart (null when nothing was restarted).
      type: str
    in_place:
      description: UID and IP unchanged after the restart (null when nothing was restarted).
      type: bool
      sample: true
    action:
      description: The plan of the pod, V(unchanged), V(update) or V(refused).
      type: str
      sample: update
    status:
      description:
        - What happened. V(unchanged), V(would_update) (check mode), V(refused), V(updated) (restarted), V(written)
          (with O(wait=false), the restart was started), V(failed) or V(conflict).
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
      description: Containers of this pod were restarted (or would be, in check mode).
      type: bool
    reason:
      description: Why the pod was refused, failed or conflicted.
      type: str
    conflicts:
      description: How many times the guarded record write found the pod changed and read it again.
      type: int
      sample: 0
    error:
      description: The failure that stopped the restart.
      type: dict
      contains:
        container:
          description: The container that failed, null for the pod.
          type: str
        reason:
          description: For example V(CrashLoopBackOff), V(CrashedAfterRestart), V(RecreateFailed), V(ExecNoKillBinary),
            V(SignalIgnored), V(ContainerNotOnNode).
          type: str
        message:
          description: What the kubelet, OpenKruise or the module says about it.
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
        C(rollback_stable) for a pod rolled back (of the last container group with O(ordered)).
      type: dict
      sample: {drain: 5.1, restart: 1.2, ready: 1.9, undrain: 0.4, total: 7.6}
    containers:
      description: Container name -> what happened to it.
      type: dict
      sample: {app: {kind: container, action: update, reason: null, restart_expected: true, strategy: image_reference,
          old_image: 'registry.example/app:1.0', new_image: 'registry.example/app@sha256:d2267b36926fce8cce6b1358085f1408c937a5bca5d6eeeeeadb8eee1aa819ba',
          old_container_id: 'containerd://1f2e...', new_container_id: 'containerd://9a8b...', restart_count_before: 0,
          restart_count_after: 1, restarted: true, started_at_before: '2026-01-31T11:00:00Z', started_at_after: '2026-01-31T12:00:03Z',
          seconds_to_ready: 2.3}}
summary:
  description: How many pods ended in each status, plus C(total) and C(changed).
  returned: always
  type: dict
  sample: {total: 3, changed: 2, unchanged: 1, updated: 2, would_update: 0, refused: 0, converged: 0, written: 0,
    failed: 0, rolled_back: 0, conflict: 0}
# END pod results
diff:
  description: Per pod that restarts, the containerIDs (images for V(image_reference)) before and the restart after.
  returned: in diff mode
  type: dict
  sample: {before: {web-0: {app: "containerd://1f2e..."}}, after: {web-0: {app: restart}}}
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC, DRAIN_ARG_SPEC, EVENTS_ARG_SPEC, TARGET_ARG_SPEC, TARGET_CONSTRAINTS, WAIT_ARG_SPEC, argument_spec,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import cri
from ansible_collections.inplace.k8s.plugins.module_utils.options import STRATEGIES, RestartChange

MODULE_ARGS = {
    'containers': {'type': 'list', 'elements': 'str'},
    'strategy': {'type': 'str', 'default': 'auto', 'choices': list(STRATEGIES)},
    'ordered': {'type': 'bool', 'default': False},
    'min_ready_seconds': dict(WAIT_ARG_SPEC['min_ready_seconds'], aliases=['min_started_seconds']),
    'restarted_after': {'type': 'str'},
    'exec_signal': {'type': 'str', 'default': 'TERM'},
    'exec_command': {'type': 'list', 'elements': 'str'},
    'cri_client': {'type': 'str', 'default': cri.CRICTL, 'choices': list(cri.CLIENTS)},
    'cri_command': {'type': 'path'},
    'cri_endpoint': {'type': 'str'},
    'kruise_ttl_seconds_after_finished': {'type': 'int', 'default': 1800},
    'kruise_termination_grace_period_seconds': {'type': 'int'},
}


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(AUTH_ARG_SPEC, TARGET_ARG_SPEC, WAIT_ARG_SPEC, DRAIN_ARG_SPEC, EVENTS_ARG_SPEC,
                                    **MODULE_ARGS),
        supports_check_mode=True, **TARGET_CONSTRAINTS)
    runner.execute(module, lambda cancel: runner.run_module(module, RestartChange, cancel))


if __name__ == '__main__':
    main()
