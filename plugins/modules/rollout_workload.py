#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: rollout_workload
short_description: Coordinate an in-place rollout with a workload's controller
version_added: 1.0.0
description:
  - One step of a batched in-place rollout of a Deployment, StatefulSet, DaemonSet or ReplicaSet, or of pods chosen by
    label selectors; the role C(inplace.k8s.rollout) runs its steps (docs/rollouts.md tells the whole story).
  - V(prepare) resolves the pods, checks that the change can be made in place (else names the field and why), holds
    the controller (StatefulSet partition raised to replicas, DaemonSet OnDelete, Deployment paused), writes the target
    to the template (a Deployment's current ReplicaSet first, keeping its C(pod-template-hash)) and splits the pods
    still to update into batches. The workload annotation C(inplace.k8s/rollout) records the strategy to restore, the
    target and the values before, so that a re-run resumes; with O(allow_recreate), a change that cannot be made in
    place is handed to the controller's own rolling update.
  - V(batch) runs one batch - the PodDisruptionBudgets selecting the pods of O(names) allow disrupting them and
    O(max_unavailable) is respected, then the change of those pods in place as M(inplace.k8s.inplace_image),
    M(inplace.k8s.inplace_resize) (only if the images did not fail) or M(inplace.k8s.container_recreate) make it, all
    at once (or, with O(window), each in its turn), then the pods that did not fail get the new revision labels,
    leftover drains are undone and restarted pods are marked with O(restart_id). Failed pods do not fail the task
    (RV(failed_pods), one entry with status V(failed) for a change that failed as a whole); a batch the budgets do not
    let through within O(wait_timeout) fails it with RV(blocked), nothing written.
  - V(finish) restores the strategy (never letting the controller replace pods left on the old version) and waits
    until the workload's own status says it is fully updated; V(release) ends an unfinished rollout (or rollback)
    where it stands, the record saying C(released), no pod changed.
  - V(rollback) writes the template values from before back, then updates the pods that run the rollout's values back
    (RV(groups)), each group at once, as V(batch) changes pods (RV(restored)), then finishes as V(finish) does
    (RV(finished)); V(prepare) given the change of a rollback that did not finish returns mode V(rollback), never
    applying the change again.
  - V(prepare), V(rollback) and V(rollout) keep the revision history true (RV(history)) - C(kubectl rollout history)
    lists the in-place revision with a C(kubernetes.io/change-cause), C(kubectl rollout undo) returns to the one
    before. V(previous) reads the revision an in-place undo goes back to (the newest below the current one, or
    O(to_revision)) and returns what differs (RV(undo)), refusing a revision that differs in anything else.
  - V(drain_label) makes the workload drainable by O(drain_label) without recreating a pod - the label on every pod,
    on the template under the usual hold, then on the selector of O(service) once every pod carries it. In check
    mode it reports what is missing (RV(drain_label)).
  - V(rollout) is the whole rollout, one loop - V(prepare), then each step of the plan as V(batch) runs it (the pods
    each step verified are watched by the later ones; O(canary_pause_seconds) after the canary and O(pause_seconds)
    before each later step the pods counted done are watched, the first that crashes, restarts or turns unready being
    a failed pod), then V(finish); or, when pods failed (or an analysis did) and O(on_failure=rollback), V(rollback).
    The result is V(prepare)'s with RV(run). After a step in which more than O(max_failed_pods) pods failed in all,
    the window halted, a pod was recreated, or O(stop_after_batches) steps ran, it stops without V(finish), the
    workload held; a re-run resumes. V(finish) failing on pods another writer changed is reported in RV(run.finished).
    The role C(inplace.k8s.rollout) also has it return where its own tasks act (its verification tasks, analyses -
    RV(run.point)) and calls it again to go on.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.rollout_options
  - inplace.k8s.auth
  - inplace.k8s.action_group
  - inplace.k8s.owners
  - inplace.k8s.events
options:
  state:
    description: The step to run.
    type: str
    required: true
    choices: [prepare, batch, finish, rollback, release, drain_label, rollout, previous]
'''

EXAMPLES = r'''
- name: The whole rollout in one call - a canary watched for 60 s, then a sliding window of 25%
  inplace.k8s.rollout_workload:
    state: rollout
    kind: Deployment
    name: web
    namespace: shop
    images: {app: registry.example.com/web:2.0}
    canary: '1'
    canary_pause_seconds: 60
    batch_size: 25%
    window: true
    readiness_gate: inplace.k8s/ready
    on_failure: rollback
  register: rolled

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
'''

RETURN = r'''
# BEGIN owners: generated by hack/returns.py from docs/sources/owners-result.yml (edit there, then run hack/docs.sh)
owners:
  description:
    - Who else manages the workload or its pods, found before any write (O(owners); docs/gitops.md).
  returned: by the steps that plan (prepare, rollout) of images or resources
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
  description: With mode V(recreate), the pods after the controller's rolling update (V(pods) are those before).
  returned: prepare, with mode recreate
  type: list
  elements: dict
groups:
  description: Pods to update back, with the values to write.
  returned: rollback
  type: list
  elements: dict
restored:
  description: Per group, C(names) and the results of putting back C(images) and C(resources), as RV(images) is.
  returned: rollback
  type: list
  elements: dict
finished:
  description: What V(finish) returned after the rollback (the controller released, its status converged).
  returned: rollback
  type: dict
pods:
  description: The pods (name, namespace, uid, node, pod_ip, ordinal, updated).
  returned: always
  type: list
  elements: dict
history:
  description:
    - What the template write did (in check mode, would do) to the revision history - C(revision) (of the in-place
      template), C(change_cause) (its C(kubernetes.io/change-cause)), C(previous) (C(revision), C(name) - the
      ReplicaSet or ControllerRevision that keeps it - and C(images) of the template from before), C(moved) (a
      revision of the target that moves) and C(message) (the change in one line).
  returned: prepare, rollback and rollout, when the template changes
  type: dict
undo:
  description:
    - With V(previous), the revision to go back to (C(revision)), the ReplicaSet or ControllerRevision that holds it
      (C(name)), the current revision (C(current_revision)), the images and resources that differ from the current
      template (C(images) - container -> image, C(resources) - container -> requests and limits), and its
      C(kubernetes.io/change-cause) if any (C(change_cause)).
  returned: previous
  type: dict
config:
  description:
    - With O(config) - C(scope) (V(auto) or the objects named) and C(restarts) - per pod still to restart, per
      container, why (which object, changed when, used how - C(env NAME (key k)), C(envFrom), C(mount PATH), C(subPath
      PATH)).
  returned: with config
  type: dict
  sample: {scope: [ConfigMap/app-config], restarts: {web-0: {app: "ConfigMap/app-config changed 2026-01-31T12:00:00Z,
           container started 2026-01-30T08:00:00Z (env MODE (key mode))"}}}
config_checks:
  description:
    - With O(config) - per pod, per restarted container, what was read in the pod through C(pods/exec) - C(projection)
      (a note per volume - C(confirmed ...) before the restart, or why not; O(config_projection)) and
      C(config_check) (C(passed ...); O(config_check)). V(batch) returns the step's, V(rollout) and the role's
      C(rollout_result) the run's.
  returned: with config
  type: dict
  sample: {web-0: {app: {projection: ["confirmed: ConfigMap/app-config in volume conf (/etc/app/mode) shows the new
           data (exec in container app, 1 read(s), 0.4s)"], config_check: "passed: cat /etc/app/mode (in container
           app)"}}}
config_data:
  description:
    - With O(config_data) or O(secret_data) - the objects whose data this call wrote (C(written)), found as given
      (C(unchanged)), wrote back in a rollback (C(restored)), and the copies of their data from before still there
      (C(kept), V(KIND/NAME.inplace-previous)). Names only, never data.
  returned: with config_data or secret_data
  type: dict
  sample: {written: [ConfigMap/app-config], unchanged: [], restored: [], kept: [ConfigMap/app-config.inplace-previous]}
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
  returned: batch (also when the batch was blocked)
  type: list
  elements: str
images:
  description: The batch's image change as M(inplace.k8s.inplace_image) returns it, with C(failed), C(msg) if it failed.
  returned: batch, with images
  type: dict
resources:
  description: The batch's resize as M(inplace.k8s.inplace_resize) returns it (absent when the image change failed).
  returned: batch, with resources
  type: dict
restart:
  description: The batch's restart as M(inplace.k8s.container_recreate) returns it, with C(failed), C(msg) if it failed.
  returned: batch, with restart
  type: dict
failed_pods:
  description:
    - The failures of the batch, including pods counted done earlier that crashed, restarted or turned unready after
      they were counted done - C(name), C(status), C(reason) of each pod that failed, was rolled back, conflicted
      with another run or was refused, and one entry for the whole batch (C(name) the pod names joined by commas)
      with status V(failed) for a change that failed as a whole, or V(blocked) for a gate that did not let it through.
  returned: batch (also when the batch was blocked)
  type: list
  elements: dict
verified:
  description:
    - The pods of the batch counted done (pod name -> C(uid), C(containers) - container name -> container ID); pass
      them, merged over the batches, to the later steps (the role does, in O(internal)).
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
    - With O(window) and V(batch) - C(width) (pods in flight at most), C(max_unavailable) (a count, or null), C(halted)
      (why it stopped starting pods, or null), C(waited_seconds) (the pods' waits for their turn, all together).
    - With V(prepare), the width of the window the steps will run with (0 without O(window)).
  returned: batch with window, prepare
  type: raw
plan_lines:
  description: The plan as the role shows it - the target, the steps, the pods left on the old version, the drain mode.
  returned: rollout, on its first call
  type: list
  elements: str
progress:
  description:
    - What the role shows after the step - a line with the step's label, its pods, how many are done, failed and not
      started, how many run the target, the window and the time elapsed since the rollout started, then one line per failed pod
      (C(failed - name - status - reason)); with V(rollout), the lines of every step, pause and end of this call.
  returned: batch (also when the batch was blocked), rollout
  type: list
  elements: str
halt:
  description: The rollout stops after this step (more pods failed than O(max_failed_pods), pods not started, recreated).
  returned: batch (also when the batch was blocked)
  type: bool
run:
  description: What V(rollout) did after V(prepare) (the whole run so far, when the role's calls resume it).
  returned: rollout, unless the plan is not an in-place change
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
      description: The steps stopped early (as RV(halt)), or a failed or inconclusive analysis stopped them.
      type: bool
    point:
      description:
        - Where the call returned before the end for the role's own tasks - C(after) (V(the canary), V(batch N),
          V(the last batch)), C(verify) (run the verification tasks), C(analysis) (run the analysis). The next call
          passes this RV(run) back to resume.
      type: dict
    rollback:
      description: V(rollback)'s result, when the run rolled back (O(on_failure=rollback)).
      type: dict
    rolled_back:
      description: The run rolled back.
      type: bool
    finished:
      description:
        - V(finish)'s result when every step ran; with C(failed) and RV(failed_pods) when pods were changed by another
          writer during the rollout (the workload stays held).
      type: dict
report:
  description:
    - The role's C(rollout_result) as far as the module knows it, computed from the plan, the run, or what V(rollback)
      or V(release) did (the role adds C(changed), C(action), C(analysis), C(undo), C(suspended), C(elapsed_seconds));
      docs/rollouts.md describes each field.
  returned: rollout, rollback, release
  type: dict
points_left:
  description:
    - How many points (RV(run.point)) the run can still reach, the one it stands at included, 0 when it ended - an
      upper bound (a run that stops early, or needs no step for pods the plan did not have, reaches fewer). The role
      runs its loop of points (verification tasks, analyses, the next call) that many turns at most.
  returned: rollout, with RV(run)
  type: int
lines:
  description:
    - The role's report of the result - of V(drain_label), the drain label's state (pods, template, Service) and what
      O(drain_label) would write or wrote; of V(rollback), how many pods went back to which values.
  returned: drain_label and rollback, called by the role C(inplace.k8s.rollout)
  type: list
  elements: str
failure:
  description:
    - Why the rollout did not reach its target (failed pods, pods not started, a failed or inconclusive analysis, pods
      recreated) and the ways out, as the role fails with it; empty when it reached its target.
  returned: rollout, when the run ended, called by the role C(inplace.k8s.rollout)
  type: str
relabelled:
  description: Pods given the new revision labels (or marked restarted).
  returned: batch
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
      description: Pods whose label is V(drained) (left so by an interrupted run; the next V(batch) or V(rollout) puts them back).
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
  returned: batch
  type: list
  elements: str
updated:
  description: How many pods run the target (restart - are marked restarted).
  returned: batch
  type: int
total:
  description: How many pods there are.
  returned: batch
  type: int
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    AUTH_ARG_SPEC, EVENTS_ARG_SPEC, OWNERS_ARG_SPEC, argument_spec,
)
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import ROLLOUT_ARG_SPEC
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout

MODULE_ARGS = dict(ROLLOUT_ARG_SPEC, **{
    'state': {'type': 'str', 'required': True,
              'choices': ['prepare', 'batch', 'finish', 'rollback', 'release', 'drain_label', 'rollout',
                          'previous']},
})


def main():
    module = AnsibleModule(argument_spec=argument_spec(AUTH_ARG_SPEC, OWNERS_ARG_SPEC, EVENTS_ARG_SPEC, **MODULE_ARGS),
                           supports_check_mode=True,
                           required_together=[('kind', 'name')], required_one_of=[('kind', 'label_selectors')])
    runner.execute(module, lambda cancel: Rollout.from_module(module, cancel).run())


if __name__ == '__main__':
    main()
