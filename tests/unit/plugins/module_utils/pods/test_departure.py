# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""pods/departure.py: why a pod went away, as the cluster says; pods/nodes.py: a node's Ready condition."""

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure
from ansible_collections.inplace.k8s.plugins.module_utils.pods.nodes import NodeHealth, not_ready


def pod(uid='u1', deleting=None, phase='Running', reason=None, target=None, node='node-1'):
    obj = {'metadata': {'name': 'web-0', 'uid': uid}, 'spec': {'nodeName': node},
           'status': {'phase': phase, 'conditions': []}}
    if deleting:
        obj['metadata']['deletionTimestamp'] = deleting
    if reason:
        obj['status']['reason'], obj['status']['message'] = reason, 'The node was low on resource: memory.'
    if target:
        obj['status']['conditions'].append({'type': 'DisruptionTarget', 'status': 'True', 'reason': target,
                                            'message': 'Eviction API: evicting'})
    return obj


@pytest.mark.parametrize('reason, cause', [
    ('EvictionByEvictionAPI', 'evicted'), ('PreemptionByScheduler', 'preempted'),
    ('DeletionByTaintManager', 'node-lost'), ('DeletionByPodGC', 'node-lost'),
    ('TerminationByKubelet', 'failed-evicted'), ('SomethingNew', 'deleted'),
])
def test_the_disruption_target_reason_names_the_cause(reason, cause):
    found = departure.departure(pod(target=reason, deleting='2026-01-01T00:00:00Z'), 'u1')
    assert found[0] == cause and found[1].startswith(reason) and '(node node-1)' in found[1]


def test_a_pod_that_stays_has_no_departure():
    assert departure.departure(pod(), 'u1') is None
    assert departure.departure(pod(target=None, phase='Pending'), 'u1') is None


def test_deleted_replaced_and_kubelet_evicted_pods():
    assert departure.departure(None) == ('deleted', 'the pod was deleted')
    assert departure.departure(pod(uid='u2'), 'u1') == (
        'deleted', 'the pod was deleted and replaced by its controller (uid u1 -> u2)')
    assert departure.departure(pod(deleting='T'), 'u1') == ('deleted', 'deleted at T')
    cause, detail = departure.departure(pod(phase='Failed', reason='Evicted'))
    assert cause == 'failed-evicted' and 'low on resource' in detail
    # A pod that failed for its own reasons did not go away: that is a failure, judged elsewhere.
    assert departure.departure(pod(phase='Failed', reason='DeadlineExceeded')) is None


class Watch:
    def __init__(self, last=None):
        self.last = last

    def departed(self, _name):
        return self.last


def test_the_last_version_the_watch_saw_deleted_tells_why():
    last = pod(target='EvictionByEvictionAPI', deleting='T')
    assert departure.of(Watch(last), 'web-0', 'u1')[0] == 'evicted'
    assert departure.of(Watch(pod(uid='other', target='EvictionByEvictionAPI')), 'web-0', 'u1')[0] == 'deleted'
    assert departure.of(None, 'web-0') == ('deleted', 'the pod was deleted')
    entry = departure.missing(Watch(last), 'web-0')
    assert (entry['cause'], entry['when'], entry['uid'], entry['node']) == ('evicted', 'before', 'u1', 'node-1')


def test_not_ready_names_the_condition():
    node = {'metadata': {'name': 'node-2'}, 'status': {'conditions': [
        {'type': 'Ready', 'status': 'Unknown', 'reason': 'NodeStatusUnknown',
         'message': 'Kubelet stopped posting node status.', 'lastTransitionTime': 'T'}]}}
    assert not_ready(node) == ('node node-2 is not ready: Ready=Unknown (NodeStatusUnknown: Kubelet stopped posting '
                               'node status.) since T')
    node['status']['conditions'][0]['status'] = 'True'
    assert not_ready(node) is None


class Nodes:
    def __init__(self, answer):
        self.answer, self.paths = answer, []

    def request(self, method, path):
        self.paths.append((method, path))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_a_node_look_files_its_trouble_and_stops_when_nodes_may_not_be_read():
    lost = {'metadata': {'name': 'node-1'}, 'status': {'conditions': [{'type': 'Ready', 'status': 'False'}]}}
    health = NodeHealth(Nodes(lost))
    assert health.look('node-1') is True and 'Ready=False' in health.trouble('node-1')
    assert health.kube.paths == [('GET', '/api/v1/nodes/node-1')]
    warnings = []
    denied = NodeHealth(Nodes(ForbiddenError('forbidden', status=403)), warn=warnings.append)
    assert denied.look('node-1') is False and 'get nodes' in warnings[0]
    denied.follow('node-1')   # denied: nothing followed, no thread
    assert denied._thread is None
    gone = NodeHealth(Nodes(NotFoundError('not found', status=404)))
    assert gone.look('node-1') is True and gone.trouble('node-1') is None   # the pod GC tells that one


def test_follow_and_unfollow_count_the_pods_of_a_node():
    health = NodeHealth(Nodes({'status': {}}), interval=3600)
    health.follow('node-1')
    health.follow('node-1')
    health.unfollow('node-1')
    assert health._followed == {'node-1': 1}
    health.unfollow('node-1')
    assert health._followed == {}
    health.stop()


def test_a_gone_entry_takes_node_and_cause_from_the_version_the_watch_saw_deleted():
    last = pod(target='EvictionByEvictionAPI', deleting='T', node='node-3')
    found = departure.gone_entry(Watch(last), 'web-0', 'after', 'u1')
    assert (found['cause'], found['node'], found['uid'], found['when']) == ('evicted', 'node-3', 'u1', 'after')
    # replaced under the same name: the old pod's last version tells why it went
    found = departure.gone_entry(Watch(last), 'web-0', 'after', 'u1', pod(uid='u2'))
    assert (found['cause'], found['uid']) == ('evicted', 'u1')
    assert departure.gone_entry(Watch(None), 'web-0', 'after', 'u1', pod()) is None
