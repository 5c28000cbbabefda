# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draining by label: option parsing, the EndpointSlice checks and the engine's drain/restore."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, record
from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.leftovers import undrain_leftovers

from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import web_pods as pods
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.helpers import NEW, run

LABEL = 'inplace.k8s/serving'
RS_PATH = '/apis/apps/v1/namespaces/shop/replicasets/web-7d9c8b6f5'


def labelled(count, value='true'):
    result = pods(count)
    for pod in result:
        pod['metadata']['labels'][LABEL] = value
        pod['metadata']['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': 'web-7d9c8b6f5',
                                               'controller': True, 'uid': 'rs-uid'}]
    return result


def cluster_with(pod_list, rs_selector=None):
    cluster = FakeCluster(pod_list)
    cluster.services = {'web': {'app': 'web', LABEL: 'true'}}
    cluster.objects = {RS_PATH: {'spec': {'selector': {'matchLabels': rs_selector or {'app': 'web'}}}}}
    return cluster


@pytest.mark.parametrize('text,expected', [
    ('inplace.k8s/serving', ('inplace.k8s/serving', 'true')),
    ('serving=yes', ('serving', 'yes')),
    (' example.com/in-lb = on ', ('example.com/in-lb', 'on')),
])
def test_parse_label(text, expected):
    assert drain.parse_label(text) == expected


@pytest.mark.parametrize('text,words', [
    ('bad key!', 'not a label key'),
    ('Example.COM/x=1', 'not a label key'),
    ('serving=', 'not a label value'),
    ('serving=-x', 'not a label value'),
    ('serving=drained', 'cannot be'),
    ('', 'not a label key'),
])
def test_parse_label_refuses(text, words):
    with pytest.raises(ValidationError) as info:
        drain.parse_label(text)
    assert words in info.value.msg and 'drain_label' in info.value.msg


def test_drainer_choice():
    assert drain.drainer() is None
    assert isinstance(drain.drainer('g'), drain.GateDrain)
    assert isinstance(drain.drainer(None, LABEL), drain.LabelDrain)
    with pytest.raises(ValidationError, match='give one of them'):
        drain.drainer('g', LABEL)


def test_selector_keys_and_slice_endpoints():
    assert drain.selector_keys({'matchLabels': {'a': '1'}, 'matchExpressions': [{'key': 'b'}]}) == set(['a', 'b'])
    assert drain.selector_keys({'app': 'web'}) == set(['app'])
    assert drain.selector_keys(None) == set()
    slices = [{'metadata': {'name': 's1', 'labels': {drain.SERVICE_LABEL: 'web'}}, 'endpoints': [
        {'targetRef': {'uid': 'u1'}, 'conditions': {'ready': False}},
        {'targetRef': {'uid': 'u2'}, 'conditions': {}}]}]
    assert drain.slice_endpoints(slices, 'u1') == [('s1', 'web', False)]
    assert drain.slice_endpoints(slices, 'u2') == [('s1', 'web', True)]   # ready unknown counts as serving
    assert drain.slice_endpoints(slices, 'u3') == []


def test_label_drain_takes_each_pod_out_of_the_slices_and_back():
    cluster = cluster_with(labelled(2))
    seen = []
    original = drain.LabelDrain.out_of_service

    def spy(self, kube, pod):
        result = original(self, kube, pod)
        seen.append((pod['metadata']['name'], cluster.pods[pod['metadata']['name']]['metadata']['labels'][LABEL],
                     result[0]))
        return result
    drain.LabelDrain.out_of_service = spy
    try:
        result, runner = run(cluster, {'app': NEW}, drain_label=LABEL, drain_seconds=1)
    finally:
        drain.LabelDrain.out_of_service = original
    assert [p['status'] for p in result['pods']] == ['updated', 'updated']
    for pod in result['pods']:
        assert pod['drain'] == {'mode': 'label', 'label': LABEL + '=true', 'status': LABEL + '=true', 'restored': True,
                                'observed_not_ready': True, 'services': ['web']}
        assert pod['readiness_gate'] is None
        assert 'drain' in pod['timings'] and 'undrain' in pod['timings']
    # Out of the slices while drained, before the image write.
    assert ('web-0', drain.DRAINED_VALUE, True) in seen and ('web-1', drain.DRAINED_VALUE, True) in seen
    for pod in cluster.pods.values():
        assert pod['metadata']['labels'][LABEL] == 'true'
        assert pod['spec']['containers'][0]['image'] == NEW
    assert not runner.warnings


def test_label_drain_claims_and_finishes_the_record_in_the_label_writes():
    cluster = cluster_with(labelled(1))
    run(cluster, {'app': NEW}, drain_label=LABEL)
    kinds = [c[2] for c in cluster.calls if c[0] == 'patch']
    assert kinds == [None, None, None]   # label drained + claim, image + record, label back + record done
    assert record.get(cluster.pods['web-0'], 'image')['state'] == 'done'


def test_label_drain_refused_when_the_controller_selects_by_the_label():
    cluster = cluster_with(labelled(1), rs_selector={'app': 'web', LABEL: 'true'})
    with pytest.raises(ValidationError, match='selects its pods by inplace.k8s/serving'):
        run(cluster, {'app': NEW}, drain_label=LABEL)
    assert not [c for c in cluster.calls if c[0] == 'patch']


def test_label_drain_refused_when_the_controller_cannot_be_read():
    cluster = cluster_with(labelled(1))
    cluster.objects = {RS_PATH: ApiError('forbidden', status=403)}
    with pytest.raises(ValidationError, match='cannot read ReplicaSet'):
        run(cluster, {'app': NEW}, drain_label=LABEL)


