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
      - Needs O(wait=true).
    type: str
  drain_seconds:
    description:
      - Seconds to wait after setting the readiness gate V(False), before the change, so that load
        balancers stop sending traffic.
    type: int
    default: 0
  require_readiness_gate:
    description:
      - Fail, before changing anything, if a pod to change does not have O(readiness_gate).
        By default such a pod is changed without draining, with a warning.
    type: bool
    default: false
  readiness_gate_on_failure:
    description:
      - What happens to the readiness gate of a pod whose change failed.
      - V(restore_if_healthy) sets it V(True) only if all containers of the pod are running and ready
        (for example after a successful rollback); otherwise it stays V(False) and the result says so.
      - V(restore) always sets it V(True); V(keep_false) always leaves it V(False).
    type: str
    default: restore_if_healthy
    choices: [restore_if_healthy, restore, keep_false]
'''
