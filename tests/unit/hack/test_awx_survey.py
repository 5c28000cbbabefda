# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""examples/awx/ is what hack/awx-survey.py makes of roles/rollout/meta/argument_specs.yml, and the survey
asks every option of the role that a survey can answer, with the role's defaults and choices."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT, load_script

GENERATOR = load_script('awx-survey.py', 'awx_survey')


def role_options():
    with open(os.path.join(ROOT, GENERATOR.SPEC)) as handle:
        return yaml.safe_load(handle)['argument_specs']['main']['options']


@pytest.mark.parametrize('path', [GENERATOR.SURVEY, GENERATOR.TEMPLATE])
def test_shipped_files_are_generated_from_the_argument_spec(path):
    with open(os.path.join(ROOT, path)) as handle:
        shipped = handle.read()
    assert shipped == GENERATOR.outputs()[path], '%s is stale: run hack/awx-survey.py' % path


def test_every_option_is_asked_or_in_the_extra_vars():
    options = role_options()
    with open(os.path.join(ROOT, GENERATOR.SURVEY)) as handle:
        questions = {q['variable']: q for q in json.load(handle)['spec']}
    with open(os.path.join(ROOT, GENERATOR.TEMPLATE)) as handle:
        template = yaml.safe_load(handle)
    assert template['survey_spec']['spec'] == list(questions.values())
    assert set(questions) | set(template['extra_vars']) | set(GENERATOR.LEFT_OUT) == set(options)
    for name, option in options.items():
        if name in template['extra_vars']:
            assert option['type'] in ('dict', 'list')
            continue
        if name in GENERATOR.LEFT_OUT:
            continue
        asked = questions[name]
        assert asked['required'] == option.get('required', False)
        if option.get('choices'):
            assert asked['type'] == 'multiplechoice' and asked['choices'] == option['choices']
            assert asked['default'] == option['default']
        elif option['type'] == 'bool':
            assert asked['choices'] == ['true', 'false'] and asked['default'] == str(option['default']).lower()
        elif option['type'] == 'int':
            assert asked['type'] == 'integer' and asked['default'] == option['default']
        else:
            assert asked['type'] == 'text' and asked['default'] == str(option['default'])
        assert 'C(' not in asked['question_description'] and 'O(' not in asked['question_description']


def test_an_option_type_without_a_question_is_refused():
    with pytest.raises(ValueError, match='rollout_x has type float'):
        GENERATOR.question('rollout_x', {'type': 'float'})


def test_check_mode_names_a_stale_file(tmp_path, monkeypatch, capsys):
    for path in (GENERATOR.SPEC, GENERATOR.SURVEY, GENERATOR.TEMPLATE):
        os.makedirs(os.path.dirname(str(tmp_path / path)), exist_ok=True)
        with open(os.path.join(ROOT, path)) as source, open(str(tmp_path / path), 'w') as copy:
            copy.write(source.read())
    monkeypatch.setattr(GENERATOR, 'ROOT', str(tmp_path))
    assert GENERATOR.main(['--check']) == 0
    with open(str(tmp_path / GENERATOR.SURVEY), 'a') as handle:
        handle.write(' ')
    assert GENERATOR.main(['--check']) == 1
    assert 'stale: %s' % GENERATOR.SURVEY in capsys.readouterr().out
