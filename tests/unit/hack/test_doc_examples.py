# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every ```yaml example of the Markdown docs (README.md, docs/, the role's README, examples/) parses, and the
playbook, task and play examples pass ansible-playbook --syntax-check with this collection and kubernetes.core on
the collections path (hack/collections.sh), as a user who copies them would run them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT

DOCS = sorted(['README.md', 'roles/rollout/README.md']
              + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'docs', '*.md'))]
              + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'examples', '**', '*.md'),
                                                             recursive=True)])
BLOCK = re.compile(r'^```ya?ml[ \t]*\n(.*?)^```', re.S | re.M)
# What the keys of a play fragment may be (an example that shows only module_defaults, vars, ...).
PLAY_KEYS = {'hosts', 'vars', 'module_defaults', 'environment', 'gather_facts', 'roles', 'tasks', 'collections'}


def examples():
    found = []
    for doc in DOCS:
        with open(os.path.join(ROOT, doc)) as handle:
            text = handle.read()
        for match in BLOCK.finditer(text):
            line = text.count('\n', 0, match.start()) + 2
            found.append(pytest.param(doc, line, match.group(1), id='%s:%d' % (doc, line)))
    return found


EXAMPLES = examples()


def as_play(data):
    """The example as a list of plays to syntax-check, or None when it is no playbook, task list or play."""
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all('hosts' in item or 'import_playbook' in item for item in data):
            return data
        if not any('hosts' in item for item in data):
            return [{'name': 'Example', 'hosts': 'localhost', 'gather_facts': False, 'tasks': data}]
    if isinstance(data, dict) and set(data) <= PLAY_KEYS:
        return [dict({'name': 'Example', 'hosts': 'localhost', 'gather_facts': False}, **data)]
    return None


def test_the_docs_have_examples():
    assert len(EXAMPLES) >= 10
    assert any(param.values[0] == 'docs/gitops.md' for param in EXAMPLES)


@pytest.mark.parametrize('doc, line, block', EXAMPLES)
def test_every_yaml_example_parses(doc, line, block):
    try:
        yaml.safe_load(block)
    except yaml.YAMLError as error:
        pytest.fail('the ```yaml example at %s:%d does not parse: %s' % (doc, line, error))


@pytest.fixture(scope='module')
def collections_path():
    """This tree as inplace.k8s, and kubernetes.core from hack/collections.sh."""
    cache = os.environ.get('CACHE') or os.path.join(ROOT, '.cache')
    collections = os.path.join(cache, 'collections')
    os.makedirs(os.path.join(collections, 'ansible_collections', 'inplace'), exist_ok=True)
    link = os.path.join(collections, 'ansible_collections', 'inplace', 'k8s')
    if not os.path.exists(link):
        os.symlink(ROOT, link)
    galaxy = subprocess.run([os.path.join(ROOT, 'hack', 'collections.sh')], check=True, stdout=subprocess.PIPE,
                            env=dict(os.environ, CACHE=cache), universal_newlines=True).stdout.strip()
    return '%s:%s' % (collections, galaxy)


def syntax_check(plays, path, collections_path):
    with open(path, 'w') as handle:
        yaml.safe_dump(plays, handle, sort_keys=False)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
               ANSIBLE_NOCOLOR='1')
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    return subprocess.run([playbook, '--syntax-check', '-i', 'localhost,', str(path)], env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)


def test_playbook_task_and_play_examples_pass_the_syntax_check(tmp_path, collections_path):
    checked = [(doc, line, as_play(yaml.safe_load(block))) for doc, line, block in (p.values for p in EXAMPLES)]
    checked = [(doc, line, plays) for doc, line, plays in checked if plays]
    assert len(checked) >= 8
    # one run for all of them; on a failure, one run each, to name the examples that fail
    if syntax_check([play for example in checked for play in example[2]], tmp_path / 'all.yml',
                    collections_path).returncode == 0:
        return
    failures = []
    for doc, line, plays in checked:
        result = syntax_check(plays, tmp_path / 'one.yml', collections_path)
        if result.returncode:
            failures.append('%s:%d: %s' % (doc, line, result.stdout.strip()[-600:]))
    assert failures, 'the examples fail the syntax check together but none alone'
    pytest.fail('examples that fail ansible-playbook --syntax-check:\n' + '\n'.join(failures))


def test_a_broken_example_fails_the_syntax_check(tmp_path, collections_path):
    plays = as_play([{'name': 'A misspelt module', 'inplace.k8s.inplace_imag': {'namespace': 'shop'}}])
    result = syntax_check(plays, tmp_path / 'broken.yml', collections_path)
    assert result.returncode != 0 and 'inplace_imag' in result.stdout
