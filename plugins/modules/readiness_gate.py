#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: readiness_gate
short_description: Open the readiness gate of pods nobody drained (admission policy, healing)
version_added: 1.0.0
description:
  - A pod that lists a readiness gate in C(spec.readinessGates) stays NotReady, out of its Services, until someone
    sets the gate's condition V(True). The collection's drains set it V(False) and back V(True), but pods that a
    controller creates later (a scale-up, a pod replaced after an eviction or a node failure,
    C(kubectl rollout restart)) start without the condition and stay NotReady for good unless something opens it.
  - O(state=present) installs a MutatingAdmissionPolicy and its MutatingAdmissionPolicyBinding
    (C(admissionregistration.k8s.io/v1), GA and on by default from Kubernetes 1.36; no webhook server, nothing
    running in the cluster). On every C(pods/status) UPDATE, the kubelet's own status updates included, of a pod that
    has O(gate) in its spec and whose status lacks the condition, the API server adds the condition with status
    V(True). A write whose result already carries the condition, such as a drain setting it V(False), is left
    alone; the policy never opens a gate that was closed. The binding is scoped by O(namespaces) or
    O(namespace_selector), and O(object_selector). The same pair, for the default gate and every namespace, is
    shipped as C(policies/readiness-gate-policy.yml).
  - O(state=absent) deletes the binding and the policy.
  - O(state=healed) opens the gate of the pods of O(namespace) (O(label_selectors), or the pods of the workload
    O(kind) / O(name)) that have O(gate) in their spec and no condition for it, created before the policy existed or
    on a server without it. Each is set V(True) through C(pods/status), guarded by its resourceVersion; a pod whose
    condition is present is never touched (V(False) means a drain is in progress). Every pod is reported.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
  - inplace.k8s.action_group
options:
  state:
    description:
      - V(present) or V(absent) for the policy pair; V(healed) opens the gates of stranded pods.
    type: str
    default: present
    choices: [present, absent, healed]
  gate:
    description: The readiness gate condition type.
    type: str
    default: inplace.k8s/ready
  policy_name:
    description:
      - Name of the MutatingAdmissionPolicy. Defaults to C(inplace-k8s-gate-) and O(gate) in lowercase with every
        other character run replaced by C(-) (V(inplace-k8s-gate-inplace-k8s-ready)), one policy per gate.
    type: str
  binding_name:
    description: Name of the MutatingAdmissionPolicyBinding. Defaults to the policy's name.
    type: str
  namespaces:
    description:
      - Namespaces the binding applies to (a namespace selector on C(kubernetes.io/metadata.name)).
      - Without it and O(namespace_selector), the policy applies to gated pods of every namespace.
    type: list
    elements: str
  namespace_selector:
    description: A label selector (C(matchLabels), C(matchExpressions)) of the namespaces the binding applies to.
    type: dict
  object_selector:
    description: A label selector of the pods the binding applies to.
    type: dict
  failure_policy:
    description:
      - What the API server does when the policy cannot be evaluated. V(Ignore) lets the status write through
        unchanged (the pod may then stay stranded, and O(state=healed) finds it); V(Fail) rejects the write, the
        kubelet's status updates included.
    type: str
    default: Ignore
    choices: [Ignore, Fail]
  namespace:
    description: Namespace of the pods to heal (O(state=healed)).
    type: str
  label_selectors:
    description: Pods to heal (O(state=healed)); without it and O(kind), every pod of O(namespace).
    type: list
    elements: str
  kind:
    description: Heal the pods of this workload (O(state=healed)).
    type: str
    choices: [Deployment, StatefulSet, DaemonSet, ReplicaSet]
  name:
    description: Name of the workload (with O(kind)).
    type: str
attributes:
  check_mode:
    description: Writes nothing; reports what would be created, updated, deleted or opened.
    support: full
  diff_mode:
    description: The managed metadata and spec of the policy and the binding before and after.
    support: full
notes:
  - RBAC for O(state=present) and O(state=absent) - the ClusterRole C(inplace-k8s-readiness-gate-policy) in
    C(rbac/inplace-k8s-rbac.yml) (get, create, update, delete of the policy and the binding, cluster-scoped).
    O(state=healed) needs C(list) on C(pods) and C(patch) on C(pods/status) (the C(inplace-k8s) role), and C(get)
    on the workload with O(kind).
  - The policy opens a gate at the first status write after the pod's creation, the kubelet's included; a pod
    created before the policy existed already has had its writes and stays stranded until healed. The API server
    applies a new policy some seconds after storing it; a pod created and started within that time can be
    stranded too (2 of 6 pods of a Deployment created right after the policy, on the test bed under load).
    Create the workload after that, or heal it.
  - Pods created before their template gained the gate do not have it (readiness gates can only be set at pod
    creation) and are reported as V(not_gated); they are changed without draining until they are recreated once.
seealso:
  - name: Pod readiness gates
    description: How a readiness gate's condition folds into the pod's Ready condition.
    link: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-readiness-gate
  - name: Mutating admission policy
    description: CEL mutations evaluated in the API server.
    link: https://kubernetes.io/docs/reference/access-authn-authz/mutating-admission-policy/
