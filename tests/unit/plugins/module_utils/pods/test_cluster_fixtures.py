# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure layers on pods captured from the local cluster (kubectl get pod -o json, Kubernetes 1.36)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, plan, podstate
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load

NGINX = 'nginx@sha256:9ae97d36d26566ff84e8893c64a6dc4fe8ca6d1144bf5b87b2b85a32def253c7'


def image_plan(pod, images):
    operation = ImageOperation(images)
    return plan.plan_pod(pod, operation.desired(pod), operation.judge)


@pytest.mark.parametrize('fixture, images, action', [
    ('cluster_gated.json', {'app': 'registry.example/app:1.0'}, 'unchanged'),
    ('cluster_gated.json', {'app': 'registry.example/app:2.0'}, 'update'),
    ('cluster_sidecar.json', {'metrics': NGINX}, 'unchanged'),
    ('cluster_sidecar.json', {'metrics': 'docker.io/library/' + NGINX}, 'unchanged'),
    ('cluster_sidecar.json', {'log': 'registry.example/log:1.0', 'app': 'registry.example/app:1.0'}, 'unchanged'),
    ('cluster_sidecar.json', {'log': 'registry.example/log:1.1'}, 'update'),
    ('cluster_pullfail.json', {'app': 'registry.example/app:3.0-pullfail'}, 'pending'),
    ('cluster_pullfail.json', {'app': 'registry.example/app:1.0'}, 'update'),
])
def test_plans_on_captured_pods(fixture, images, action):
    assert image_plan(load(fixture), images).action == action


def test_captured_kinds_and_gate():
    sidecar = load('cluster_sidecar.json')
    assert [(i.name, i.kind) for i in podstate.containers(sidecar)] == [
        ('log', 'sidecar'), ('app', 'container'), ('metrics', 'container')]
    gated = load('cluster_gated.json')
    assert drain.has_gate(gated, 'inplace.k8s/ready') and drain.gate_status(gated, 'inplace.k8s/ready') == 'True'
    assert podstate.is_ready(gated) and podstate.containers_healthy(gated)


@pytest.mark.parametrize('desired, counts', [
    ('registry.example/app:3.0-pullfail', True),
    ('registry.example/app:3.1-pullfail', False),   # the error is about an earlier image
])
def test_captured_pull_failure(desired, counts):
    pod = load('cluster_pullfail.json')
    status = podstate.container_status(pod, 'app')
    assert podstate.container_failure(status)[0] in podstate.IMAGE_REASONS
    operation = ImageOperation({'app': desired})
    cplan = image_plan(pod, {'app': desired}).containers[0]
    assert (operation.failure(pod, cplan, {}, pod['metadata']['generation']) is not None) is counts
