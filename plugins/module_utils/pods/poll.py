# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one poll loop, for what no watch shows.

What a watch shows (pods, any collection with list and watch) is waited for with pods/waiter.py: no
polling. What it does not (a process's exit, the Services that list a pod, a workload's status read
again, a batch of GETs) is waited for with ``until``: bounded by its timeout, the delays between the
checks one policy for every caller (FIRST_SECONDS, doubling up to MOST_SECONDS: most answers come
within a fraction of a second, and a slow one is not asked more often than MOST_SECONDS), and, in a path a
cancel stops (the pod modules' and the rollout's), stopped early by ``cancelled`` (the run's token:
process/cancel.Cancel.cancelled).

    done, why = poll.until(lambda: gate.out_of_service(kube, pod), timeout, done=lambda r: r[0],
                           cancelled=token.cancelled)
"""

import time

from ansible_collections.inplace.k8s.plugins.module_utils.process import proc

FIRST_SECONDS = 0.05   # the first delay; each next one doubles ...
MOST_SECONDS = 0.5     # ... up to this


def delays(first=FIRST_SECONDS, most=MOST_SECONDS):
    """The delays between checks: ``first``, doubling up to ``most``, then ``most`` for ever."""
    delay = min(first, most)
    while True:
        yield delay
        delay = min(delay * 2, most)


def until(check, timeout, done=bool, cancelled=None, first=FIRST_SECONDS, most=MOST_SECONDS,
          clock=time.monotonic, sleep=time.sleep):
    """Call ``check()`` until ``done(value)`` is true, ``timeout`` seconds have passed, or ``cancelled()``
    gives a reason; the last value (the caller tells a timeout by ``done(value)`` being false). ``check``
    runs at least once, and once more at the deadline: no sleep goes past it."""
    deadline = clock() + timeout
    pauses = delays(first, most)
    while True:
        value = check()
        if done(value) or (cancelled is not None and cancelled()):
            return value
        remaining = deadline - clock()
        if remaining <= 0:
            return value
        sleep(min(next(pauses), remaining))


def wait_exit(pid, timeout, cancelled=None, alive=proc.alive, clock=time.monotonic, sleep=time.sleep):
    """Wait at most ``timeout`` seconds for process ``pid`` to exit (``cancelled()``, the run's cancel, stops the
    wait); did it?"""
    return until(lambda: not alive(pid), timeout, cancelled=cancelled, clock=clock, sleep=sleep)
