# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import record
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import convergence, selectors, templates, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils import appsfakes

TEMPLATE = {
    'metadata': {'labels': {'app': 'db'}},
    'spec': {
        'initContainers': [{'name': 'setup', 'image': 'reg/setup:1'},
                           {'name': 'log', 'image': 'reg/log:1', 'restartPolicy': 'Always'}],
        'containers': [{'name': 'app', 'image': 'reg/app:1',
                        'resources': {'requests': {'cpu': '100m', 'memory': '64Mi', 'ephemeral-storage': '1Gi'},
                                      'limits': {'cpu': '200m', 'memory': '128Mi'}}}],
    },
}


def workload_of(kind, spec, status=None, generation=1):
    w = workload.Workload(None, kind, 'ns', 'w')
    w.obj = {'metadata': {'name': 'w', 'generation': generation}, 'spec': spec, 'status': status or {}}
    return w


def test_template_refusals_in_place_change():
    assert templates.template_refusals(TEMPLATE, {'app': 'reg/app:2', 'log': 'reg/log:2'},
                                       {'app': {'requests': {'cpu': '150m'}}}) == []


def test_template_refusals_name_the_field_and_reason():
    refusals = templates.template_refusals(TEMPLATE, {'setup': 'reg/setup:2'})
    assert refusals == [{'field': 'spec.initContainers[setup].image',
                         'reason': 'a plain init container has already run in existing pods; its image only '
                                   'applies to new pods'}]
    single = {'spec': {'containers': [copy.deepcopy(TEMPLATE['spec']['containers'][0])]}}
    qos = templates.template_refusals(single, None, {'app': {'requests': {'cpu': '200m', 'memory': '128Mi'}}})
    assert qos[0]['field'] == 'spec.containers[*].resources' and 'Burstable to Guaranteed' in qos[0]['reason']


def test_template_refusals_unknown_container_and_bad_resources():
    with pytest.raises(ValidationError, match='unknown container'):
        templates.template_refusals(TEMPLATE, {'nope': 'x:1'})
    with pytest.raises(ValidationError, match='only cpu and memory'):
        templates.template_refusals(TEMPLATE, None, {'app': {'limits': {'nvidia.com/gpu': '1'}}})


def test_apply_change_keeps_other_resources():
    after = templates.apply_change(TEMPLATE, {'app': 'reg/app:2'}, {'app': {'requests': {'cpu': '150m'}}})
    app = after['spec']['containers'][0]
    assert app['image'] == 'reg/app:2'
    assert app['resources']['requests'] == {'cpu': '150m', 'memory': '64Mi', 'ephemeral-storage': '1Gi'}
    assert TEMPLATE['spec']['containers'][0]['image'] == 'reg/app:1'


def test_change_ops_guarded_and_minimal():
    ops = templates.change_ops(TEMPLATE, '/spec/template', {'log': 'reg/log:2', 'app': 'reg/app:1'},
                               {'app': {'requests': {'cpu': '0.1'}}})
    assert ops == [{'op': 'test', 'path': '/spec/template/spec/initContainers/1/name', 'value': 'log'},
                   {'op': 'add', 'path': '/spec/template/spec/initContainers/1/image', 'value': 'reg/log:2'}]


def pod_of(template, statuses=None, conditions=None):
    pod = {'metadata': {'name': 'p'}, 'spec': copy.deepcopy(template['spec']),
           'status': {'phase': 'Running', 'conditions': conditions or [],
                      'containerStatuses': statuses or [], 'initContainerStatuses': []}}
    return pod


def running(name, image, **extra):
    status = {'name': name, 'image': image, 'ready': True, 'started': True, 'state': {'running': {}},
              'containerID': 'fake://1'}
    status.update(extra)
    return status


def test_pod_matches_and_converged():
    after = templates.apply_change(TEMPLATE, {'app': 'reg/app:2'}, {'app': {'requests': {'cpu': '150m'}}})
    target = ({'app': 'reg/app:2'}, {'app': {'requests': {'cpu': '150m'}}})
    assert not convergence.pod_matches(pod_of(TEMPLATE), *target)
    pod = pod_of(after, [running('app', 'reg/app:2', resources={
        'requests': {'cpu': '150m', 'memory': '64Mi'}, 'limits': {'cpu': '200m', 'memory': '128Mi'}})])
    assert convergence.pod_matches(pod, *target)
    assert convergence.pod_converged(pod, *target)
    pod['status']['containerStatuses'][0]['resources']['requests']['cpu'] = '100m'
    assert not convergence.pod_converged(pod, *target)


