# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/bench: the repeats of a size are interleaved, each round in the order opposite to the one before, so that
the test bed's drift over minutes falls on both sides of a ratio; each scenario is still one aggregated row."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import ARGS, load

run = load('run')


class Bench:
    """Records the order of the scenarios run; each run's wall is its place in that order."""

    def __init__(self):
        self.order = []

    def scenario(self, pods, name, method, kind, batch, gated, attempt=0):
        self.order.append((pods, name, attempt))
        return {'pods': pods, 'scenario': name, 'method': method, 'kind': kind, 'batch': batch, 'drain': gated,
                'wall': float(len(self.order))}


def test_repeats_alternate_the_order_of_the_scenarios():
    args = run.parse(ARGS + ['--scenarios', 'image window 25%,role Deployment 25%', '--pods', '100', '--repeat', '3',
                             '--traffic-pods', '0'])
    bench = Bench()
    results = run.measure_all(bench, args)
    window, role = 'image window 25%', 'role Deployment 25%'
    assert bench.order == [(100, window, 0), (100, role, 0), (100, role, 1), (100, window, 1), (100, window, 2),
                           (100, role, 2)]
    assert [(r['scenario'], r['repeats'], r['wall_runs']) for r in results] == [
        (window, 3, [1.0, 4.0, 5.0]), (role, 3, [2.0, 3.0, 6.0])]


def test_above_large_only_the_scenarios_of_any_size_run():
    args = run.parse(ARGS + ['--pods', '1000', '--traffic-pods', '0'])
    bench = Bench()
    run.measure_all(bench, args)
    assert set(name for _pods, name, _attempt in bench.order) == set(
        name for name in run.AT_ANY_SIZE if name != 'kruise CloneSet 25%')
