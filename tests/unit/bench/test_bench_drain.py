# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the drain scenarios (issue 45): selectable by name, the node the drain picks, the replacements'
Ready time from a pod watch, the role's re-runs counted, and the target judged from result rows."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import ARGS, load

run = load('run')
drain = load('drain')


def test_the_drain_scenarios_are_selectable_by_name():
    args = run.parse(ARGS + ['--scenarios', '%s,%s' % (drain.ROLE, drain.NATIVE), '--pods', '100'])
    assert [s[0] for s in args.wanted] == [drain.ROLE, drain.NATIVE]
    assert [s[1:] for s in args.wanted] == [('role', 'Deployment', '25%', False), ('native', 'Deployment', '25%/0', False)]


def test_pick_node_takes_the_node_with_most_pods_on_the_old_image():
    pods = [{'node': 'n1', 'image': 'new'}, {'node': 'n1', 'image': 'new'}, {'node': 'n2', 'image': 'old'},
            {'node': 'n3', 'image': 'old'}, {'node': 'n3', 'image': 'old'}, {'node': None, 'image': 'old'}]
    assert drain.pick_node(pods, 'new') == 'n3'
    assert drain.pick_node(pods[:3], 'new') == 'n2'
    assert drain.pick_node(pods[:2], 'new') is None


def state(uid, ready='False', deleted=False):
    return {'uid': uid, 'ready': ready, 'deleted': deleted}


def test_replaced_ready_is_the_last_new_pod_ready_after_the_drain():
    events = [(0, state('a', 'True')), (0, state('b', 'True')), (10, state('b', deleted=True)),
              (11, state('r1')), (12, state('r2')), (14, state('r1', 'True')), (17, state('r2', 'True'))]
    assert drain.replaced_ready(events, ['b'], 10) == 7
    assert drain.replaced_ready(events[:-1], ['b'], 10) is None      # r2 never Ready: no figure
    assert drain.replaced_ready(events, [], 10) is None               # nothing evicted


class FakeBench(object):
    def __init__(self, codes):
        self.codes, self.runs = list(codes), []

    def rollout(self, result, namespace, names, image=None, run=''):
        self.runs.append(run)
        result['wall'] = 10.0
        if self.codes.pop(0):
            result['error'] = 'ansible-playbook exited 2'


def test_the_role_is_run_again_after_a_halt_and_counted():
    bench, result = FakeBench([2, 0]), {}
    drain.run_role(bench, result, 'ns', ['a'], 'img')
    assert bench.runs == ['', '.r1'] and 'error' not in result
    assert (result['wall'], result['halts'], result['reruns']) == (20.0, 1, 1)
    bench, result = FakeBench([2, 2, 2]), {}
    drain.run_role(bench, result, 'ns', ['a'], 'img')
    assert result['error'] and (result['halts'], result['reruns']) == (3, 2)


def row(scenario, wall, **more):
    return dict(pods=100, scenario=scenario, wall=wall, method=scenario.split()[0], kind='Deployment', **more)


def figures(replaced):
    return {'node': 'node-2', 'at': 8.1, 'evicted': 30, 'refused': 0, 'gone_after': 2.0, 'replaced_ready': replaced}


def test_the_target():
    rows = [row(drain.BASELINES[drain.ROLE], 40.0), row(drain.BASELINES[drain.NATIVE], 60.0),
            row(drain.NATIVE, 70.0, node_drain=figures(30.0), halts=0, reruns=0),
            row(drain.ROLE, 45.0, node_drain=figures(6.0), halts=0, reruns=0)]
    found = drain.targets(rows, run.by_name, run.verdict)
    (name, outcome), = found.items()
    assert outcome['status'] == 'PASS' and name.startswith('N=100 role under a drain')
    assert 'role / native 0.64x' in outcome['value'] and '(+5.0 s)' in outcome['value']
    rows[-1].update(wall=47.0)
    assert list(drain.targets(rows, run.by_name, run.verdict).values())[0]['status'] == 'MISS'
    rows[-1].update(wall=41.0, halts=1, reruns=1)
    assert list(drain.targets(rows, run.by_name, run.verdict).values())[0]['status'] == 'MISS'
    assert [v for k, v in run.targets(rows[2:]).items() if 'drain' in k][0]['status'] == 'n/a'
    # the drain rows are judged only by their own target, never as the plain role or native rows
    assert not any('native Deployment 25%/0' in k for k in run.targets(rows[2:]))
    assert drain.report_lines(rows)[1].startswith('%s N=100: wall 41.0 s' % drain.ROLE)
