#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: rollout_workload
short_description: Coordinate an in-place rollout with a workload's controller
version_added: 0.1.0
description:
  - One step of a batched in-place rollout of a Deployment, StatefulSet, DaemonSet or ReplicaSet, or of pods chosen by
    label selectors. The role C(inplace.k8s.rollout) calls it to prepare, once per batch (V(batch)), and to finish.
  - V(prepare) resolves the pods, checks that the change can be made in place (else names the field and why),
    holds the controller (StatefulSet RollingUpdate partition raised to replicas, DaemonSet OnDelete, Deployment
    paused), writes the target to the template (for a Deployment first to its current ReplicaSet, keeping its
    C(pod-template-hash)) and splits the pods still to update into batches. The strategy to restore, the target and
    the template values before are recorded in the workload annotation C(inplace.k8s/rollout), so that a re-run resumes.
  - V(gate) waits until the PodDisruptionBudgets selecting the pods of O(names) allow disrupting them, and
    O(max_unavailable) is respected.
  - V(sync) sets the new revision labels (C(controller-revision-hash), C(pod-template-generation)) on pods that run
    the target, sets the readiness gate True again on converged pods an interrupted run left drained, and marks
    restarted pods with O(restart_id).
  - V(batch) runs one batch in one call. First V(gate). Then the change of the pods of O(names), in place, as
    M(inplace.k8s.inplace_image) (O(images)), then M(inplace.k8s.inplace_resize) (O(resources), only if the images
    did not fail) or M(inplace.k8s.container_recreate) (O(restart), with O(restart_strategy)) make it, with
    O(readiness_gate), O(drain_seconds), O(wait_timeout), O(on_failure), O(force_takeover), and all pods of the batch
    at once (C(max_concurrency) is the number of O(names)). Then V(sync) of the pods that did not fail.
  - With V(batch), pods that fail (or are rolled back, refused, or taken by another run) do not fail the task; they
    are listed in RV(failed_pods), and a change that fails as a whole (for example an unknown container) is one entry
    for the whole batch with status V(failed). The task fails only on bad input, an error in V(sync), or a gate that
    does not let the batch through within O(wait_timeout) (or cannot be checked, for example because another run
    holds the workload); nothing is written then, and the result carries RV(blocked) and RV(failed_pods) with one
    entry for the whole batch with status V(blocked).
  - V(finish) restores the strategy (never letting the controller replace pods left on the old version) and waits
    until the workload's own status says it is fully updated.
  - V(rollback) writes the template values from before back and returns the pods to update back; with a rollback that
    did not finish, V(prepare) given the same change returns mode V(rollback) so that it is finished, never the change
    applied again.
  - V(prepare), V(rollback) and V(rollout) keep the revision history true (RV(history)) - C(kubectl rollout history)
    lists the in-place revision with a C(kubernetes.io/change-cause) and C(kubectl rollout undo) returns to the
    revision before it (a Deployment's reused ReplicaSet gets the next revision; the template from before is kept as a
    ReplicaSet with no replicas).
  - V(previous) reads the revision an in-place undo goes back to (the newest below the current one, or
    O(to_revision)) and returns the images and resources that differ (RV(undo)); it refuses, naming the field, a revision
    that differs in anything else. It writes nothing.
  - V(release) ends an unfinished rollout (or rollback) where it stands - the controller's strategy is restored (pods
    left on the old version stay protected, as with V(finish)), the record says C(released), no pod is changed.
  - V(watch) watches the pods of O(watch) for O(seconds), returning at the first that crashed, restarted or turned
    unready (RV(failed_pods)).
  - V(drain_label) makes the workload drainable by O(drain_label) without recreating a pod - the label on every pod
    (a metadata write), on the template under the usual hold (a Deployment keeps its ReplicaSet; StatefulSet and
    DaemonSet pods get the new revision labels), then on the selector of O(service) once every pod carries it. In
    check mode it only reports (RV(drain_label)) - pods without the label, template and Service selector.
  - With O(allow_recreate), a change that cannot be made in place is written to the template in V(prepare) and the
    controller's own rolling update replaces the pods.
  - V(rollout) is V(prepare), then V(batch) for each step of the plan (the pods each step verified are watched by
    the later ones, as O(watch)), then V(finish), in one call - what the role runs when nothing of its own happens
    between the steps (a sliding window, O(window), without pauses, verification tasks or analyses), saving a
    module process and the role's tasks per step. The result is V(prepare)'s with RV(run). After a step in which
    more than O(max_failed_pods) pods failed in all, the window halted, or a pod was recreated, it stops without
    V(finish), the workload held, as the role's steps would; V(finish) failing on pods another writer changed is
    reported in RV(run.finished) with RV(failed_pods). Check mode, and plans that are not an in-place change
    (V(recreate), a rollback to finish), return V(prepare)'s result only.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
  - inplace.k8s.action_group
