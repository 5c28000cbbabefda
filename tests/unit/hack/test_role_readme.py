# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/rollout/README.md is what hack/role-readme.py makes of roles/rollout/meta/argument_specs.yml: the committed
README fails this test as soon as the spec changes without it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil

import pytest
import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT, load_script

GENERATOR = load_script('role-readme.py', 'role_readme')


def spec():
    with open(os.path.join(ROOT, GENERATOR.SPEC)) as handle:
        return yaml.safe_load(handle)


def test_committed_readme_is_generated_from_the_spec():
    with open(os.path.join(ROOT, GENERATOR.README)) as handle:
        committed = handle.read()
    assert committed == GENERATOR.render(spec()), \
        'roles/rollout/README.md is stale: run .cache/venv/bin/python hack/role-readme.py'


def test_every_option_is_listed_with_its_type_default_and_choices():
    readme = GENERATOR.render(spec())
    options = spec()['argument_specs']['main']['options']
    for name, option in options.items():
        section = readme.split('### `%s`\n' % name, 1)[1].split('\n### ', 1)[0]
        assert 'type: %s' % option['type'] in section
        assert ('**required**' in section) == bool(option.get('required'))
        for choice in option.get('choices') or []:
            assert '`%s`' % choice in section
    assert '%d variables' % len(options) in readme
    # the spec's markup is rendered, not shown raw
    assert 'C(' not in readme and 'O(' not in readme and 'V(' not in readme


def test_check_fails_on_a_readme_that_drifted(tmp_path, monkeypatch):
    for path in (GENERATOR.SPEC, GENERATOR.README, GENERATOR.ROLE_OPTIONS, GENERATOR.FRAGMENT):
        os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), tmp_path / path)
    monkeypatch.setattr(GENERATOR, 'ROOT', str(tmp_path))
    assert GENERATOR.main(['role-readme.py', '--check']) == 0
    changed = spec()
    changed['argument_specs']['main']['options']['rollout_batch_size']['default'] = 2
    (tmp_path / GENERATOR.SPEC).write_text(yaml.safe_dump(changed))
    with pytest.raises(SystemExit, match='README.md is stale'):
        GENERATOR.main(['role-readme.py', '--check'])
    GENERATOR.main(['role-readme.py'])
    assert 'default: `2`' in (tmp_path / GENERATOR.README).read_text()
    assert GENERATOR.main(['role-readme.py', '--check']) == 0


def test_markup_that_does_not_parse_is_refused():
    with pytest.raises(Exception, match='C\\(|closing|parameter'):
        GENERATOR.markdown('an unclosed C(code')


def test_the_presets_table_has_both_defaults_of_each_declared_preset():
    readme = GENERATOR.render(spec())
    table = readme.split("## Defaults that differ from the module's", 1)[1].split('## Variables', 1)[0]
    assert '| `rollout_min_ready_seconds` | `10` | `min_ready_seconds`: `0` |' in table
    assert '| `rollout_window` | `true` | `window`: `false` |' in table
