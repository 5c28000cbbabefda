# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py DRAIN_ARG_SPEC.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  readiness_gate:
    description:
      - A readiness gate condition type (for example V(inplace.k8s/ready)) used to take each pod out of
        its Services while it is changed.
      - For a pod that lists it in C(spec.readinessGates), the condition is set V(False) through the
        C(pods/status) subresource, the task waits O(drain_seconds), changes and verifies the pod, then
        sets the condition V(True) again and waits for the pod to be Ready.
      - Readiness gates can only be added when a pod is created (in the pod template).
      - Needs O(wait=true). Mutually exclusive with O(drain_label).
    type: str
  drain_label:
    description:
      - Drain by label instead of a readiness gate, for servers without MutatingAdmissionPolicy or pods
        that may not carry a gate. A label C(KEY=VALUE) (C(KEY) alone means C(KEY=true)) that the pods'
        Services select and their controller does not.
      - Each pod to change that carries it is drained by setting the label to V(drained) (the
        EndpointSlice controller then drops the pod while its controller keeps it); the task waits until
        no EndpointSlice of the namespace lists the pod as a ready endpoint, then O(drain_seconds),
        changes and verifies the pod, sets the label back to C(VALUE) and waits until the Services that
        listed the pod before list it ready again.
      - Refused, before anything is written, when the controller of a pod (ReplicaSet, StatefulSet,
        DaemonSet, Job) selects its pods by C(KEY), since flipping the label would orphan the pod.
      - A pod without the label (or with another value) is changed without draining, with a warning, or
        refused with O(require_readiness_gate=true).
      - Needs O(wait=true), C(list) on C(endpointslices) (C(discovery.k8s.io)) and C(get) on the pods'
        controllers. Mutually exclusive with O(readiness_gate).
    type: str
    version_added: 1.0.0
  drain_seconds:
    description:
      - Seconds to wait after draining a pod (O(readiness_gate) set V(False) or O(drain_label) flipped),
        before the change, so that load balancers stop sending traffic.
    type: int
    default: 0
  require_readiness_gate:
    description:
      - Fail, before changing anything, if a pod to change does not have O(readiness_gate) (or, with
        O(drain_label), does not carry the serving label).
        By default such a pod is changed without draining, with a warning.
    type: bool
    default: false
  readiness_gate_on_failure:
    description:
      - What happens to the readiness gate (or the O(drain_label)) of a pod whose change failed.
      - V(restore_if_healthy) puts the pod back (gate V(True), label value restored) only if all its
        containers are running and ready (for example after a successful rollback); otherwise it stays
        drained and the result says so.
      - V(restore) always puts it back; V(keep_false) always leaves it drained.
      - The same applies when the task itself is killed mid-change (for example an AWX job canceled, whose
        process group gets SIGKILL). A module that drains starts a guardian process in a session of its own,
        which then puts back the pods it drained (with V(restore_if_healthy) once their containers are running
        and ready, waiting at most 60 seconds) and exits. The pods' records stay in progress; running the task
        again resumes them.
    type: str
    default: restore_if_healthy
    choices: [restore_if_healthy, restore, keep_false]
'''
