# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the role's fixed cost from a request trace, the targets from result rows (judged with Ansible's
defaults), the ansible.cfg a scenario runs ansible-playbook with, the cluster's size and the pod watch's reading of
a pod's JSON."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import types

import pytest

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import load
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import container_status, pod

measure = load('measure')
run = load('run')
workloads = load('workloads')
IMAGE = 'registry.example/bench:2.0'


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


def write(pid, t, name):
    return request(pid, t, 'PATCH', '/api/v1/namespaces/ns/pods/%s' % name)


def test_module_cpu_is_the_sum_of_the_exit_lines_of_the_processes_that_made_requests():
    trace = [
        request(1, 0.4), {'event': 'exit', 'pid': 1, 'proc_start': 0.0, 't': 0.8, 'cpu': 0.5},
        request(2, 1.2, start=1.0), {'event': 'exit', 'pid': 2, 'proc_start': 1.0, 't': 9.0, 'cpu': 7.25},
        request(3, 9.5, start=9.3),   # killed: no exit line, its CPU is not known
    ]
    assert measure.module_cpu_seconds(trace) == 7.75
    assert measure.module_cpu_seconds([request(1, 0.4)]) is None   # a trace written before exit lines had cpu


def test_module_cpu_phases_split_each_process_at_its_phase_lines():
    def phase(pid, name, t, cpu, cpu_end):
        return {'event': 'phase', 'pid': pid, 'proc_start': 0.0, 'phase': name, 't': t, 'end': t + 1,
                'cpu': cpu, 'cpu_end': cpu_end}
    trace = [
        phase(1, 'prepare', 1.0, 0.9, 1.2), request(1, 1.1), phase(1, 'batch', 2.0, 1.2, 7.0),
        phase(1, 'batch', 3.0, 7.0, 8.5), phase(1, 'finish', 4.0, 8.5, 8.6),
        {'event': 'exit', 'pid': 1, 'proc_start': 0.0, 't': 5.0, 'cpu': 8.9},
        request(2, 0.4), {'event': 'exit', 'pid': 2, 'proc_start': 0.0, 't': 0.8, 'cpu': 0.5},   # no phase: left out
    ]
    assert measure.module_cpu_phases(trace) == {'start': 0.9, 'prepare': 0.3, 'steps': 7.3, 'finish': 0.1, 'exit': 0.3}
    assert measure.module_cpu_phases(trace[-2:]) is None


def test_window_floor_is_the_rollout_that_adds_nothing_to_the_pods_own_times():
    # a window of 2 over 3 pods of 2, 4 and 1 s: c takes a's place at 2 s and frees it at 3 s, b frees
    # its place at 4 s: 4 s, not the pods' 7 s over the window (3.5 s), a window never full to its end
    trace = [write(1, 10.0, 'a'), write(1, 10.1, 'b'), write(1, 12.0, 'c')]
    ready = {'a': 12.0, 'b': 14.1, 'c': 13.0}
    assert measure.window_floors(trace, ready, 2) == [2.0, 2.0]
    # equal times fill the window to the end: the floor is their sum over the window
    ready = {'a': 12.0, 'b': 12.1, 'c': 14.0}
    assert measure.window_floors(trace, ready, 1) == [6.0 / 3] * 3
    assert measure.window_floors(trace, {}, 2) == []


def test_batch_floor_is_each_batch_slowest_pod():
    trace = [write(1, 10.0, 'a'), write(1, 10.1, 'b'), write(2, 13.0, 'c')]
    assert measure.batch_floors(trace, {'a': 12.0, 'b': 12.6, 'c': 14.5}) == [2.5, 1.5]


def state(uid, ready='True', image='old', running='old', gate=None):
    return {'uid': uid, 'name': 'pod-' + uid, 'ready': ready, 'gate': gate, 'image': image, 'running': running,
            'deleted': False}


