# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import jsonpatch
import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.pods import record
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
                   'started': 'T0', 'updated': 'T0', 'generation': 1, 'uid': web_pod['metadata']['uid']}


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


# ---- ownership

ME = {'run': 'me', 'host': 'h1', 'pid': 10, 'started': 'T0'}
OTHER = {'run': 'other', 'host': 'h1', 'pid': 20, 'started': '2026-01-31T12:00:00Z'}
NOW = record.parse_timestamp('2026-01-31T12:01:00Z')


def held(state='in-progress', owner='other', expires='2026-01-31T12:05:00Z'):
    """A record held by ``owner`` ('other' stands for OTHER; None: a record without owner)."""
    if owner == 'other':
        owner = dict(OTHER)
    rec = {'state': state, 'target': {}, 'before': {}}
    if owner is not None:
        rec['owner'] = owner
    if expires is not None:
        rec['expires'] = expires
    return rec


def test_timestamps_roundtrip():
    assert record.timestamp(NOW) == '2026-01-31T12:01:00Z'
    assert record.timestamp(NOW + 0.0566, precise=True) == '2026-01-31T12:01:00.056Z'
    assert record.parse_timestamp('nonsense') is None and record.parse_timestamp(None) is None


def test_claim_stamps_owner_and_expiry():
    rec = record.claim({'state': 'in-progress'}, ME, 90, now=NOW)
    assert rec['owner'] == ME and rec['expires'] == '2026-01-31T12:02:30Z'


@pytest.mark.parametrize('rec, alive, force, busy', [
    (held(), True, False, True),                                    # another live run, not expired
    (held(), False, False, False),                                  # same host, its process is gone: take over
    (held(owner=dict(OTHER, host='h2')), False, False, True),       # another host: only the expiry frees it
    (held(expires='2026-01-31T12:00:30Z'), True, False, False),     # expired
    (held(state='done'), True, False, False),                       # finished
    (held(state='rolling-back'), True, False, True),
    (held(owner=ME), True, False, False),                           # ours
    (held(owner=dict(OTHER, pid=ME['pid'])), True, False, False),   # an earlier run of our own process
    (held(owner=None), True, False, False),                         # written before owners existed
    (held(), True, True, False),                                    # force_takeover
    (held(expires=None), True, False, False),
])
def test_holder(rec, alive, force, busy):
    found = record.holder(rec, ME, force, now=NOW, alive=lambda pid: alive)
    assert (found is not None) is busy


def test_busy_message_names_the_other_run(web_pod):
    with_record(web_pod, 'resize', held())
    message = record.pod_holder(web_pod, ME, now=NOW, alive=lambda pid: True)
    assert message == ('another run (host h1, pid 20, started 2026-01-31T12:00:00Z) is updating this pod; it '
                       'expires at 2026-01-31T12:05:00Z; wait, or set force_takeover')
    assert record.pod_holder(web_pod, ME, force=True, now=NOW) is None


def test_new_owner():
    owner = record.new_owner(pid=5)
    assert owner['pid'] == 5 and len(owner['run']) == 32 and owner['host'] and owner['started'].endswith('Z')
    assert record.new_owner('run-1')['run'] == 'run-1'


def test_a_settled_record_holds_nothing(web_pod):
    other = {'run': 'other', 'host': 'elsewhere', 'pid': 1, 'started': 'T0'}
    rec = record.claim(record.begin(web_pod, 'image', {'app': 'registry.example/app:2.0'}, SNAP), other, 600)
    me = record.new_owner()
    assert record.holder(rec, me) == other
    assert record.holder(rec, me, settled=True) is None
    web_pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = record.encode(web_pod, 'image', rec)
    assert 'another run' in record.pod_holder(web_pod, me)
    assert record.pod_holder(web_pod, me, settled=lambda operation, r: operation == 'image') is None
    assert 'another run' in record.pod_holder(web_pod, me, settled=lambda operation, r: operation == 'resize')


def test_metadata_patch_is_guarded_and_keeps_other_records(web_pod):
    web_pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = json.dumps({'resize': {'state': 'done'}})
    patch = record.metadata_patch(web_pod, 'image', {'state': 'done'})
    assert patch['resourceVersion'] == web_pod['metadata']['resourceVersion']
    assert json.loads(patch['annotations'][record.ANNOTATION]) == {'resize': {'state': 'done'},
                                                                   'image': {'state': 'done'}}
