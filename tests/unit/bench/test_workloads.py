# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench/workloads.py: the pod watch reads the API server's JSON as plain data."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
_spec = importlib.util.spec_from_file_location('bench_workloads', os.path.join(ROOT, 'tests', 'bench', 'workloads.py'))
workloads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(workloads)


def pod(ready='True', gate=None, image='registry.example/bench:2.0', running='registry.example/bench:2.0',
        deleting=False):
    conditions = [{'type': 'Ready', 'status': ready}, {'type': 'ContainersReady', 'status': 'True'}]
    if gate is not None:
        conditions.append({'type': workloads.GATE, 'status': gate})
    state = {'running': {'startedAt': '2026-11-26T10:00:00Z'}} if running else {'waiting': {'reason': 'x'}}
    meta = {'name': 'bench-0', 'uid': 'u-0', 'resourceVersion': '7'}
    if deleting:
        meta['deletionTimestamp'] = '2026-11-26T10:00:01Z'
    return {'metadata': meta, 'spec': {'containers': [{'name': 'app', 'image': image}]},
            'status': {'conditions': conditions, 'containerStatuses': [
                {'name': 'sidecar', 'image': 'other:1', 'state': {'running': {}}},
                {'name': 'app', 'image': running or 'registry.example/bench:1.0', 'state': state}]}}


def test_pod_state_reads_the_json():
    assert workloads.pod_state(pod(gate='False')) == {
        'uid': 'u-0', 'name': 'bench-0', 'ready': 'True', 'gate': 'False', 'image': 'registry.example/bench:2.0',
        'running': 'registry.example/bench:2.0', 'deleted': False}


def test_pod_state_of_a_pod_starting_and_going():
    state = workloads.pod_state(pod(ready='False', running=None, deleting=True))
    assert (state['ready'], state['gate'], state['running'], state['deleted']) == ('False', None, None, True)
    assert workloads.pod_state({'metadata': {'name': 'p', 'uid': 'u'}, 'spec': {'containers': [{'image': 'i'}]}},
                               deleted=True) == {'uid': 'u', 'name': 'p', 'ready': None, 'gate': None, 'image': 'i',
                                                 'running': None, 'deleted': True}
