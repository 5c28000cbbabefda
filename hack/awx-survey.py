#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write examples/awx/survey.json (an AWX survey spec) and examples/awx/job-template.yml (a job template for
playbooks/awx_rollout.yml, with that survey) from roles/rollout/meta/argument_specs.yml, so that the survey asks
the role's options a launcher may set, with the role's defaults and choices. tests/unit checks that the files are
up to date.
Usage: .cache/venv/bin/python hack/awx-survey.py [--check]   (--check writes nothing, fails if a file is stale)

Who may set what (docs/safety.md, "Trust model"). The template does not ask variables on launch: a launcher sets
the survey's answers and nothing else. The survey asks what one rollout needs - the target (kind, namespace, name
or label selector), one container's image, how fast (LAUNCHER: batch size, pauses, partition...) and one
verification of a fixed list (VERIFY: files of playbooks/verify/) - each bounded by AWX (choices, min/max length or
value) and checked again by playbooks/awx_rollout.yml (patterns). Every other option of the role is the template
author's: in the template's extra_vars, with the role's default (drain, owners, analysis URLs and headers,
prepull, gate policy, takeover...). kubeconfig is no variable at all: the job connects with the credential AWX
injects (K8S_AUTH_*).

Survey answers reach the play as text, integers or one of the choices, and the role reads them as they come: raw
(a count or a percentage) -> text, int -> integer, bool -> a choice of true/false, choices -> multiplechoice."""

import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join('roles', 'rollout', 'meta', 'argument_specs.yml')
SURVEY = os.path.join('examples', 'awx', 'survey.json')
TEMPLATE = os.path.join('examples', 'awx', 'job-template.yml')
# Options no one sets from a launch form: rollout_stop_after_batches exists to test resume.
LEFT_OUT = ('rollout_stop_after_batches',)
# The role's options a launcher answers, with AWX's bounds (text: length; integer: value; a subset of choices).
LAUNCHER = {
    'rollout_batch_size': {'max': 4}, 'rollout_max_unavailable': {'max': 4}, 'rollout_canary': {'max': 4},
    'rollout_partition': {'max': 4}, 'rollout_window': {}, 'rollout_canary_pause_seconds': {'max': 3600},
    'rollout_pause_seconds': {'max': 3600}, 'rollout_min_ready_seconds': {'max': 600},
    'rollout_wait_timeout': {'min': 1, 'max': 3600}, 'rollout_max_failed_pods': {'max': 1000},
    'rollout_action': {}, 'rollout_undo_revision': {'max': 1000000}, 'rollout_on_failure': {},
    'rollout_order': {'choices': ['ordinal', 'reverse_ordinal', 'node', 'name']}, 'rollout_fail_on_error': {},
}
# The role's options playbooks/awx_rollout.yml sets from the questions of TARGET, never from a launcher directly.
FROM_PLAYBOOK = ('rollout_target', 'rollout_images', 'rollout_verify_tasks')
# The verification tasks a launcher may pick: playbooks/verify/<name>.yml ('none': no verification).
VERIFY = ['none', 'report', 'health']
# The playbook's own questions (their patterns are checked in playbooks/awx_rollout.yml).
TARGET = [
    {'question_name': 'Target kind', 'question_description': 'The kind of the workload to roll out; pods: the pods '
     'of a label selector.', 'variable': 'awx_target_kind', 'required': True, 'type': 'multiplechoice',
     'choices': ['Deployment', 'StatefulSet', 'DaemonSet', 'pods'], 'default': 'Deployment'},
    {'question_name': 'Target namespace', 'question_description': 'The namespace of the target (a DNS label).',
     'variable': 'awx_target_namespace', 'required': True, 'type': 'text', 'min': 1, 'max': 63, 'default': ''},
    {'question_name': 'Target name', 'question_description': 'The name of the workload (not with pods).',
     'variable': 'awx_target_name', 'required': False, 'type': 'text', 'min': 0, 'max': 253, 'default': ''},
    {'question_name': 'Target selector', 'question_description': 'With pods: a label selector, key=value pairs '
     'separated by commas.', 'variable': 'awx_target_selector', 'required': False, 'type': 'text', 'min': 0,
     'max': 253, 'default': ''},
    {'question_name': 'Container', 'question_description': 'The container whose image changes.',
     'variable': 'awx_container', 'required': True, 'type': 'text', 'min': 1, 'max': 63, 'default': ''},
    {'question_name': 'Image', 'question_description': 'The new image (registry/repository:tag or @sha256:digest).',
     'variable': 'awx_image', 'required': True, 'type': 'text', 'min': 1, 'max': 255, 'default': ''},
    {'question_name': 'Verification', 'question_description': "Tasks run after each batch, from the project's "
     "playbooks/verify/ only: report lists the batch's pods, health checks the template's awx_health_url.",
     'variable': 'awx_verify', 'required': False, 'type': 'multiplechoice', 'choices': VERIFY, 'default': 'none'},
]
# Extra variables of the template that are not the role's: the URL playbooks/verify/health.yml checks.
TEMPLATE_VARS = {'awx_health_url': ''}
INTEGER_MAX = 1000000
TEXT_MAX = 1024

HEADER = '''\
# AWX job template for playbooks/awx_rollout.yml: the arguments of the awx.awx.job_template module (the same
# fields as AWX's API /api/v2/job_templates/), survey included (also in survey.json, for the API or the UI).
# Generated by hack/awx-survey.py from roles/rollout/meta/argument_specs.yml; tests/unit checks that they
# agree. Setup steps: examples/awx/README.md. Names of the project, inventory, credential and execution
# environment are the ones that README creates. Launchers answer the survey and set nothing else: the extra_vars
# are the template author's (docs/safety.md, "Trust model").
'''


def plain(text):
    """Ansible doc markup to plain text: C(x), V(x), M(x), O(x) -> x (O(collection.module#module:opt) -> opt)."""
    text = re.sub(r'[CVMOI]\(([^()]*)\)', lambda m: m.group(1).rsplit(':', 1)[-1].rsplit('#', 1)[-1], text)
    return ' '.join(text.split())


def question(name, option, bounds=None):
    """The AWX survey question of one option (``bounds``: min, max, choices of LAUNCHER), or None for dict/list
    options (not answerable in a survey)."""
    kind = option.get('type', 'str')
    bounds = bounds or {}
    if kind in ('dict', 'list') or name in LEFT_OUT:
        return None
    description = option.get('description', '')
    if isinstance(description, list):
        description = ' '.join(description)
    default = option.get('default')
    item = {
        'question_name': name[len('rollout_'):].replace('_', ' ').capitalize(),
        'question_description': plain(description),
        'variable': name,
        'required': bool(option.get('required', False)),
    }
    if option.get('choices'):
        item.update(type='multiplechoice', choices=[str(c) for c in bounds.get('choices', option['choices'])],
                    default=str(default))
    elif kind == 'bool':
        item.update(type='multiplechoice', choices=['true', 'false'], default='true' if default else 'false')
    elif kind == 'int':
        item.update(type='integer', min=bounds.get('min', 0), max=bounds.get('max', INTEGER_MAX),
                    default=int(default or 0))
    elif kind in ('str', 'raw', 'path'):
        item.update(type='text', min=0, max=bounds.get('max', TEXT_MAX), default='' if default is None else str(default))
    else:
        raise ValueError('%s: option %s has type %s, which hack/awx-survey.py cannot map to a survey question'
                         % (SPEC, name, kind))
    return item


def build(spec):
    """(survey spec, job template) from the parsed argument_specs.yml."""
    options = spec['argument_specs']['main']['options']
    unknown = sorted(set(LAUNCHER) - set(options))
    if unknown:
        raise ValueError('%s: no option %s, which hack/awx-survey.py asks launchers' % (SPEC, ', '.join(unknown)))
    questions = list(TARGET) + [question(name, options[name], LAUNCHER[name]) for name in options if name in LAUNCHER]
    survey = {
        'name': 'inplace.k8s rollout',
        'description': "One image of one workload (or of a selector's pods), in place; the rest is the template's",
        'spec': questions,
    }
    extra_vars = dict((name, option.get('default')) for name, option in options.items()
                      if name not in LAUNCHER and name not in FROM_PLAYBOOK and name not in LEFT_OUT)
    extra_vars.update(TEMPLATE_VARS)
    template = {
        'name': 'inplace.k8s rollout',
        'description': 'In-place rollout of a workload (playbooks/awx_rollout.yml, role inplace.k8s.rollout)',
        'job_type': 'run',
        'organization': 'Default',
        'project': 'inplace-k8s',
        'playbook': 'playbooks/awx_rollout.yml',
        'inventory': 'inplace-k8s-controller',
        'execution_environment': 'inplace-k8s-ee',
        'credentials': ['kubernetes'],
        'extra_vars': extra_vars,
        'ask_variables_on_launch': False,
        'ask_credential_on_launch': False,
        'ask_inventory_on_launch': False,
        'survey_enabled': True,
        'survey_spec': survey,
    }
    return survey, template


def outputs():
    """{relative path: content} of the generated files."""
    with open(os.path.join(ROOT, SPEC)) as handle:
        survey, template = build(yaml.safe_load(handle))
    return {
        SURVEY: json.dumps(survey, indent=2, sort_keys=False) + '\n',
        TEMPLATE: HEADER + '---\n' + yaml.safe_dump(template, sort_keys=False, width=110, default_flow_style=False),
    }


def main(argv):
    check = argv == ['--check']
    stale = []
    for path, content in outputs().items():
        full = os.path.join(ROOT, path)
        current = open(full).read() if os.path.exists(full) else None
        if current == content:
            continue
        stale.append(path)
        if not check:
            with open(full, 'w') as handle:
                handle.write(content)
            print('wrote %s' % path)
    if check and stale:
        print('stale: %s; run hack/awx-survey.py' % ', '.join(stale))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
