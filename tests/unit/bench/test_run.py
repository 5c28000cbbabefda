# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench/run.py: the ansible.cfg a scenario runs ansible-playbook with is one Ansible reads."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import sys
import types

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'bench'))


def load(name):
    spec = importlib.util.spec_from_file_location('bench_' + name, os.path.join(ROOT, 'tests', 'bench', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = load('run')


def bench(work):
    instance = run.Bench.__new__(run.Bench)
    instance.args = types.SimpleNamespace(work=str(work))
    return instance


def test_the_poll_scenario_writes_an_ansible_cfg_that_ansible_reads(tmp_path):
    config = run.VARIANTS['role Deployment 25% poll 10 ms']['config']
    path = bench(tmp_path).ansible_cfg('ns', config)
    with open(path) as handle:
        assert handle.read() == '[defaults]\ninternal_poll_interval = 0.01\n'


def test_a_setting_ansible_does_not_read_fails_the_scenario(tmp_path):
    with pytest.raises(RuntimeError, match='reads none of internal_pol_interval'):
        bench(tmp_path).ansible_cfg('ns', {'internal_pol_interval': '0.01'})
