# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The defaults of operation.Operation: what a subclass gets when it does not say otherwise."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.operations.operation import Operation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan as planning
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import status_of

BEFORE = {'containerID': 'fake://app-7c1e_0', 'lastContainerID': None}


def cplan(restart=True, desired='registry.example/app:2.0'):
    return planning.ContainerPlan('app', 'container', planning.UPDATE, None, 'registry.example/app:1.0', desired, restart)


def test_what_a_subclass_must_say_and_the_empty_defaults(web_pod):
    op = Operation()
    op.target = {'app': 'x'}
    assert op.desired(web_pod) == {'app': 'x'}
    for call in (lambda: op.judge(None, 'x'), lambda: op.done(web_pod, cplan(), BEFORE),
                 lambda: Operation.rollback_target({}), lambda: op.act(None, web_pod, None, [])):
        with pytest.raises(NotImplementedError):
            call()
    assert (op.changes(web_pod, None), op.images(None), op.describe(None, None, None), op.report()) == ([], set(), {}, {})
    assert op.check([]) is None and op.preview(None, None) is None and op.close() is None and op.steps(None) is None
    assert op.overwritten(web_pod, cplan()) is None
    assert op.admitted(None, web_pod, 'plan', 'rec') == (web_pod, 'plan', 'rec')
    assert op.settled(web_pod, {'state': 'done'}) is None and op.settled(web_pod, None) is None


def test_restarted_wants_a_new_container_only_when_a_restart_is_expected(pod_factory):
    op = Operation()
    pod = pod_factory()
    assert op.restarted(pod, cplan(restart=False), BEFORE) is True
    assert op.restarted(pod, cplan(), BEFORE) is False              # still the container from before
    assert op.restarted(pod, cplan(), {}) is True                   # no before-state: running is enough
    status_of(pod, 'app')['containerID'] = 'fake://app-new'
    assert op.restarted(pod, cplan(), BEFORE) is True


def test_failure_counts_only_what_the_kubelet_did_after_the_change(pod_factory):
    op = Operation()
    crashing = {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}}
    pod = pod_factory()
    status_of(pod, 'app')['state'] = crashing
    assert op.failure(pod, cplan(), BEFORE, 2) is None       # observedGeneration 1: not acted on generation 2 yet
    del pod['status']['observedGeneration']
    assert op.failure(pod, cplan(), BEFORE, 2) is None       # cannot tell, and the same container: not applied
    status_of(pod, 'app')['containerID'] = 'fake://app-new'
    assert op.applied(pod, cplan(), BEFORE) is True
    assert op.failure(pod, cplan(), BEFORE, 2)[0] == 'CrashLoopBackOff'
    # The back-off of the container from before the change says nothing about the change.
    status_of(pod, 'app')['lastState'] = {'terminated': {'containerID': BEFORE['containerID']}}
    assert op.failure(pod, cplan(), BEFORE, 2) is None


def test_stalled_says_where_each_container_was_left(pod_factory):
    op = Operation()
    pod = pod_factory()
    status_of(pod, 'app').update(ready=False)
    pod['spec']['containers'][0]['readinessProbe'] = {'httpGet': {'path': '/ready', 'port': 8080}}
    status_of(pod, 'metrics')['state'] = {'waiting': {'reason': 'ContainerCreating'}}
    metrics = cplan()._replace(name='metrics', desired='m:2')
    why = op.stalled(pod, [cplan(), metrics])
    assert why.startswith('pod left with app running (image registry.example/app:1.0, ready False: readinessProbe')
    assert 'metrics waiting ContainerCreating (image registry.example/metrics:0.9, ready True), wanted m:2' in why
    assert op.stalled(pod, []) is None
