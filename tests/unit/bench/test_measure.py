# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the role's fixed cost from a request trace, and the window targets from result rows."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'bench'))


def load(name):
    spec = importlib.util.spec_from_file_location('bench_' + name, os.path.join(ROOT, 'tests', 'bench', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


measure = load('measure')


def request(pid, t, method='GET', path='/apis/apps/v1/namespaces/ns/deployments/bench', start=0.0):
    return {'event': 'request', 'pid': pid, 'proc_start': start, 't': t, 'method': method, 'path': path}


def test_fixed_seconds_are_the_processes_before_the_first_pod_write_and_after_the_last():
    trace = [
        request(1, 0.4, start=0.0), {'event': 'exit', 'pid': 1, 'proc_start': 0.0, 't': 0.8},     # prepare
        request(2, 1.2, 'PATCH', '/api/v1/namespaces/ns/pods/a', start=1.0),                        # the step
        {'event': 'exit', 'pid': 2, 'proc_start': 1.0, 't': 9.0},
        request(3, 9.5, start=9.3), {'event': 'exit', 'pid': 3, 'proc_start': 9.3, 't': 10.0},    # finish
    ]
    assert measure.fixed_seconds(trace) == {'prepare': 0.8, 'finish': 0.7, 'steps': 1, 'total': 1.5}


def test_fixed_seconds_of_one_process_are_its_start_to_the_end_of_prepare_and_its_finish_to_its_exit():
    # state rollout: prepare, the steps and finish in one process (the trace hook's phase events)
    trace = [
        request(1, 0.5, start=0.0), {'event': 'phase', 'pid': 1, 'proc_start': 0.0, 'phase': 'prepare', 't': 0.4, 'end': 0.6},
        request(1, 0.7, 'PATCH', '/api/v1/namespaces/ns/pods/a', start=0.0),
        {'event': 'phase', 'pid': 1, 'proc_start': 0.0, 'phase': 'batch', 't': 0.6, 'end': 9.0},
        {'event': 'phase', 'pid': 1, 'proc_start': 0.0, 'phase': 'finish', 't': 9.0, 'end': 9.2},
        {'event': 'exit', 'pid': 1, 'proc_start': 0.0, 't': 9.3},
    ]
    assert measure.fixed_seconds(trace) == {'prepare': 0.6, 'finish': 0.3, 'steps': 1, 'total': 0.9}


def test_fixed_seconds_without_a_pod_write_are_unknown():
    assert measure.fixed_seconds([request(1, 0.4)])['total'] is None
