# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``exec`` restart strategy: run a signal command in the container through ``pods/exec``
(default ``kill -TERM 1``); the main process exits and the kubelet starts the container again.

It often does nothing, and this file says why: the image has no ``kill`` binary (distroless,
scratch); the exec user may not signal PID 1; PID 1 ignores the signal (a process running as PID 1
gets no default signal handling: without a handler of its own, SIGTERM does nothing, and SIGKILL
from inside the container is ignored too); with ``shareProcessNamespace`` PID 1 is the pod's pause
process, not the container's. ``classify`` explains a failed exec, ``explain_no_restart`` a signal
that was delivered but restarted nothing.
"""

import json
import re
import time
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

SIGNALS = {'HUP': 1, 'INT': 2, 'QUIT': 3, 'KILL': 9, 'USR1': 10, 'USR2': 12, 'TERM': 15}
DEFAULT_SIGNAL = 'TERM'
EXEC_TIMEOUT = 60
SETTLE_SECONDS = 10     # after the grace period, how long a signalled container may take to go down
OUTPUT_LIMIT = 2000
ALTERNATIVES = 'use strategy image_reference (or cri on the node), or exec_command with a program the image has'

ExecResult = namedtuple('ExecResult', 'status stdout stderr error http_status')
"""status: the decoded exec status (error channel) or None; error: why the session could not be opened."""


def signal_name(signal):
    """``SIGTERM``, ``term``, ``15`` -> ``TERM``; raise ValidationError for unknown signals."""
    text = str(signal).strip().upper()
    text = text[3:] if text.startswith('SIG') else text
    if text.isdigit():
        names = {number: name for name, number in SIGNALS.items()}
        if int(text) in names:
            return names[int(text)]
    elif text in SIGNALS:
        return text
    raise ValidationError('exec_signal: unknown signal %r (one of %s)' % (signal, ', '.join(sorted(SIGNALS))))


def build_command(signal=DEFAULT_SIGNAL, command=None):
    """The command run in the container: ``command`` as given, else ``kill -<SIGNAL> 1``."""
    if command:
        return [str(part) for part in command]
    return ['kill', '-%s' % signal_name(signal or DEFAULT_SIGNAL), '1']


def command_for(kube, signal=None, command=None):
    """build_command() for ``kube``, which must not impersonate."""
    if kube.impersonating:
        raise ValidationError('strategy exec cannot impersonate: the kubernetes client opens pods/exec websockets '
                              'with the authorization header only; drop the impersonate_* options (and as, '
                              'as-groups of the kubeconfig user)')
    return build_command(signal, command)


def signals_pid1(command):
    """The command sends a signal to PID 1 (``kill ... 1``)."""
    return bool(command) and command[0].rsplit('/', 1)[-1] == 'kill' and command[-1] == '1'


def exit_code(status):
    """The exit code in an exec status (0 for Success), or None."""
    if not status:
        return None
    if status.get('status') == 'Success':
        return 0
    for cause in ((status.get('details') or {}).get('causes') or []):
        if cause.get('reason') == 'ExitCode':
            try:
                return int(cause.get('message'))
            except (TypeError, ValueError):
                return None
    return None


def _short(text):
    text = (text or '').strip()
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + '...'


# What stopped an exec session before its command's own outcome (session_problem).
FORBIDDEN, UNOPENED, NO_PROGRAM = 'forbidden', 'unopened', 'no_program'


def session_problem(result, missing_file_is_program=False):
    """FORBIDDEN (the API server refused pods/exec), UNOPENED (no session), NO_PROGRAM (the command's program is not
    in the image: exit code 126 or 127, or the runtime found no executable), or None. ``missing_file_is_program``:
    a "no such file or directory" from the runtime names the program too (not so for a command that reads a file)."""
    if result.http_status == 403:
        return FORBIDDEN
    if result.error is not None:
        return UNOPENED
    text = ' '.join([(result.status or {}).get('message') or '', result.stderr or '']).lower()
    if exit_code(result.status) in (126, 127) or 'executable file not found' in text:
        return NO_PROGRAM
    if missing_file_is_program and 'no such file or directory' in text:
        return NO_PROGRAM
    return None


def classify(result, command):
    """None when the signal was sent (or the container went down meanwhile), else (reason, message)."""
    shown = ' '.join(command)
    problem = session_problem(result, missing_file_is_program=True)
    if problem == FORBIDDEN:
        return 'ExecForbidden', ('the API server refused pods/exec (HTTP 403): RBAC needs get and create on '
                                 'pods/exec. %s' % _short(result.error))
    if problem == UNOPENED:
        return 'ExecUnavailable', (
            'pods/exec could not be opened: %s (HTTP %s). The API server forwards exec to the kubelet of the pod\'s node: '
            'a node it cannot reach, a runtime without exec or a proxy without websocket support end here; %s'
            % (_short(result.error), result.http_status, ALTERNATIVES))
    status = result.status
    code = exit_code(status)
    if status is None or code in (0, 137, 143):
        return None   # done, or the session was cut because the container went down: the wait decides
    text = ' '.join([status.get('message') or '', result.stderr or '', result.stdout or '']).lower()
    if problem == NO_PROGRAM:
        return 'ExecNoKillBinary', ('%s could not run in the container: the image has no %s binary (distroless '
                                    'and scratch images ship no tools); %s' % (shown, command[0], ALTERNATIVES))
    if 'not permitted' in text or 'permission denied' in text:
        return 'ExecNotPermitted', ('%s was refused: the exec session may not signal the process (PID 1 runs '
                                    'as another user, or the capability to kill is dropped); %s' % (shown, ALTERNATIVES))
    return 'ExecFailed', '%s failed (exit code %s): %s' % (
        shown, code, _short(status.get('message') or result.stderr or result.stdout))


def explain_no_restart(pod, container, command, seconds):
    """Why a signal command that ran restarted nothing."""
    reasons = ['PID 1 ignores the signal: a process running as PID 1 gets no default signal handling, so it '
               'reacts only to signals it installed a handler for (shells and many scripts do not; run the program '
               'under an init such as tini or dumb-init)']
    if (pod.get('spec') or {}).get('shareProcessNamespace'):
        reasons.insert(0, 'the pod shares one process namespace (shareProcessNamespace): PID 1 is the pod\'s '
                          'pause process, not this container\'s program')
    if not signals_pid1(command):
        reasons.append('the command did not signal the container\'s main process')
    return '%s ran in container %s, but the container still runs the same process after %ds. Usual reasons: %s. %s.' % (
        ' '.join(command), container, seconds, '; '.join(reasons), ALTERNATIVES[0].upper() + ALTERNATIVES[1:])


def handshake_error(text):
    """(message, HTTP status) from a failed websocket handshake (``Handshake status 500 ... {"kind":"Status",...}``)."""
    found = re.search(r'Handshake status (\d{3})', text or '')
    code = int(found.group(1)) if found else None
    start = (text or '').find('{"kind":"Status"')
    if start >= 0:
        try:
            status, _end = json.JSONDecoder().raw_decode(text[start:])
            return status.get('message') or text, status.get('code') or code
        except ValueError:
            pass
    return (text or '').strip(), code


def run_exec(kube, namespace, name, container, command, timeout=EXEC_TIMEOUT):
    """Run ``command`` in the container over pods/exec; an ExecResult (no exception for exec errors)."""
    # The kubernetes package's websocket machinery, imported here only (the one path of the pod modules that needs
    # the package, and its import is slow: docs/performance.md; its ApiClient first: a missing package is a
    # ConfigError naming it).
    client = kube.api_client()
    from kubernetes.client import CoreV1Api
    from kubernetes.client.rest import ApiException
    from kubernetes.stream import stream as kube_stream
    from kubernetes.stream.ws_client import ERROR_CHANNEL
    api = CoreV1Api(client)
    try:
        session = kube_stream(api.connect_get_namespaced_pod_exec, name, namespace, container=container,
                              command=command, stderr=True, stdin=False, stdout=True, tty=False,
                              _preload_content=False, _request_timeout=timeout)
    except ApiException as exc:
        message, code = handshake_error('%s %s' % (exc.reason or '', exc.body or ''))
        return ExecResult(None, '', '', message, exc.status or code)
    try:
        session.run_forever(timeout=timeout)
        stdout, stderr = session.read_stdout(), session.read_stderr()
        raw = session.read_channel(ERROR_CHANNEL)
    finally:
        session.close()
    try:
        status = json.loads(raw) if raw else None
    except ValueError:
        status = {'status': 'Failure', 'message': raw}
    return ExecResult(status, stdout, stderr, None, None)


class ExecStrategy(restart.Strategy):
    """Signal the container's main process through pods/exec (see the module docstring)."""

    name = 'exec'
    # the websocket exec is a GET upgraded by the server; a POST (SPDY clients) needs create
    permissions = (('get', 'pods/exec', ''), ('create', 'pods/exec', ''))

    def __init__(self, kube, command, execute=run_exec, clock=time.monotonic):
        self.kube = kube
        self.command = command
        self.execute = execute
        self.clock = clock

    def refusal(self, pod, info):
        if (pod.get('spec') or {}).get('shareProcessNamespace') and signals_pid1(self.command):
            return ('the pod shares one process namespace (shareProcessNamespace): PID 1 is the pod\'s pause '
                    'process; signalling it would not restart container %s; set exec_command to signal the '
                    'container\'s own process, or %s' % (info.name, 'use strategy image_reference'))
        return None

    def act(self, kube, pod, cplans, tracked):
        name, namespace = podstate.meta(pod, 'name'), podstate.meta(pod, 'namespace')
        for cplan in cplans:
            result = self.execute(kube, namespace, name, cplan.name, self.command)
            tracked[cplan.name].details.update(
                exec_command=self.command, exec_exit_code=exit_code(result.status),
                exec_stdout=_short(result.stdout), exec_stderr=_short(result.stderr), signalled=self.clock())
            failure = classify(result, self.command)
            if failure:
                raise PodFailure(name, failure[0], failure[1], container=cplan.name)
        return pod

    def failure(self, pod, cplan, tracked, now):
        signalled = tracked.details.get('signalled')
        info = podstate.find_container(pod, cplan.name)
        if signalled is None or info is None or info.status.get('containerID') != tracked.container_id:
            return None
        grace = (pod.get('spec') or {}).get('terminationGracePeriodSeconds')
        limit = (30 if grace is None else grace) + SETTLE_SECONDS
        if restart.is_running(info.status) and now - signalled > limit:
            return 'SignalIgnored', explain_no_restart(pod, cplan.name, self.command, limit)
        return None

    def describe(self, cplan, tracked):
        return {key: tracked.details.get(key) for key in
                ('exec_command', 'exec_exit_code', 'exec_stdout', 'exec_stderr')}
