# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, ForbiddenError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations import gate_heal, gates
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.gatefakes import GATE, FakeApi, gated


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))


# ---- input

@pytest.mark.parametrize('gate', ['inplace.k8s/ready', 'Ready2', 'example.com/a_b.c-d'])
def test_gate_names_accepted(gate):
    assert gates.check_gate(gate) == gate


@pytest.mark.parametrize('gate', ['', 'a/b/c', "x/'; true", 'Example.com/x', 'x/' + 'a' * 64, '-a'])
def test_gate_names_refused_with_the_field(gate):
    with pytest.raises(ValidationError) as caught:
        gates.check_gate(gate)
    assert 'gate' in caught.value.msg and 'qualified name' in caught.value.msg


def test_default_policy_name_and_scope():
    assert gates.default_policy_name('inplace.k8s/ready') == 'inplace-k8s-gate-inplace-k8s-ready'
    assert gates.scope_selectors(['b', 'a', 'b']) == {'namespaceSelector': {'matchExpressions': [
        {'key': 'kubernetes.io/metadata.name', 'operator': 'In', 'values': ['a', 'b']}]}}
    assert gates.scope_selectors(object_selector={'matchLabels': {'app': 'web'}}) == {
        'objectSelector': {'matchLabels': {'app': 'web'}}}
    assert gates.scope_selectors() == {}
    with pytest.raises(ValidationError, match='mutually exclusive'):
        gates.scope_selectors(['a'], {'matchLabels': {}})
    with pytest.raises(ValidationError, match='object_selector must be a label selector'):
        gates.scope_selectors(object_selector={'app': 'web'})
    with pytest.raises(ValidationError, match='policy_name'):
        gates.policy_objects(GATE, policy_name='Bad_Name')


# ---- the policy objects

def test_policy_matches_status_updates_of_gated_pods_without_the_condition():
    policy, binding = gates.policy_objects(GATE, match={'objectSelector': {'matchLabels': {'app': 'web'}}})
    spec = policy['spec']
    assert spec['matchConstraints']['resourceRules'] == [
        {'apiGroups': [''], 'apiVersions': ['v1'], 'operations': ['UPDATE'], 'resources': ['pods/status']}]
    conditions = ' && '.join(c['expression'] for c in spec['matchConditions'])
    assert "g.conditionType == 'inplace.k8s/ready'" in conditions
    assert "has(object.status.conditions) && !object.status.conditions.exists(c, c.type == 'inplace.k8s/ready')" \
        in conditions
    patch = spec['mutations'][0]['jsonPatch']['expression']
    assert 'path: "/status/conditions/-"' in patch and 'status: "True"' in patch
    assert 'value: [' not in patch       # a list of typed objects as a value panics the 1.36.3 API server
    assert spec['failurePolicy'] == 'Ignore' and spec['reinvocationPolicy'] == 'Never'
    assert binding['spec'] == {'policyName': 'inplace-k8s-gate-inplace-k8s-ready',
                               'matchResources': {'objectSelector': {'matchLabels': {'app': 'web'}}}}
    assert policy['metadata']['annotations'] == {gates.GATE_ANNOTATION: GATE}


def test_shipped_policy_file_is_what_the_module_installs():
    with open(os.path.join(ROOT, 'policies', 'readiness-gate-policy.yml')) as handle:
        shipped = yaml.safe_load(handle)
    assert shipped == {'apiVersion': 'v1', 'kind': 'List', 'items': list(gates.policy_objects(gates.DEFAULT_GATE))}


def test_contains_ignores_server_defaults_only():
    assert gates.contains({'a': 1, 'b': {'c': 2, 'd': 3}, 'l': [{'x': 1, 'y': 2}]}, {'b': {'c': 2}, 'l': [{'x': 1}]})
    assert not gates.contains({'l': [{'x': 1}, {'x': 2}]}, {'l': [{'x': 1}]})
    assert not gates.contains({'a': {'c': 3}}, {'a': {'c': 2}})
    assert not gates.contains(None, {'a': 1})


# ---- ensure_policy

def test_present_creates_then_is_idempotent_then_updates_then_absent():
    api = FakeApi()
    first = gates.ensure_policy(api, 'present', GATE, match=gates.scope_selectors(['shop']))
    assert first['changed'] and [o['action'] for o in first['objects']] == ['created', 'created']
    assert [w[:2] for w in api.writes] == [('POST', gates.POLICIES), ('POST', gates.BINDINGS)]
    assert first['policy']['metadata']['resourceVersion']          # what the server stored

    again = gates.ensure_policy(api, 'present', GATE, match=gates.scope_selectors(['shop']))
    assert not again['changed'] and [o['action'] for o in again['objects']] == ['unchanged', 'unchanged']
    assert len(api.writes) == 2

    api.objects[(gates.BINDINGS, 'inplace-k8s-gate-inplace-k8s-ready')]['metadata']['labels']['team'] = 'a'
    wider = gates.ensure_policy(api, 'present', GATE, match=gates.scope_selectors(['shop', 'web']), check_mode=True)
    assert wider['changed'] and [o['action'] for o in wider['objects']] == ['unchanged', 'would_update']
    assert len(api.writes) == 2                                    # check mode wrote nothing
    key = 'MutatingAdmissionPolicyBinding/inplace-k8s-gate-inplace-k8s-ready'
    assert wider['diff']['before'][key]['spec']['matchResources'] != wider['diff']['after'][key]['spec'][
        'matchResources']

    updated = gates.ensure_policy(api, 'present', GATE, match=gates.scope_selectors(['shop', 'web']))
    assert [o['action'] for o in updated['objects']] == ['unchanged', 'updated']
    assert api.writes[-1][0] == 'PUT'
    assert updated['binding']['metadata']['labels']['team'] == 'a'  # other labels kept

    would = gates.ensure_policy(api, 'absent', GATE, check_mode=True)
    assert would['changed'] and [o['action'] for o in would['objects']] == ['would_delete', 'would_delete']
    gone = gates.ensure_policy(api, 'absent', GATE)
    assert [w[:2] for w in api.writes[-2:]] == [('DELETE', gates.BINDINGS), ('DELETE', gates.POLICIES)]
    assert gone['changed'] and not api.objects
    assert not gates.ensure_policy(api, 'absent', GATE)['changed']


