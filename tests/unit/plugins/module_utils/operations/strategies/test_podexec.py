# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import podexec
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import load

KILL = ['kill', '-TERM', '1']
NOT_FOUND = 'OCI runtime exec failed: exec: "kill": executable file not found in $PATH: unknown'


@pytest.mark.parametrize('signal, expected', [
    ('TERM', ['kill', '-TERM', '1']), ('SIGTERM', ['kill', '-TERM', '1']), ('term', ['kill', '-TERM', '1']),
    ('15', ['kill', '-TERM', '1']), ('HUP', ['kill', '-HUP', '1']), ('9', ['kill', '-KILL', '1']),
    (None, ['kill', '-TERM', '1']),
])
def test_build_command(signal, expected):
    assert podexec.build_command(signal) == expected


def test_build_command_rejects_unknown_signals_and_keeps_a_custom_command():
    with pytest.raises(ValidationError):
        podexec.build_command('SIGWHATEVER')
    assert podexec.build_command('TERM', ['/app/ctl', 'restart']) == ['/app/ctl', 'restart']
    assert podexec.signals_pid1(KILL) and podexec.signals_pid1(['/bin/kill', '-HUP', '1'])
    assert not podexec.signals_pid1(['/app/ctl', 'restart'])


def test_command_for_refuses_impersonation():
    class Impersonating(object):
        impersonating = True
    with pytest.raises(ValidationError, match='impersonate'):
        podexec.command_for(Impersonating(), 'TERM')
    Impersonating.impersonating = False
    assert podexec.command_for(Impersonating(), 'HUP') == ['kill', '-HUP', '1']


def failure(code, message='', stderr=''):
    status = {'status': 'Failure', 'message': message, 'reason': 'NonZeroExitCode',
              'details': {'causes': [{'reason': 'ExitCode', 'message': str(code)}]}}
    return podexec.ExecResult(status, '', stderr, None, None)


@pytest.mark.parametrize('result, reason', [
    (podexec.ExecResult({'status': 'Success'}, '', '', None, None), None),
    (podexec.ExecResult(None, '', '', None, None), None),        # cut: the container went down
    (failure(137), None),
    (failure(127, 'command terminated with non-zero exit code'), 'ExecNoKillBinary'),
    (podexec.ExecResult({'status': 'Failure', 'message': NOT_FOUND}, '', '', None, None), 'ExecNoKillBinary'),
    (failure(1, stderr='sh: can\'t kill pid 1: Operation not permitted'), 'ExecNotPermitted'),
    (failure(2, stderr='usage'), 'ExecFailed'),
    (podexec.ExecResult(None, '', '', 'pods "x" is forbidden', 403), 'ExecForbidden'),
    (podexec.ExecResult(None, '', '', 'no preferred addresses found', 500), 'ExecUnavailable'),
])
def test_classify(result, reason):
    found = podexec.classify(result, KILL)
    assert (found[0] if found else None) == reason


MISSING_FILE = 'OCI runtime exec failed: exec: "/app/ctl": stat /app/ctl: no such file or directory: unknown'


@pytest.mark.parametrize('result, missing_file_is_program, problem', [
    (podexec.ExecResult(None, '', '', 'pods "x" is forbidden', 403), False, podexec.FORBIDDEN),
    (podexec.ExecResult(None, '', '', 'no preferred addresses found', 500), False, podexec.UNOPENED),
    (failure(126), False, podexec.NO_PROGRAM),
    (podexec.ExecResult({'status': 'Failure', 'message': NOT_FOUND}, '', '', None, None), False, podexec.NO_PROGRAM),
    # "no such file" names the program only when the caller says so (for cat it names the file read)
    (failure(1, stderr=MISSING_FILE), True, podexec.NO_PROGRAM),
    (failure(1, stderr='cat: /etc/app/x: No such file or directory'), False, None),
    (failure(1, stderr='boom'), True, None),
    (podexec.ExecResult({'status': 'Success'}, '', '', None, None), True, None),
])
def test_session_problem(result, missing_file_is_program, problem):
    assert podexec.session_problem(result, missing_file_is_program=missing_file_is_program) == problem


def test_classify_names_a_missing_program_from_the_runtime():
    found = podexec.classify(failure(1, stderr=MISSING_FILE), ['/app/ctl', 'restart'])
    assert found[0] == 'ExecNoKillBinary' and '/app/ctl binary' in found[1]


def test_handshake_error_reads_the_status():
    text = ('Handshake status 500 Internal Server Error -+-+- {\'date\': \'x\'} -+-+- {"kind":"Status","apiVersion":'
            '"v1","metadata":{},"status":"Failure","message":"no preferred addresses found; known addresses: []",'
            '"code":500}')
    assert podexec.handshake_error(text) == ('no preferred addresses found; known addresses: []', 500)
    assert podexec.handshake_error('Handshake status 403 Forbidden') == ('Handshake status 403 Forbidden', 403)


