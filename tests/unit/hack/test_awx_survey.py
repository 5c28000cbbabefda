# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""examples/awx/ is what hack/awx-survey.py makes of roles/rollout/meta/argument_specs.yml: the survey asks what a
launcher may set (bounded, with the role's defaults and choices), playbooks/awx_rollout.yml sets the target, image
and verification from it, every other option is the template author's, and nothing else comes from a launcher."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys

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


def test_every_option_is_asked_set_by_the_playbook_or_the_template_authors():
    options = role_options()
    with open(os.path.join(ROOT, GENERATOR.SURVEY)) as handle:
        questions = {q['variable']: q for q in json.load(handle)['spec']}
    with open(os.path.join(ROOT, GENERATOR.TEMPLATE)) as handle:
        template = yaml.safe_load(handle)
    assert template['survey_spec']['spec'] == list(questions.values())
    asked = set(questions) - set(q['variable'] for q in GENERATOR.TARGET)
    assert asked == set(GENERATOR.LAUNCHER)
    fixed = set(template['extra_vars']) - set(GENERATOR.TEMPLATE_VARS)
    assert asked | fixed | set(GENERATOR.FROM_PLAYBOOK) | set(GENERATOR.LEFT_OUT) == set(options)
    assert not asked & fixed and not (asked | fixed) & set(GENERATOR.FROM_PLAYBOOK)
    for name in asked:
        option, question = options[name], questions[name]
        assert question['required'] == option.get('required', False)
        if option.get('choices'):
            assert question['type'] == 'multiplechoice' and set(question['choices']) <= set(option['choices'])
            assert question['default'] == option['default'] and question['default'] in question['choices']
        elif option['type'] == 'bool':
            assert question['choices'] == ['true', 'false'] and question['default'] == str(option['default']).lower()
        elif option['type'] == 'int':
            assert question['type'] == 'integer' and question['min'] <= question['default'] <= question['max']
        else:
            assert question['type'] == 'text' and question['default'] == str(option['default'])
        assert 'C(' not in question['question_description'] and 'O(' not in question['question_description']
    for name in fixed:
        assert template['extra_vars'][name] == options[name].get('default')


def test_a_launcher_sets_the_survey_answers_only():
    """No variables on launch; nothing that runs code, connects or reaches a URL is a question; every text answer is
    bounded; a verification is a choice among the files of playbooks/verify/."""
    with open(os.path.join(ROOT, GENERATOR.TEMPLATE)) as handle:
        template = yaml.safe_load(handle)
    assert template['ask_variables_on_launch'] is False and template['survey_enabled'] is True
    assert template['ask_credential_on_launch'] is False and template['ask_inventory_on_launch'] is False
    questions = template['survey_spec']['spec']
    names = set(q['variable'] for q in questions)
    assert not names & {'kubeconfig', 'rollout_verify_tasks', 'rollout_analysis', 'rollout_target', 'rollout_images',
                        'awx_health_url', 'rollout_force_takeover', 'rollout_install_gate_policy', 'rollout_prepull'}
    for question in questions:
        assert question['type'] in ('text', 'integer', 'multiplechoice')
        if question['type'] != 'multiplechoice':
            assert question['max'] <= 1000000 and (question['type'] == 'integer' or question['max'] <= 255)
    verify = [q for q in questions if q['variable'] == 'awx_verify'][0]
    files = sorted(name[:-len('.yml')] for name in os.listdir(os.path.join(ROOT, 'playbooks', 'verify')))
    assert verify['type'] == 'multiplechoice' and sorted(verify['choices']) == sorted(['none'] + files)
    with open(os.path.join(ROOT, 'playbooks', 'awx_rollout.yml')) as handle:
        playbook = handle.read()
    assert "__verify: [%s]" % ', '.join(GENERATOR.VERIFY) in playbook


LAUNCH = {'awx_target_kind': 'Deployment', 'awx_target_namespace': 'shop', 'awx_target_name': 'web',
          'awx_container': 'app', 'awx_image': 'registry.example/web:2.0'}


@pytest.mark.parametrize('extra, refusal', [
    ({'kubeconfig': {'users': [{'name': 'u', 'user': {'exec': {'command': 'touch', 'args': ['/tmp/pwned']}}}]}},
     'kubeconfig, rollout_target, rollout_images and rollout_verify_tasks are not taken from'),
    ({'rollout_verify_tasks': '/tmp/x.yml'}, 'are not taken from a job'),
    ({'awx_verify': '../../../tmp/x'}, 'awx_verify must be one of none, report, health'),
    ({'awx_image': 'registry.example/web:2.0\n'}, 'awx_image must be an image reference'),
    ({'awx_target_namespace': 'shop;x'}, 'awx_target_namespace must be a namespace name'),
    ({'awx_target_kind': 'pods', 'awx_target_selector': 'app in (a)'}, 'awx_target_selector must be key=value'),
])
def test_the_awx_playbook_refuses_what_no_launcher_may_set(tmp_path, extra, refusal):
    """playbooks/awx_rollout.yml through ansible-playbook: refused before the role runs, naming the variable."""
    launch = dict(LAUNCH, **extra)
    env = dict(os.environ, K8S_AUTH_HOST='https://127.0.0.1:9', K8S_AUTH_API_KEY='x', ANSIBLE_LOCAL_TEMP=str(tmp_path),
               ANSIBLE_NOCOLOR='1')
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                          os.path.join(ROOT, 'playbooks', 'awx_rollout.yml'), '-e', json.dumps(launch)],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert run.returncode != 0 and refusal in run.stdout + run.stderr
    assert 'nothing was changed' in run.stdout + run.stderr and 'TASK [Roll out in place]' not in run.stdout
    assert not os.path.exists('/tmp/pwned')


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
