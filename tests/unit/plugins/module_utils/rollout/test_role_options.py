# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's variables and the module's options, each default written once: the role's defaults/main.yml is its
argument spec's, every default the role passes on is the module's but those of the one table of presets
(rollout/role_options.py PRESETS), and the role's tasks get their options through the one mapping (the action of
rollout_workload)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
from unittest import mock

import pytest
import yaml

from ansible_collections.inplace.k8s.plugins.module_utils.args import EVENTS_ARG_SPEC, OWNERS_ARG_SPEC
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import ROLLOUT_ARG_SPEC, RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.role_options import (
    OPTIONS, PREFIX, PRESETS, STATE_OPTIONS, module_args,
)

ROLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'rollout')
MODULE_SPEC = dict(ROLLOUT_ARG_SPEC, **dict(OWNERS_ARG_SPEC, **EVENTS_ARG_SPEC))
TARGET = {'kind': 'Deployment', 'name': 'web', 'namespace': 'shop'}
# The role's variables that are no module option: the role's own work (its action, verification tasks, analyses,
# the drain mode's and owners' tasks, failing the play) or options computed by the run (window, restart_id).
ROLE_ONLY = {'action', 'window', 'restart_id', 'verify_tasks', 'analysis', 'analysis_after', 'fail_on_error',
             'enable_drain_label', 'install_gate_policy', 'heal_stranded_gates', 'suspend_owners'}


def load(*path):
    with open(os.path.join(ROLE, *path)) as handle:
        return yaml.safe_load(handle)


SPEC = load('meta', 'argument_specs.yml')['argument_specs']['main']['options']
ROLE_DEFAULTS = dict((name, option['default']) for name, option in SPEC.items() if 'default' in option)


def option_of(variable):
    """The module option a role variable (without its prefix) becomes."""
    found = [option for option, (name, _convert) in OPTIONS.items() if name == variable]
    return found[0] if found else variable


def test_the_roles_defaults_file_is_its_argument_spec():
    assert load('defaults', 'main.yml') == ROLE_DEFAULTS
    assert [name for name in SPEC if name not in ROLE_DEFAULTS] == ['rollout_target']
    assert SPEC['rollout_target']['required'] is True


def test_every_role_variable_is_a_module_option_or_the_roles_own():
    mapped = set(variable for variable, _convert in OPTIONS.values())
    variables = set(name[len(PREFIX):] for name in SPEC)
    assert variables - mapped - {'target'} == ROLE_ONLY
    assert mapped - variables == set() and set(OPTIONS) <= set(MODULE_SPEC)


def same(option, role_value, module_value):
    """Whether the module does the same with the role's value as with its own default."""
    if option in ('batch_size', 'canary', 'partition', 'max_unavailable'):
        parsed = [batching.parse_count(value, option) for value in (role_value, module_value)]
        return parsed[0] == parsed[1] or option == 'canary' and set(parsed) <= {None, (0, False)}
    return role_value == module_value


def test_the_roles_defaults_are_the_modules_but_the_declared_presets():
    given = RolloutOptions.from_params(dict(module_args('rollout', dict(
        ((PREFIX + name, value) for name, value in ((n[len(PREFIX):], v) for n, v in ROLE_DEFAULTS.items())),
        rollout_target=TARGET, rollout_images={'app': 'web:2'})), state='rollout'))
    module = RolloutOptions.from_params(dict(namespace='shop', images={'app': 'web:2'}, state='rollout'))
    differ = sorted(option for option in STATE_OPTIONS['rollout']
                    if not same(option, getattr(given, option), getattr(module, option)))
    presets = sorted(option_of(variable) for variable, _why in PRESETS)
    assert sorted(set(differ) - {'kind', 'name'}) == [p for p in presets if p in STATE_OPTIONS['rollout']]
    for variable, why in PRESETS:   # declared: a role default that is not the module's
        assert ROLE_DEFAULTS[PREFIX + variable] != MODULE_SPEC[option_of(variable)].get('default'), variable
        assert len(why) > 40


