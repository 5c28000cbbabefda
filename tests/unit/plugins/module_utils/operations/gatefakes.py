# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

"""Fakes of the readiness-gate tests (test_gates.py, test_gate_heal.py)."""

import copy

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConflictError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import gates

from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import pod
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster

GATE = 'inplace.k8s/ready'


def gated(name, condition=None, deleting=None):
    """A pod that lists the gate; ``condition`` its status, none when None."""
    conditions = {'Ready': 'False'}
    if condition:
        conditions[GATE] = condition
    return pod(name, gates=[GATE], conditions=conditions, deleting=deleting)


class FakeApi(FakeCluster):
    """FakeCluster's pods plus what gates.py asks with request(): discovery, the admission objects (stored with
    server defaults added), SelfSubjectAccessReviews (``denied``: 'verb resource')."""

    def __init__(self, pods=(), served=True, denied=()):
        super(FakeApi, self).__init__(list(pods), kubelet=False)
        self.served, self.denied = served, set(denied)
        self.objects = {}
        self.writes = []
        self.rv = 100

    def request(self, method, path, query=None, body=None, content_type=None):
        if path == access.REVIEW_PATH:
            attrs = body['spec']['resourceAttributes']
            return {'status': {'allowed': '%s %s' % (attrs['verb'], attrs['resource']) not in self.denied}}
        if path == '/apis/' + gates.API_VERSION:
            if not self.served:
                raise NotFoundError('the server could not find the requested resource', status=404)
            return {'resources': [{'name': gates.POLICIES}, {'name': gates.BINDINGS}]}
        parts = path[len('/apis/' + gates.API_VERSION) + 1:].split('/')
        resource, name = parts[0], parts[1] if len(parts) > 1 else None
        if method == 'GET' and name is None:
            return {'items': [copy.deepcopy(o) for (r, _n), o in sorted(self.objects.items()) if r == resource]}
        if method == 'GET':
            if (resource, name) not in self.objects:
                raise NotFoundError('not found', status=404)
            return copy.deepcopy(self.objects[(resource, name)])
        self.writes.append((method, resource, name or body['metadata']['name']))
        if method == 'DELETE':
            return self.objects.pop((resource, name))
        if method == 'PUT' and body['metadata'].get('resourceVersion') != \
                self.objects[(resource, name)]['metadata']['resourceVersion']:
            raise ConflictError('modified', status=409)
        stored = copy.deepcopy(body)
        self.rv += 1
        stored['metadata'].update(resourceVersion=str(self.rv), uid='u')
        if resource == gates.POLICIES:      # server defaults
            stored['spec']['matchConstraints'].setdefault('matchPolicy', 'Equivalent')
            stored['spec']['matchConstraints']['resourceRules'][0].setdefault('scope', '*')
        self.objects[(resource, stored['metadata']['name'])] = stored
        return copy.deepcopy(stored)