def test_revision_from_history_picks_the_matching_template():
    revisions = [
        {'metadata': {'name': 'agent-1', 'labels': {'controller-revision-hash': '1'}}, 'revision': 1,
         'data': {'spec': {'template': dict(TEMPLATE, **{'$patch': 'replace'})}}},
        {'metadata': {'name': 'agent-2', 'labels': {'controller-revision-hash': '2'}}, 'revision': 2,
         'data': {'spec': {'template': {'$patch': 'replace', 'spec': {}}}}},
    ]
    assert workload.revision_from_history(revisions, TEMPLATE) == ('agent-1', '1')
    assert workload.revision_from_history(revisions, {'spec': {'x': 1}}) == (None, None)


@pytest.mark.parametrize('old, replicas, expected', [([], 3, 0), ([0, 1], 5, 2), ([1], 3, 3), ([2, 0], 4, 4)])
def test_sts_partition_for(old, replicas, expected):
    assert workload.sts_partition_for(old, replicas) == expected


def test_selectors():
    selector = {'matchLabels': {'app': 'db'}, 'matchExpressions': [
        {'key': 'tier', 'operator': 'In', 'values': ['a', 'b']}, {'key': 'canary', 'operator': 'DoesNotExist'}]}
    assert selectors.selector_string(selector) == 'app=db,tier in (a,b),!canary'
    assert selectors.selector_matches(selector, {'app': 'db', 'tier': 'a'})
    assert not selectors.selector_matches(selector, {'app': 'db', 'tier': 'a', 'canary': 'x'})
    assert not selectors.selector_matches(selector, {'app': 'db'})
    assert selectors.selector_matches({}, {'any': 'thing'})


def test_hold_and_release_statefulset_rolling_update():
    w = workload_of('StatefulSet', {'replicas': 3, 'updateStrategy': {'type': 'RollingUpdate',
                                                                      'rollingUpdate': {'partition': 0}}})
    saved = w.saved_strategy()
    assert w.hold_spec() == {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 3}}}
    w.obj['spec'].update(w.hold_spec())
    assert w.hold_spec() is None
    released = {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}}}
    assert w.release_spec(saved, [], 3) == (released, False)
    # pods 0 and 1 left on the old revision: the partition keeps the controller away from them
    assert w.release_spec(saved, [0, 1], 3)[0]['updateStrategy']['rollingUpdate']['partition'] == 2


def test_release_statefulset_on_delete_passes_through_rolling_update():
    w = workload_of('StatefulSet', {'replicas': 3, 'updateStrategy': {'type': 'OnDelete'}})
    assert w.hold_spec() is None
    w.obj['status'] = {'currentRevision': 'db-1', 'updateRevision': 'db-2'}
    # the pass through RollingUpdate is undone by writing OnDelete back
    assert w.release_spec(w.saved_strategy(), [], 3) == (
        {'updateStrategy': {'type': 'OnDelete', 'rollingUpdate': None}}, True)
    w.obj['status'] = {'currentRevision': 'db-2', 'updateRevision': 'db-2'}
    assert w.release_spec(w.saved_strategy(), [], 3) == (None, False)


