# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import jsonpatch
import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import record
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import spec_of

SNAP = {'app': {'image': 'registry.example/app:1.0', 'containerID': 'fake://app-7c1e_0'}}


def with_record(pod, operation, value):
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = json.dumps({operation: value})
    return pod


def test_no_record(web_pod):
    assert record.records(web_pod) == {}
    assert record.get(web_pod, 'image') is None


@pytest.mark.parametrize('raw', ['not json', '[1, 2]', '"text"'])
def test_unreadable_annotation_counts_as_none(web_pod, raw):
    web_pod['metadata']['annotations'] = {record.ANNOTATION: raw}
    assert record.records(web_pod) == {}


def test_begin_fresh(web_pod):
    rec = record.begin(web_pod, 'image', {'app': 'registry.example/app:2.0'}, SNAP, generation=1, now='T0')
    assert rec == {'state': 'in-progress', 'target': {'app': 'registry.example/app:2.0'}, 'before': SNAP,
                   'started': 'T0', 'updated': 'T0', 'generation': 1}


@pytest.mark.parametrize('previous_state, keeps_old_before', [
    ('in-progress', True), ('failed', True), ('rolling-back', True), ('done', False), ('rolled-back', False)])
def test_begin_keeps_last_good_state_of_unfinished_record(web_pod, previous_state, keeps_old_before):
    old = {'app': {'image': 'registry.example/app:0.9', 'containerID': 'fake://app_0'}}
    with_record(web_pod, 'image', {'state': previous_state, 'before': old, 'target': {'app': 'x'}})
    rec = record.begin(web_pod, 'image', {'app': 'registry.example/app:2.0'}, SNAP)
    assert rec['before'] == (old if keeps_old_before else SNAP)


def test_transition_copies(web_pod):
    rec = record.begin(web_pod, 'image', {}, {}, now='T0')
    done = record.transition(rec, record.DONE, now='T1', error=None)
    assert (rec['state'], done['state'], done['updated'], done['started']) == ('in-progress', 'done', 'T1', 'T0')


def test_pointer_escapes():
    assert record.pointer('metadata', 'annotations', 'inplace.k8s/state') == '/metadata/annotations/inplace.k8s~1state'
    assert record.pointer('a~b') == '/a~0b'


def test_patch_without_annotations_creates_the_map(web_pod):
    rec = record.begin(web_pod, 'image', {'app': 'registry.example/app:2.0'}, SNAP)
    change = [{'op': 'replace', 'path': '/spec/containers/0/image', 'value': 'registry.example/app:2.0'}]
    ops = record.build_patch(web_pod, 'image', rec, change)
    assert ops[0] == {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '1042'}
    after = jsonpatch.apply_patch(web_pod, ops)
    assert record.get(after, 'image') == rec
    assert spec_of(after, 'app')['image'] == 'registry.example/app:2.0'


def test_patch_keeps_other_annotations_and_records(web_pod):
    with_record(web_pod, 'resize', {'state': 'done'})
    web_pod['metadata']['annotations']['team'] = 'shop'
    rec = record.begin(web_pod, 'image', {'app': 'x'}, SNAP)
    after = jsonpatch.apply_patch(web_pod, record.build_patch(web_pod, 'image', rec))
    assert after['metadata']['annotations']['team'] == 'shop'
    assert set(record.records(after)) == {'image', 'resize'}


def test_patch_guard_detects_a_concurrent_writer(web_pod):
    ops = record.build_patch(web_pod, 'image', {'state': 'x'})
    web_pod['metadata']['resourceVersion'] = '1043'
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(web_pod, ops)
