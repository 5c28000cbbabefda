#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
module: rollout_preflight
short_description: Check the rollout role's inputs and start its run (the role's first task)
version_added: 1.0.0
description:
  - The first task of the role C(inplace.k8s.rollout), not meant to be called by itself. It runs on the controller
    and reads and writes nothing in the cluster.
  - It checks what the role's argument spec cannot say (which variables go together, the form of a count) and fails
    naming every mistake at once, each with its role variable and the fix, before anything is read or written.
  - It fails as well on each variable named C(rollout_*) that the role does not know (a typing mistake such as
    C(rollout_image)), naming the closest known one.
  - It then returns the run's own values - its id, its start, the restart id, whether it runs as a sliding window.
author:
  - inplace.k8s contributors (@inplace-k8s)
options:
  role:
    description:
      - The role's variables, each without its C(rollout_) prefix (C(target), C(action), C(images), C(resources),
        C(restart), C(restart_id), C(config), C(batch_size), C(canary), C(partition), C(max_unavailable),
        C(readiness_gate), C(drain_label), C(enable_drain_label), C(require_drain), C(window), C(pause_seconds),
        C(verify_tasks), C(stop_after_batches), C(analysis), C(analysis_after)).
      - Not given (as the role calls it), the variables of the role's argument spec as the task sees them.
    type: dict
attributes:
  check_mode:
    support: full
    description: Nothing is written in either mode.
  diff_mode:
    support: none
    description: Nothing is written.
notes:
  - The variables the role knows are the options of its argument spec (C(meta/argument_specs.yml)).
'''

EXAMPLES = r'''
- name: Check the inputs of the role's variables and start the run (the role's own first task)
  inplace.k8s.rollout_preflight:

- name: Check given inputs and start the run
  inplace.k8s.rollout_preflight:
    role:
      action: apply
      target: {kind: Deployment, name: web, namespace: shop}
      images: {app: registry.example/web:2.0}
      batch_size: 25%
'''

RETURN = r'''
run_id:
  description: The run's id, a new one each run (the hold and the records name it).
  returned: success
  type: str
  sample: rollout-1f2e3d4c5b6a7980
started:
  description: The run's start, seconds since the epoch.
  returned: success
  type: float
  sample: 1795866000.25
restart_id:
  description: C(rollout_restart_id), or a new id from the time of the run.
  returned: success
  type: str
  sample: restart-20261127T190000
window:
  description: Whether the run is a sliding window (nothing of the user acts between its steps).
  returned: success
  type: bool
  sample: true
gate_policy:
  description:
    - The name M(inplace.k8s.readiness_gate) gives the policy of C(rollout_readiness_gate) by default, when it is set
      (the role installs the policy under it with C(rollout_install_gate_policy)).
  returned: success
  type: str
  sample: inplace-k8s-gate-inplace-k8s-ready
'''
