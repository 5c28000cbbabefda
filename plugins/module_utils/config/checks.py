# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A config rollout's checks in the pod, through ``pods/exec`` (docs/config-rollouts.md "Volume consumers" and
"A check command"): before the restart of a volume or subPath consumer, that the kubelet projected the object's
new data into the volume (config/projection.py says what to read, where); after a restart, the user's check
command. The recreate operation calls ``before`` and ``after`` (operations/recreate.py Settings.hooks).

Why the projection comes: the run writes the pod (its state record, operations/engine.py) before it restarts
anything, and the kubelet syncs a pod whose metadata or spec changed; each sync asks its volume manager to mount the
pod's volumes again, which refreshes configMap, secret and projected volumes from the kubelet's copy of the objects
(a watch, by default). A container restart starts such a sync but does not wait for it; so the run waits, reading
the files, up to wait_timeout.

The exec is the one of strategy exec (operations/strategies/podexec.py run_exec)."""

import time

from ansible_collections.inplace.k8s.plugins.module_utils.config import projection
from ansible_collections.inplace.k8s.plugins.module_utils.config.plan import SECOND
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import podexec
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, poll

REQUIRED, BEST_EFFORT, SKIP = 'required', 'best_effort', 'skip'
PROJECTION_MODES = (REQUIRED, BEST_EFFORT, SKIP)
CHECK_KEYS = ('command', 'container', 'expect', 'contains')
EXEC_TIMEOUT = 30      # seconds one read or check may take
FIRST_DELAY, MAX_DELAY = 1.0, 5.0   # between reads of the files: 1 s, doubled up to 5 s (poll.until)


def check_errors(value, field='config_check', config_field='config', config=None):
    """The mistakes in a config_check value (``{command: [..], container:, expect:, contains:}``), each naming
    ``field`` and the fix; [] when there is none (an empty value: no check)."""
    if not value:
        return []
    errors = []
    if not config:
        errors.append('%s: runs after the restarts of a config rollout; set %s too, or leave %s out' % (
            field, config_field, field))
    if not isinstance(value, dict):
        return errors + ['%s: a mapping with command (a list), and expect or contains; got a %s' % (
            field, type(value).__name__)]
    unknown = sorted(set(value) - set(CHECK_KEYS))
    if unknown:
        errors.append('%s: unknown key(s) %s (it takes %s)' % (field, ', '.join(map(str, unknown)), ', '.join(CHECK_KEYS)))
    command = value.get('command')
    if not isinstance(command, list) or not command or not all(
            isinstance(part, (str, int, float)) and str(part) for part in command):
        errors.append('%s.command: a non-empty list of the program and its arguments, for example [cat, '
                      '/etc/app/mode]; got %r' % (field, str(command)[:100]))
    for key in ('container', 'expect', 'contains'):
        if value.get(key) is not None and not isinstance(value[key], (str, int, float)):
            errors.append('%s.%s: a string, got a %s' % (field, key, type(value[key]).__name__))
    if value.get('container') == '':
        errors.append('%s.container: a container name, or leave it out (each restarted container)' % field)
    return errors


class Check:
    """A valid config_check: the command, the container it runs in (None: each restarted one), what its stripped
    output must equal and/or contain (None: its exit code 0 alone)."""

    def __init__(self, value):
        self.command = [str(part) for part in value['command']]
        self.container = value.get('container') or None
        self.expect = None if value.get('expect') is None else str(value['expect'])
        self.contains = None if value.get('contains') is None else str(value['contains'])

    def mismatch(self, stdout):
        """Why ``stdout`` does not pass, or None."""
        text = (stdout or '').strip()
        if self.expect is not None and text != self.expect:
            return 'expected %r' % self.expect
        if self.contains is not None and self.contains not in (stdout or ''):
            return 'expected output containing %r' % self.contains
        return None


def exec_problem(result, what):
    """Why an exec of ``what`` did not run (an ExecResult of podexec.run_exec), or None."""
    problem = podexec.session_problem(result)
    if problem == podexec.FORBIDDEN:
        return 'the API server refused pods/exec (HTTP 403): RBAC needs get and create on pods/exec (ClusterRole ' \
               'inplace-k8s-exec)'
    if problem == podexec.UNOPENED:
        return 'pods/exec could not be opened: %s (HTTP %s)' % (result.error[:300], result.http_status)
    if problem == podexec.NO_PROGRAM:
        return 'the image has no %s program (distroless and scratch images ship no tools)' % what
    return None


class ConfigChecks:
    """The hooks of a config rollout's restarts (module docstring): ``config`` the ConfigRollout (its plans and the
    objects it read), ``projection`` one of PROJECTION_MODES, ``check`` a config_check value (or None), ``timeout``
    how long the files are read again (wait_timeout), ``warn`` the run's warnings."""

    def __init__(self, kube, config, projection_mode, check, timeout, warn, clock=time.monotonic, sleep=time.sleep,
                 execute=podexec.run_exec, wall=time.time):
        self.kube, self.config, self.mode = kube, config, projection_mode or BEST_EFFORT
        self.check = Check(check) if check else None
        self.timeout, self.warn, self.clock, self.sleep, self.execute = timeout, warn, clock, sleep, execute
        self.wall = wall

    @property
    def permissions(self):
        """pods/exec when the run cannot do without it (a required projection, a check command): checked before
        anything is written. A best-effort projection goes on without it (a warning per pod)."""
        if self.mode == REQUIRED or self.check is not None:
            return podexec.ExecStrategy.permissions
        return ()

    def _run(self, pod, container, command):
        if self.kube.impersonating:
            return podexec.ExecResult(None, '', '', 'the kubernetes client opens pods/exec websockets without '
                                      'impersonation; drop the impersonate_* options', None)
        return self.execute(self.kube, podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), container,
                            command, timeout=EXEC_TIMEOUT)

    # ---- before the restart: the projection

    def before(self, pod, names, tracked):
        """Before the containers ``names`` of ``pod`` restart: the second of the objects' change is over (see
        _past_the_change), and their volumes show the objects' new data (or the warning why that is not known);
        PodFailure when it is not and the projection is required. ``tracked``: {container: restart.Tracked}, its
        details get the outcome (the result's ``projection``)."""
        self._past_the_change(pod, names)
        if self.mode == SKIP:
            return
        changed = self.config.plan(pod).changed or {}
        for probe in projection.probes(pod, names, changed, self.config.objects):
            confirmed, note = self._confirm(pod, probe)
            for name in probe.consumers:
                if name in tracked:
                    tracked[name].details.setdefault('projection', []).append(note)
            if confirmed:
                continue
            where = 'pod %s: %s, read by %s' % (
                podstate.meta(pod, 'name'), projection.describe(probe), ', '.join(probe.consumers))
            if self.mode == REQUIRED:
                raise PodFailure(podstate.meta(pod, 'name'), 'ProjectionUnconfirmed', '%s: %s; not restarted '
                                 '(config_projection required)' % (projection.describe(probe), note),
                                 container=probe.consumers[0])
            self.warn('%s: the new data was not confirmed in the volume before the restart (%s); restarted anyway '
                      '(config_projection best_effort: a subPath consumer may start with the file from before, until '
                      'a later restart)' % (where, note))

    def _past_the_change(self, pod, names):
        """A container started in the second of a change counts as started before it (config/plan.py: both times have
        seconds resolution), and a re-run would restart it again. A restart that would begin in that second waits
        for the next one (at most a second, whatever the clocks say)."""
        changed = self.config.last_change(pod, names)
        if changed is None:
            return
        wait = changed.timestamp() + SECOND - self.wall()
        if wait > 0:
            self.sleep(min(wait, SECOND))

    def _confirm(self, pod, probe):
        """(confirmed, note): read the probe's files until they show the new data, at most ``timeout`` (the one poll
        loop: pods/poll.py, its delays FIRST_DELAY doubling up to MAX_DELAY)."""
        if probe.problem:
            return False, 'not confirmed: %s' % probe.problem
        started, reads = self.clock(), []

        def read():
            """(why the exec did not run or None, do the files show the new data)"""
            result = self._run(pod, probe.container, projection.command(probe))
            reads.append(result)
            problem = exec_problem(result, 'cat')
            return problem, problem is None and podexec.exit_code(result.status) == 0 and projection.shows(
                probe, result.stdout)

        problem, shown = poll.until(read, self.timeout, done=lambda value: value[0] is not None or value[1],
                                    first=FIRST_DELAY, most=MAX_DELAY, clock=self.clock, sleep=self.sleep)
        elapsed = self.clock() - started
        if problem:
            return False, 'not confirmed (exec in container %s): %s' % (probe.container, problem)
        if shown:
            return True, 'confirmed: %s shows the new data (exec in container %s, %d read(s), %.1fs)' % (
                projection.describe(probe), probe.container, len(reads), elapsed)
        return False, 'not confirmed: %s still shows other data after %.0fs (%d reads in container %s)' % (
            projection.describe(probe), elapsed, len(reads), probe.container)

    # ---- after the restart: the check command

    def after(self, pod, names, tracked):
        """After the containers ``names`` of ``pod`` restarted and are ready: the check command in each of them (or
        in its container); PodFailure naming the command and what it printed (masked) when it does not pass."""
        if self.check is None:
            return
        shown = ' '.join(self.check.command)
        for container in [self.check.container] if self.check.container else names:
            if podstate.find_container(pod, container) is None:
                raise PodFailure(podstate.meta(pod, 'name'), 'ConfigCheckFailed', 'config_check.container %s is not '
                                 'a container of the pod' % container)
            result = self._run(pod, container, self.check.command)
            secrets = projection.secret_values(pod, container, self.config.objects)
            problem = exec_problem(result, self.check.command[0])
            code = podexec.exit_code(result.status)
            mismatch = self.check.mismatch(result.stdout)
            if problem is None and code != 0:
                problem = 'exit code %s, printed %r' % (code, projection.masked(
                    result.stdout or result.stderr or (result.status or {}).get('message'), secrets))
            elif problem is None and mismatch:
                problem = '%s, printed %r' % (projection.masked(mismatch, secrets),
                                              projection.masked((result.stdout or '').strip(), secrets))
            if problem:
                raise PodFailure(podstate.meta(pod, 'name'), 'ConfigCheckFailed', 'config_check %s: %s' % (
                    projection.masked(shown, secrets), problem), container=container)
            for name in names:
                if name in tracked:
                    tracked[name].details['config_check'] = 'passed: %s (in container %s)' % (shown, container)
