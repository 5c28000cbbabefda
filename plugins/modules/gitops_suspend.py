#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r'''
module: gitops_suspend
short_description: Suspend and resume the Argo CD Applications and Flux objects that keep a workload
version_added: 1.0.0
description:
  - Around an in-place rollout of a workload kept by a GitOps controller, stops that controller from reverting the
    change, and puts it back afterwards.
  - O(state=suspended) takes away an Argo CD Application's automated sync (C(spec.syncPolicy.automated), self-heal
    with it) and sets C(spec.suspend) on a Flux Kustomization or HelmRelease. It acts on the objects that the
    workload O(kind) / O(name) names, through its C(argocd.argoproj.io/tracking-id) annotation or its
    C(kustomize.toolkit.fluxcd.io/name) or C(helm.toolkit.fluxcd.io/name) labels, and on O(objects).
  - A name in the workload's labels or annotations is only a hint. Such an object is suspended only when its own
    status shows that it manages the workload. An Application's C(status.resources) must list the workload. A
    Kustomization's or HelmRelease's C(status.inventory) must hold it. A HelmRelease without inventory must have
    released, by its latest C(status.history) entry, the release that the workload's C(meta.helm.sh/release-name)
    and C(meta.helm.sh/release-namespace) annotations name, in the workload's namespace. Any other object is
    returned with the action V(left) and a warning, and is never written. See docs/gitops.md.
  - O(objects) are trusted as named, without this check.
  - What was there before is kept on the object, in the annotation C(inplace.k8s/suspended), written in the same
    guarded write. An object that does not sync on its own is left alone. So is one that another live run
    suspended.
  - After it suspended objects, the module leaves a keeper process. The keeper resumes those objects when the
    run's ansible-playbook is gone, for example after a cancel or a kill that skipped the role's C(always)
    section, and at the latest after O(max_seconds). It exits as soon as the objects are resumed.
  - O(state=resumed) puts back what the run O(run) suspended, in one write per object, and drops the
    annotation. Without O(run) it puts back every suspension of the collection that it finds, which is a manual
    clean-up.
  - The role C(inplace.k8s.rollout) calls it around the rollout with C(rollout_suspend_owners=true), and resumes
    on any failure.
author:
  - inplace.k8s contributors (@inplace-k8s)
extends_documentation_fragment:
  - inplace.k8s.auth
  - inplace.k8s.action_group
options:
  state:
    description: V(suspended) before the rollout, V(resumed) after it.
    type: str
    required: true
    choices: [suspended, resumed]
  namespace:
    description: Namespace of the workload, and of the O(objects) that give none.
    type: str
  kind:
    description: Kind of the workload whose GitOps objects are suspended or resumed.
    type: str
    choices: [Deployment, StatefulSet, DaemonSet, ReplicaSet]
  name:
    description: Name of the workload.
    type: str
  objects:
    description: GitOps objects named directly, besides those the workload names.
    type: list
    elements: dict
    suboptions:
      kind:
        description: The object's kind.
        type: str
        required: true
        choices: [Application, Kustomization, HelmRelease]
      name:
        description: The object's name.
        type: str
        required: true
      namespace:
        description: The object's namespace. Defaults to O(namespace).
        type: str
  run:
    description:
      - The id of the run that suspends, which is returned as RV(run). O(state=resumed) puts back only what
        this run suspended.
      - A new id when not given with O(state=suspended).
    type: str
  max_seconds:
    description: The longest a suspension may last. The keeper resumes the objects then.
    type: int
    default: 21600
attributes:
  check_mode:
    description: Writes nothing and starts no keeper. Reports what would be suspended or resumed.
    support: full
  diff_mode:
    description: Not supported.
    support: none
notes:
  - RBAC - C(get), C(list) and C(patch) on C(applications.argoproj.io), C(kustomizations.kustomize.toolkit.fluxcd.io)
    and C(helmreleases.helm.toolkit.fluxcd.io), plus C(get) on the workload. The ClusterRole
    C(inplace-k8s-gitops) is in C(rbac/inplace-k8s-rbac.yml).
  - A CRD that is not installed, or an object that the credentials cannot read, is not checked and named in
    RV(unchecked).
  - Resuming gives the controller back its source. Commit the rollout's new values there first, so that its
    next sync is a no-op. See docs/gitops.md.
seealso:
  - name: Argo CD automated sync policy
    description: Automated sync, self-heal and pruning.
    link: https://argo-cd.readthedocs.io/en/stable/user-guide/auto_sync/
  - name: Flux suspend
    description: Suspending and resuming the reconciliation of Flux objects.
    link: https://fluxcd.io/flux/cmd/flux_suspend/
'''

EXAMPLES = r'''
- name: Suspend whatever GitOps object keeps the web Deployment
  inplace.k8s.gitops_suspend:
    state: suspended
    namespace: shop
    kind: Deployment
    name: web
  register: suspension

- name: Roll in place
  inplace.k8s.inplace_image:
    namespace: shop
    label_selectors: [app=web]
    containers:
      app: registry.example.com/web:2.0

- name: Resume it
  inplace.k8s.gitops_suspend:
    state: resumed
    namespace: shop
    kind: Deployment
    name: web
    run: "{{ suspension.run }}"
'''

RETURN = r'''
run:
  description: The id of the run whose suspensions these are. Give it to O(state=resumed).
  returned: always
  type: str
objects:
  description:
    - One entry per object, with C(kind), C(namespace), C(name), C(action) and C(reason). The action is
      V(suspended), V(resumed), V(unchanged), or V(left) when another run holds the object or when the workload
      names it but its status does not show that it manages the workload.
  returned: always
  type: list
  elements: dict
unchecked:
  description:
    - GitOps objects named by the workload that were not found or could not be read, each with the reason.
    - Named C(unchecked), not C(skipped), because Ansible reads a non-empty C(skipped) as "the task was skipped".
  returned: always
  type: list
  elements: str
keeper:
  description: The pid of the keeper process, or null when none was started.
  returned: state=suspended
  type: int
'''

from ansible_collections.inplace.k8s.plugins.module_utils import startup
startup.compile_once()   # before the other imports: they compile once, not twice (module_utils/startup.py)

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.args import AUTH_ARG_SPEC, argument_spec
from ansible_collections.inplace.k8s.plugins.module_utils.owners import gitops

MODULE_ARGS = {
    'state': {'type': 'str', 'required': True, 'choices': ['suspended', 'resumed']},
    'namespace': {'type': 'str'},
    'kind': {'type': 'str', 'choices': ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']},
    'name': {'type': 'str'},
    'objects': {'type': 'list', 'elements': 'dict', 'options': {
        'kind': {'type': 'str', 'required': True, 'choices': ['Application', 'Kustomization', 'HelmRelease']},
        'name': {'type': 'str', 'required': True},
        'namespace': {'type': 'str'},
    }},
    'run': {'type': 'str'},
    'max_seconds': {'type': 'int', 'default': 21600},
}


def main():
    module = AnsibleModule(argument_spec=argument_spec(AUTH_ARG_SPEC, **MODULE_ARGS), supports_check_mode=True,
                           required_together=[('kind', 'name')], required_by={'kind': 'namespace'})
    runner.execute(module, lambda _cancel: gitops.run(lambda: runner.client(module.params),
                                                      gitops.SuspendOptions.from_params(module.params),
                                                      module.check_mode))


if __name__ == '__main__':
    main()
