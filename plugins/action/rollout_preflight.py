# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout_preflight: the rollout role's first task, on the controller (docs: plugins/modules/rollout_preflight.py).

The inputs checked in Python (rollout/inputs.py), not in the Jinja of a task: the Jinja check and the lookup of the
role's argument spec were a fixed cost of every run (docs/performance.md, "Facts behind the code"). The run's id,
start, restart id, whether it runs as a sliding window and the name of the readiness gate's policy are returned (registered by the role: __rollout_start).
Not set as facts: facts an action other than set_fact returns are host facts, below the registered variables
they would reset."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import random
import time

import yaml

from ansible.plugins.action import ActionBase

from ansible_collections.inplace.k8s.plugins.module_utils.operations.gate_names import default_policy_name
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import role_options
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.inputs import (
    INPUTS, input_errors, unknown_variables_message, window)

# Variables named rollout_* that are not the role's inputs: its output.
NOT_INPUTS = ('rollout_result',)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _spec, args = self.validate_argument_spec(argument_spec={'role': {'type': 'dict'}})
        role = args['role']
        if role is None:   # the role's task names none of its variables: they are read here
            role = self._role_inputs(task_vars)
        errors = input_errors(role)
        known = self._inputs(task_vars)
        unknown = [name for name in task_vars
                   if name.startswith('rollout_') and name not in known and name not in NOT_INPUTS]
        if unknown:
            errors.append(unknown_variables_message(unknown, known))
        if errors:
            result.update(failed=True, msg='%s; nothing was changed' % '; '.join(errors))
            return result
        now = time.time()
        result.update(
            run_id='rollout-%x' % random.SystemRandom().getrandbits(63),
            started=now,
            restart_id=role.get('restart_id') or time.strftime('restart-%Y%m%dT%H%M%S', time.gmtime(now)),
            window=window(role),
            # The readiness gate's policy as readiness_gate names it by default (gates.yml installs it).
            gate_policy=default_policy_name(role['readiness_gate']) if role.get('readiness_gate') else None)
        return result

    def _role_inputs(self, task_vars):
        """The role's variables the checks read (inputs.INPUTS), templated, without their prefix. Of the analysis
        checks only whether there are any: their own templates are resolved when they run (analysis.yml)."""
        names = [role_options.PREFIX + name for name in INPUTS if name != 'analysis']
        role = dict((name[len(role_options.PREFIX):], value)
                    for name, value in role_options.templated(self._templar, task_vars, names).items())
        analysis = task_vars.get(role_options.PREFIX + 'analysis')
        role['analysis'] = bool(analysis if isinstance(analysis, (list, tuple)) else self._templar.template(analysis))
        return role

    def _inputs(self, task_vars):
        """The role's variables: the options of its argument spec."""
        role_path = task_vars.get('role_path') or self._task._role._role_path
        with open(os.path.join(role_path, 'meta', 'argument_specs.yml')) as spec:
            options = yaml.load(spec, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))['argument_specs']['main']['options']
        return list(options)
