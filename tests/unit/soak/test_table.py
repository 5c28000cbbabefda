# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/soak/table.py: several soak summaries combine into the one table docs/safety.md shows."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import io
import json
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'soak'))
table = importlib.import_module('table')


def summary(seed, evict_faults, violations=0, kinds=('evict', 'drain')):
    row = {'faults': evict_faults, 'landed': evict_faults - 1, 'first_run_failed': 0, 'conflict_reported': 0,
           'reruns': 1, 'max_reruns': seed % 3, 'violations': violations, 'fault_errors': 0}
    return {'seed': seed, 'pods_per_workload': 10, 'batch': '25%', 'kinds': list(kinds),
            'scenarios': evict_faults + 2, 'faults': evict_faults + 2, 'faults_landed': evict_faults + 1,
            'by_kind': {'evict': row, 'drain': dict(row, faults=2, landed=2, violations=0)},
            'violations': {'pod-recreated': violations, 'move-halted': 0}, 'violations_total': violations,
            'converged': True, 'reruns': 2, 'wall_seconds': 100.0}


def test_combine_sums_counts_and_keeps_every_seed():
    combined = table.combine([summary(4, 5), summary(8, 3, violations=1, kinds=('evict', 'scale'))])
    assert combined['seeds'] == [4, 8]
    assert combined['faults'] == 12 and combined['scenarios'] == 12 and combined['faults_landed'] == 10
    assert combined['by_kind']['evict']['faults'] == 8 and combined['by_kind']['evict']['max_reruns'] == 2
    assert combined['violations'] == {'pod-recreated': 1, 'move-halted': 0} and combined['violations_total'] == 1
    assert combined['kinds'] == ['evict', 'drain', 'scale'] and combined['wall_seconds'] == 200.0


def test_table_names_the_seeds_and_totals(tmp_path, capsys):
    paths = []
    for seed in (11, 12):
        path = tmp_path / ('s%d.json' % seed)
        path.write_text(json.dumps(summary(seed, 4)))
        paths.append(str(path))
    table.main(paths)
    out = capsys.readouterr().out
    assert '| **total** | 12 | 10 | 0 | 0 | 4 | 0 |' in out
    assert 'seeds 11, 12 (replay with SOAK_SEED=<seed>)' in out


def test_one_summary_prints_as_the_soak_does():
    out = io.StringIO()
    table.print_table(summary(7, 2), out)
    assert 'seed 7 (replay' in out.getvalue() and '| evict | 2 | 1 |' in out.getvalue()


def test_no_file_is_a_usage_error():
    with pytest.raises(SystemExit, match='usage'):
        table.main([])
