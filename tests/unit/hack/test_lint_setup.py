# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-lint runs in a checkout as a user runs it: .ansible-lint neither goes offline nor weakens or skips a rule,
and requirements.yml (which ansible-lint installs from) names the collections hack/collections.sh provides."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle)


def test_ansible_lint_runs_online_at_the_production_profile_with_no_rule_weakened():
    config = load('.ansible-lint')
    assert config['profile'] == 'production'
    assert not config.get('offline')
    for weakening in ('skip_list', 'warn_list', 'enable_list_off', 'offline'):
        assert not config.get(weakening), '.ansible-lint sets %s' % weakening
    assert set(config) <= {'profile', 'exclude_paths', 'mock_modules'}


def test_requirements_yml_names_the_collections_that_hack_collections_sh_provides():
    wanted = sorted(item['name'] for item in load('requirements.yml')['collections'])
    with open(os.path.join(ROOT, 'requirements-collections.txt')) as handle:
        provided = sorted(line.strip() for line in handle
                          if line.strip() and not line.startswith('#') and not line.startswith('ansible=='))
    assert wanted == provided == ['kubernetes.core']
    # the collection itself needs none of them (galaxy.yml)
    assert not load('galaxy.yml').get('dependencies')
