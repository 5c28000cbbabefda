# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Options paired with module_utils/args.py EVENTS_ARG_SPEC.


class ModuleDocFragment:

    DOCUMENTATION = r'''
options:
  events:
    description:
      - Write Kubernetes Events (C(events.k8s.io/v1), reporting controller C(inplace.k8s)) as the built-in
        controllers do, shown by C(kubectl describe) and C(kubectl events --for KIND/NAME). On a pod -
        V(InPlaceUpdateStarted) and V(InPlaceUpdated) (for the first 10 pods of a run, to keep the requests few),
        V(InPlaceUpdateFailed) with the reason and V(InPlaceRolledBack) (always). On a rollout's workload - V(RolloutStarted),
        V(RolloutResumed), V(RolloutStep), V(RolloutPaused), V(RolloutHalted), V(RollbackStarted), V(RolledBack), V(Released),
        V(RolloutFinished).
      - A repeat of an Event (same object, reason and note but for its numbers) within 6 minutes is counted on the
        first one (its C(series)) rather than written again.
      - Best effort - without the RBAC rule (C(create), C(patch) on C(events) of C(events.k8s.io)) or on any error
        the module warns once and goes on without Events. Check mode writes none. See docs/events.md.
    type: bool
    default: true
'''
