# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/soak: the faults that move pods (their draw, the pod or node they aim at, a StatefulSet's scale-down
victims), the kinds the soak accepts, and how judge.py tells a legitimate recreation from one of ours."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import json
import os
import random
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'soak'))


moves = importlib.import_module('moves')     # by name, as soak.py imports them (tests/soak on the path)
judge = importlib.import_module('judge')
soak = importlib.import_module('soak')
faults = importlib.import_module('faults')
GATE = 'inplace.k8s/ready'
NODES = ['node-1', 'node-2', 'node-3']


def pod(name, uid=None, node='node-1', gate='True', record=None, image='r.example/soak:1.0', running=None):
    annotations = {'inplace.k8s/state': json.dumps({'image': {'state': record}})} if record else {}
    return {'metadata': {'name': name, 'namespace': 'ns', 'uid': uid or 'uid-' + name, 'annotations': annotations},
            'spec': {'nodeName': node, 'containers': [{'name': 'app', 'image': image}]},
            'status': {'conditions': [{'type': GATE, 'status': gate}],
                       'containerStatuses': [{'name': 'app', 'image': running or image}]}}


# ---------------------------------------------------------------- the draw

@pytest.mark.parametrize('kind', moves.MOVE_KINDS)
def test_draw_is_the_seeds(kind):
    first = moves.draw_move(random.Random(7), kind, 10, NODES)
    assert first == moves.draw_move(random.Random(7), kind, 10, NODES)


def test_draw_bounds():
    rng = random.Random(1)
    for _round in range(200):
        drain = moves.draw_move(rng, 'drain', 10, NODES)
        stop = moves.draw_move(rng, 'node-stop', 10, NODES)
        scale = moves.draw_move(rng, 'scale', 10, NODES)
        evict = moves.draw_move(rng, 'evict', 10, NODES)
        assert drain['node'] in NODES and moves.DRAIN_HOLD[0] <= drain['hold'] <= moves.DRAIN_HOLD[1]
        assert moves.NODE_STOP[0] <= stop['seconds'] <= moves.NODE_STOP[1]
        assert scale['delta'] in (-2, -1, 1, 2) and moves.SCALE_HOLD[0] <= scale['hold'] <= moves.SCALE_HOLD[1]
        assert 0 <= evict['pod_index'] < 10 and evict['in_flight'] in (True, False)


def test_a_scale_down_keeps_a_pod():
    rng = random.Random(3)
    assert all(moves.draw_move(rng, 'scale', 1, NODES)['delta'] > 0 for _round in range(50))
    assert all(2 + moves.draw_move(rng, 'scale', 2, NODES)['delta'] >= 1 for _round in range(50))


def test_draw_refuses_another_kind():
    with pytest.raises(ValueError, match='not a move fault: node'):
        moves.draw_move(random.Random(1), 'node', 3, NODES)


# ---------------------------------------------------------------- what a fault aims at

def test_in_flight():
    assert not moves.in_flight(pod('a'), GATE)
    assert moves.in_flight(pod('a', gate='False'), GATE)
    assert moves.in_flight(pod('a', record='in-progress'), GATE)
    assert not moves.in_flight(pod('a', record='done'), GATE)
    assert moves.in_flight(pod('a', image='r.example/soak:2.0', running='r.example/soak:1.0'), GATE)
    assert not moves.in_flight(pod('a', image='r.example/soak:12.0', running='r.example/soak:12.0'), GATE)


def test_pick_pod_prefers_one_in_flight_when_asked():
    pods = [pod('a'), pod('b', gate='False'), pod('c')]
    assert moves.pick_pod(pods, {'in_flight': True, 'pod_index': 2}, GATE) == (pods[1], True)
    assert moves.pick_pod(pods, {'in_flight': False, 'pod_index': 2}, GATE) == (pods[2], False)
    assert moves.pick_pod(pods, {'in_flight': False, 'pod_index': 4}, GATE) == (pods[1], True)
    calm = [pod('a'), pod('c')]
    assert moves.pick_pod(calm, {'in_flight': True, 'pod_index': 1}, GATE) == (calm[1], False)


def test_pick_node():
    pods = [pod('a', node='node-1'), pod('b', node='node-3', record='in-progress')]
    assert moves.pick_node(pods, {'in_flight': True, 'node': 'node-2'}, GATE) == ('node-3', True)
    assert moves.pick_node(pods, {'in_flight': False, 'node': 'node-2'}, GATE) == ('node-2', False)
    assert moves.pick_node(pods[:1], {'in_flight': True, 'node': 'node-2'}, GATE) == ('node-2', False)


