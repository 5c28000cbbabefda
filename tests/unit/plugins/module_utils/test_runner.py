# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner, targets
from ansible_collections.inplace.k8s.plugins.module_utils.errors import NoMatchError, OperationFailed, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.image import ImageOperation
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster


class Module(object):
    def __init__(self, check_mode=False, diff=False, **params):
        self.params = dict(namespace='shop', name=None, names=None, label_selectors=None, field_selectors=None,
                           fail_on_no_match=False, max_concurrency=5, wait=True, wait_timeout=30, min_ready_seconds=0,
                           readiness_gate=None, drain_seconds=0, require_readiness_gate=False,
                           readiness_gate_on_failure='restore_if_healthy', on_failure='stop')
        self.params.update(params)
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)


def cluster():
    return FakeCluster([load('pod_web.json')])


def test_no_match_is_ok_with_a_warning():
    module = Module(name='nothing')
    result = runner.run(module, ImageOperation({'app': 'x:1'}), kube=cluster())
    assert result['changed'] is False and result['pods'] == [] and result['summary']['total'] == 0
    assert module.warnings == ['pod(s) not found in namespace shop: nothing', 'no pod matched in namespace shop (not found: nothing)']


def test_no_match_can_fail():
    with pytest.raises(NoMatchError):
        runner.run(Module(label_selectors=['app=none'], names=['x'], fail_on_no_match=True),
                   ImageOperation({'app': 'x:1'}), kube=cluster())


def test_check_mode_with_diff():
    result = runner.run(Module(check_mode=True, diff=True, names=['web-0']),
                        ImageOperation({'app': 'registry.example/app:2.0'}), kube=cluster())
    assert result['changed'] and result['diff']['before'] == {'web-0': {'app': 'registry.example/app:1.0'}}


def test_no_diff_key_without_diff_mode():
    result = runner.run(Module(check_mode=True, name='web-0'), ImageOperation({'app': 'x:2'}), kube=cluster())
    assert 'diff' not in result


@pytest.mark.parametrize('params, message', [
    ({'readiness_gate': 'g', 'wait': False}, 'needs wait=true'),
    ({'max_concurrency': 0}, 'at least 1'),
    ({'wait_timeout': 0}, 'wait_timeout'),
])
def test_option_checks(params, message):
    with pytest.raises(ValidationError) as caught:
        runner.check_options(Module(**params).params)
    assert message in caught.value.msg


@pytest.mark.parametrize('params, expected', [
    ({'name': 'a'}, (None, 'metadata.name=a')),
    ({'names': ['a', 'b']}, (None, None)),
    ({'label_selectors': ['app=web', 'tier in (a,b)']}, ('app=web,tier in (a,b)', None)),
    ({'label_selectors': ['app=web'], 'field_selectors': ['spec.nodeName=n1']}, ('app=web', 'spec.nodeName=n1')),
])
def test_selectors(params, expected):
    assert targets.selectors(params) == expected


def test_select_pods_reports_missing_names():
    pods, version, missing = targets.select_pods(cluster(), {'namespace': 'shop', 'names': ['web-0', 'web-9']})
    assert [p['metadata']['name'] for p in pods] == ['web-0'] and missing == ['web-9'] and version


def test_a_namespace_that_does_not_exist_is_named():
    kube = cluster()
    kube.namespaces = {'other'}
    kube.pods = {}
    with pytest.raises(ValidationError) as caught:
        runner.run(Module(name='web-0'), ImageOperation({'app': 'x:1'}), kube=kube)
    assert 'namespace shop does not exist' in caught.value.msg


def test_a_refused_pod_fails_the_task_unless_continue_on_error():
    kube = cluster()
    kube.pods['web-0']['metadata']['deletionTimestamp'] = '2025-11-21T21:30:00Z'
    with pytest.raises(OperationFailed) as caught:
        runner.run(Module(name='web-0', wait=False), ImageOperation({'app': 'registry.example/app:2.0'}), kube=kube)
    assert 'web-0: pod is terminating' in caught.value.msg
    assert caught.value.details['pods'][0]['status'] == 'refused'
    result = runner.run(Module(name='web-0', wait=False, continue_on_error=True),
                        ImageOperation({'app': 'registry.example/app:2.0'}), kube=kube)
    assert result['pods'][0]['status'] == 'refused' and result['changed'] is False
