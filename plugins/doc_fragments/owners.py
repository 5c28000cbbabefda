# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py OWNERS_ARG_SPEC.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  owners:
    description:
      - What to do when someone else manages the workload or its pods. Before anything is written (check mode
        included), the run looks for them. It reads the server-side apply field managers of the fields the
        change writes (V(argocd-controller), V(kustomize-controller), V(helm-controller), V(helm)), the
        labels and annotations Helm, Argo CD and Flux leave, the Argo CD Application or Flux Kustomization
        or HelmRelease they name, and the VerticalPodAutoscalers and HorizontalPodAutoscalers that target
        the workload. The result's C(owners) lists each one with what it will do to the change and the fix.
        An API the cluster does not serve is skipped quietly. An API the credentials cannot read is listed
        in C(owners.unchecked).
      - V(refuse) refuses the change, writing nothing, when an owner would revert it on its own within
        minutes. These owners are Argo CD with automated sync and self-heal, a Flux Kustomization, a Flux
        HelmRelease with drift detection, and a VerticalPodAutoscaler in an updating mode when resources
        change. The message says how to go on. The run warns about owners that act only when someone runs
        them. For example, it names the Helm release and the values its next upgrade must carry.
      - V(warn) warns about every owner and goes on.
      - V(proceed) goes on knowingly. The owners are still listed in the result.
      - See docs/gitops.md for the workflows that work with each owner.
    type: str
    default: refuse
    choices: [refuse, warn, proceed]
'''