def test_statefulset_victims_are_the_highest_ordinals():
    pods = [pod('db-%d' % i) for i in (0, 1, 2, 10, 11)] + [pod('dbx-12')]
    assert [p['metadata']['name'] for p in moves.statefulset_victims(pods, 'db', 10)] == ['db-10', 'db-11']
    assert moves.statefulset_victims(pods, 'db', 12) == []


def test_soak_kinds_are_selectable_by_name():
    args = soak.parse_args(['--clusterdir', 'c', '--root', 'r', '--collections', 'x', '--work', 'w',
                            '--kinds', 'evict,drain,delete-pod,scale,node-stop,apiserver'])
    assert args.kinds == ['evict', 'drain', 'delete-pod', 'scale', 'node-stop', 'apiserver']
    with pytest.raises(SystemExit):
        soak.parse_args(['--clusterdir', 'c', '--root', 'r', '--collections', 'x', '--work', 'w', '--kinds', 'evicts'])


# ---------------------------------------------------------------- the judge

def test_rollout_results_from_custom_stats():
    text = ('PLAY RECAP ***\nlocalhost : ok=1\n\nCUSTOM STATS: ****\n\n\tRUN: { "rollout_result": {  "failed_pods": [],'
            '  "gone": [   {    "name": "a",    "uid": "u1"   }  ] }}\n\n')
    assert judge.rollout_results(text) == [{'failed_pods': [], 'gone': [{'name': 'a', 'uid': 'u1'}]}]
    assert judge.rollout_results('PLAY RECAP\n\tRUN: {"rollout_result": {}}\n') == []   # not after CUSTOM STATS
    assert judge.rollout_results('CUSTOM STATS: *\n\tRUN: {broken\n') == []


def test_causes_from_every_source():
    log = [{'uid': 'u1', 'name': 'a', 'cause': 'evicted'}]
    results = [{'gone': [{'uid': 'u2', 'name': 'b', 'cause': 'deleted', 'detail': '', 'when': 'before'}],
                'replaced': [{'uid': 'n1', 'name': 'x', 'ready': True}]}]
    tracked = {'u3': {'name': 'c', 'deleted': True, 'disruption': 'EvictionByEvictionAPI'},
               'u4': {'name': 'd', 'deleted': True, 'disruption': None, 'evicted': True},
               'u5': {'name': 'e', 'deleted': True, 'disruption': None, 'evicted': False}}
    events = [{'involvedObject': {'kind': 'Pod', 'uid': 'u6'}, 'reason': 'Preempted', 'message': 'by p'},
              {'involvedObject': {'kind': 'Pod', 'uid': 'u7'}, 'reason': 'Killing', 'message': 'Stopping'}]
    gone, created = judge.causes(log, results, tracked, events)
    assert sorted(gone) == ['u1', 'u2', 'u3', 'u4', 'u6']
    assert gone['u1'] == 'the soak evicted it' and 'reported gone: deleted' in gone['u2']
    assert 'EvictionByEvictionAPI' in gone['u3'] and 'Evicted' in gone['u4'] and 'Preempted' in gone['u6']
    assert list(created) == ['n1']


def test_no_move_no_recreation():
    base = {'a': 'u1', 'b': 'u2'}
    assert judge.judge_recreations(base, dict(base), {}, {}, {}) == ([], [])


def test_a_recreation_without_cause_is_flagged():
    flagged, explained = judge.judge_recreations({'a': 'u1', 'b': 'u2'}, {'a': 'u1', 'c': 'u3'}, {}, {}, {})
    assert len(flagged) == 2 and explained == []
    assert 'b: uid u2 went away with no cause' in flagged[0] and 'c: uid u3 (was None) is new' in flagged[1]


def test_an_eviction_and_its_replacement_are_legitimate():
    gone = {'u2': 'the soak evicted it'}
    flagged, explained = judge.judge_recreations({'a': 'u1', 'b': 'u2'}, {'a': 'u1', 'c': 'u3'}, {}, gone, {})
    assert flagged == [] and len(explained) == 2
    # a StatefulSet's pod comes back under its name
    flagged, explained = judge.judge_recreations({'db-0': 'u1'}, {'db-0': 'u9'}, {}, {'u1': 'reported gone'}, {})
    assert flagged == [] and 'replaced a pod that went away' in explained[1]


def test_one_cause_replaces_one_pod():
    gone = {'u2': 'the soak deleted it'}
    flagged, _explained = judge.judge_recreations({'a': 'u1', 'b': 'u2'}, {'c': 'u3', 'd': 'u4'}, {}, gone, {})
    assert len(flagged) == 2 and 'a: uid u1 went away with no cause' in flagged[0]
    assert 'd: uid u4' in flagged[1]