options:
  state:
    description: The step to run.
    type: str
    required: true
    choices: [prepare, gate, sync, batch, watch, finish, rollback, release, drain_label, rollout, previous]
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
        pods counted done (O(watch) and the window's own) must still be healthy. A pod that failed since, or more
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
        of O(prepull_next) without waiting. V(prepare) checks the permissions it needs first; V(finish) deletes the
        pre-pull pods left.
    type: bool
    default: false
  prepull_next:
    description: With O(prepull), the pods of the next batch, whose nodes start pulling while this batch restarts.
    type: list
    elements: str
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
  watch:
    description:
      - Pods counted done earlier in this rollout, as V(batch) returns them in RV(verified) (pod name -> C(uid) and
        C(containers), container name -> container ID). V(batch) and V(watch) report each of them that crashed,
        restarted or turned unready since in RV(failed_pods); V(batch) then changes nothing.
    type: dict
  seconds:
    description: With V(watch), how long to watch the pods of O(watch) (returns at the first failure).
    type: int
    default: 0
  progress_label:
    description: With V(batch), how RV(progress) names the step (the role - C(step 2 of 3), C(batch 2 of 3)).
    type: str
  started:
    description: With V(batch) and V(rollout), when the rollout started (seconds since the epoch) - RV(progress) shows
      the time elapsed since.
    type: float
  unknown_variables:
    description:
      - With V(prepare) and V(rollout), the role's variables the user set that the role does not know; any fails the step, naming
        the closest of O(known_variables).
    type: list
    elements: str
  known_variables:
    description: With O(unknown_variables), the variables the role knows.
    type: list
    elements: str
  to_revision:
    description: With V(previous), the revision to go back to (as C(kubectl rollout undo --to-revision)); default, the
      newest revision below the current one.
    type: int
attributes:
  check_mode:
    description: Reports what would be written; writes nothing.
    support: full
  diff_mode:
    description: With V(batch) and V(rollout), the images and resources (or restarts) before and after, per pod.
    support: partial
    details: Only V(batch) and V(rollout) return a diff.
'''

EXAMPLES = r'''
- name: Hold the StatefulSet, write the new image to its template, plan batches of 2
  inplace.k8s.rollout_workload:
    state: prepare
    kind: StatefulSet
    name: db
    namespace: shop
    images: {app: registry.example.com/db:2.0}
    batch_size: '2'
  register: plan

- name: Update the first batch in place - gate, new image, revision labels
  inplace.k8s.rollout_workload:
    state: batch
    kind: StatefulSet
    name: db
    namespace: shop
    images: {app: registry.example.com/db:2.0}
    names: "{{ plan.batches[0] }}"
    readiness_gate: inplace.k8s/ready
    on_failure: rollback
  register: batch

- name: Restore the strategy and wait for the controller to report every pod updated
  inplace.k8s.rollout_workload:
    state: finish
    kind: StatefulSet
    name: db
    namespace: shop
'''

RETURN = r'''
mode:
  description: V(in_place), V(recreate) (handed to the controller), V(restart) or V(unchanged).
  returned: prepare
  type: str
batches:
  description: Pod names per batch, in order.
  returned: prepare
  type: list
  elements: list
kept:
  description: Pods left on the old version (partition).
  returned: prepare
  type: list
  elements: str
refusals:
  description: Fields that cannot change in place, with the reason.
  returned: prepare, when not in place
  type: list
  elements: dict
labels:
  description: Labels the updated pods carry (the new revision).
  returned: prepare, rollback
  type: dict
revision:
  description: The new ControllerRevision (StatefulSet, DaemonSet) or the ReplicaSet kept (Deployment).
  returned: prepare, rollback
  type: str
message:
  description: With mode V(recreate), that the pods were recreated by the controller (how many), and why.
  returned: prepare, with mode recreate
  type: str
after:
  description: With mode V(recreate), the pods once the controller's rolling update finished (V(pods) are those before).
  returned: prepare, with mode recreate
  type: list
  elements: dict
groups:
  description: Pods to update back, with the values to write.
  returned: rollback
  type: list
  elements: dict
pods:
  description: The pods (name, namespace, uid, node, pod_ip, ordinal, updated).
  returned: always
  type: list
  elements: dict
history:
  description:
    - What the template write did (or, in check mode, would do) to the revision history - the new RV(history.revision)
      and its RV(history.change_cause), the revision from before and where it is kept (RV(history.previous)), a
      revision of the target template that moves to the new one (C(moved)), and a one-line RV(history.message).
  returned: prepare, rollback and rollout, when the template changes
  type: dict
  contains:
    revision:
      description: The revision of the in-place template.
      type: int
    change_cause:
      description: Its C(kubernetes.io/change-cause).
      type: str
    previous:
      description: C(revision), C(name) (ReplicaSet or ControllerRevision) and C(images) of the template from before.
      type: dict
    message:
      description: The history change in one line.
      type: str
undo:
  description: With V(previous), the revision to go back to and the change that goes there.
  returned: previous
  type: dict
  contains:
    revision:
      description: The revision to go back to.
      type: int
    name:
      description: The ReplicaSet or ControllerRevision that holds it.
      type: str
    current_revision:
      description: The current revision.
      type: int
    images:
      description: The images that differ from the current template (container -> image).
      type: dict
    resources:
      description: The resources that differ (container -> requests and limits).
      type: dict
    change_cause:
      description: Its C(kubernetes.io/change-cause), if any.
      type: str
workload:
  description: The workload's status fields (replicas, updatedReplicas, currentRevision ...).
  returned: when a workload is given
  type: dict
pdbs:
  description: PodDisruptionBudgets selecting the pods.
  returned: prepare
  type: list
  elements: dict
blocked:
  description: Why the batch may not go now (PodDisruptionBudgets, max_unavailable); empty when it may.
  returned: gate, batch (also when the batch was blocked)
  type: list
  elements: str
images:
  description:
    - The image change of the batch, as M(inplace.k8s.inplace_image) returns it (C(changed), C(pods), C(summary)),
      with C(failed) and C(msg) when it failed.
  returned: batch, with images
  type: dict
resources:
  description:
    - The resize of the batch, as M(inplace.k8s.inplace_resize) returns it, with C(failed) and C(msg) when it failed.
      Absent when the image change failed.
  returned: batch, with resources
  type: dict
restart:
  description:
    - The restart of the batch, as M(inplace.k8s.container_recreate) returns it, with C(failed) and C(msg) when it
      failed.
  returned: batch, with restart
  type: dict
failed_pods:
  description:
    - The failures of the batch (and of V(watch)), including pods of O(watch) that crashed, restarted or turned unready
      after they were counted done - C(name), C(status), C(reason) of each pod that failed, was rolled back, conflicted
      with another run or was refused, and one entry for the whole batch (C(name) the pod names joined by commas)
      with status V(failed) for a change that failed as a whole, or V(blocked) for a gate that did not let it through.
  returned: batch (also when the batch was blocked), watch
  type: list
  elements: dict
verified:
  description:
    - The pods of the batch counted done (pod name -> C(uid), C(containers) - container name -> container ID); pass
      them, merged over the batches, as O(watch) to the later steps.
  returned: batch
  type: dict
recreated:
  description: Pods of O(names) whose UID changed during the batch - recreated by someone, not changed in place.
  returned: batch
  type: list
  elements: str
not_started:
  description: With O(window), the pods of O(names) a halted window did not start (nothing of them was written).
  returned: batch
  type: list
  elements: str
window:
  description:
    - With O(window) and V(batch) - C(width) (pods in flight at most), C(max_unavailable) (as a count, or null),
      C(halted) (why it stopped starting pods, or null) and C(waited_seconds) (the time pods waited for their turn,
      all together). With V(prepare), the width of the window the steps will run with (0 without O(window)).
  returned: batch with window, prepare
  type: raw
progress:
  description:
    - What the role shows after the step - a line with O(progress_label), its pods, how many are done, failed and not
      started, how many run the target, the window and the time elapsed since O(started), then one line per failed pod
      (C(failed - name - status - reason)).
  returned: batch (also when the batch was blocked)
  type: list
  elements: str
halt:
  description:
    - The rollout stops after this step - more pods failed than O(max_failed_pods), a halted window left pods not
      started, or a pod was recreated instead of changed in place.
  returned: batch (also when the batch was blocked)
  type: bool
run:
  description: What V(rollout) did after V(prepare).
  returned: rollout, unless in check mode or the plan is not an in-place change
  type: dict
  contains:
    steps:
      description:
        - One entry per step run - C(pods) (how many), C(progress) (as RV(progress)), C(failed_pods), C(not_started),
          C(recreated), C(window), C(updated), C(total), as V(batch) returns them.
      type: list
      elements: dict
    failed_pods:
      description: The RV(failed_pods) of all steps.
      type: list
      elements: dict
    not_started:
      description: Pods a halted window did not start.
      type: list
      elements: str
    recreated:
      description: Pods recreated during a step instead of changed in place (the run stops after that step).
      type: list
      elements: str
    timings:
      description: Per pod, the timings of its change(s), as V(batch) returns them.
      type: dict
    stopped:
      description: The steps stopped early (failed pods beyond O(max_failed_pods), a halted window, a recreated pod).
      type: bool
    finished:
      description:
        - V(finish)'s result when every step ran; with C(failed) and RV(failed_pods) when pods were changed by another
          writer during the rollout (the workload stays held).
      type: dict
watched:
  description: How many pods V(watch) watched.
  returned: watch
  type: int
relabelled:
  description: Pods given the new revision labels (or marked restarted).
  returned: sync, batch
  type: list
  elements: str
drain_label:
  description: What V(drain_label) found before it wrote (in check mode - what it would change).
  returned: drain_label
  type: dict
  contains:
    label:
      description: The serving label, C(KEY=VALUE).
      type: str
    pods:
      description: How many pods the workload has.
      type: int
    unlabelled:
      description: Pods without the label (given it).
      type: list
      elements: str
    drained:
      description: Pods whose label is V(drained) (left so by an interrupted run; V(sync) puts them back).
      type: list
      elements: str
    template_labelled:
      description: The template already carried the label.
      type: bool
    service:
      description: O(service), or null.
      type: str
    service_selects:
      description: The Service's selector already had the label.
      type: bool
undrained:
  description: Pods an interrupted run left drained (gate False, or drain label V(drained)) that were put back.
  returned: sync, batch
  type: list
  elements: str
updated:
  description: How many pods run the target (restart - are marked restarted).
  returned: sync, batch
  type: int
total:
  description: How many pods there are.
  returned: sync, batch
  type: int
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, argument_spec
from ansible_collections.inplace.k8s.plugins.module_utils.options import STRATEGIES
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout

MODULE_ARGS = {
    'state': {'type': 'str', 'required': True,
              'choices': ['prepare', 'gate', 'sync', 'batch', 'watch', 'finish', 'rollback', 'release',
                          'drain_label', 'rollout', 'previous']},
    'namespace': {'type': 'str', 'required': True},
    'kind': {'type': 'str', 'choices': ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']},
    'name': {'type': 'str'},
    'label_selectors': {'type': 'list', 'elements': 'str'},
    'images': {'type': 'dict'},
    'resources': {'type': 'dict'},
    'restart': {'type': 'list', 'elements': 'str'},
    'restart_id': {'type': 'str'},
    'allow_recreate': {'type': 'bool', 'default': False},
    'batch_size': {'type': 'str', 'default': '1'},
    'max_unavailable': {'type': 'str'},
    'window': {'type': 'bool', 'default': False},
    'max_failed_pods': {'type': 'int', 'default': 0},
    'partition': {'type': 'str'},
    'canary': {'type': 'str'},
    'order': {'type': 'str', 'default': 'ordinal', 'choices': ['ordinal', 'reverse_ordinal', 'node', 'label', 'name']},
    'order_label': {'type': 'str'},
    'names': {'type': 'list', 'elements': 'str'},
    'readiness_gate': {'type': 'str'},
    'drain_label': {'type': 'str'},
    'require_readiness_gate': {'type': 'bool', 'default': False},
    'service': {'type': 'str'},
    'prepull': {'type': 'bool', 'default': False},
    'prepull_next': {'type': 'list', 'elements': 'str'},
    'drain_seconds': {'type': 'int', 'default': 0},
    'on_failure': {'type': 'str', 'default': 'stop', 'choices': ['stop', 'rollback']},
    'restart_strategy': {'type': 'str', 'default': 'auto', 'choices': list(STRATEGIES)},
    'wait_timeout': {'type': 'int', 'default': 300},
    'run_id': {'type': 'str'},
    'force_takeover': {'type': 'bool', 'default': False},
    'min_ready_seconds': {'type': 'int', 'default': 0},
    'watch': {'type': 'dict'},
    'seconds': {'type': 'int', 'default': 0},
    'progress_label': {'type': 'str'},
    'started': {'type': 'float'},
    'unknown_variables': {'type': 'list', 'elements': 'str'},
    'known_variables': {'type': 'list', 'elements': 'str'},
    'to_revision': {'type': 'int'},
}


def main():
    module = AnsibleModule(argument_spec=argument_spec(AUTH_ARG_SPEC, **MODULE_ARGS), supports_check_mode=True,
                           required_together=[('kind', 'name')], required_one_of=[('kind', 'label_selectors')])
    params = module.params
    runner.execute(module, lambda: Rollout(
        runner.client(params, pool_size=max(10, len(params['names'] or []))), params, module.check_mode,
        diff=module._diff, run_command=module.run_command).run())


if __name__ == '__main__':
    main()
