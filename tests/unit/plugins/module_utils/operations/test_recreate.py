# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine, recreate
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import imageref, restart
from ansible_collections.inplace.k8s.plugins.module_utils.options import RestartChange, Target, Task, Wait
from ansible_collections.inplace.k8s.plugins.module_utils.pods import images, plan, record
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load, spec_of, status_of
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster, FakeWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.operations.helpers import options

APP_DIGEST = 'registry.example/app@sha256:5b0c3f1e2d4a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e'


def settings(**changes):
    values = dict(containers=None, ordered=False, restarted_after=None)
    values.update(changes)
    return recreate.Settings(**values)


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Recording(restart.Strategy):
    """A strategy that records what it is asked to restart and restarts nothing itself."""

    name = 'recording'

    def __init__(self):
        self.acted = []

    def act(self, kube, pod, cplans, tracked):
        self.acted.append([c.name for c in cplans])
        return pod


# ---------------------------------------------------------------------------- decisions

def test_default_containers_are_the_app_containers():
    op = recreate.RecreateOperation(imageref.ImageReferenceStrategy(), settings())
    desired = op.desired(load('pod_web.json'))
    assert list(desired) == ['app', 'metrics']
    assert desired['app'] == APP_DIGEST and desired['app'].action == plan.UPDATE
    assert desired['app'].current == 'registry.example/app:1.0'
    assert json.dumps(desired) == json.dumps({'app': APP_DIGEST, 'metrics': str(desired['metrics'])})


def test_restarted_after_skips_containers_started_since():
    pod = load('pod_web.json')   # every container started 2025-11-21T21:10:0xZ
    skip = recreate.decide(pod, 'app', settings(restarted_after=restart.parse_time('2025-11-21T21:10:05Z')),
                           imageref.ImageReferenceStrategy())
    assert skip.action == plan.UNCHANGED and 'restarted_after 2025-11-21T21:10:05Z' in skip.reason
    again = recreate.decide(pod, 'app', settings(restarted_after=restart.parse_time('2025-11-21T21:10:06Z')),
                            imageref.ImageReferenceStrategy())
    assert again.action == plan.UPDATE


@pytest.mark.parametrize('change, strategy, reason', [
    (lambda pod: status_of(pod, 'app').update(state={'waiting': {'reason': 'CrashLoopBackOff'}}), Recording(),
     'not running (waiting (CrashLoopBackOff))'),
    (lambda pod: pod['spec'].update(restartPolicy='Never'), Recording(), 'restartPolicy Never'),
    (lambda pod: pod['spec'].update(restartPolicy='OnFailure'), Recording(), 'restartPolicy OnFailure'),
    (lambda pod: status_of(pod, 'app').update(imageID='sha256:' + 'a' * 64), imageref.ImageReferenceStrategy(),
     'no repository digest'),
])
def test_refusals(change, strategy, reason):
    pod = load('pod_web.json')
    change(pod)
    target = recreate.decide(pod, 'app', settings(), strategy)
    assert target.action == plan.REFUSED and reason in target.reason


def test_image_reference_ignores_the_restart_policy():
    pod = load('pod_web.json')
    pod['spec']['restartPolicy'] = 'Never'
    assert recreate.decide(pod, 'app', settings(), imageref.ImageReferenceStrategy()).action == plan.UPDATE


def test_sidecars_keep_restart_policy_always():
    pod = load('pod_web.json')
    pod['spec']['restartPolicy'] = 'Never'
    assert recreate.decide(pod, 'log-agent', settings(), Recording()).action == plan.UPDATE


def test_settings_of():
    parsed = recreate.settings_of(RestartChange(['a'], restarted_after='2026-01-31T12:00:00+01:00'), Wait())
    assert parsed.restarted_after.strftime('%Y-%m-%dT%H:%M:%SZ') == '2026-01-31T11:00:00Z'
    assert parsed.containers == ['a'] and not parsed.ordered
    with pytest.raises(ValidationError, match='ISO 8601'):
        recreate.settings_of(RestartChange(restarted_after='yesterday'), Wait())
    with pytest.raises(ValidationError, match='must not be negative'):
        recreate.settings_of(RestartChange(), Wait(min_ready_seconds=-1))