def test_ready_after_is_when_the_watch_first_saw_the_pod_ready_on_the_new_image():
    events = [
        (1.0, state('a')), (1.0, state('b')),
        (2.0, state('a', image='new')), (2.5, state('a', ready='False', image='new')),
        (4.25, state('a', image='new')),                        # Ready, but the old container still reported
        (4.5, state('a', image='new', running='new')),          # back
        (4.9, state('a', image='new', running='new')),          # a later version changes nothing
        (3.0, state('b', ready='False', image='new')),          # out of order: sorted by the time seen
        (2.2, state('b', image='new')),
    ]
    assert measure.ready_after(events, 'old') == {'pod-a': 4.5}
    seconds, missing = measure.unavailable_in_place(events, 'old')
    assert seconds == [2.5] and missing == ['pod-b']


def test_refill_is_the_time_a_freed_place_in_the_window_stayed_empty():
    # a window of 2: c takes the first place freed (a's, at 12.0) at 12.3, d the next (b's, 12.5) at 12.5
    trace = [write(1, 10.0, 'a'), write(1, 10.1, 'b'), write(1, 12.3, 'c'), write(1, 12.5, 'd')]
    ready = {'a': 12.0, 'b': 12.5, 'c': 14.0, 'd': 14.6}
    assert [round(s, 2) for s in measure.refill_seconds(trace, ready, 2)] == [0.3, 0.0]
    assert measure.refill_seconds(trace, ready, 4) == []


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


def test_a_run_with_only_other_ansible_settings_judges_no_target_of_the_role():
    found = run.targets([row('role Deployment 25% poll 10 ms', 9.5, 1.5)])
    per_step = [value for key, value in found.items() if key.startswith('N=1000 role overhead above the kubelet floor')]
    assert [value['status'] for value in per_step] == ['n/a']
    assert 'role prepare + finish at N=1000 (<=2 s)' not in found
    assert 'Ansible CPU per pod at N=1000 (<=10 ms)' not in found


@pytest.mark.parametrize('pods, size', [(10, (3, 110)), (330, (3, 110)), (331, (4, 110)), (1290, (12, 110)),
                                        (1650, (15, 110)), (3790, (15, 253))])
def test_cluster_size_keeps_nodes_at_the_kubelets_110_pods(pods, size):
    assert measure.cluster_size(pods) == size


def test_cluster_size_with_the_nodes_given():
    assert measure.cluster_size(1290, nodes=3) == (3, 430)
    assert measure.cluster_size(100, nodes=5) == (5, 110)


def bench_pod(ready='True', gate=None, running=IMAGE, deleting=False):
    """A pod of the bench workload: sidecar first, then the app container (running ``running``, or waiting)."""
    conditions = {'Ready': ready, 'ContainersReady': 'True'}
    if gate is not None:
        conditions[workloads.GATE] = gate
    app = container_status('app', image=running or 'registry.example/bench:1.0')
    if running:
        app['state'] = {'running': {'startedAt': '2026-11-26T10:00:00Z'}}
    else:
        app['state'] = {'waiting': {'reason': 'x'}}
    return pod('bench-0', uid='u-0', version='7', containers={'app': IMAGE}, conditions=conditions,
               statuses=[container_status('sidecar', image='other:1'), app],
               deleting='2026-11-26T10:00:01Z' if deleting else None)


def test_pod_state_reads_the_json():
    assert workloads.pod_state(bench_pod(gate='False')) == {
        'uid': 'u-0', 'name': 'bench-0', 'ready': 'True', 'gate': 'False', 'image': 'registry.example/bench:2.0',
        'running': 'registry.example/bench:2.0', 'deleted': False}


def test_pod_state_of_a_pod_starting_and_going():
    state = workloads.pod_state(bench_pod(ready='False', running=None, deleting=True))
    assert (state['ready'], state['gate'], state['running'], state['deleted']) == ('False', None, None, True)
    assert workloads.pod_state({'metadata': {'name': 'p', 'uid': 'u'}, 'spec': {'containers': [{'image': 'i'}]}},
                               deleted=True) == {'uid': 'u', 'name': 'p', 'ready': None, 'gate': None, 'image': 'i',
                                                 'running': None, 'deleted': True}
