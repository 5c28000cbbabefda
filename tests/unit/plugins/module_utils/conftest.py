# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures: pod JSON under fixtures/ and small helpers to derive variants of it, and pod(), the one factory of
a minimal pod for tests that need a few fields rather than the whole pod_web.json."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import copy
import json
import os
import subprocess
import sys
import time

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.parameters import PASS_VARS

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def _named(obj, section, fields, name):
    for field in fields:
        for item in obj[section].get(field) or []:
            if item['name'] == name:
                return item
    raise KeyError(name)


def status_of(obj, name):
    """The (mutable) containerStatuses / initContainerStatuses entry of a container."""
    return _named(obj, 'status', ('containerStatuses', 'initContainerStatuses'), name)


def web_pods(count=1):
    """``count`` copies of the pod_web.json fixture named web-0, web-1, ... with uids uid-0, uid-1, ..."""
    result = []
    for index in range(count):
        obj = load('pod_web.json')
        obj['metadata']['name'] = 'web-%d' % index
        obj['metadata']['uid'] = 'uid-%d' % index
        result.append(obj)
    return result


def container_status(name='app', ready=True, waiting=None, **fields):
    """A containerStatuses entry: running (or waiting for ``waiting``, then not ready), ``fields`` added or
    replacing (state, image, containerID, ...)."""
    status = {'name': name, 'ready': bool(ready and not waiting), 'restartCount': 0,
              'state': {'waiting': {'reason': waiting}} if waiting else {'running': {}}}
    status.update(fields)
    return status


def pod(name='web-0', namespace='shop', uid=None, version='1', labels=None, node=None, containers=None,
        gates=(), conditions=None, statuses=None, phase=None, deleting=None, metadata=None):
    """A minimal pod: ``containers`` name -> image (default one container app with web:1), ``gates`` the types in
    spec.readinessGates, ``conditions`` type -> status or type -> condition fields, ``statuses`` the
    containerStatuses (see container_status), ``deleting`` a deletionTimestamp (True: a fixed one), ``metadata``
    more metadata fields. Sections left out stay out (no status without conditions, statuses or phase)."""
    meta = {'name': name, 'namespace': namespace, 'uid': uid or 'uid-' + name}
    if version is not None:
        meta['resourceVersion'] = version
    if labels is not None:
        meta['labels'] = labels
    if deleting:
        meta['deletionTimestamp'] = '2026-01-01T00:00:00Z' if deleting is True else deleting
    meta.update(metadata or {})
    spec = {'containers': [{'name': key, 'image': image} for key, image in (containers or {'app': 'web:1'}).items()]}
    if node is not None:
        spec['nodeName'] = node
    if gates:
        spec['readinessGates'] = [{'conditionType': gate} for gate in gates]
    status = {}
    if phase is not None:
        status['phase'] = phase
    if conditions is not None:
        status['conditions'] = [dict(value, type=kind) if isinstance(value, dict) else {'type': kind, 'status': value}
                                for kind, value in conditions.items()]
    if statuses is not None:
        status['containerStatuses'] = list(statuses)
    result = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': meta, 'spec': spec}
    if status:
        result['status'] = status
    return result


def wait_until(check, seconds=5.0, interval=0.02):
    """The one wait of the unit tests for something another thread or process does: ``check()`` every
    ``interval`` until it is true or ``seconds`` passed; its last answer."""
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(interval)
    return check()


def spec_of(obj, name):
    """The (mutable) spec entry of a container or init container."""
    return _named(obj, 'spec', ('containers', 'initContainers'), name)


@pytest.fixture
def web_pod():
    """A running pod: containers app + metrics, plain init container setup, sidecar log-agent,
    readiness gate inplace.k8s/ready."""
    return load('pod_web.json')


@pytest.fixture
def pod_factory():
    """pod_factory(name='pod_web.json', **changes): a deep copy with dotted-path changes applied."""
    def make(fixture='pod_web.json', **changes):
        obj = copy.deepcopy(load(fixture))
        for path, value in changes.items():
            target = obj
            keys = path.split('__')
            for key in keys[:-1]:
                target = target.setdefault(key, {})
            target[keys[-1]] = value
        return obj
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


@contextlib.contextmanager
def module_args(args, invocation=False):
    """A module's main() run with ``args`` as its parameters, on every supported ansible-core (its own
    patch_module_args from 2.19, the stdin buffer before). ``invocation``: the result holds the module's parameters
    as Ansible reports them (asked for from 2.19, always there before)."""
    args = dict(args)
    if invocation and 'inject_invocation' in PASS_VARS:
        args['_ansible_inject_invocation'] = True
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:   # ansible-core 2.18
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved
        return
    with patch_module_args(args):
        yield


@pytest.fixture
def child():
    """A process of this test that sleeps (a stand-in for ansible-playbook or a module), killed at the end."""
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()
