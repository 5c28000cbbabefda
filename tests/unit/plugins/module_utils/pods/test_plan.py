# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import spec_of, status_of


def image_plan(pod, images):
    operation = ImageOperation(images)
    return plan.plan_pod(pod, operation.desired(pod), operation.judge)


def actions(pod_plan):
    return dict((c.name, c.action) for c in pod_plan.containers)


@pytest.mark.parametrize('images, expected, pod_action', [
    ({'app': 'registry.example/app:1.0'}, {'app': 'unchanged'}, 'unchanged'),
    ({'app': 'registry.example/app:2.0'}, {'app': 'update'}, 'update'),
    ({'app': 'registry.example/app:2.0', 'metrics': 'registry.example/metrics:0.9'},
     {'app': 'update', 'metrics': 'unchanged'}, 'update'),
    ({'log-agent': 'registry.example/fluent-bit:3.1'}, {'log-agent': 'update'}, 'update'),
    ({'setup': 'busybox:1.36'}, {'setup': 'unchanged'}, 'unchanged'),
    ({'setup': 'docker.io/library/busybox:1.36'}, {'setup': 'unchanged'}, 'unchanged'),
    ({'setup': 'busybox:1.37'}, {'setup': 'refused'}, 'refused'),
    ({'app': 'registry.example/app:2.0', 'setup': 'busybox:1.37'}, {'app': 'update', 'setup': 'refused'}, 'refused'),
    ({'sidecar-x': 'registry.example/x:1'}, {'sidecar-x': 'refused'}, 'refused'),
])
def test_image_plans(web_pod, images, expected, pod_action):
    pod_plan = image_plan(web_pod, images)
    assert actions(pod_plan) == expected
    assert pod_plan.action == pod_action


def test_update_details(web_pod):
    pod_plan = image_plan(web_pod, {'app': 'registry.example/app:2.0', 'log-agent': 'registry.example/fb:4'})
    app, sidecar = pod_plan.containers
    assert (app.kind, app.current, app.desired, app.restart) == (
        'container', 'registry.example/app:1.0', 'registry.example/app:2.0', True)
    assert (sidecar.kind, sidecar.restart) == ('sidecar', True)
    assert pod_plan.desired() == {'app': 'registry.example/app:2.0', 'log-agent': 'registry.example/fb:4'}
    assert [c.name for c in pod_plan.updates()] == ['app', 'log-agent']


def test_missing_container_reason_lists_containers(web_pod):
    pod_plan = image_plan(web_pod, {'ap': 'registry.example/app:2.0'})
    assert 'the pod has: setup, log-agent, app, metrics' in pod_plan.refusal


def test_plain_init_refusal_reason(web_pod):
    assert 'plain init container has already run' in image_plan(web_pod, {'setup': 'busybox:2'}).refusal


def test_pending_when_spec_set_but_status_old(web_pod):
    spec_of(web_pod, 'app')['image'] = 'registry.example/app:2.0'
    pod_plan = image_plan(web_pod, {'app': 'registry.example/app:2.0'})
    assert pod_plan.action == 'pending'
    assert pod_plan.to_wait()[0].name == 'app'
    assert pod_plan.updates() == []


def test_unchanged_needs_ready_status(web_pod):
    status_of(web_pod, 'app')['ready'] = False
    assert image_plan(web_pod, {'app': 'registry.example/app:1.0'}).action == 'pending'


@pytest.mark.parametrize('changes, reason', [
    ({'metadata__deletionTimestamp': '2025-11-21T21:30:00Z'}, 'pod is terminating'),
    ({'status__phase': 'Pending'}, 'pod is not running (phase Pending)'),
    ({'status__phase': 'Succeeded'}, 'pod has finished (phase Succeeded)'),
    ({'status__phase': 'Failed'}, 'pod has finished (phase Failed)'),
    ({'status__phase': 'Pending', 'spec__nodeName': None}, 'pod is not scheduled yet (phase Pending, no node)'),
])
def test_pod_level_refusals(pod_factory, changes, reason):
    pod = pod_factory(**changes)
    changing = image_plan(pod, {'app': 'registry.example/app:2.0'})
    assert changing.action == 'refused' and changing.refusal.startswith(reason)
    # nothing to change: not refused, whatever the pod's state
    assert image_plan(pod, {'app': 'registry.example/app:1.0'}).action in ('unchanged', 'pending')


def test_unknown_containers(web_pod, pod_factory):
    other = pod_factory()
    other['spec']['containers'].append({'name': 'extra', 'image': 'x'})
    assert plan.unknown_containers([web_pod, other], ['app', 'extra']) == {}
    unknown = plan.unknown_containers([web_pod], ['app', 'ap'])
    assert list(unknown) == ['ap'] and 'metrics' in unknown['ap']


def test_same_targets(web_pod, pod_factory):
    first = image_plan(web_pod, {'app': 'registry.example/app:2.0'})
    changed = pod_factory()
    spec_of(changed, 'app')['image'] = 'registry.example/app:1.5'
    assert first.same_targets(image_plan(pod_factory(), {'app': 'registry.example/app:2.0'}))
    assert not first.same_targets(image_plan(changed, {'app': 'registry.example/app:2.0'}))


@pytest.mark.parametrize('images, message', [
    ({}, 'at least one container'),
    ({'app': 'Bad:Ref'}, 'app: Bad:Ref'),
    ({'app': 'ok:1', 'b': 'x@sha256:1'}, 'b: x@sha256:1: invalid reference format'),
    ({'app': 3}, 'non-empty string'),
])
def test_image_validation(images, message):
    with pytest.raises(ValidationError) as caught:
        ImageOperation(images)
    assert message in caught.value.msg


def test_generic_judge(web_pod):
    """The plan layer is generic: any judge works (here, a toy 'label' per container)."""
    def judge(info, value):
        current = info.spec.get('x-label', 'none')
        return plan.verdict(plan.UNCHANGED if current == value else plan.UPDATE, current)
    pod_plan = plan.plan_pod(web_pod, {'app': 'none', 'metrics': 'blue'}, judge)
    assert actions(pod_plan) == {'app': 'unchanged', 'metrics': 'update'}
    assert pod_plan.containers[1].restart is False


@pytest.mark.parametrize('phase, waiting, action', [
    ('Pending', 'ImagePullBackOff', 'update'),     # a typo'd tag is fixed forward
    ('Pending', 'ErrImagePull', 'update'),
    ('Pending', 'InvalidImageName', 'update'),
    ('Running', 'CrashLoopBackOff', 'update'),
    ('Pending', 'ContainerCreating', 'refused'),   # not about its image: nothing to fix forward
])
def test_pods_broken_by_their_image_are_updated(web_pod, phase, waiting, action):
    web_pod['status']['phase'] = phase
    status_of(web_pod, 'app').update(state={'waiting': {'reason': waiting}}, ready=False, started=False)
    assert image_plan(web_pod, {'app': 'registry.example/app:2.0'}).action == action


def test_a_pending_pod_is_not_updated_for_another_container(web_pod):
    web_pod['status']['phase'] = 'Pending'
    status_of(web_pod, 'app').update(state={'waiting': {'reason': 'ImagePullBackOff'}}, ready=False)
    plan = image_plan(web_pod, {'metrics': 'registry.example/metrics:2.0'})
    assert plan.action == 'refused' and 'app ImagePullBackOff' in plan.refusal