def test_present_on_a_server_without_the_api_fails_and_absent_is_a_no_op():
    api = FakeApi(served=False)
    with pytest.raises(ValidationError, match='does not serve'):
        gates.ensure_policy(api, 'present', GATE)
    assert not gates.ensure_policy(api, 'absent', GATE)['changed'] and not api.writes


def test_missing_permission_is_named_before_any_write():
    api = FakeApi(denied=['create mutatingadmissionpolicybindings'])
    with pytest.raises(ForbiddenError) as caught:
        gates.ensure_policy(api, 'present', GATE)
    assert 'create mutatingadmissionpolicybindings (admissionregistration.k8s.io) (cluster-scoped)' in caught.value.msg
    assert not api.writes


def test_installed_for_lists_our_policies_of_the_gate():
    api = FakeApi()
    gates.ensure_policy(api, 'present', GATE, match=gates.scope_selectors(['shop']))
    gates.ensure_policy(api, 'present', 'other/gate')
    found = gates.installed_for(api, GATE)
    assert [f['policy'] for f in found] == ['inplace-k8s-gate-inplace-k8s-ready']
    assert found[0]['bindings'][0]['match']['namespaceSelector']['matchExpressions'][0]['values'] == ['shop']
    assert gates.installed_for(FakeApi(served=False), GATE) is None


def test_run_dispatches_and_drops_the_diff_without_diff_mode():
    api = FakeApi([gated('a')])
    params = {'state': 'present', 'gate': GATE, 'namespaces': ['shop'], 'namespace_selector': None,
              'object_selector': None, 'policy_name': None, 'binding_name': None, 'failure_policy': 'Ignore'}
    assert 'diff' not in gates.run(api, gates.GateOptions.from_params(params))
    healed = gates.run(api, gates.GateOptions.from_params({'state': 'healed', 'gate': GATE, 'namespace': 'shop'}))
    assert healed['opened'] == ['a'] and healed['policies'][0]['policy'] == 'inplace-k8s-gate-inplace-k8s-ready'


def test_healed_for_a_workload_takes_its_pods_from_the_workload_layer_given():
    api = FakeApi([gated('a'), gated('b'), gated('c')])
    asked = []

    def workload_pods(kube, kind, namespace, name):
        asked.append((kind, namespace, name))
        return [copy.deepcopy(api.pods[n]) for n in ('b', 'a')]
    options = gates.GateOptions.from_params({'state': 'healed', 'gate': GATE, 'namespace': 'shop',
                                             'kind': 'Deployment', 'name': 'web'})
    healed = gates.run(api, options, workload_pods=workload_pods)
    assert asked == [('Deployment', 'shop', 'web')]
    assert healed['opened'] == ['a', 'b'] and gate_heal.pod_gate_state(api.pods['c'], GATE) == 'stranded'


@pytest.mark.parametrize('status, missing', [(404, True), (500, False)])
def test_an_object_is_missing_by_its_404_status_not_by_the_message(status, missing):
    api = FakeApi()

    def answer(method, path, query=None, body=None, content_type=None):
        raise ApiError('the server could not find the requested resource', status=status)
    api.request = answer
    wanted = {'metadata': {'name': gates.default_policy_name(GATE)}}
    if missing:
        assert gates.converge(api, gates.POLICIES, wanted, present=False) == ('absent', None, None)
    else:
        with pytest.raises(ApiError, match='could not find'):
            gates.converge(api, gates.POLICIES, wanted, present=False)


def test_an_object_deleted_by_someone_else_meanwhile_is_absent():
    api = FakeApi()
    policy, _binding = gates.policy_objects(GATE)
    assert gates.converge(api, gates.POLICIES, policy)[0] == 'created'
    delete = api.request

    def raced(method, path, query=None, body=None, content_type=None):
        if method == 'DELETE':
            raise NotFoundError('not found', status=404)
        return delete(method, path, query, body, content_type)
    api.request = raced
    action, stored, after = gates.converge(api, gates.POLICIES, policy, present=False)
    assert action == 'absent' and stored['metadata']['name'] == policy['metadata']['name'] and after is None


def test_gates_imports_nothing_of_the_rollout_layer_above_it():
    with open(gates.__file__) as handle:
        assert 'module_utils.rollout' not in handle.read()
