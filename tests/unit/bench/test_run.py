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


def row(scenario, cpu, fixed, **more):
    values = dict(scenario=scenario, pods=1000, method='role', kind='Deployment', batch='25%', window=True,
                  wall=100.0, floor=95.0, per_batch=1.0, ratio=0.05, modules_per_batch=0.5, rss_mib=90.0,
                  cpu_ms_per_pod=cpu, module_cpu_ms_per_pod=9.0, recreated=0, ips_changed=0, outside_modules=3.0,
                  fixed={'prepare': fixed - 0.3, 'finish': 0.3, 'steps': 1, 'total': fixed},
                  client={'total': 1050, 'pod_writes_per_pod': 1.0, 'pod_gets_per_pod': 0.0})
    values.update(more)
    return values


def test_targets_are_judged_with_ansibles_defaults_and_tell_other_settings_beside():
    found = run.targets([row('role Deployment 25%', 18.6, 1.7),
                         row('role Deployment 25% poll 10 ms', 9.5, 2.4, per_batch=3.0, ratio=0.2)])
    cpu = found['Ansible CPU per pod at N=1000 (<=10 ms)']
    assert cpu['status'] == 'MISS'
    assert cpu['value'].startswith('worst role Deployment 25%: 18.6 ms')
    assert cpu['value'].endswith('; with internal_poll_interval 0.01: 9.5 ms (module 9.0 ms)')
    fixed = found['role prepare + finish at N=1000 (<=2 s)']
    assert fixed['status'] == 'PASS'
    assert fixed['value'].endswith('; with internal_poll_interval 0.01: 2.4 s')
    assert found['overhead above the kubelet floor (<=10% or <=2 s per batch)']['status'] == 'PASS'


def test_a_default_row_past_a_target_misses_it_whatever_the_other_settings_give():
    found = run.targets([row('role Deployment 25%', 18.6, 2.5),
                         row('role Deployment 25% poll 10 ms', 9.5, 1.5)])
    assert found['role prepare + finish at N=1000 (<=2 s)']['status'] == 'MISS'