def test_explain_no_restart():
    pod = load('pod_web.json')
    text = podexec.explain_no_restart(pod, 'app', KILL, 40)
    assert 'PID 1 ignores the signal' in text and 'after 40s' in text and 'shareProcessNamespace' not in text
    pod['spec']['shareProcessNamespace'] = True
    custom = podexec.explain_no_restart(pod, 'app', ['/app/ctl', 'restart'], 40)
    assert 'pause process' in custom and 'did not signal the container\'s main process' in custom


class Clock(object):
    now = 100.0

    def __call__(self):
        return self.now


def test_exec_strategy_reports_a_signal_that_restarted_nothing():
    from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
    pod = load('pod_web.json')
    pod['spec']['terminationGracePeriodSeconds'] = 5
    clock = Clock()
    calls = []

    def execute(kube, namespace, name, container, command):
        calls.append((namespace, name, container, command))
        return podexec.ExecResult({'status': 'Success'}, '', '', None, None)
    strategy = podexec.ExecStrategy(None, KILL, execute=execute, clock=clock)
    status = [s for s in pod['status']['containerStatuses'] if s['name'] == 'app'][0]
    tracked = {'app': restart.Tracked(status, clock())}

    class Plan(object):
        name = 'app'
    strategy.act(None, pod, [Plan()], tracked)
    assert calls == [(pod['metadata']['namespace'], pod['metadata']['name'], 'app', KILL)]
    assert strategy.failure(pod, Plan(), tracked['app'], clock.now + 10) is None
    reason, message = strategy.failure(pod, Plan(), tracked['app'], clock.now + 16)
    assert reason == 'SignalIgnored' and 'PID 1' in message


def test_exec_strategy_refuses_shared_process_namespace():
    pod = load('pod_web.json')
    pod['spec']['shareProcessNamespace'] = True
    info = type('Info', (), {'name': 'app'})()
    assert 'pause' in podexec.ExecStrategy(None, KILL).refusal(pod, info)
    assert podexec.ExecStrategy(None, ['/app/ctl', 'restart']).refusal(pod, info) is None


def test_exit_code_of_a_status_without_a_number():
    failure = {'status': 'Failure', 'details': {'causes': [{'reason': 'ExitCode', 'message': 'none'}]}}
    assert podexec.exit_code(failure) is None
    assert podexec.exit_code({'status': 'Failure', 'details': {'causes': [{'reason': 'Other'}]}}) is None
    assert podexec.handshake_error('Handshake status 500 {"kind":"Status", broken') == (
        'Handshake status 500 {"kind":"Status", broken', 500)


class Session(object):
    """A websocket exec session of the kubernetes package that has already run."""

    def __init__(self, error_channel):
        self.error_channel = error_channel
        self.closed = False
        self.ran = None

    def run_forever(self, timeout):
        self.ran = timeout

    def read_stdout(self):
        return 'out'

    def read_stderr(self):
        return 'err'

    def read_channel(self, channel):
        return self.error_channel

    def close(self):
        self.closed = True


class ApiClientOf(object):
    def api_client(self):
        return 'client'


@pytest.fixture
def websocket(monkeypatch):
    """Answers of the kubernetes package's exec stream: set ``answer`` (a Session or an exception); ``calls``."""
    import kubernetes.client
    import kubernetes.stream

    state = {'calls': []}

    def fake_stream(method, name, namespace, **kwargs):
        state['calls'].append((name, namespace, kwargs['container'], kwargs['command'], kwargs['_request_timeout']))
        if isinstance(state['answer'], Exception):
            raise state['answer']
        return state['answer']
    monkeypatch.setattr(kubernetes.stream, 'stream', fake_stream)
    monkeypatch.setattr(kubernetes.client, 'CoreV1Api', lambda client: type('Api', (), {
        'connect_get_namespaced_pod_exec': None, 'client': client})())
    return state


def test_run_exec_reads_the_output_and_the_status(websocket):
    session = websocket['answer'] = Session('{"status": "Success"}')
    result = podexec.run_exec(ApiClientOf(), 'shop', 'web-0', 'app', ['kill', '1'], timeout=7)
    assert result == podexec.ExecResult({'status': 'Success'}, 'out', 'err', None, None)
    assert session.closed and session.ran == 7
    assert websocket['calls'] == [('web-0', 'shop', 'app', ['kill', '1'], 7)]
    websocket['answer'] = Session('not json')
    assert podexec.run_exec(ApiClientOf(), 'shop', 'web-0', 'app', ['kill', '1']).status == {
        'status': 'Failure', 'message': 'not json'}


def test_run_exec_turns_a_refused_handshake_into_a_result(websocket):
    from kubernetes.client.rest import ApiException
    refused = ApiException(status=0, reason='Handshake status 403 Forbidden')
    refused.body = '{"kind":"Status","message":"pods \\"web-0\\" is forbidden","code":403}'
    websocket['answer'] = refused
    result = podexec.run_exec(ApiClientOf(), 'shop', 'web-0', 'app', ['kill', '1'])
    assert (result.status, result.error, result.http_status) == (None, 'pods "web-0" is forbidden', 403)
