# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# The options of rollout_workload beside its state (module_utils/rollout/options.py ROLLOUT_ARG_SPEC, the argument
# spec they pair with): what it rolls out where, how the pods are cut into batches, how a batch is changed, who owns
# the run; and its attributes.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  namespace:
    description: Namespace of the workload or pods.
    type: str
    required: true
  kind:
    description: Kind of the workload. Without it, O(label_selectors) choose pods whose owners are left alone.
    type: str
    choices: [Deployment, StatefulSet, DaemonSet, ReplicaSet]
  name:
    description: Name of the workload.
    type: str
  label_selectors:
    description: Pods to roll when no O(kind) is given.
    type: list
    elements: str
  images:
    description: Container name -> new image.
    type: dict
  resources:
    description: Container name -> C(requests) / C(limits) with C(cpu) / C(memory) values.
    type: dict
  restart:
    description: Containers to restart (no template change).
    type: list
    elements: str
  restart_id:
    description: Marks pods restarted by this restart rollout, so that a re-run skips them.
    type: str
  config:
    description:
      - A config rollout - V(auto), or ConfigMaps and Secrets as V(ConfigMap/NAME) and V(Secret/NAME). Restarts, in
        place, only the containers that use these objects (V(auto) - any the pods use) through C(env), C(envFrom) or
        volumes and started before the object's last change, unless the pod's record says they were given its data
        (docs/config-rollouts.md). Not with O(images), O(resources) or O(restart).
    type: list
    elements: str
  config_data:
    description:
      - The config change itself, written before the restarts - the new data of ConfigMaps of O(config), as a mapping
        of V(ConfigMap/NAME) to its new data - C(data) (KEY to VALUE) and/or C(binaryData) (KEY to base64); each field
        given replaces that field whole. The data from before is kept in the ConfigMap V(NAME.inplace-previous),
        deleted when the run finishes or rolls back (O(on_failure=rollback) writes it back and restarts the
        containers that run the new data again). Each write is guarded by the resourceVersion read
        (docs/config-rollouts.md).
    type: dict
  secret_data:
    description:
      - As O(config_data), for Secrets of O(config) - V(Secret/NAME) to C(stringData) (KEY to TEXT) and/or
        C(data) (KEY to base64); the data from before is kept in the Secret V(NAME.inplace-previous). Its values are
        never shown nor logged (a diff shows the keys only).
    type: dict
  config_projection:
    description:
      - Before a container that reads a changed object of O(config) through a volume (whole or C(subPath)) restarts,
        read the volume's files through C(pods/exec) (C(cat), in a container that mounts it whole) until they show the
        new data, up to O(wait_timeout) (docs/config-rollouts.md).
      - V(best_effort) - not confirmed, it restarts anyway, with a warning naming the pod, container, volume and why.
        V(required) - not confirmed, that pod fails, and C(pods/exec) is checked before anything is written.
        V(skip) - no reading.
    type: str
    choices: [best_effort, required, skip]
    default: best_effort
  config_check:
    description:
      - A config rollout's check after each restart - C(command) (a list) run through C(pods/exec) in each restarted
        container once it is ready (or in C(container)), C(expect) (the stripped output equals it) and/or
        C(contains) (the output contains it); without them exit code 0 passes. A check that does not pass fails the
        pod, its reason naming the command and its output (truncated; Secret values the container uses masked).
        Not run in check mode, nor by a rollback.
    type: dict
  allow_recreate:
    description: Hand a change that cannot be made in place to the controller's rolling update instead of failing.
    type: bool
    default: false
  batch_size:
    description:
      - Pods per batch, a count or a percentage of the pods. With O(window), the width of the window - the pods in
        flight at once.
    type: str
    default: '1'
  max_unavailable:
    description:
      - At most this many pods (count or percentage) unavailable during a batch, counting the batch. With O(window) it
        also caps the window's width, and each pod starts only while the pods not ready, with those in flight, stay
        within it.
    type: str
  window:
    description:
      - A sliding window instead of batches. With V(prepare), the pods after the canary are one step (one entry of
        RV(batches)). With V(batch), the pods of O(names) start in their turn, as the Deployment controller's
        C(maxUnavailable) lets pods go - one as soon as another finished, at most O(batch_size) (capped by
        O(max_unavailable)) in flight; before each pod starts, O(max_unavailable) and every PodDisruptionBudget that
        selects it are checked again from a watch of the pods (not from the budget's status, which lags), and the
        pods counted done (earlier steps' and the window's own) must still be healthy. A pod that failed since, or more
        than O(max_failed_pods) failures, halt the window - pods in flight finish, the others are not started
        (RV(not_started)) - and a pod that waits O(wait_timeout) for its turn is V(blocked) (nothing of it written).
    type: bool
    default: false
  max_failed_pods:
    description: With O(window) and V(batch), the window halts once more pods than this failed.
    type: int
    default: 0
  partition:
    description:
      - Pods (count or percentage, rounded down) left on the version they run. StatefulSet - as its
        C(spec.updateStrategy.rollingUpdate.partition) - the ordinals below it, the others updated highest ordinal
        first; finish leaves the native partition at it (the user's setting from then on). Not given, the
        StatefulSet's own partition. Under OnDelete the lowest ordinals are kept and no partition is written.
      - Other kinds - this many pods at the end of the order. See docs/rollouts.md, "Partitions".
    type: str
  canary:
    description: Size (count or percentage) of a first batch.
    type: str
  order:
    description: Update order.
    type: str
    default: ordinal
    choices: [ordinal, reverse_ordinal, node, label, name]
  order_label:
    description: Label whose value orders the pods (numbers numerically) with O(order=label).
    type: str
  names:
    description: The pods of the batch (V(gate), V(sync), V(batch)).
    type: list
    elements: str
  readiness_gate:
    description:
      - Readiness gate condition type used for draining (V(sync) restores leftovers; V(batch) drains each pod of the
        batch through it before changing it).
      - If the module is killed mid-change (an AWX job canceled), a guardian process it started in a session of its
        own puts back the pods it drained once their containers are running and ready (at most 60 seconds later).
    type: str
  drain_label:
    description:
      - Drain by this serving label (C(KEY=VALUE), C(KEY) meaning C(KEY=true)) instead of a readiness gate; see the
        O(inplace.k8s.inplace_image#module:drain_label) option of the pod modules. Mutually exclusive with
        O(readiness_gate). V(sync) restores the label of converged pods an interrupted run left drained.
    type: str
  require_readiness_gate:
    description:
      - With V(batch), fail a pod, before anything of it is written, that cannot be drained the way asked (no readiness
        gate O(readiness_gate) in its spec, or without O(drain_label)).
    type: bool
    default: false
  prepull:
    description:
      - With V(batch) and O(images), pull the new images on the nodes of the batch's pods before any of them is drained
        (M(inplace.k8s.inplace_image) O(inplace.k8s.inplace_image#module:prepull)), and start pulling them on the nodes
        of the next batch without waiting. V(prepare) checks the permissions it needs first; V(finish) deletes the
        pre-pull pods left.
    type: bool
    default: false
  service:
    description: With V(drain_label), the Service (in O(namespace)) whose selector gains O(drain_label).
    type: str
  drain_seconds:
    description: With V(batch) and a drain mode, seconds to wait after draining a pod before the change.
    type: int
    default: 0
  on_failure:
    description:
      - With V(batch), what to do with a pod whose image or resize fails - V(stop) leaves it as it is, V(rollback)
        puts its values from before back.
    type: str
    default: stop
    choices: [stop, rollback]
  restart_strategy:
    description:
      - With V(batch) and O(restart), how containers are restarted, as
        O(inplace.k8s.container_recreate#module:strategy) of M(inplace.k8s.container_recreate).
    type: str
    default: auto
    choices: [auto, kruise, image_reference, exec, cri]
  wait_timeout:
    description:
      - Seconds to wait for the controller, a PodDisruptionBudget or the status to converge; with V(batch) also for
        each pod's change, as in M(inplace.k8s.inplace_image).
    type: int
    default: 300
  run_id:
    description:
      - Names the rollout run that owns the workload record (C(inplace.k8s/rollout)); the role passes one
        per run. Another run's unfinished, unexpired record refuses the workload. Default, one id per
        ansible-playbook process.
    type: str
  force_takeover:
    description: Take over the workload record of another run that has not expired (only when it is dead).
    type: bool
    default: false
  min_ready_seconds:
    description:
      - With V(batch), each changed container must stay running and ready this long after it was verified before
        its pod counts as done; a crash, restart or failed readiness meanwhile fails the pod (and O(on_failure)
        applies), as a Deployment's C(minReadySeconds).
    type: int
    default: 0
  to_revision:
    description: With V(previous), the revision to go back to (as C(kubectl rollout undo --to-revision)); default, the
      newest revision below the current one.
    type: int
  pause_seconds:
    description:
      - With V(rollout), seconds to watch the pods counted done before each step after the first; the first that
        crashes, restarts or turns unready is a failed pod (O(on_failure) applies beyond O(max_failed_pods)).
    type: int
    default: 0
  canary_pause_seconds:
    description: With V(rollout) and O(canary), seconds to watch the canary's pods after its step, as O(pause_seconds).
    type: int
    default: 0
  stop_after_batches:
    description:
      - With V(rollout), stop after this many steps (0, every step), the workload held; running it again resumes.
    type: int
    default: 0
  internal:
    description:
      - Internal to the role C(inplace.k8s.rollout) and the module's action, not a stable interface. The action refuses
        it in any task but the role's own, and passes on only a C(progress_file) it made itself.
        Where V(rollout) returns to the role's own tasks (C(verify), C(analysis_after)), the run a call resumes
        (C(resume), the RV(run) the previous call returned) with the outcome of the role's analysis there
        (C(analysis)), the rollout's start (C(started)) and the file the live progress is written to (C(progress_file)).
    type: dict
attributes:
  check_mode:
    description: Reports what would be written; writes nothing.
    support: full
  diff_mode:
    description: With V(batch) and V(rollout), the images and resources (or restarts) before and after, per pod.
    support: partial
    details: Only V(batch) and V(rollout) return a diff.
'''