def test_the_roles_choices_are_the_modules():
    for name, option in SPEC.items():
        target = option_of(name[len(PREFIX):])
        if option.get('choices') and target in MODULE_SPEC and target in OPTIONS:
            convert = OPTIONS[target][1]
            assert set(convert(choice) for choice in option['choices']) <= set(MODULE_SPEC[target]['choices']), name


@pytest.mark.parametrize('state, variables, expected', [
    ('rollout', {}, {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web', 'images': {'app': 'web:2'},
                     'allow_recreate': False, 'batch_size': '1', 'partition': '', 'canary': '0',
                     'canary_pause_seconds': 0, 'pause_seconds': 0, 'stop_after_batches': 0, 'order': 'ordinal',
                     'prepull': False, 'wait_timeout': 300, 'max_failed_pods': 0, 'require_readiness_gate': False,
                     'drain_seconds': 0, 'min_ready_seconds': 10, 'on_failure': 'stop', 'owners': 'refuse',
                     'force_takeover': False, 'events': True, 'config_projection': 'best_effort'}),
    ('rollout', {'rollout_batch_size': 3, 'rollout_max_unavailable': '25%', 'rollout_on_failure': 'rollback',
                 'rollout_drain_label': 'serving', 'rollout_restart_strategy': 'exec'},
     {'batch_size': '3', 'max_unavailable': '25%', 'on_failure': 'rollback', 'drain_label': 'serving',
      'restart_strategy': 'exec'}),
    ('rollback', {}, {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web', 'images': {'app': 'web:2'},
                      'order': 'ordinal', 'drain_seconds': 0, 'prepull': False, 'wait_timeout': 300,
                      'force_takeover': False, 'events': True}),
    ('drain_label', {'rollout_drain_label': 'serving', 'rollout_drain_label_service': 'web'},
     {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web', 'drain_label': 'serving', 'service': 'web',
      'wait_timeout': 300}),
    ('previous', {}, {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web'}),
    ('previous', {'rollout_undo_revision': 3}, {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web',
                                                'to_revision': 3}),
])
def test_each_state_takes_its_options_from_the_roles_variables(state, variables, expected):
    given = dict(ROLE_DEFAULTS, rollout_target=TARGET, rollout_images={'app': 'web:2'}, **variables)
    args = module_args(state, given)
    if variables and state == 'rollout':
        assert dict((key, args[key]) for key in expected) == expected
    else:
        assert args == expected


def test_an_undo_rolls_out_its_revisions_images_and_resources_not_the_variables():
    undo = {'images': {'app': 'web:1'}, 'resources': {'app': {'limits': {'cpu': '1'}}}, 'revision': 'web-abc'}
    args = module_args('rollout', dict(ROLE_DEFAULTS, rollout_target=TARGET, rollout_action='undo'), undo)
    assert args['images'] == {'app': 'web:1'} and args['resources'] == {'app': {'limits': {'cpu': '1'}}}
    only_images = module_args('rollout', dict(ROLE_DEFAULTS, rollout_target=TARGET), dict(undo, resources={}))
    assert only_images['images'] == {'app': 'web:1'} and 'resources' not in only_images
    assert 'images' not in module_args('rollout', dict(ROLE_DEFAULTS, rollout_target=TARGET), {})


class Templar:
    """An action's templar: resolves ``{{ name }}`` of a plain variable, as Ansible would."""

    def __init__(self, task_vars):
        self.task_vars = task_vars

    def template(self, value):
        if isinstance(value, dict):
            return dict((key, self.template(item)) for key, item in value.items())
        if isinstance(value, str) and value.startswith('{{ '):
            return self.task_vars[value[3:-3]]
        return value


def test_the_modules_action_adds_the_roles_variables_to_the_roles_own_tasks(monkeypatch):
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action.rollout_workload import ActionModule
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    task_vars = dict(ROLE_DEFAULTS, rollout_target=TARGET, rollout_images='{{ new_images }}',
                     new_images={'app': 'web:3'}, rollout_wait_timeout=60)
    seen = []
    for internal in ({'role_variables': True}, {'role_variables': True, 'verify': True}):
        task = mock.MagicMock(args={'state': 'rollback', 'run_id': 'r1', 'wait_timeout': 30, 'internal': internal},
                              async_val=0)
        task._role.get_name.return_value = 'inplace.k8s.rollout'
        connection = mock.MagicMock(transport='ssh', has_native_async=False)
        plugin = ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), Templar(task_vars),
                              mock.MagicMock())
        plugin._remove_tmp_path = lambda path: None
        plugin._execute_module = lambda module_name, module_args, task_vars, wrap_async: seen.append(module_args) or {}
        plugin.run(task_vars=task_vars)
    assert seen[0] == dict(module_args('rollback', dict(task_vars, rollout_images={'app': 'web:3'})),
                           state='rollback', run_id='r1', wait_timeout=30)
    assert seen[0]['images'] == {'app': 'web:3'} and 'internal' not in seen[0]
    assert seen[1]['internal'] == {'verify': True} and json.dumps(seen[1], sort_keys=True)


