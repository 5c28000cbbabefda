# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NoMatchError, OperationFailed, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.options import (
    Drain, ImageChange, ResizeChange, RestartChange, Strategy, Target, Task, Wait,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import targets
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


def run(module, containers, kube):
    """The module's work as run_module() does it, with a fake cluster."""
    task = Task.from_params(dict(module.params, containers=containers), ImageChange)
    return runner.run(task, kube, module.check_mode, module._diff, module.warn)


def cluster():
    return FakeCluster([load('pod_web.json')])


def test_no_match_is_ok_with_a_warning():
    module = Module(name='nothing')
    result = run(module, {'app': 'x:1'}, kube=cluster())
    assert result['changed'] is False and result['pods'] == [] and result['summary']['total'] == 0
    assert module.warnings == ['pod(s) not found in namespace shop: nothing', 'no pod matched in namespace shop (not found: nothing)']


def test_no_match_can_fail():
    with pytest.raises(NoMatchError):
        run(Module(label_selectors=['app=none'], names=['x'], fail_on_no_match=True), {'app': 'x:1'}, kube=cluster())


def test_check_mode_with_diff():
    result = run(Module(check_mode=True, diff=True, names=['web-0']), {'app': 'registry.example/app:2.0'},
                 kube=cluster())
    assert result['changed'] and result['diff']['before'] == {'web-0': {'app': 'registry.example/app:1.0'}}


def test_no_diff_key_without_diff_mode():
    result = run(Module(check_mode=True, name='web-0'), {'app': 'x:2'}, kube=cluster())
    assert 'diff' not in result


@pytest.mark.parametrize('params, message', [
    ({'readiness_gate': 'g', 'wait': False}, 'needs wait=true'),
    ({'max_concurrency': 0}, 'at least 1'),
    ({'wait_timeout': 0}, 'wait_timeout'),
])
def test_option_checks(params, message):
    with pytest.raises(ValidationError) as caught:
        runner.check_options(Task.from_params(dict(Module(**params).params, containers={}), ImageChange))
    assert message in caught.value.msg


@pytest.mark.parametrize('params, expected', [
    ({'name': 'a'}, (None, 'metadata.name=a')),
    ({'names': ['a', 'b']}, (None, None)),
    ({'label_selectors': ['app=web', 'tier in (a,b)']}, ('app=web,tier in (a,b)', None)),
    ({'label_selectors': ['app=web'], 'field_selectors': ['spec.nodeName=n1']}, ('app=web', 'spec.nodeName=n1')),
])
def test_selectors(params, expected):
    assert Target.from_params(dict(params, namespace='shop')).selectors() == expected


def test_select_pods_reports_missing_names():
    pods, version, missing = targets.select_pods(cluster(), Target('shop', names=('web-0', 'web-9')))
    assert [p['metadata']['name'] for p in pods] == ['web-0'] and missing == ['web-9'] and version


def test_a_namespace_that_does_not_exist_is_named():
    kube = cluster()
    kube.namespaces = {'other'}
    kube.pods = {}
    with pytest.raises(ValidationError) as caught:
        run(Module(name='web-0'), {'app': 'x:1'}, kube=kube)
    assert 'namespace shop does not exist' in caught.value.msg


def test_a_refused_pod_fails_the_task_unless_continue_on_error():
    kube = cluster()
    kube.pods['web-0']['metadata']['deletionTimestamp'] = '2025-11-21T21:30:00Z'
    with pytest.raises(OperationFailed) as caught:
        run(Module(name='web-0', wait=False), {'app': 'registry.example/app:2.0'}, kube=kube)
    assert 'web-0: pod is terminating' in caught.value.msg
    assert caught.value.details['pods'][0]['status'] == 'refused'
    result = run(Module(name='web-0', wait=False, continue_on_error=True), {'app': 'registry.example/app:2.0'},
                 kube=kube)
    assert result['pods'][0]['status'] == 'refused' and result['changed'] is False


class Versioned(FakeCluster):
    """A cluster that answers /version and serves no ContainerRecreateRequest API."""

    def request(self, method, path, query=None, body=None, content_type=None):
        if path == '/version':
            return {'major': '1', 'minor': '36'}
        if path.startswith('/apis/apps.kruise.io'):
            raise NotFoundError('not served', status=404)
        return super(Versioned, self).request(method, path, query, body, content_type)


def test_one_runner_runs_every_change_and_adds_what_the_operation_reports():
    warnings = []
    resized = runner.run(Task(Target('shop', name='web-0'), ResizeChange({'app': {'requests': {'cpu': '300m'}}}),
                              Wait(enabled=False)), Versioned([load('pod_web.json')]), warn=warnings.append)
    assert resized['method'] == 'pods/resize' and resized['server_version'] == '1.36' and not warnings
    restarted = runner.run(Task(Target('shop', name='web-0'), RestartChange(['app'])), Versioned([load('pod_web.json')]),
                           check_mode=True)
    assert restarted['strategy'] == 'image_reference' and restarted['pods'][0]['status'] == 'would_update'
    with pytest.raises(ValidationError, match='unknown change'):
        runner.run(Task(Target('shop', name='web-0'), {'app': 'x:1'}), cluster())