'''

EXAMPLES = r'''
- name: Open the gate of every new gated pod in the shop namespace
  inplace.k8s.readiness_gate:
    gate: inplace.k8s/ready
    namespaces: [shop]

- name: Open the gates of the web Deployment's pods that were created before the policy
  inplace.k8s.readiness_gate:
    state: healed
    namespace: shop
    kind: Deployment
    name: web
  register: healed

- name: Which gated pods would nothing open?
  inplace.k8s.readiness_gate:
    state: healed
    namespace: shop
    label_selectors: [app=web]
  check_mode: true
  register: stranded

- name: Remove the policy
  inplace.k8s.readiness_gate:
    state: absent
    namespaces: [shop]
'''

RETURN = r'''
objects:
  description: The policy and the binding, and what was done to each.
  returned: state=present, state=absent
  type: list
  elements: dict
  contains:
    kind:
      description: V(MutatingAdmissionPolicy) or V(MutatingAdmissionPolicyBinding).
      type: str
    name:
      description: Object name.
      type: str
    action:
      description:
        - V(created), V(updated), V(deleted), V(unchanged), V(absent); in check mode V(would_create),
          V(would_update), V(would_delete).
      type: str
  sample:
    - {kind: MutatingAdmissionPolicy, name: inplace-k8s-gate-inplace-k8s-ready, action: created}
    - {kind: MutatingAdmissionPolicyBinding, name: inplace-k8s-gate-inplace-k8s-ready, action: created}
policy:
  description: The MutatingAdmissionPolicy as the API server stored it (as it would be, in check mode); null when absent.
  returned: state=present, state=absent
  type: dict
binding:
  description: The MutatingAdmissionPolicyBinding as stored; null when absent.
  returned: state=present, state=absent
  type: dict
pods:
  description: Every pod of the target, sorted by name.
  returned: state=healed
  type: list
  elements: dict
  contains:
    name:
      description: Pod name.
      type: str
    uid:
      description: Pod UID.
      type: str
    state:
      description:
        - What the pod was found in. V(stranded) (gated, condition absent), V(open) (V(True)), V(closed) (V(False),
          a drain in progress or a gate someone closed; never touched), V(not_gated) (the spec does not list the
          gate) or V(terminating).
      type: str
    status:
      description:
        - What was done. V(opened), V(would_open) (check mode), or, when nothing was written, the state the pod
          was found in (when the write found the pod changed and re-read it - V(open), V(closed) or V(gone)).
      type: str
  sample:
    - {name: web-5d8f7-abcde, uid: 0b1c..., state: stranded, status: opened}
    - {name: web-5d8f7-fghij, uid: 7a8b..., state: closed, status: closed}
summary:
  description: How many pods ended in each status, and C(total).
  returned: state=healed
  type: dict
  sample: {opened: 1, closed: 1, total: 2}
stranded:
  description: Names of the pods found gated without the condition.
  returned: state=healed
  type: list
  elements: str
opened:
  description: Names of the pods opened (or that would be, in check mode).
  returned: state=healed
  type: list
  elements: str
not_gated:
  description: Names of the pods whose spec does not list the gate (they cannot be drained through it).
  returned: state=healed
  type: list
  elements: str
policies:
  description:
    - The policies of the collection that open O(gate), with their bindings (C(name), C(match)); null when the
      server does not serve MutatingAdmissionPolicy or the credentials may not list them.
  returned: state=healed
  type: list
  elements: dict
diff:
  description: The policy and the binding (managed metadata and spec) before and after.
  returned: in diff mode, state=present, state=absent
  type: dict
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, argument_spec
from ansible_collections.inplace.k8s.plugins.module_utils.operations import gates
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import Workload

MODULE_ARGS = {
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent', 'healed']},
    'gate': {'type': 'str', 'default': gates.DEFAULT_GATE},
    'policy_name': {'type': 'str'},
    'binding_name': {'type': 'str'},
    'namespaces': {'type': 'list', 'elements': 'str'},
    'namespace_selector': {'type': 'dict'},
    'object_selector': {'type': 'dict'},
    'failure_policy': {'type': 'str', 'default': 'Ignore', 'choices': ['Ignore', 'Fail']},
    'namespace': {'type': 'str'},
    'label_selectors': {'type': 'list', 'elements': 'str'},
    'kind': {'type': 'str', 'choices': ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']},
    'name': {'type': 'str'},
}


def workload_pods(kube, kind, namespace, name):
    """The pods a workload controls (kind, name), for state=healed: operations/gates.py, a layer below the
    workload's, is given this."""
    workload = Workload(kube, kind, namespace, name)
    workload.read()
    return workload.pods()


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(AUTH_ARG_SPEC, **MODULE_ARGS), supports_check_mode=True,
        mutually_exclusive=[('namespaces', 'namespace_selector'), ('kind', 'label_selectors')],
        required_together=[('kind', 'name')], required_if=[('state', 'healed', ['namespace'])])
    runner.execute(module, lambda _cancel: gates.run(runner.client(module.params),
                                                     gates.GateOptions.from_params(module.params),
                                                     module.check_mode, module._diff, workload_pods))


if __name__ == '__main__':
    main()