def test_the_modules_action_rolls_out_the_undos_revision_it_is_passed(monkeypatch):
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action.rollout_workload import ActionModule
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    task_vars = dict(ROLE_DEFAULTS, rollout_target=TARGET, rollout_action='undo')
    internal = {'role_variables': True, 'undo': {'images': {'app': 'web:1'}, 'resources': {}}}
    task = mock.MagicMock(args={'state': 'rollout', 'run_id': 'r1', 'internal': internal}, async_val=0)
    task._role.get_name.return_value = 'inplace.k8s.rollout'
    connection = mock.MagicMock(transport='ssh', has_native_async=False)
    plugin = ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), Templar(task_vars), mock.MagicMock())
    plugin._remove_tmp_path = lambda path: None
    seen = []
    plugin._execute_module = lambda module_name, module_args, task_vars, wrap_async: seen.append(module_args) or {}
    plugin.run(task_vars=task_vars)
    assert seen[0]['images'] == {'app': 'web:1'} and 'resources' not in seen[0] and 'internal' not in seen[0]


def preflight(monkeypatch, task_vars):
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action.rollout_preflight import ActionModule
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    task = mock.MagicMock(args={}, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), Templar(task_vars),
                          mock.MagicMock())
    return plugin.run(task_vars=dict(task_vars, role_path=ROLE))


def test_the_preflight_reads_the_roles_variables_itself(monkeypatch):
    task_vars = dict(ROLE_DEFAULTS, rollout_target=TARGET, rollout_images='{{ new_images }}',
                     new_images={'app': 'web:3'}, rollout_restart_id='nightly')
    result = preflight(monkeypatch, task_vars)
    assert 'failed' not in result and result['window'] is True and result['restart_id'] == 'nightly'
    # the analysis checks are not templated here (only whether there are any): an after-batch analysis is a point
    paused = preflight(monkeypatch, dict(task_vars, rollout_analysis=['{{ not_yet_defined }}'],
                                         rollout_analysis_after=['batch']))
    assert 'failed' not in paused and paused['window'] is False
    refused = preflight(monkeypatch, dict(task_vars, rollout_images={}, rollout_batch_sze=2))
    assert refused['failed'] and 'give rollout_images' in refused['msg']
    assert 'rollout_batch_sze (did you mean rollout_batch_size?)' in refused['msg']


def role_tasks(tasks):
    """Every task of a task file, those inside blocks too."""
    for task in tasks or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from role_tasks(task.get(key))


def test_the_role_never_includes_a_role_and_the_undo_sets_no_fact():
    # The undo rolls its revision out through the same calls (internal.undo), not by running the role again; what
    # it read is a registered variable, reset at each run's start, never a fact of its own.
    directory = os.path.join(ROLE, 'tasks')
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as source:
            for task in role_tasks(yaml.safe_load(source)):
                assert not any(key.endswith(('include_role', 'import_role')) for key in task), (name, task)
                facts = task.get('ansible.builtin.set_fact') or {}
                assert facts.get('__rollout_undo', {}) == {}, (name, task)
