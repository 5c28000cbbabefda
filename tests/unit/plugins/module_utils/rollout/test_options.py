# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout_workload's options, parsed once at the edge (rollout/options.py), and the PodDisruptionBudget rule
both the batch gate and the window use (rollout/budgets.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from types import SimpleNamespace

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import budgets
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import (
    ROLLOUT_ARG_SPEC, RolloutOptions, Step,
)
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout


def parse(**params):
    return RolloutOptions.from_params(dict(dict(state='prepare', namespace='shop', images={'app': 'reg/app:2'}),
                                           **params))


def test_defaults_are_the_argument_specs():
    options = parse()
    for name, spec in ROLLOUT_ARG_SPEC.items():
        if 'default' in spec:
            assert getattr(options, name) == spec['default'], name
    assert options.names == () and options.label_selectors == () and options.watch is None


def test_the_internal_option_carries_the_roles_plumbing_in_its_types():
    run = {'batches': [['web-0']], 'next': 1}
    options = parse(names=['web-0'], max_failed_pods=2, internal={
        'verify': 'True', 'started': '1700000000.5', 'resume': run, 'analysis': 'failure',
        'analysis_after': ['canary', 'end']})
    assert options.verify is True and options.started == 1700000000.5 and options.resume == run
    assert options.analysis == 'failure' and options.analysis_after == ('canary', 'end')
    assert options.step() == Step(names=('web-0',), max_failed_pods=2, prepull_next=(), label=None,
                                  started=1700000000.5)


@pytest.mark.parametrize('params, message', [
    ({'internal': {'sconds': 5}}, 'internal: unknown key(s) sconds'),
    ({'internal': {'seconds': 5}}, 'internal: unknown key(s) seconds'),
    ({'internal': {'started': 'soon'}}, 'internal.started: expected a float'),
    ({'internal': {'verify': 'perhaps'}}, 'internal.verify: expected a boolean'),
    ({'internal': {'analysis': 'maybe'}}, "internal.analysis: success, failure or inconclusive, got 'maybe'"),
    ({'pause_seconds': -5}, 'pause_seconds must not be negative'),
    ({'images': None}, 'give images, resources or restart'),
    ({'min_ready_seconds': -1}, 'min_ready_seconds must not be negative'),
    ({'max_failed_pods': -1}, 'max_failed_pods must not be negative'),
    ({'state': 'release', 'label_selectors': ['app=web']}, 'state release needs kind and name'),
    ({'restart': ['app']}, 'restart cannot be combined with images or resources'),
    ({'internal': {'unknown_variables': ['rollout_imgs']}}, 'internal: unknown key(s) unknown_variables'),
])
def test_bad_options_are_refused_naming_the_option(params, message):
    with pytest.raises(ValidationError) as err:
        parse(**params)
    assert message in str(err.value)


def test_one_budget_rule_for_the_controllers_count_and_our_own():
    pdb = {'metadata': {'name': 'web'}, 'status': {'disruptionsAllowed': 1, 'desiredHealthy': 2}}
    assert budgets.allowed(pdb) == 1 and budgets.allowed(pdb, healthy=3) == 1
    assert budgets.refusal(pdb, 1) is None and budgets.refusal(pdb, 1, healthy=3) is None
    assert budgets.refusal(pdb, 2) == 'PodDisruptionBudget web allows 1 disruption(s), the batch would disrupt 2'
    assert budgets.refusal(pdb, 1, healthy=2) == 'PodDisruptionBudget web: 2 healthy pod(s) not in flight, it needs 2'


def test_the_module_edge_parses_the_params_once_and_sizes_the_client_to_the_batch(monkeypatch):
    monkeypatch.setattr(runner, 'client', lambda params, pool_size=10: ('client', pool_size))
    names = ['web-%d' % n for n in range(12)]
    module = SimpleNamespace(params=dict(state='batch', namespace='shop', label_selectors=['app=web'],
                                         images={'app': 'reg/app:2'}, names=names),
                             check_mode=True, _diff=True, run_command=None)
    rollout = Rollout.from_module(module)
    assert rollout.kube == ('client', 12) and rollout.options.names == tuple(names)
    assert rollout.check_mode is True and rollout.diff is True and rollout.workload is None


def test_previous_needs_a_workload():
    rollout = Rollout(None, parse(state='previous', label_selectors=['app=web']))
    with pytest.raises(ValidationError, match='state previous needs kind and name'):
        rollout.run()
