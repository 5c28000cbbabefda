# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import imageref
from ansible_collections.inplace.k8s.plugins.module_utils.pods import images, record
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load, spec_of

DIGEST = 'sha256:' + 'ab' * 32
OTHER = 'sha256:' + 'cd' * 32


@pytest.mark.parametrize('image_id, expected', [
    ('registry.example/app@' + DIGEST, DIGEST),
    ('docker-pullable://app@' + DIGEST, DIGEST),
    ('docker.io/library/app@' + DIGEST, DIGEST),
    (DIGEST, None),                      # a bare image ID is not a registry digest
    ('', None),
    (None, None),
    ('app@sha256:short', None),
])
def test_repo_digest(image_id, expected):
    assert imageref.repo_digest(image_id) == expected


@pytest.mark.parametrize('spec, image_id, recorded, expected', [
    ('registry.example/app:1.0', 'registry.example/app@' + DIGEST, None, 'registry.example/app@' + DIGEST),
    ('app', 'docker.io/library/app@' + DIGEST, None, 'app@' + DIGEST),          # the spelling is kept
    ('localhost:5000/app:1.0', 'localhost:5000/app@' + DIGEST, None, 'localhost:5000/app@' + DIGEST),
    ('registry.example/app:1.0@' + DIGEST, 'registry.example/app@' + DIGEST, None, 'registry.example/app@' + DIGEST),
    # back from the digest to the recorded tag
    ('registry.example/app@' + DIGEST, 'registry.example/app@' + DIGEST, 'registry.example/app:1.0',
     'registry.example/app:1.0'),
])
def test_switch_target(spec, image_id, recorded, expected):
    assert imageref.switch_target(spec, image_id, recorded) == (expected, None)


@pytest.mark.parametrize('spec, image_id, recorded, reason', [
    ('registry.example/app@' + DIGEST, 'registry.example/app@' + DIGEST, None, 'no earlier tag'),
    ('registry.example/app@' + DIGEST, 'registry.example/app@' + DIGEST, 'registry.example/other:1.0', 'no earlier tag'),
    ('registry.example/app:1.0', DIGEST, None, 'no repository digest'),
    ('registry.example/app:1.0@' + OTHER, 'registry.example/app@' + DIGEST, None, 'runs'),
    ('registry.example/App:1.0', 'registry.example/app@' + DIGEST, None, 'lowercase'),
])
def test_switch_target_refusals(spec, image_id, recorded, reason):
    target, why = imageref.switch_target(spec, image_id, recorded)
    assert target is None and reason in why


def _switched_pod(tag='registry.example/app:1.0', target='registry.example/app@' + DIGEST):
    pod = load('pod_web.json')
    spec_of(pod, 'app')['image'] = target
    rec = {'state': record.DONE, 'target': {'app': target}, 'before': {'app': {'image': tag}},
           'uid': pod['metadata']['uid']}
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = json.dumps({'recreate': rec})
    return pod


def test_recorded_tag_and_up_to_date_helper():
    pod = _switched_pod()
    assert images.recorded_tag(pod, 'app') == 'registry.example/app:1.0'
    assert images.is_recorded_digest_of(pod, 'app', 'registry.example/app:1.0')
    assert not images.is_recorded_digest_of(pod, 'app', 'registry.example/app:2.0')
    assert images.recorded_tag(pod, 'metrics') is None


def test_recorded_tag_ignores_records_that_do_not_match_the_spec():
    pod = _switched_pod()
    spec_of(pod, 'app')['image'] = 'registry.example/app@' + OTHER   # changed since by someone else
    assert images.recorded_tag(pod, 'app') is None
    assert images.recorded_tag(load('pod_web.json'), 'app') is None
    # the record of a switch back (digest -> tag) names no tag for a digest
    pod = _switched_pod(tag='registry.example/app@' + DIGEST, target='registry.example/app:1.0')
    assert images.recorded_tag(pod, 'app') is None


def test_switch_ops_test_the_current_image():
    pod = load('pod_web.json')

    class Plan(object):
        name, current, desired = 'metrics', 'registry.example/metrics:0.9', 'registry.example/metrics@' + DIGEST
    ops = imageref.switch_ops(pod, [Plan()])
    assert ops == [
        {'op': 'test', 'path': '/spec/containers/1/name', 'value': 'metrics'},
        {'op': 'test', 'path': '/spec/containers/1/image', 'value': 'registry.example/metrics:0.9'},
        {'op': 'replace', 'path': '/spec/containers/1/image', 'value': 'registry.example/metrics@' + DIGEST},
    ]
