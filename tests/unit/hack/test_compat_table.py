# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/compatibility.md's features x versions table is what hack/compat-table.py makes of the last
`make test-versions` results (tests/cluster/versions/results.json)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT, load_script

TABLE = load_script('compat-table.py', 'compat_table')


def test_the_page_agrees_with_the_results():
    with open(TABLE.PAGE, encoding='utf-8') as f:
        text = f.read()
    assert TABLE.render(text, TABLE.load()) == text, 'run hack/compat-table.py after make test-versions'


def test_every_feature_names_targets_that_exist():
    targets = set(os.listdir(os.path.join(ROOT, 'tests', 'integration', 'targets')))
    for feature, names in TABLE.FEATURES:
        for name in names:
            assert name.startswith('@') or name in targets, (feature, name)


def entry(**targets):
    return {'version': 'v1.33.13', 'date': '2026-11-27T08:00:00Z', 'seconds': 600,
            'stages': {'cluster-suite': {'ok': True}},
            'targets': {name: {'ok': ok} for name, ok in targets.items()}}


def test_a_cell_names_the_failing_target_and_leaves_what_did_not_run_empty():
    versions = {'1.33': entry(inplace_image=True, role_rollout_statefulset=True, role_rollout_partition=False),
                '1.37': entry(inplace_image=True)}
    rows = {line.split(' | ')[0].lstrip('| '): line for line in TABLE.table(versions).splitlines()}
    assert rows['Image change in place (`inplace_image`)'].endswith('| pass | pass |')
    assert 'FAIL (role_rollout_partition)' in rows['Role on a StatefulSet (partition)']
    assert rows['Role on a StatefulSet (partition)'].endswith('|  |')
    assert rows['Resize in place (`inplace_resize`)'].endswith('|  |  |')
    assert 'pass (1 of 2 targets run)' in TABLE.table({'1.35': entry(role_rollout_statefulset=True)})


def test_the_check_fails_when_the_page_is_stale(tmp_path, monkeypatch):
    page = tmp_path / 'compatibility.md'
    page.write_text('before\n%s\nold table\n%s\nafter\n' % (TABLE.START, TABLE.END), encoding='utf-8')
    results = tmp_path / 'results.json'
    results.write_text('{"versions": {"1.37": {"version": "v1.37.2", "targets": {"inplace_image": {"ok": true}}}}}')
    monkeypatch.setattr(TABLE, 'PAGE', str(page))
    monkeypatch.setattr(TABLE, 'RESULTS', str(results))
    assert TABLE.main(['--check']) == 1
    assert TABLE.main([]) == 0
    assert TABLE.main(['--check']) == 0
    assert 'v1.37.2' in page.read_text(encoding='utf-8')
    assert page.read_text(encoding='utf-8').startswith('before\n') and page.read_text(encoding='utf-8').endswith('after\n')
