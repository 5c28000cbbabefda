# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Image pre-pull: the pod it creates (runs nothing of the image) and how it reads the pull's outcome."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.operations import prepull


def status(**state):
    return {'containerStatuses': [{'name': 'pull-0', 'image': 'x', 'state': state}]}


def test_pod_body_runs_nothing_of_the_image_and_is_pinned_to_its_node():
    body = prepull.pod_body('node-1', {'b:2', 'a:1'}, 'r1', [{'name': 'regcred'}])
    spec = body['spec']
    assert spec['nodeName'] == 'node-1' and spec['restartPolicy'] == 'Never'
    assert [c['image'] for c in spec['containers']] == ['a:1', 'b:2']
    assert all(c['command'] == prepull.NOOP_COMMAND and c['command'][0].startswith('/nonexistent/')
               for c in spec['containers'])
    assert all(c['securityContext']['runAsNonRoot'] and c['securityContext']['capabilities'] == {'drop': ['ALL']}
               for c in spec['containers'])
    assert spec['automountServiceAccountToken'] is False
    assert spec['imagePullSecrets'] == [{'name': 'regcred'}]
    assert body['metadata']['labels'] == {prepull.LABEL: 'r1'}
    # One name per node, images and run: the next step of the same run finds the same pod.
    assert body['metadata']['name'] == prepull.pod_name('node-1', ['a:1', 'b:2'], 'r1')
    assert prepull.pod_name('node-1', ['a:1'], 'r1') != prepull.pod_name('node-2', ['a:1'], 'r1')
    assert len(prepull.pod_name('N' * 300, ['a:1'], 'r1')) <= 63


@pytest.mark.parametrize('pod_status,expected', [
    ({}, 'pulling'),
    (status(waiting={'reason': 'ContainerCreating'}), 'pulling'),
    (status(waiting={'reason': 'CreateContainerError', 'message': 'no such file'}), 'pulled'),
    (status(waiting={'reason': 'RunContainerError'}), 'pulled'),
    (status(terminated={'reason': 'StartError', 'exitCode': 128}), 'pulled'),
    (status(running={}), 'pulled'),
    (status(waiting={'reason': 'ErrImagePull', 'message': 'not found'}), 'failed'),
    (status(waiting={'reason': 'ImagePullBackOff'}), 'failed'),
])
def test_pull_state(pod_status, expected):
    pod = {'spec': {'containers': [{'name': 'pull-0'}]}, 'status': pod_status}
    state, message = prepull.pull_state(pod)
    assert state == expected
    assert (message is not None) == (expected == 'failed')


def test_run_label_is_a_valid_label_value_and_stable():
    label = prepull.run_label('playbook-1234')
    assert label == prepull.run_label('playbook-1234') != prepull.run_label('other')
    assert len(label) <= 63 and label.isalnum()


def test_targets_groups_images_by_node():
    pods = [{'spec': {'nodeName': 'n1'}}, {'spec': {'nodeName': 'n1'}}, {'spec': {'nodeName': 'n2'}}, {'spec': {}}]
    assert prepull.targets((pod, {'a:1'}) for pod in pods) == {'n1': {'a:1'}, 'n2': {'a:1'}}
    assert prepull.targets([(pods[0], set())]) == {}   # given no image: nothing to pull
