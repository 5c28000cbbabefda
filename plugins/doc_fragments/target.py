# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py TARGET_ARG_SPEC / TARGET_CONSTRAINTS.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  namespace:
    description:
      - Namespace of the pods.
    type: str
    required: true
  name:
    description:
      - Name of one pod.
      - Exactly one of O(name), O(names), O(label_selectors) or O(field_selectors) selects the pods.
    type: str
  names:
    description:
      - Names of several pods. Names that do not exist are reported in a warning.
    type: list
    elements: str
  label_selectors:
    description:
      - Label selectors the pods must all match, for example V(app=web) or V(tier in (a,b)).
    type: list
    elements: str
  field_selectors:
    description:
      - Field selectors the pods must all match, for example V(spec.nodeName=node-1).
    type: list
    elements: str
  fail_on_no_match:
    description:
      - Fail when no pod matches. By default the task is V(ok) with C(changed=false) and a warning.
    type: bool
    default: false
  continue_on_error:
    description:
      - A targeted pod that cannot be brought to the target (status V(refused), because it is terminating,
        not yet scheduled or finished, lacks a container, or the change cannot be made in place or by the
        strategy) fails the task by default, naming each pod and why, after every other pod was worked on.
      - V(true) accepts that. Such pods are reported (status V(refused), C(reason)) and warned about, and
        the task succeeds when every other pod reached the target. Pods whose change failed, was rolled
        back or met another writer (V(failed), V(rolled_back), V(conflict)) fail the task either way.
      - Pods that are broken by their image (C(CrashLoopBackOff), C(ErrImagePull) / C(ImagePullBackOff)
        while V(Pending)) are not refused; they are updated in place and verified like any other.
    type: bool
    default: false
  max_concurrency:
    description:
      - How many pods are worked on at the same time, from 1 to 256.
    type: int
    default: 10
  force_takeover:
    description:
      - A pod whose state record is held by another run (an unfinished update whose owner has not
        expired, see C(inplace.k8s/state)) is reported as V(conflict) and not touched, unless this is
        V(true). A run of this host whose process is gone is taken over without it.
      - Only when the other run is known to be dead (for example killed on another host).
    type: bool
    default: false
'''
