# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one poll loop: bounded, one delay policy, stopped by a cancel."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import itertools

from ansible_collections.inplace.k8s.plugins.module_utils.pods import poll
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock


def test_delays_double_up_to_the_most():
    assert list(itertools.islice(poll.delays(0.05, 0.5), 6)) == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
    assert next(poll.delays(2, 1)) == 1   # a first delay above the most is the most


def test_until_returns_the_first_done_value_without_sleeping_after_it():
    clock = ManualClock()
    answers = iter([0, 0, 7, 8])
    assert poll.until(lambda: next(answers), 10, clock=clock, sleep=clock.sleep) == 7
    assert clock.sleeps == [poll.FIRST_SECONDS, 2 * poll.FIRST_SECONDS]


def test_until_is_bounded_and_checks_once_more_at_the_deadline():
    clock = ManualClock()
    calls = []
    result = poll.until(lambda: calls.append(clock.now) or (False, 'not yet'), 2, done=lambda r: r[0],
                        clock=clock, sleep=clock.sleep)
    assert result == (False, 'not yet')
    assert clock.now == 2 and calls[-1] == 2   # no sleep past the deadline, and a last look at it
    assert max(clock.sleeps) == poll.MOST_SECONDS


def test_until_checks_once_with_no_time_left():
    clock = ManualClock()
    assert poll.until(lambda: None, 0, clock=clock, sleep=clock.sleep) is None and clock.sleeps == []


def test_a_cancel_stops_the_wait_with_the_last_value():
    clock = ManualClock()
    reasons = iter([None, None, 'SIGTERM received'])
    assert poll.until(lambda: 'pending', 60, done=lambda r: r == 'done', cancelled=lambda: next(reasons),
                      clock=clock, sleep=clock.sleep) == 'pending'
    assert len(clock.sleeps) == 2 and clock.now < 1