def test_a_strategy_that_drains_itself_runs_without_the_engines_drain_and_the_task_is_not_changed():
    class Kruise(Versioned):
        def request(self, method, path, query=None, body=None, content_type=None):
            if path == '/apis/apps.kruise.io/v1alpha1':
                return {'resources': [{'name': 'containerrecreaterequests'}]}
            return super(Kruise, self).request(method, path, query, body, content_type)
    task = Task(Target('shop', name='web-0'), RestartChange(['app'], strategy=Strategy('kruise')),
                drain=Drain(readiness_gate='KruisePodReady', seconds=3))
    operation, ran = runner.build(Kruise([load('pod_web.json')]), task, None)
    assert ran.drain.readiness_gate is None and task.drain.readiness_gate == 'KruisePodReady'
    assert operation.strategy.options.unready_grace_seconds == 3
    other = Task(Target('shop', name='web-0'), RestartChange(['app'], strategy=Strategy('kruise')),
                 drain=Drain(readiness_gate='inplace.k8s/ready'))
    assert runner.build(Kruise([load('pod_web.json')]), other, None)[1] is other


def test_run_module_parses_the_params_once():
    module = Module(name='web-0', check_mode=True, containers={'app': 'registry.example/app:2.0'})
    module.run_command = None
    calls = []
    original = runner.run
    try:
        runner.run = lambda task, **kwargs: calls.append((task, kwargs)) or {}
        runner.run_module(module, ImageChange)
    finally:
        runner.run = original
    task, kwargs = calls[0]
    assert task.target == Target('shop', name='web-0', max_concurrency=5) and task.wait == Wait(timeout=30)
    assert task.change == ImageChange({'app': 'registry.example/app:2.0'}) and kwargs['check_mode'] is True
    assert task.connection.kubeconfig is None and module.params['readiness_gate'] is None


def test_engine_options_come_from_the_task_only():
    task = Task(Target('shop', names=('a', 'b'), max_concurrency=0, force_takeover=True),
                ImageChange({'app': 'x:1'}, on_failure='rollback', prepull=True, prepull_run='run-1',
                            prepull_ahead={'node-2': ['x:1']}),
                Wait(timeout=30, min_ready_seconds=5),
                Drain(drain_label='serving=yes', seconds=2, required=True, on_failure='restore'))
    options = runner.engine_options(task, check_mode=True)
    assert options.check_mode and options.wait and options.wait_timeout == 30 and options.max_concurrency == 1
    assert (options.drain_label, options.readiness_gate, options.drain_seconds) == ('serving=yes', None, 2)
    assert options.require_readiness_gate and options.gate_on_failure == 'restore' and options.on_failure == 'rollback'
    assert options.min_ready_seconds == 5 and options.force_takeover
    assert (options.prepull, options.prepull_run, options.prepull_ahead) == (True, 'run-1', {'node-2': ['x:1']})
    plain = runner.engine_options(Task(Target('shop', name='a'), RestartChange()), check_mode=False)
    assert (plain.prepull, plain.prepull_run, plain.prepull_ahead, plain.drain_label) == (False, None, None, None)


class Exited(Exception):
    pass


class ExitingModule(Module):
    """exit_json / fail_json as AnsibleModule's: they end the module (here: raise Exited with the result)."""

    no_log_values = set()

    def exit_json(self, **result):
        raise Exited(dict(result, failed=False))

    def fail_json(self, **result):
        raise Exited(dict(result, failed=True))


@pytest.mark.parametrize('params, check_mode, forks', [
    ({'readiness_gate': 'inplace.k8s/ready'}, False, True),
    ({'drain_label': 'serving=yes'}, False, True),
    ({'readiness_gate': 'inplace.k8s/ready'}, True, False),   # check mode drains nothing
    ({}, False, False),                                       # nothing to drain
])
@pytest.mark.parametrize('fails', [False, True])
def test_execute_starts_the_guardian_of_a_draining_module_and_always_ends_it(
        monkeypatch, params, check_mode, forks, fails):
    events = []
    monkeypatch.setattr(runner.guardian, 'start', lambda connect: events.append('start'))
    monkeypatch.setattr(runner.guardian, 'stop', lambda: events.append('stop'))

    def work(cancel):
        assert cancel.cancelled() is None   # the run's token, passed down
        events.append('work')
        if fails:
            raise ValidationError('bad input')
        return {'changed': False}
    with pytest.raises(Exited) as exited:
        runner.execute(ExitingModule(check_mode=check_mode, **params), work)
    assert exited.value.args[0]['failed'] is fails
    # Started before the work (before any thread or connection), told the orderly end after it, failure or not.
    assert events == (['start'] if forks else []) + ['work', 'stop']


@pytest.mark.parametrize('raises', [False, True])
def test_execute_fails_a_cancelled_run_naming_what_it_did_not_start(monkeypatch, raises):
    """The token execute() passes down is the one it reads at the end: a cancel during the work fails the module."""
    def work(cancel):
        cancel.cancel('SIGTERM received')
        cancel.skipped(['web-1'])
        if raises:
            raise ValidationError('state batch was not started', cancelled='x')
        return {'changed': True, 'msg': 'done'}
    with pytest.raises(Exited) as exited:
        runner.execute(ExitingModule(check_mode=False), work)
    result = exited.value.args[0]
    assert result['failed'] is True and result['cancelled'] is True
    assert result['msg'].startswith('cancelled (SIGTERM received): 1 pod(s) not started (web-1)')
    assert result['msg'].endswith('state batch was not started') is raises