def test_a_replacement_reported_by_the_run_needs_no_count():
    flagged, explained = judge.judge_recreations({'a': 'u1'}, {'a': 'u1', 'x': 'n1'}, {}, {},
                                                 {'n1': 'reported replaced'})
    assert flagged == [] and explained == ['x (uid n1) is new: reported replaced']


def test_a_pod_that_came_and_went_during_the_scenario_needs_a_cause_too():
    # a evicted (cause), its replacement t deleted by nobody on record, replaced again by z
    tracked = {'u1': {'name': 'a', 'deleted': True}, 'ut': {'name': 't', 'deleted': True},
               'uz': {'name': 'z', 'deleted': False}}
    flagged, _explained = judge.judge_recreations({'a': 'u1'}, {'z': 'uz'}, tracked, {'u1': 'the soak evicted it'}, {})
    assert flagged == ['t: uid ut went away with no cause on record (not moved by the soak, not reported gone, '
                       'no DisruptionTarget or eviction by the cluster)']
    causes = {'u1': 'evicted', 'ut': 'the cluster: DisruptionTarget x'}
    flagged, _explained = judge.judge_recreations({'a': 'u1'}, {'z': 'uz'}, tracked, causes, {})
    assert flagged == []


def test_gone_as_failed():
    log = [{'uid': 'u1', 'name': 'web-1', 'cause': 'evicted'}, {'uid': 'u2', 'name': 'web-2', 'cause': 'drained'}]
    results = [{'failed_pods': [{'name': 'web-1', 'status': 'failed', 'reason': 'Completed: exit code 0'},
                                {'name': 'web-9', 'status': 'failed', 'reason': 'crash'}]}, {'failed_pods': []}]
    assert judge.gone_as_failed(log, results) == [
        'run 0: web-1 reported failed (failed: Completed: exit code 0) though the soak evicted it']
    assert judge.gone_as_failed([], results) == []


def test_failure_and_move_halted():
    text = 'TASK [x]\nfatal: [localhost]: FAILED! => {"changed": false, "msg": "pod(s) cannot be updated in place now"}\n'
    assert judge.failure(text) == 'pod(s) cannot be updated in place now'
    assert judge.failure('ok: [localhost]\n') is None
    runs = [{'rc': 2, 'failure': 'refused'}, {'rc': 0}]
    assert judge.move_halted('drain', runs) == ['the first run failed (rc 2) under drain: refused']
    assert judge.move_halted('node-stop', runs) == [] and judge.move_halted('apiserver', runs) == []
    assert judge.move_halted('evict', [{'rc': 0}]) == []


def test_tracker_entry():
    entry = judge.pod_entry({'metadata': {'name': 'a', 'uid': 'u', 'deletionTimestamp': 'x'}, 'spec': {'nodeName': 'n'},
                             'status': {'conditions': [{'type': 'DisruptionTarget', 'status': 'True',
                                                        'reason': 'EvictionByEvictionAPI'}]}})
    assert entry == {'name': 'a', 'node': 'n', 'deleted': True, 'disruption': 'EvictionByEvictionAPI', 'evicted': False}
    entry = judge.pod_entry({'metadata': {'name': 'a', 'uid': 'u'}, 'status': {'phase': 'Failed', 'reason': 'Evicted'}},
                            deleted=False)
    assert entry['evicted'] and not entry['deleted'] and entry['disruption'] is None


def test_verified_at_reads_the_last_result_of_the_log():
    stats = 'CUSTOM STATS: ****\n\tRUN: {"rollout_result": {"verified_at": "%s", "gone": []}}\n'
    assert judge.verified_at('PLAY\n' + stats % '2026-11-28T20:51:07.250Z') == 1795899067.25
    assert judge.verified_at('no stats: a killed run') is None
    assert judge.verified_at(stats % '') is None
    assert judge.verified_at(stats % 'yesterday') is None


def test_a_pod_write_after_the_runs_last_list_is_for_the_next_run(tmp_path):
    log = tmp_path / 'r0.log'
    log.write_text('CUSTOM STATS: ****\n\tRUN: {"rollout_result": {"verified_at": "2026-11-28T20:51:07.250Z"}}\n')
    after = {'landed': True, 'sent_at': 1795899067.6, 'note': 'pod db-5 set'}
    faults.Faults.after_verified(after, str(log))
    assert after['landed'] is False and 'for the next run' in after['note']
    before = {'landed': True, 'sent_at': 1795899066.9, 'note': 'pod db-5 set'}
    faults.Faults.after_verified(before, str(log))
    assert before['landed'] is True and before['note'] == 'pod db-5 set'
