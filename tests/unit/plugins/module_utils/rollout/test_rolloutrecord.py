# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout record of a workload read through its typed reader (rollout/rolloutrecord.py): a claim, whose
fields of another type read as absent."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rolloutrecord import RolloutRecord

TARGET = {'images': {'app': 'reg/app:2'}, 'resources': {}}
BEFORE = {'images': {'app': 'reg/app:1'}, 'resources': {'app': {'requests': {'cpu': '1'}}}}


def on_workload(rec):
    return {'metadata': {'name': 'web', 'annotations': {'inplace.k8s/rollout': json.dumps(rec)}}}


def test_a_rollout_under_way_reads_its_target_before_and_strategy():
    held = RolloutRecord.of(on_workload({'state': 'in-progress', 'target': TARGET, 'before': BEFORE, 'partition': 2,
                                         'saved': {'updateStrategy': {'type': 'OnDelete'}}, 'owner': {'run': 'r1'},
                                         'started': '2026-11-27T10:02:11Z'}))
    assert held and held.active and held.in_progress and not held.rolling_back
    assert held.values_now == ({'app': 'reg/app:2'}, {}) and held.before_values == (BEFORE['images'], BEFORE['resources'])
    assert held.partition == 2 and held.saved == {'updateStrategy': {'type': 'OnDelete'}} and held.owner_run == 'r1'
    assert held.started == '2026-11-27T10:02:11Z' and held.finished is None and held.protection is None


def test_a_rollback_reads_the_values_from_before_as_those_of_now():
    held = RolloutRecord({'state': 'rolling-back', 'target': TARGET, 'before': BEFORE})
    assert held.active and held.rolling_back and held.values_now == held.before_values


def test_no_record_is_falsy_and_reads_empty():
    for held in (RolloutRecord.of(None), RolloutRecord.of({'metadata': {}}), RolloutRecord('not a record')):
        assert not held and not held.active and held.state is None and held.values_now == ({}, {})
        assert held.saved == {} and held.partition is None and held.owner_run is None


def test_fields_of_another_type_read_as_absent():
    held = RolloutRecord({'state': ['in-progress'], 'target': 'reg/app:2', 'before': {'images': 'x', 'resources': []},
                          'partition': True, 'saved': 'OnDelete', 'owner': {'run': 7}, 'protection': 'left'})
    assert held.state is None and not held.active and held.target is None and held.before_values == ({}, {})
    assert held.partition is None and held.saved == {} and held.owner_run is None and held.protection is None
    assert RolloutRecord({'partition': -1}).partition is None and RolloutRecord({'partition': '3'}).partition is None
