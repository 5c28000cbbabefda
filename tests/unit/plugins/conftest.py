# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit suite (hack/units.sh, and ansible-test units in an installed collection): a thread that dies on an
exception fails the test that runs it, and so does a watch thread that fails. pods/waiter.py hands a watch's
failure to its waiters; here it is also raised in the thread, which pytest reports as
PytestUnhandledThreadExceptionWarning: an error, not a silent degradation of the waits into timeouts."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.pods import waiter


def pytest_configure(config):
    config.addinivalue_line('filterwarnings', 'error::pytest.PytestUnhandledThreadExceptionWarning')


@pytest.fixture(autouse=True)
def watch_failures_are_raised(monkeypatch):
    run = waiter.Watcher._main

    def loudly(watcher):
        run(watcher)
        if watcher._fault is not None:
            raise watcher._fault

    monkeypatch.setattr(waiter.Watcher, '_main', loudly)
