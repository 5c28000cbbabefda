# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout/messages.py: the text the role prints, through the module's action (plugins/action/rollout_workload.py)
as the role's tasks call it, and the functions' own cases."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from unittest import mock

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.rollout import messages

TARGET = {'kind': 'Deployment', 'name': 'web', 'namespace': 'shop'}
FAILED = [{'name': 'web-1', 'status': 'failed', 'reason': 'ImagePullBackOff'}]
HELD = ('. The workload stays held: run the same change again to resume (%s), set rollout_action=rollback to restore '
        'the template and the pods from before, or rollout_action=release to release the controller and leave the '
        'pods as they are')


def call(monkeypatch, args, returned, task_vars=None, check_mode=False):
    """The role's task through the module's action: what it returns, and the module args it ran with (or None)."""
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action.rollout_workload import ActionModule
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    task = mock.MagicMock(args=args, async_val=0)
    task._role.get_name.return_value = 'inplace.k8s.rollout'
    templar = mock.MagicMock()
    templar.template.side_effect = lambda value: value
    plugin = ActionModule(task, mock.MagicMock(transport='ssh', has_native_async=False),
                          mock.MagicMock(check_mode=check_mode), mock.MagicMock(), templar, mock.MagicMock())
    plugin._remove_tmp_path = lambda path: None
    seen = []
    plugin._execute_module = lambda module_name, module_args, task_vars, wrap_async: seen.append(module_args) or dict(
        returned)
    result = plugin.run(task_vars=dict({'rollout_target': TARGET, 'rollout_images': {'app': 'web:2'}},
                                       **(task_vars or {})))
    return result, (seen[0] if seen else None)


def test_a_failed_analysis_is_the_failure_of_the_call_that_judged_it(monkeypatch):
    resume = {'point': {'after': 'the canary', 'verify': False, 'analysis': True}}
    args = {'state': 'rollout', 'internal': {'role_variables': True, 'resume': resume, 'analysis': 'failure',
                                             'analysis_summary': '1 of 1 check(s) failed: errors'}}
    report = {'failed_pods': [], 'not_started': [], 'rolled_back': True}
    result, module_args = call(monkeypatch, args, {'run': {'recreated': []}, 'report': report})
    assert 'analysis_summary' not in module_args['internal'] and module_args['internal']['analysis'] == 'failure'
    assert result['failure'] == ('rolled back after the analysis (the canary): 1 of 1 check(s) failed: errors'
                                 + messages.ROLLED_BACK_TAIL)


def test_a_call_that_stands_at_a_point_or_reached_the_target_has_no_failure(monkeypatch):
    report = {'failed_pods': [], 'not_started': [], 'rolled_back': False}
    point = {'run': {'point': {'after': 'batch 1'}, 'recreated': []}, 'report': report}
    assert 'failure' not in call(monkeypatch, {'state': 'rollout', 'internal': {'role_variables': True}}, point)[0]
    done = call(monkeypatch, {'state': 'rollout', 'internal': {'role_variables': True}},
                {'run': {'recreated': []}, 'report': report})[0]
    assert done['failure'] == ''


@pytest.mark.parametrize('outcome, on_failure, expected', [
    ('success', 'halt', 'analysis after batch 2: success: 2 of 2 check(s) passed'),
    ('failure', 'halt', 'analysis after batch 2: failure: errors 7%; rollout_on_failure=halt: halted, the workload '
                        'stays held'),
    ('failure', 'rollback', 'analysis after batch 2: failure: errors 7%; rollout_on_failure=rollback: rolling back'),
    ('inconclusive', 'rollback', 'analysis after batch 2: inconclusive: no data; halted, the workload stays held (run '
                                 'the same change again to check again and resume)'),
])
def test_the_analysis_line_for_each_outcome(outcome, on_failure, expected):
    summary = expected.split('batch 2: ')[1].split(';')[0]
    assert messages.analysis_line('batch 2', outcome, summary, on_failure) == expected


def test_a_call_that_stands_at_an_analysis_returns_its_line_for_each_outcome(monkeypatch):
    point = {'after': 'the canary', 'verify': False, 'analysis': True}
    result = call(monkeypatch, {'state': 'rollout', 'internal': {'role_variables': True}},
                  {'run': {'point': point}, 'report': {}}, task_vars={'rollout_on_failure': 'rollback'})[0]
    lines = result['analysis_lines']
    assert 'failure' not in result and sorted(lines) == ['failure', 'inconclusive', 'success']
    # as analysis.yml fills it in (Jinja's format: %), a summary with a percent sign in it
    assert lines['failure'] % 'failure: ratio 7% > 5%' == messages.analysis_line(
        'the canary', 'failure', 'failure: ratio 7% > 5%', 'rollback')
    assert lines['success'] % 'ok' == 'analysis after the canary: ok'
    verify = call(monkeypatch, {'state': 'rollout', 'internal': {'role_variables': True}},
                  {'run': {'point': dict(point, verify=True, analysis=False)}, 'report': {}})[0]
    assert 'analysis_lines' not in verify