def test_hold_and_release_daemonset_and_deployment():
    ds = workload_of('DaemonSet', {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': 1}}})
    saved = ds.saved_strategy()
    assert ds.hold_spec() == {'updateStrategy': {'type': 'OnDelete', 'rollingUpdate': None}}
    ds.obj['spec']['updateStrategy'] = {'type': 'OnDelete'}
    assert ds.release_spec(saved, [], 3)[0] == saved
    assert ds.release_spec(saved, [None], 3)[0] is None and ds.warnings
    deploy = workload_of('Deployment', {'replicas': 2})
    assert deploy.hold_spec() == {'paused': True}
    saved = deploy.saved_strategy()
    deploy.obj['spec']['paused'] = True
    assert deploy.release_spec(saved, [], 2) == ({'paused': False}, False)


@pytest.mark.parametrize('kind, status, all_updated, expected', [
    ('StatefulSet', {'observedGeneration': 2, 'updateRevision': 'r2', 'currentRevision': 'r2', 'updatedReplicas': 3,
                     'readyReplicas': 3}, True, True),
    ('StatefulSet', {'observedGeneration': 2, 'updateRevision': 'r2', 'currentRevision': 'r1', 'updatedReplicas': 3,
                     'readyReplicas': 3}, True, False),
    ('StatefulSet', {'observedGeneration': 1, 'updateRevision': 'r2', 'currentRevision': 'r2'}, True, False),
    ('DaemonSet', {'observedGeneration': 2, 'desiredNumberScheduled': 3, 'updatedNumberScheduled': 3,
                   'numberReady': 3}, True, True),
    ('Deployment', {'observedGeneration': 2, 'replicas': 3, 'updatedReplicas': 3, 'availableReplicas': 3}, True, True),
    # old pods still terminating after a rolling update
    ('Deployment', {'observedGeneration': 2, 'replicas': 4, 'updatedReplicas': 3, 'availableReplicas': 3}, True, False),
    ('Deployment', {'observedGeneration': 2, 'updatedReplicas': 2, 'availableReplicas': 3}, True, False),
])
def test_converged(kind, status, all_updated, expected):
    w = workload_of(kind, {'replicas': 3}, status, generation=2)
    assert w.converged(w.obj, all_updated) is expected


def test_record_roundtrip():
    rec = {'state': 'in-progress', 'target': {'images': {'app': 'x:2'}}}
    body = record.workload_patch({'metadata': {'resourceVersion': '7'}}, rec, {'paused': True})
    assert body['metadata']['resourceVersion'] == '7' and body['spec'] == {'paused': True}
    assert record.workload_record({'metadata': {'annotations': body['metadata']['annotations']}}) == rec
    assert record.workload_record({'metadata': {'annotations': {record.WORKLOAD_ANNOTATION: 'not json'}}}) is None


def test_pod_matches_a_container_switched_to_the_same_digest_by_container_recreate():
    digest = 'reg/app@sha256:' + 'a' * 64
    pod = pod_of(templates.apply_change(TEMPLATE, {'app': digest}, None))
    assert not convergence.pod_matches(pod, {'app': 'reg/app:2'})
    rec = {'recreate': {'state': 'done', 'target': {'app': digest}, 'before': {'app': {'image': 'reg/app:2'}}}}
    pod['metadata'].setdefault('annotations', {})['inplace.k8s/state'] = json.dumps(rec)
    assert convergence.pod_matches(pod, {'app': 'reg/app:2'})
    assert not convergence.pod_matches(pod, {'app': 'reg/app:3'})


def test_template_refusals_of_resources():
    init_resize = templates.template_refusals(TEMPLATE, None, {'setup': {'requests': {'cpu': '50m'}}})
    assert init_resize == [{'field': 'spec.initContainers[setup].resources', 'reason': 'plain init containers cannot be resized'}]
    assert templates.template_refusals(TEMPLATE, None, {'app': {'requests': {'cpu': '100m'}}}) == []
    above = templates.template_refusals(TEMPLATE, None, {'app': {'requests': {'cpu': '300m'}}})
    assert [r['field'] for r in above] == ['spec.containers[app].resources'] and 'cpu' in above[0]['reason']


@pytest.mark.parametrize('expression, labels, expected', [
    ({'key': 'tier', 'operator': 'NotIn', 'values': ['a']}, {'tier': 'a'}, False),
    ({'key': 'tier', 'operator': 'NotIn', 'values': ['a']}, {'tier': 'b'}, True),
    ({'key': 'tier', 'operator': 'NotIn', 'values': ['a']}, {}, True),
    ({'key': 'tier', 'operator': 'Exists'}, {}, False),
    ({'key': 'tier', 'operator': 'Exists'}, {'tier': ''}, True),
    ({'key': 'tier', 'operator': 'DoesNotExist'}, {'tier': 'a'}, False),
    ({'key': 'tier', 'operator': 'In', 'values': ['a']}, {'tier': 'b'}, False),
])
def test_selector_expressions(expression, labels, expected):
    assert selectors.selector_matches({'matchExpressions': [expression]}, labels) is expected


def test_selector_string_of_every_operator():
    selector = {'matchExpressions': [{'key': 'a', 'operator': 'NotIn', 'values': ['x', 'y']},
                                     {'key': 'b', 'operator': 'Exists'}]}
    assert selectors.selector_string(selector) == 'a notin (x,y),b'


def test_a_deployments_pods_are_told_by_its_replicasets_listed_again_only_for_an_owner_not_seen():
    # A list of ReplicaSets waits for the API server's cache of them: listed once, and again only when a pod's
    # controller is a ReplicaSet that list did not have (one made since).
    kube = appsfakes.FakeApps([appsfakes.workload('Deployment')])
    w = workload.Workload(kube, 'Deployment', appsfakes.NAMESPACE, 'web')
    w.read()

    def lists():
        return len([c for c in kube.calls if c[:2] == ('request', 'GET') and c[2].endswith('/replicasets')])
    assert len(w.pods()) == 3 and lists() == 1
    assert len(w.pods()) == 3 and lists() == 1
    items, _version = kube.list_pods(appsfakes.NAMESPACE, w.selector())
    stranger = copy.deepcopy(items[0])
    stranger['metadata']['ownerReferences'] = [{'kind': 'ReplicaSet', 'name': 'web-new', 'uid': 'uid-web-new',
                                                'controller': True}]
    assert [p['metadata']['name'] for p in w.pods(items[1:] + [stranger])] == [
        p['metadata']['name'] for p in items[1:]] and lists() == 2
