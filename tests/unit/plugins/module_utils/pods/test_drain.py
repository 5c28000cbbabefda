# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import STRATEGIC_MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain

GATE = 'inplace.k8s/ready'


def test_gate_presence(web_pod):
    assert drain.has_gate(web_pod, GATE)
    assert not drain.has_gate(web_pod, 'other/gate')
    del web_pod['spec']['readinessGates']
    assert not drain.has_gate(web_pod, GATE)


def test_gate_status(web_pod):
    assert drain.gate_status(web_pod, GATE) == 'True'
    assert drain.gate_status(web_pod, 'other/gate') is None


@pytest.mark.parametrize('ready, status, reason', [(True, 'True', 'InplaceUpdateDone'), (False, 'False', 'InplaceUpdate')])
def test_gate_patch(ready, status, reason):
    assert drain.gate_patch(GATE, ready, now='T') == {'status': {'conditions': [
        {'type': GATE, 'status': status, 'reason': reason, 'lastTransitionTime': 'T'}]}}
    assert drain.gate_patch(GATE, ready, message='m', now='T')['status']['conditions'][0]['message'] == 'm'


def test_set_gate_uses_status_subresource_and_strategic_merge(web_pod):
    calls = []

    class Kube(object):
        def patch_pod(self, namespace, name, body, content_type=None, subresource=None):
            calls.append((namespace, name, content_type, subresource, body['status']['conditions'][0]['status']))
            return 'patched'

    assert drain.set_gate(Kube(), web_pod, GATE, False) == 'patched'
    assert calls == [('shop', 'web-0', STRATEGIC_MERGE_PATCH, 'status', 'False')]
