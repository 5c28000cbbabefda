# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import gate_heal

from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import pod
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.gatefakes import GATE, FakeApi, gated


def test_pod_gate_states():
    assert gate_heal.pod_gate_state(gated('a'), GATE) == 'stranded'
    assert gate_heal.pod_gate_state(gated('a', condition='True'), GATE) == 'open'
    assert gate_heal.pod_gate_state(gated('a', condition='False'), GATE) == 'closed'
    assert gate_heal.pod_gate_state(pod('a', conditions={'Ready': 'False'}), GATE) == 'not_gated'
    assert gate_heal.pod_gate_state(gated('a', deleting=True), GATE) == 'terminating'


def test_heal_opens_only_stranded_pods_and_reports_each():
    api = FakeApi([gated('a'), gated('b', condition='False'), gated('c', condition='True'),
                   pod('d', conditions={'Ready': 'False'}), gated('e', deleting=True)])
    plan = gate_heal.heal(api, 'shop', GATE, check_mode=True)
    assert plan['changed'] and plan['opened'] == ['a'] and plan['stranded'] == ['a']
    assert [p['status'] for p in plan['pods']] == ['would_open', 'closed', 'open', 'not_gated', 'terminating']
    assert not [c for c in api.calls if c[0] == 'patch']

    done = gate_heal.heal(api, 'shop', GATE)
    assert done['opened'] == ['a'] and done['not_gated'] == ['d']
    assert done['summary'] == {'opened': 1, 'closed': 1, 'open': 1, 'not_gated': 1, 'terminating': 1, 'total': 5}
    assert [c for c in api.calls if c[0] == 'patch'] == [('patch', 'a', 'status')]
    condition = [c for c in api.pods['a']['status']['conditions'] if c['type'] == GATE][0]
    assert condition['status'] == 'True' and condition['reason'] == gate_heal.HEAL_REASON
    assert [c['status'] for c in api.pods['b']['status']['conditions'] if c['type'] == GATE] == ['False']

    assert not gate_heal.heal(api, 'shop', GATE)['changed']            # idempotent


def test_heal_never_opens_a_gate_closed_between_the_list_and_the_write():
    api = FakeApi([gated('a')])

    def drain_first(cluster, name):
        cluster.pods[name]['status']['conditions'].append({'type': GATE, 'status': 'False'})
        cluster.pods[name]['metadata']['resourceVersion'] = '2'
    api.before_write = drain_first
    result = gate_heal.heal(api, 'shop', GATE)
    assert result['pods'][0]['status'] == 'closed' and not result['changed']
    assert [c['status'] for c in api.pods['a']['status']['conditions'] if c['type'] == GATE] == ['False']


def test_heal_retries_a_conflict_and_reports_a_pod_that_went_away():
    api = FakeApi([gated('a'), gated('b')])

    def touch(cluster, name):
        cluster.pods[name]['metadata']['resourceVersion'] = '7'     # someone else wrote, gate still absent
    api.before_write = touch
    assert gate_heal.heal(api, 'shop', GATE)['opened'] == ['a', 'b']

    api = FakeApi([gated('a')])

    def delete(cluster, name):
        cluster.pods[name]['metadata']['resourceVersion'] = '9'
        cluster.pods.pop('gone', None)
        api.get_pod = lambda namespace, pod_name: FakeCluster.get_pod(cluster, namespace, 'gone')
    api.before_write = delete
    assert gate_heal.heal(api, 'shop', GATE)['pods'][0]['status'] == 'gone'


def test_heal_needs_patch_pods_status_before_writing():
    api = FakeApi([gated('a')], denied=['patch pods'])
    with pytest.raises(ForbiddenError, match='patch pods/status in namespace shop'):
        gate_heal.heal(api, 'shop', GATE)
    assert not [c for c in api.calls if c[0] == 'patch']
