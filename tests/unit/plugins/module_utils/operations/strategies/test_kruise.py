# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import kruise
from ansible_collections.inplace.k8s.plugins.module_utils.options import Drain, Strategy, Wait
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load


def params(**changes):
    values = {'ordered': True, 'min_ready_seconds': 5, 'readiness_gate': None, 'drain_seconds': 3,
              'wait_timeout': 120, 'kruise_ttl_seconds_after_finished': 600,
              'kruise_termination_grace_period_seconds': None}
    values.update(changes)
    return values


def options(values):
    """KruiseOptions from container_recreate's options."""
    return kruise.options_for(values['ordered'], Wait.from_params(values), Drain.from_params(values),
                              Strategy.from_params(values))


def test_request_body_maps_every_option():
    pod = load('pod_web.json')
    body = kruise.request_body(pod, ['metrics', 'app'], options(params()), 'run1')
    meta = pod['metadata']
    assert body['apiVersion'] == 'apps.kruise.io/v1alpha1' and body['kind'] == 'ContainerRecreateRequest'
    assert body['metadata']['generateName'] == meta['name'] + '-'
    assert body['metadata']['namespace'] == meta['namespace']
    assert body['metadata']['labels'] == {
        'crr.apps.kruise.io/pod-name': meta['name'], 'crr.apps.kruise.io/pod-uid': meta['uid'],
        'crr.apps.kruise.io/node-name': 'node-1', 'app.kubernetes.io/managed-by': 'inplace.k8s',
        'inplace.k8s/recreate-run': 'run1'}
    assert body['metadata']['ownerReferences'] == [
        {'apiVersion': 'v1', 'kind': 'Pod', 'name': meta['name'], 'uid': meta['uid']}]
    assert body['spec'] == {
        'podName': meta['name'],
        'containers': [{'name': 'metrics'}, {'name': 'app'}],
        'strategy': {'failurePolicy': 'Fail', 'orderedRecreate': True, 'minStartedSeconds': 5},
        'activeDeadlineSeconds': 120,
        'ttlSecondsAfterFinished': 600,
    }


def test_request_body_drains_through_kruise_pod_ready_only():
    pod = load('pod_web.json')
    gated = options(params(readiness_gate='KruisePodReady', kruise_termination_grace_period_seconds=7))
    strategy = kruise.request_body(pod, ['app'], gated, 'r')['spec']['strategy']
    assert strategy['unreadyGracePeriodSeconds'] == 3 and strategy['terminationGracePeriodSeconds'] == 7
    other_gate = options(params(readiness_gate='inplace.k8s/ready'))
    assert 'unreadyGracePeriodSeconds' not in kruise.request_body(pod, ['app'], other_gate, 'r')['spec']['strategy']
    default_ttl = options(params(kruise_ttl_seconds_after_finished=None))
    assert kruise.request_body(pod, ['app'], default_ttl, 'r')['spec']['ttlSecondsAfterFinished'] == 1800


def request(phase, states, message=None):
    status = {'phase': phase, 'containerRecreateStates': [{'name': n, 'phase': p} for n, p in states]}
    if message:
        status['message'] = message
    return {'status': status}


def test_request_following():
    running = request('Recreating', [('app', 'Succeeded'), ('metrics', 'Recreating')])
    assert kruise.request_failure(running, 'app') is None and not kruise.request_succeeded(running, 'app')
    done = request('Completed', [('app', 'Succeeded'), ('metrics', 'Succeeded')])
    assert kruise.request_succeeded(done, 'metrics') and kruise.request_failure(done, 'metrics') is None
    failed = request('Completed', [('app', 'Failed'), ('metrics', 'Pending')], message='recreate failed for app')
    failed['status']['containerRecreateStates'][0]['message'] = 'kill container failed'
    assert kruise.request_failure(failed, 'app') == ('RecreateFailed', 'kill container failed')
    assert kruise.request_failure(failed, 'metrics') == ('RecreateFailed', 'recreate failed for app')
    assert kruise.request_failure({}, 'app') is None


class Discovery(object):
    def __init__(self, answer):
        self.answer = answer

    def request(self, method, path, query=None, body=None, content_type=None):
        assert (method, path) == ('GET', '/apis/apps.kruise.io/v1alpha1')
        if self.answer is None:
            raise NotFoundError('not found', status=404)
        return self.answer


def test_served_reads_api_discovery():
    assert kruise.served(Discovery({'resources': [{'name': 'containerrecreaterequests'}]}))
    assert not kruise.served(Discovery({'resources': [{'name': 'sidecarsets'}]}))
    assert not kruise.served(Discovery(None))


class FakeKube(object):
    """Enough of client.Kube for a KruiseStrategy: list, create and an (empty, slow) watch of requests."""

    def __init__(self):
        self.created = []

    def request(self, method, path, query=None, body=None, content_type=None):
        assert path == '/apis/apps.kruise.io/v1alpha1/namespaces/shop/containerrecreaterequests'
        if method == 'GET':
            assert query['labelSelector'].startswith('inplace.k8s/recreate-run=')
            return {'items': [], 'metadata': {'resourceVersion': '10'}}
        created = dict(body, metadata=dict(body['metadata'], name='web-0-abcde', resourceVersion='11'))
        self.created.append(created)
        return created

    def list_collection(self, path, label_selector=None, field_selector=None):
        answer = self.request('GET', path, {'labelSelector': label_selector, 'fieldSelector': field_selector})
        return answer['items'], answer['metadata']['resourceVersion']

    def watch_collection(self, path, resource_version, label_selector=None, field_selector=None, timeout_seconds=60):
        assert path == '/apis/apps.kruise.io/v1alpha1/namespaces/shop/containerrecreaterequests'
        assert label_selector.startswith('inplace.k8s/recreate-run=')
        import time
        time.sleep(0.05)
        return iter(())


def test_kruise_strategy_creates_one_request_and_follows_it():
    from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
    pod = load('pod_web.json')
    pod['metadata']['namespace'] = 'shop'
    kube = FakeKube()
    strategy = kruise.KruiseStrategy(kube, 'shop', options(params()))

    class Plan(object):
        def __init__(self, name):
            self.name = name
    plans = [Plan('app'), Plan('metrics')]
    tracked = dict((p.name, restart.Tracked({}, 0)) for p in plans)
    try:
        strategy.act(kube, pod, plans, tracked)
        assert len(kube.created) == 1
        assert kube.created[0]['metadata']['labels']['inplace.k8s/recreate-run'] == strategy.run_id
        assert tracked['app'].details['request'] == 'web-0-abcde'
        assert strategy.failure(pod, plans[0], tracked['app'], 0) is None
        assert not strategy.finished(pod, plans[0], tracked['app'])
        assert strategy.describe(plans[0], tracked['app'])['request'] == 'web-0-abcde'
        completed = dict(kube.created[0], status={'phase': 'Completed', 'containerRecreateStates': [
            {'name': 'app', 'phase': 'Succeeded'}, {'name': 'metrics', 'phase': 'Failed', 'message': 'boom'}]})
        completed['metadata'] = dict(completed['metadata'], resourceVersion='12')
        strategy._watch.observe(completed)
        assert strategy.finished(pod, plans[0], tracked['app'])
        assert strategy.failure(pod, plans[1], tracked['metrics'], 0) == ('RecreateFailed', 'boom')
        strategy._watch._apply({'type': 'DELETED', 'object': completed})
        assert strategy.failure(pod, plans[0], tracked['app'], 0)[0] == 'RecreateRequestDeleted'
    finally:
        strategy.close()
