# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout role's input check (rollout/inputs.py) and its first task, the action rollout_preflight."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.rollout.inputs import (
    input_errors, unknown_variables_message, window)

ROLE_PATH = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'rollout')
GOOD = {'action': 'apply', 'target': {'kind': 'Deployment', 'name': 'web', 'namespace': 'shop'},
        'images': {'app': 'web:2'}, 'resources': {}, 'restart': [], 'batch_size': '25%', 'canary': '',
        'partition': 0, 'max_unavailable': '', 'readiness_gate': '', 'drain_label': '',
        'enable_drain_label': False, 'require_drain': False}


def errors(**changed):
    return input_errors(dict(GOOD, **changed))


def test_good_inputs_have_no_error():
    assert errors() == []
    assert errors(target={'namespace': 'shop', 'label_selectors': ['app=web']}) == []
    assert errors(images={}, restart=['app']) == []
    assert errors(action='rollback', images={}) == []
    assert errors(action='undo', images={}) == []


@pytest.mark.parametrize('changed, expected', [
    ({'target': {'kind': 'Deployment', 'namespace': 'shop'}}, 'rollout_target needs namespace and kind + name'),
    ({'target': {'name': 'web', 'kind': 'Deployment'}}, 'rollout_target needs namespace'),
    ({'target': {'namespace': 'shop'}}, 'rollout_target needs namespace and kind + name (or label_selectors)'),
    ({'images': {}}, 'give rollout_images and/or rollout_resources, or rollout_restart alone'),
    ({'restart': ['app']}, 'rollout_restart cannot be combined with rollout_images or rollout_resources'),
    ({'action': 'release', 'target': {'namespace': 'shop', 'label_selectors': ['app=web']}},
     'rollout_action release needs a workload'),
    ({'action': 'undo', 'images': {}, 'target': {'namespace': 'shop', 'label_selectors': ['app=web']}},
     'rollout_action undo needs a workload (rollout_target.kind and .name)'),
    ({'action': 'undo'}, 'rollout_action undo takes the images and resources of the revision it goes back to: do '
                         'not give rollout_images, rollout_resources or rollout_restart'),
    ({'action': 'undo', 'images': {}, 'restart': ['app']}, 'do not give rollout_images'),
    ({'action': 'undo', 'images': {}, 'config': ['auto']}, 'rollout_action undo cannot be combined with rollout_config'),
    ({'batch_size': '150%'}, 'rollout_batch_size 150%: take a count (3) or a percentage from 0% to 100% (25%)'),
    ({'canary': 'two'}, 'take a count (3) or a percentage from 0% to 100% (25%)'),
    ({'max_unavailable': '-1'}, 'max_unavailable -1'),
    ({'partition': '100.5%'}, 'partition 100.5%'),
    ({'readiness_gate': 'example.com/g', 'drain_label': 'serving'},
     'rollout_readiness_gate (example.com/g) and rollout_drain_label (serving) are two ways to drain'),
    ({'enable_drain_label': 'yes', 'target': {'namespace': 'shop', 'label_selectors': ['app=web']}},
     'rollout_enable_drain_label needs rollout_target.kind and .name'),
    ({'require_drain': True}, 'rollout_require_drain: no drain mode is set'),
])
def test_each_mistake_names_its_variable(changed, expected):
    found = errors(**changed)
    assert len(found) == 1 and expected in found[0], found


def test_every_mistake_is_named_at_once():
    found = errors(images={}, batch_size='x', require_drain='true')
    assert [e.split(' ')[0] for e in found] == ['give', 'rollout_batch_size', 'rollout_require_drain:']


@pytest.mark.parametrize('count', ['', ' ', '0', '3', '25%', '12.5 %', '100%', 7, None])
def test_counts_and_percentages_up_to_100_are_accepted(count):
    assert errors(batch_size=count, canary=count, partition=count, max_unavailable=count) == []


@pytest.mark.parametrize('role, expected', [
    ({}, True),
    ({'window': 'false'}, False),
    ({'pause_seconds': '5'}, False),
    ({'verify_tasks': 'verify.yml'}, False),
    ({'stop_after_batches': 1}, False),
    ({'analysis': True, 'analysis_after': ['canary']}, True),
    ({'analysis': True, 'analysis_after': ['batch']}, False),
    ({'analysis': False, 'analysis_after': ['batch']}, True),
])
def test_the_window_unless_something_acts_between_the_steps(role, expected):
    assert window(role) is expected


def test_an_unknown_variable_is_named_with_the_closest_known_one():
    message = unknown_variables_message(['qqq', 'rollout_imgs'], ['rollout_images', 'rollout_target'])
    assert 'role: qqq, rollout_imgs (did you mean rollout_images?);' in message
    assert message.endswith('the role knows: rollout_images, rollout_target')


def preflight(monkeypatch, role, task_vars):
    from unittest import mock
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action.rollout_preflight import ActionModule
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    task = mock.MagicMock(args={'role': role}, async_val=0, check_mode=False, diff=False)
    plugin = ActionModule(task, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), mock.MagicMock())
    return plugin.run(task_vars=dict(task_vars, role_path=ROLE_PATH))


def test_the_preflight_returns_the_runs_id_and_start(monkeypatch):
    result = preflight(monkeypatch, GOOD, {'rollout_images': {}, 'rollout_result': {'old': True}})
    assert 'failed' not in result and 'ansible_facts' not in result and re.match(r'^rollout-[0-9a-f]+$', result['run_id'])
    assert re.match(r'^restart-\d{8}T\d{6}$', result['restart_id']) and result['window'] is True and result['started'] > 0
    again = preflight(monkeypatch, dict(GOOD, restart_id='nightly', pause_seconds=5), {})
    assert again['run_id'] != result['run_id'] and again['restart_id'] == 'nightly' and again['window'] is False
    assert result['gate_policy'] is None
    gated = preflight(monkeypatch, dict(GOOD, readiness_gate='example.com/Ready'), {})
    assert gated['gate_policy'] == 'inplace-k8s-gate-example-com-ready'


def test_the_preflight_fails_on_every_mistake_and_unknown_variable_at_once(monkeypatch):
    result = preflight(monkeypatch, dict(GOOD, batch_size='150%'), {'rollout_image': {'app': 'web:2'}})
    assert result['failed'] and 'run_id' not in result
    assert 'rollout_batch_size' in result['msg'] and '0% to 100%' in result['msg']
    assert 'rollout_image (did you mean rollout_images?)' in result['msg']
    assert 'rollout_result' not in result['msg'].split('the role knows:')[1]
    assert result['msg'].endswith('; nothing was changed')


def test_only_the_wrong_counts_are_named():
    found = errors(canary='+3', batch_size='1_000', max_unavailable='10%')
    assert found == ['rollout_batch_size 1_000, rollout_canary +3: take a count (3) or a percentage from 0% to 100% '
                     '(25%)']
