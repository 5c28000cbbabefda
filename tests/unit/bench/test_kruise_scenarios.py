# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the OpenKruise scenarios are opt-in (never in the default selection, all of them through
SCENARIOS=kruise), a CloneSet counts as rolled out only when its status says every replica is updated and ready at
the observed generation, and the role is judged against the CloneSet."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import ARGS, load

run = load('run')
kruise = load('kruise')


def test_the_default_selection_leaves_every_kruise_scenario_out():
    args = run.parse(ARGS)
    assert args.wanted and all(s[1] != 'kruise' for s in args.wanted)
    assert args.kruise_traffic == []
    assert run.parse(ARGS + ['--scenarios', 'traffic']).kruise_traffic == []


def test_scenarios_kruise_selects_the_cloneset_the_role_native_and_both_under_traffic():
    args = run.parse(ARGS + ['--scenarios', 'kruise', '--pods', '100,300'])
    assert [s[0] for s in args.wanted] == ['role Deployment 25%', 'native Deployment 25%/25%',
                                           'native Deployment 25%/0', 'kruise CloneSet 25%']
    assert [t[0] for t in args.traffic] == [t[0] for t in run.TRAFFIC]
    assert [t[0] for t in args.kruise_traffic] == ['traffic kruise CloneSet drain']
    assert args.traffic_sizes == [100]


def cloneset(generation=2, observed=2, **status):
    base = {'replicas': 4, 'readyReplicas': 4, 'updatedReplicas': 4, 'updatedReadyReplicas': 4,
            'updateRevision': 'b', 'currentRevision': 'b', 'observedGeneration': observed}
    base.update(status)
    return {'metadata': {'generation': generation}, 'status': base}


def test_a_cloneset_is_rolled_out_only_when_every_replica_is_updated_and_ready_at_its_generation():
    assert kruise.rolled_out(cloneset(), 4)
    assert not kruise.rolled_out(cloneset(observed=1), 4)               # the controller has not seen the change
    assert not kruise.rolled_out(cloneset(updatedReadyReplicas=3), 4)   # one pod restarting
    assert not kruise.rolled_out(cloneset(currentRevision='a'), 4)
    assert not kruise.rolled_out({'metadata': {'generation': 1}}, 4)    # no status yet


def row(scenario, wall, recreated=0, requests=100):
    return {'pods': 100, 'scenario': scenario, 'method': 'x', 'kind': 'Deployment', 'batch': '25%', 'wall': wall,
            'recreated': recreated, 'cluster_requests': {'GET pods': requests}}


def test_the_role_is_judged_against_the_cloneset_by_wall_time_and_pods_recreated():
    found = run.window_targets([row('role Deployment 25%', 11.0), row('kruise CloneSet 25%', 10.0)])
    name = 'N=100 role window / Kruise CloneSet InPlaceIfPossible 25% (<=1.1x, 0 recreated)'
    assert found[name]['status'] == 'PASS' and found[name]['value'].startswith('1.1x: 11.0 s vs 10.0 s')
    found = run.window_targets([row('role Deployment 25%', 12.0), row('kruise CloneSet 25%', 10.0)])
    assert found[name]['status'] == 'MISS'
    found = run.window_targets([row('role Deployment 25%', 9.0, recreated=1), row('kruise CloneSet 25%', 10.0)])
    assert found[name]['status'] == 'MISS'