def test_pod_without_the_label_changed_without_draining_or_refused():
    cluster = cluster_with(labelled(1) + [dict(pods(2)[1])])
    result, runner = run(cluster, {'app': NEW}, drain_label=LABEL)
    assert [p['drain'] is None for p in result['pods']] == [False, True]
    assert any('web-1 has no serving label' in w for w in runner.warnings)
    cluster = cluster_with(labelled(1) + [dict(pods(2)[1])])
    with pytest.raises(ValidationError, match='require_readiness_gate.*web-1 \\(has no serving label'):
        run(cluster, {'app': NEW}, drain_label=LABEL, require_readiness_gate=True)


def test_label_left_drained_is_resumed_and_undrained_by_sync():
    pod_list = labelled(1, value=drain.DRAINED_VALUE)
    pod_list[0]['spec']['containers'][0]['image'] = NEW
    cluster = cluster_with(pod_list)
    cluster.run_kubelet('web-0')
    result, _runner = run(cluster, {'app': NEW}, drain_label=LABEL)
    assert result['pods'][0]['status'] == 'resumed'
    assert cluster.pods['web-0']['metadata']['labels'][LABEL] == 'true'
    # The rollout's sync does the same for converged pods.
    cluster.pods['web-0']['metadata']['labels'][LABEL] = drain.DRAINED_VALUE
    names = undrain_leftovers(cluster, [cluster.get_pod('default', 'web-0')], drain.LabelDrain(LABEL), {'app': NEW})
    assert names == ['web-0'] and cluster.pods['web-0']['metadata']['labels'][LABEL] == 'true'


def test_label_drain_warns_when_no_service_drops_the_pod():
    cluster = cluster_with(labelled(1))
    cluster.services = {'web': {'app': 'web'}}   # selects without the drain label: the pod stays listed
    result, runner = run(cluster, {'app': NEW}, drain_label=LABEL, wait_timeout=1)
    assert result['pods'][0]['status'] == 'updated'
    assert result['pods'][0]['drain']['observed_not_ready'] is False
    assert any('still a ready endpoint of Service(s) web' in w and 'select by inplace.k8s/serving' in w
               for w in runner.warnings)


def test_a_cancel_while_the_pod_leaves_the_slices_puts_it_back_unchanged(monkeypatch):
    cluster = cluster_with(labelled(1))
    cluster.services = {'web': {'app': 'web'}}   # the pod would stay listed for the whole timeout
    watch = Cancel()
    checks = []
    original = drain.LabelDrain.out_of_service

    def cancelled_on_the_first_check(self, kube, pod):
        checks.append(pod['metadata']['name'])
        watch.cancel('SIGTERM received')
        return original(self, kube, pod)
    monkeypatch.setattr(drain.LabelDrain, 'out_of_service', cancelled_on_the_first_check)
    result, runner = run(cluster, {'app': NEW}, cancel=watch, drain_label=LABEL, wait_timeout=30)
    assert checks == ['web-0']   # the wait stopped at once, not after 30 s
    assert result['pods'][0]['status'] == 'not_started' and 'put back as it was' in result['pods'][0]['reason']
    assert cluster.pods['web-0']['metadata']['labels'][LABEL] == 'true'
    assert cluster.pods['web-0']['spec']['containers'][0]['image'] != NEW
    assert not any('still a ready endpoint' in w for w in runner.warnings)


@pytest.mark.parametrize('ref', [
    {'apiVersion': 'v1?watch=true&timeoutSeconds=3600', 'kind': 'ReplicaSet', 'name': 'web-7d9c8b6f5'},
    {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': '../../secrets/x'},
    {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': 'web?watch=true'},
    {'apiVersion': 'v1', 'kind': 'Secret', 'name': 'x'},
    {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet/../../../../api/v1/secrets', 'name': 'x'},
    {'apiVersion': 'example.com/v1', 'kind': 'Widget', 'name': 'web'},
])
def test_an_owner_reference_that_is_not_a_known_controller_is_never_read(ref):
    """A pod patcher writes ownerReferences: only the allow-listed controllers are read, at a fixed path; any
    other owner is a warning, and no request names it."""
    pod_list = labelled(1)
    pod_list[0]['metadata']['ownerReferences'] = [dict(ref, controller=True, uid='u')]
    cluster = cluster_with(pod_list)
    result, runner = run(cluster, {'app': NEW}, drain_label=LABEL, drain_seconds=1)
    assert [p['status'] for p in result['pods']] == ['updated']
    requested = [c[2] for c in cluster.calls if c[0] == 'request']
    assert not [p for p in requested if '/secrets' in p or '?' in p or '..' in p or ref['name'] in p.split('/')]
    assert not [p for p in requested if 'replicasets' in p or 'widgets' in p]
    assert [w for w in runner.warnings if 'unknown owner' in w and 'web-0' in w and 'not read' in w]


def test_an_allow_listed_owner_is_read_at_its_fixed_path():
    pod_list = labelled(1)
    pod_list[0]['metadata']['ownerReferences'] = [{'apiVersion': 'batch/v1', 'kind': 'Job', 'name': 'nightly',
                                                   'controller': True, 'uid': 'u'}]
    cluster = cluster_with(pod_list)
    cluster.objects = {'/apis/batch/v1/namespaces/shop/jobs/nightly': {'spec': {'selector': {
        'matchLabels': {LABEL: 'true'}}}}}
    with pytest.raises(ValidationError, match='Job nightly selects its pods by inplace.k8s/serving'):
        run(cluster, {'app': NEW}, drain_label=LABEL)
