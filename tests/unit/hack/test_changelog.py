# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The changelog renders for its readers (hack/changelog.py): no fragment or released entry carries Ansible doc markup,
which antsibull-changelog's reStructuredText would show raw, and the first release (1.0.0) speaks only of what it
brings: no breaking changes or bug fixes against a version nobody received, the modules and the role listed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT, load_script

CHANGELOG = load_script('changelog.py', 'changelog_checks')


def released():
    with open(os.path.join(ROOT, CHANGELOG.CHANGELOG)) as handle:
        return yaml.safe_load(handle)['releases']


def test_no_fragment_or_released_entry_would_show_raw_markup():
    assert CHANGELOG.problems() == []


@pytest.mark.parametrize('text', ['set C(wait_timeout)', 'V(true) now', 'see O(rollout_batch_size)',
                                  'M(inplace.k8s.inplace_image) does', 'an unclosed C(code', 'E(K8S_AUTH_HOST)'])
def test_markup_that_would_not_render_is_found(text):
    assert CHANGELOG.markup_problems(text)


@pytest.mark.parametrize('text', ['set ``wait_timeout`` (default 300)', 'pods (and their owners) - C is a letter',
                                  'the ``C(x)`` notation'])
def test_plain_rst_is_accepted(text):
    assert CHANGELOG.markup_problems(text) == []


def test_antsibull_changelog_lints_the_fragments_and_the_changelog():
    tool = os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog')
    for args in (['lint'], ['lint-changelog-yaml', CHANGELOG.CHANGELOG]):
        result = subprocess.run([tool] + args, cwd=ROOT, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True)
        assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_the_first_release_is_one_for_readers_who_had_nothing_before():
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        version = yaml.safe_load(handle)['version']
    first = released()[version]
    changes = first['changes']
    assert changes.get('release_summary') and changes.get('major_changes')
    assert not set(changes) & set(CHANGELOG.AGAINST_EARLIER), 'a first release lists %s' % sorted(changes)
    assert [role['name'] for role in first['objects']['role']] == ['rollout']
    modules = {module['name'] for module in first['modules']}
    assert {'inplace_image', 'inplace_resize', 'container_recreate', 'rollout_workload'} <= modules
    with open(os.path.join(ROOT, 'CHANGELOG.rst')) as handle:
        rendered = handle.read()
    assert 'New Roles' in rendered and 'inplace.k8s.rollout - ' in rendered and version in rendered
    assert 'Bugfixes' not in rendered and 'Breaking Changes' not in rendered


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        yaml.safe_dump(data, handle)


def test_fold_first_moves_fixes_of_a_first_release_to_trivial(tmp_path):
    write(str(tmp_path / CHANGELOG.CHANGELOG), {'ancestor': None, 'releases': {}})
    write(str(tmp_path / CHANGELOG.FRAGMENTS / 'fix.yml'),
          {'bugfixes': ['a fix of nothing released'], 'minor_changes': ['a feature']})
    moved = CHANGELOG.fold_first('1.0.0', root=str(tmp_path))
    assert moved == ['fix.yml (bugfixes): a fix of nothing released']
    with open(str(tmp_path / CHANGELOG.FRAGMENTS / 'fix.yml')) as handle:
        assert yaml.safe_load(handle) == {'minor_changes': ['a feature'], 'trivial': ['a fix of nothing released']}


def test_fold_first_leaves_the_fixes_of_a_later_release(tmp_path):
    write(str(tmp_path / CHANGELOG.CHANGELOG), {'ancestor': None, 'releases': {'1.0.0': {'release_date': '2026-01-01'}}})
    write(str(tmp_path / CHANGELOG.FRAGMENTS / 'fix.yml'), {'bugfixes': ['a real fix']})
    assert CHANGELOG.fold_first('1.1.0', root=str(tmp_path)) == []
    with open(str(tmp_path / CHANGELOG.FRAGMENTS / 'fix.yml')) as handle:
        assert yaml.safe_load(handle) == {'bugfixes': ['a real fix']}
