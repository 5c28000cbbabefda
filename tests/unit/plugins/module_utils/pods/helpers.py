# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests of the pods' guardian share: a pod our run drained, a Kube of get_pod and pods/status patches, an entry of the guardian's list."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import container_status, pod

GATE = 'inplace.k8s/ready'


def drained_pod(name, gate='False', ready=True, waiting=None, uid=None, label=None):
    """A pod our run drained: the gate ``gate`` (with the drain's reason while False), the container app."""
    reason = drain.DRAIN_REASON if gate == 'False' else drain.READY_REASON
    return pod(name, uid=uid, version=None, labels={'serving': label} if label else {}, containers={'app': 'a:2'},
               gates=[GATE], phase='Running', conditions={GATE: {'status': gate, 'reason': reason}},
               statuses=[container_status('app', ready=ready, waiting=waiting)])


class Kube:
    """get_pod and pods/status patches over a dict of pods; ``later``: name -> pods returned by the next reads."""

    def __init__(self, *pods, **later):
        self.pods = {p['metadata']['name']: p for p in pods}
        self.later = later
        self.patches = []

    def get_pod(self, namespace, name):
        if self.later.get(name):
            self.pods[name] = self.later[name].pop(0)
        if name not in self.pods:
            raise NotFoundError('pods "%s" not found' % name, status=404)
        found = self.pods[name]
        if isinstance(found, Exception):
            raise found
        return found

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None, dry_run=False):
        self.patches.append((name, subresource, body['status']['conditions'][0]['status']))
        return self.pods[name]


def entry(name, policy='restore_if_healthy', mode='readiness_gate', name_of_drain=GATE, uid=None):
    return {'namespace': 'shop', 'name': name, 'uid': uid or 'uid-' + name, 'mode': mode, 'drain': name_of_drain,
            'policy': policy}