# ---------------------------------------------------------------------------- through the engine

def run(cluster, strategy, op_settings, **changes):
    op = recreate.RecreateOperation(strategy, op_settings, clock=Clock())
    runner = engine.Engine(cluster, op, options(**changes), FakeWatcher(cluster), sleep=lambda seconds: None)
    return runner.run([copy.deepcopy(p) for p in cluster.pods.values()])


def test_image_reference_switches_to_the_digest_and_back():
    pod = load('pod_web.json')
    cluster = FakeCluster([pod])
    result = run(cluster, imageref.ImageReferenceStrategy(), settings(containers=['app']))
    after = cluster.pods[pod['metadata']['name']]
    item = result['pods'][0]
    assert result['changed'] and item['status'] == 'updated' and item['in_place']
    assert spec_of(after, 'app')['image'] == APP_DIGEST
    container = item['containers']['app']
    assert container['strategy'] == 'image_reference' and container['restarted']
    assert container['old_image'] == 'registry.example/app:1.0' and container['new_image'] == APP_DIGEST
    assert container['restart_count_after'] == container['restart_count_before'] + 1
    assert container['started_at_before'] == '2025-11-21T21:10:05Z'
    assert status_of(after, 'metrics')['containerID'] == status_of(pod, 'metrics')['containerID']
    rec = record.get(after, 'recreate')
    assert rec['state'] == record.DONE and rec['target'] == {'app': APP_DIGEST}
    assert rec['before']['app']['image'] == 'registry.example/app:1.0'
    assert images.is_recorded_digest_of(after, 'app', 'registry.example/app:1.0')

    result = run(cluster, imageref.ImageReferenceStrategy(), settings(containers=['app']))
    assert spec_of(cluster.pods[pod['metadata']['name']], 'app')['image'] == 'registry.example/app:1.0'
    assert result['pods'][0]['containers']['app']['new_image'] == 'registry.example/app:1.0'


def test_check_mode_writes_nothing():
    cluster = FakeCluster([load('pod_web.json')])
    result = run(cluster, imageref.ImageReferenceStrategy(), settings(), check_mode=True)
    assert result['changed'] and result['pods'][0]['status'] == 'would_update'
    assert result['diff']['after'][result['pods'][0]['name']] == {
        'app': APP_DIGEST, 'metrics': 'registry.example/metrics@sha256:' + '0f1e2d3c4b5a69788796a5b4c3d2e1f0' * 2}
    assert cluster.calls == []


def test_ordered_acts_one_container_at_a_time_in_the_given_order():
    cluster = FakeCluster([load('pod_web.json')])
    result = run(cluster, imageref.ImageReferenceStrategy(), settings(containers=['metrics', 'app'], ordered=True))
    patches = [c for c in cluster.calls if c[0] == 'patch']
    assert len(patches) == 4     # the record, metrics, app, the record done
    containers = result['pods'][0]['containers']
    assert containers['metrics']['restarted'] and containers['app']['restarted']
    # the fake kubelet numbers new containers in the order it starts them
    assert int(containers['metrics']['new_container_id'].rsplit('_', 1)[1]) < int(
        containers['app']['new_container_id'].rsplit('_', 1)[1])


def test_strategies_that_order_themselves_get_every_container_at_once():
    strategy = Recording()
    strategy.orders_itself = True
    op = recreate.RecreateOperation(strategy, settings(ordered=True))
    pod_plan = plan.plan_pod(load('pod_web.json'), op.desired(load('pod_web.json')), op.judge)
    assert [[c.name for c in group] for group in op.steps(pod_plan)] == [['app', 'metrics']]
    op.settings = settings(ordered=True, containers=['metrics', 'app'])
    strategy.orders_itself = False
    pod_plan = plan.plan_pod(load('pod_web.json'), op.desired(load('pod_web.json')), op.judge)
    assert [[c.name for c in group] for group in op.steps(pod_plan)] == [['metrics'], ['app']]


# ---------------------------------------------------------------------------- waiting predicates