def test_the_drain_label_report_of_a_workload(monkeypatch):
    found = {'unlabelled': ['web-0'], 'drained': [], 'template_labelled': False, 'service': 'web',
             'service_selects': False}
    args = {'state': 'drain_label', 'internal': {'role_variables': True}}
    variables = {'rollout_drain_label': 'serving', 'rollout_enable_drain_label': True}
    result, module_args = call(monkeypatch, args, {'drain_label': found}, variables, check_mode=True)
    assert module_args['drain_label'] == 'serving'
    assert result['lines'] == [
        'drain mode: label serving (set to drained while a pod changes; a pod leaves the EndpointSlices before its '
        'restart and is back after)',
        'pods without the label: web-0 (would label in place)', 'template carries it: no (would label under the hold)',
        'Service selecting it: web (would add to its selector)', 'left drained by an interrupted run: none']
    reported = call(monkeypatch, args, {'drain_label': found}, dict(variables, rollout_enable_drain_label=False))[0]
    assert reported['lines'][1:4] == [
        'pods without the label: web-0 - changed without draining; set rollout_enable_drain_label to add it in place, '
        'no pod is recreated',
        'template carries it: no - pods the controller creates later would not serve; set rollout_enable_drain_label',
        'Service selecting it: web (not yet: set rollout_enable_drain_label)']


def test_the_drain_label_report_of_pods_chosen_by_label_runs_no_module(monkeypatch):
    args = {'state': 'drain_label', 'internal': {'role_variables': True}}
    variables = {'rollout_drain_label': 'serving', 'rollout_target': {'namespace': 'shop',
                                                                      'label_selectors': ['app=web']}}
    result, module_args = call(monkeypatch, args, {}, variables)
    assert module_args is None and result['changed'] is False and result['drain_label'] == {}
    assert result['lines'][1] == 'pods (label_selectors): those without the label are changed without draining'


def test_what_a_rollback_put_back(monkeypatch):
    groups = [{'names': ['web-0', 'web-1'], 'images': {'app': 'web:1'}, 'resources': {}}]
    result = call(monkeypatch, {'state': 'rollback', 'internal': {'role_variables': True}}, {'groups': groups})[0]
    assert result['lines'] == ["rolled back 2 pod(s) to {'app': 'web:1'} {}"]
    assert messages.rollback_lines(groups, check_mode=True)[0].startswith('would roll back 2 pod(s)')
    assert messages.rollback_lines([]) == []


def test_a_failed_module_call_gets_no_text(monkeypatch):
    result = call(monkeypatch, {'state': 'rollback', 'internal': {'role_variables': True}},
                  {'failed': True, 'msg': 'no'})[0]
    assert 'lines' not in result


@pytest.mark.parametrize('report, recreated, analysis, expected', [
    ({'failed_pods': FAILED, 'not_started': ['web-2']}, [], None,
     'halted after 1 failed pod(s): web-1: failed: ImagePullBackOff; 1 pod(s) not started (the window halted): '
     'web-2' + HELD % 'the failed pods are tried again'),
    ({'failed_pods': []}, [], {'after': 'batch 2', 'outcome': 'inconclusive', 'summary': 'no data'},
     'halted after the analysis (batch 2): no data' + HELD % 'the checks run again'),
    ({'failed_pods': []}, ['web-0'], None,
     'pods recreated instead of updated in place: web-0; halted' + HELD % 'the failed pods are tried again'),
    ({'failed_pods': []}, [], {'after': 'batch 2', 'outcome': 'success', 'summary': 'ok'}, ''),
])
def test_the_failure(report, recreated, analysis, expected):
    assert messages.failure(report, recreated, analysis) == expected


def test_the_drain_label_report_with_everything_in_place():
    found = {'unlabelled': [], 'drained': ['web-2'], 'template_labelled': True, 'service': 'web',
             'service_selects': True}
    assert messages.drain_label_lines('serving', found)[1:] == [
        'pods without the label: none', 'template carries it: yes', 'Service selecting it: web (yes)',
        'left drained by an interrupted run: web-2']
    assert messages.drain_label_lines('serving', dict(found, service=None))[3] == (
        'Service selecting it: not checked (set rollout_drain_label_service); the Service must select serving or '
        'draining takes no pod out')
