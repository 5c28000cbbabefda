# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout role's own inputs, checked on the controller before anything is read or written (the role's
first task, the action ``rollout_preflight``): every mistake at once, each naming the role variable and the fix,
and the role's variables the user set that the role does not know, each with the closest known name.

Types are checked before this by Ansible against the role's argument spec; what is checked here is what the spec
cannot say (which variables go together, the form of a count). The module checks its own options again
(options.py): these messages name the role's variables, its the module's options."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching

# Counts: a number (3) or a percentage from 0% to 100% (25%, 12.5%); empty: the default. The module's grammar
# (batching.parse_count), so that the preflight refuses exactly what the loop would.
COUNTS = ('batch_size', 'canary', 'partition', 'max_unavailable')
# The role's variables (without their prefix) the checks and window() read: what the action rollout_preflight
# passes them when the role's task gives none (analysis: whether any check is given).
INPUTS = ('action', 'target', 'images', 'resources', 'restart', 'restart_id', 'config', 'config_data', 'batch_size',
          'canary', 'partition', 'max_unavailable', 'readiness_gate', 'drain_label', 'enable_drain_label', 'require_drain',
          'config_check', 'window', 'pause_seconds', 'verify_tasks', 'stop_after_batches', 'analysis', 'analysis_after')


def _count_ok(value):
    try:
        batching.parse_count(value)
    except ValidationError:
        return False
    return True


def _config_errors(config, config_check, config_data):
    """The mistakes in the config rollout's variables. Their checks are imported only for a run that sets one: the
    role's first task imports this module in each run's worker (docs/performance.md, "Facts behind the code")."""
    if not (config or config_check or config_data):
        return []
    from ansible_collections.inplace.k8s.plugins.module_utils.config import checks, data, usage
    return usage.scope_errors(config) + checks.check_errors(config_check, 'rollout_config_check', 'rollout_config',
                                                            config) + \
        data.errors(config, config_data, 'rollout_config_data', 'rollout_config', 'rollout_config_data')


def input_errors(role):
    """The mistakes in ``role`` (the role's variables without their ``rollout_`` prefix), each a sentence that
    names the variable and the fix; [] when there is none."""
    target = role.get('target') or {}
    action = role.get('action') or 'apply'
    images, resources, restart = role.get('images') or {}, role.get('resources') or {}, role.get('restart') or []
    gate, label = role.get('readiness_gate') or '', role.get('drain_label') or ''
    errors = []
    named = 'name' in target if 'kind' in target else 'label_selectors' in target
    if 'namespace' not in target or not named:
        errors.append('rollout_target needs namespace and kind + name (or label_selectors)')
    config = role.get('config') or []
    if action == 'apply' and not (images or resources or restart or config):
        errors.append('give rollout_images and/or rollout_resources, or rollout_restart alone, or rollout_config alone')
    if config and (images or resources or restart):
        errors.append('rollout_config cannot be combined with rollout_images, rollout_resources or rollout_restart: '
                      'a config rollout alone')
    errors.extend(_config_errors(config, role.get('config_check'), role.get('config_data')))
    if restart and (images or resources):
        errors.append('rollout_restart cannot be combined with rollout_images or rollout_resources: restart alone')
    if action in ('release', 'undo') and 'kind' not in target:
        errors.append('rollout_action %s needs a workload (rollout_target.kind and .name)' % action)
    if action == 'undo' and (images or resources or restart):
        errors.append('rollout_action undo takes the images and resources of the revision it goes back to: do not '
                      'give rollout_images, rollout_resources or rollout_restart')
    if action == 'undo' and config:
        errors.append('rollout_action undo cannot be combined with rollout_config: it rolls out the images and '
                      'resources of a revision')
    wrong = [name for name in COUNTS if not _count_ok(role.get(name))]
    if wrong:
        errors.append('%s: take a count (3) or a percentage from 0%% to 100%% (25%%)' % ', '.join(
            'rollout_%s %s' % (name, role.get(name)) for name in wrong))
    if gate and label:
        errors.append('rollout_readiness_gate (%s) and rollout_drain_label (%s) are two ways to drain: set one of them'
                      % (gate, label))
    if boolean(role.get('enable_drain_label') or False) and 'kind' not in target:
        errors.append('rollout_enable_drain_label needs rollout_target.kind and .name (a Deployment, StatefulSet or '
                      'DaemonSet): pods chosen by label_selectors have no template to label')
    if boolean(role.get('require_drain') or False) and not (gate or label):
        errors.append('rollout_require_drain: no drain mode is set; set rollout_readiness_gate or rollout_drain_label')
    return errors


def unknown_variables_message(unknown, known):
    """Name each unknown role variable with the closest known one."""
    parts = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        parts.append('%s (did you mean %s?)' % (name, close[0]) if close else name)
    return 'unknown variable(s) of the rollout role: %s; the role knows: %s' % (
        ', '.join(parts), ', '.join(sorted(known)))


def window(role):
    """A sliding window unless the user asked for points between the steps (pauses, verification, stops, analyses
    after each batch)."""
    if not boolean(role.get('window', True)):
        return False
    points = (int(role.get('pause_seconds') or 0), role.get('verify_tasks'), int(role.get('stop_after_batches') or 0),
              role.get('analysis') and 'batch' in (role.get('analysis_after') or []))
    return not any(points)