def acted(op, pod, name='app'):
    pod_plan = plan.plan_pod(pod, op.desired(pod), op.judge)
    group = [c for c in pod_plan.updates() if c.name == name]
    op.act(None, pod, pod_plan, group)
    return group[0]


def restarted_pod(pod, name='app', count=1, container_id='fake://new', **state):
    pod = copy.deepcopy(pod)
    status = status_of(pod, name)
    status.update(containerID=container_id, restartCount=count, ready=True, started=True,
                  state=state or {'running': {'startedAt': '2026-01-01T00:00:00Z'}},
                  lastState={'terminated': {'containerID': status_of(pod, name)['containerID'], 'exitCode': 0}})
    return pod


def backing_off(pod, name='app'):
    """The pod while the kubelet backs off before starting the container we stopped."""
    pod = copy.deepcopy(pod)
    status = status_of(pod, name)
    status.update(state={'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off 10s restarting'}},
                  lastState={'terminated': {'containerID': status['containerID'], 'exitCode': 0}})
    return pod


def test_done_needs_a_new_ready_container_restarted_once():
    clock = Clock()
    op = recreate.RecreateOperation(Recording(), settings(), clock=clock)
    pod = load('pod_web.json')
    cplan = acted(op, pod)
    assert not op.restarted(pod, cplan, {}) and not op.done(pod, cplan, {})
    assert not op.done(restarted_pod(pod, count=2), cplan, {})       # restartCount must be before + 1
    unready = restarted_pod(pod)
    status_of(unready, 'app')['ready'] = False
    assert op.restarted(unready, cplan, {}) and not op.done(unready, cplan, {})
    clock.now += 2.5
    assert op.done(restarted_pod(pod), cplan, {})
    assert op.tracked(pod, 'app').ready_seconds == 2.5


def test_stalled_explains_the_back_off_of_our_stop():
    op = recreate.RecreateOperation(Recording(), settings(), clock=Clock())
    pod = load('pod_web.json')
    cplan = acted(op, pod)
    assert 'back-off 10s restarting' in op.stalled(backing_off(pod), [cplan])
    assert op.stalled(pod, [cplan]) is None


def test_failure_after_restart_but_not_our_own_back_off():
    op = recreate.RecreateOperation(Recording(), settings(), clock=Clock())
    pod = load('pod_web.json')
    cplan = acted(op, pod)
    assert op.failure(backing_off(pod), cplan, {}, None) is None
    crashed = restarted_pod(pod, count=2, state={'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}})
    status_of(crashed, 'app')['lastState'] = {'terminated': {'containerID': 'fake://new', 'exitCode': 1,
                                                             'reason': 'Error'}}
    reason, message = op.failure(crashed, cplan, {}, None)
    assert reason == 'CrashedAfterRestart' and 'exit code 1' in message
    pulling = copy.deepcopy(pod)
    status_of(pulling, 'app')['state'] = {'waiting': {'reason': 'ErrImagePull', 'message': 'not found'}}
    assert op.failure(pulling, cplan, {}, None) == ('ErrImagePull', 'not found')


def test_describe_shapes_the_container_result():
    op = recreate.RecreateOperation(Recording(), settings(), clock=Clock())
    pod = load('pod_web.json')
    cplan = acted(op, pod)
    from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
    described = op.describe(cplan, podstate.find_container(pod, 'app'),
                            podstate.find_container(restarted_pod(pod), 'app'))
    assert described == {'strategy': 'recording', 'started_at_before': '2025-11-21T21:10:05Z',
                         'started_at_after': '2026-01-01T00:00:00Z', 'seconds_to_ready': None}


class Served(object):
    def __init__(self, served):
        self.served = served

    def request(self, method, path, query=None, body=None, content_type=None):
        return {'resources': [{'name': 'containerrecreaterequests'}] if self.served else []}


def test_auto_strategy():
    assert recreate.resolve_strategy(Served(True), 'auto') == 'kruise'
    assert recreate.resolve_strategy(Served(False), 'auto') == 'image_reference'
    assert recreate.resolve_strategy(Served(True), 'cri') == 'cri'
    with pytest.raises(ValidationError, match='not served'):
        recreate.build_strategy('kruise', Task(Target('x'), RestartChange()), Served(False), None)
