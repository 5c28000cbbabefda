# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures: pod JSON under fixtures/ and small helpers to derive variants of it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os

import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def _named(pod, section, fields, name):
    for field in fields:
        for item in pod[section].get(field) or []:
            if item['name'] == name:
                return item
    raise KeyError(name)


def status_of(pod, name):
    """The (mutable) containerStatuses / initContainerStatuses entry of a container."""
    return _named(pod, 'status', ('containerStatuses', 'initContainerStatuses'), name)


def web_pods(count=1):
    """``count`` copies of the pod_web.json fixture named web-0, web-1, ... with uids uid-0, uid-1, ..."""
    result = []
    for index in range(count):
        pod = load('pod_web.json')
        pod['metadata']['name'] = 'web-%d' % index
        pod['metadata']['uid'] = 'uid-%d' % index
        result.append(pod)
    return result


def spec_of(pod, name):
    """The (mutable) spec entry of a container or init container."""
    return _named(pod, 'spec', ('containers', 'initContainers'), name)


@pytest.fixture
def web_pod():
    """A running pod: containers app + metrics, plain init container setup, sidecar log-agent,
    readiness gate inplace.k8s/ready."""
    return load('pod_web.json')


@pytest.fixture
def pod_factory():
    """pod_factory(name='pod_web.json', **changes): a deep copy with dotted-path changes applied."""
    def make(fixture='pod_web.json', **changes):
        pod = copy.deepcopy(load(fixture))
        for path, value in changes.items():
            target = pod
            keys = path.split('__')
            for key in keys[:-1]:
                target = target.setdefault(key, {})
            target[keys[-1]] = value
        return pod
    return make


class ManualClock(object):
    """A monotonic clock that only its own sleep() moves: pass ``clock`` and ``clock.sleep`` to the code under test."""

    def __init__(self, now=0.0):
        self.now = now
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
