# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout/points.py: where the loop returns to the role, and how many turns the role's loop of points takes."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.rollout import points
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.runstate import Run


@pytest.mark.parametrize('index, canary, after, verify, check_mode, expected', [
    (0, True, ('canary',), False, False, {'after': 'the canary', 'verify': False, 'analysis': True}),
    (0, True, ('batch',), False, False, None),   # the canary is not a batch
    (0, False, ('batch',), False, False, {'after': 'batch 1', 'verify': False, 'analysis': True}),
    (2, False, ('batch', 'end'), False, False, None),   # the last batch: the end has the analysis
    (2, False, ('batch',), False, False, {'after': 'batch 3', 'verify': False, 'analysis': True}),
    (1, False, ('batch',), False, True, None),   # check mode: nothing changed to judge
    (1, False, ('batch',), True, True, {'after': 'batch 2', 'verify': True, 'analysis': False}),
    (1, False, (), False, False, None),
])
def test_the_point_after_a_step(index, canary, after, verify, check_mode, expected):
    assert points.after(index, 3, canary, after, verify, check_mode) == expected


def at(point_after, next_step, batches=3, canary=False, **fields):
    return Run(batches=[['web-%d' % i] for i in range(batches)], next=next_step, canary=canary,
               point={'after': point_after, 'verify': True, 'analysis': False}, **fields)


def test_no_point_no_turn():
    assert points.left(Run(batches=[['web-0']], next=1), ('end',), True, sweeps=2) == 0


def test_the_points_left_count_this_one_the_later_steps_the_sweeps_and_the_end():
    # verification after each of 3 steps, at the first: this point, 2 later steps, 2 possible sweeps, the end
    assert points.left(at('batch 1', 1), ('end',), True, sweeps=2) == 6
    assert points.left(at('batch 1', 1), ('end',), True, sweeps=0, end=False) == 3
    # analysis after the canary and at the end only: the later batches have no point
    run = at('the canary', 1, canary=True)
    assert points.left(run, ('canary', 'end'), False, sweeps=2) == 2
    # at the end's point: nothing after it
    run = at('the last batch', 3, analysed_end=True)
    assert points.left(run, ('end',), False, sweeps=2) == 1


def test_check_mode_counts_no_analysis():
    assert points.left(at('batch 1', 1), ('batch', 'end'), False, check_mode=True) == 1
