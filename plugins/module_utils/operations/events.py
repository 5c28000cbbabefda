# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes Events (events.k8s.io/v1) of a run, as the built-in controllers write them: on each pod (its change
started, done, failed with the reason, rolled back) and on the workload of a rollout (started, each step, paused,
halted, rolled back, released, finished: rollout/status.py). ``kubectl describe`` and ``kubectl events --for KIND/NAME`` show them.

One Recorder per run (a module call), shared by its threads. Like client-go's EventRecorder, an Event that repeats
(the same object, reason, action and note but for its numbers) within SERIES_SECONDS is not written again: the
Event written first gets ``series.count`` and ``series.lastObservedTime`` by a patch (its note is immutable: it keeps
the first one's). Notes whose numbers matter (a rollout's steps) are aggregated only when they repeat exactly.

Best effort: an Event is never worth failing or slowing a run. Each write is one request, not retried; the first
that fails (403 without the RBAC rule, or any other error) becomes one warning and the run writes no more Events.
Check mode writes none. Requests stay few: a pod's successful change is told by Events for the first
POD_SUCCESSES pods of a run only - of a rollout, when the role calls a step at a time (rollout/context.py) - and the
workload's RolloutStep Events count them all; a failure or a rollback is always told.
"""

import datetime
import os
import re
import socket
import threading
import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import FAILED, FINISHED_OK, ROLLED_BACK
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

CONTROLLER = 'inplace.k8s'   # reportingController
SERIES_SECONDS = 360         # a repeat within this is counted on the first Event (client-go tools/events: 6 min)
POD_SUCCESSES = 10           # pods per run whose successful change gets its own Events
NOTE_BYTES = 1024            # the API server's limit of a note
NORMAL, WARNING = 'Normal', 'Warning'

# Reasons (CamelCase, as the built-in controllers'), with the action each names. On a pod:
UPDATE_STARTED, UPDATED, UPDATE_FAILED, POD_ROLLED_BACK = (
    'InPlaceUpdateStarted', 'InPlaceUpdated', 'InPlaceUpdateFailed', 'InPlaceRolledBack')
# On a workload:
ROLLOUT_STARTED, ROLLOUT_RESUMED, ROLLOUT_STEP, ROLLOUT_PAUSED, ROLLOUT_HALTED = (
    'RolloutStarted', 'RolloutResumed', 'RolloutStep', 'RolloutPaused', 'RolloutHalted')
ROLLBACK_STARTED, ROLLED_BACK_REASON, RELEASED, ROLLOUT_FINISHED = (
    'RollbackStarted', 'RolledBack', 'Released', 'RolloutFinished')
ACTIONS = {
    UPDATE_STARTED: 'Update', UPDATED: 'Update', UPDATE_FAILED: 'Update', POD_ROLLED_BACK: 'Rollback',
    ROLLOUT_STARTED: 'Rollout', ROLLOUT_RESUMED: 'Rollout', ROLLOUT_STEP: 'Rollout', ROLLOUT_PAUSED: 'Rollout',
    ROLLOUT_HALTED: 'Rollout', ROLLBACK_STARTED: 'Rollback', ROLLED_BACK_REASON: 'Rollback', RELEASED: 'Release', ROLLOUT_FINISHED: 'Rollout',
}
API_VERSIONS = {'Pod': 'v1', 'Deployment': 'apps/v1', 'StatefulSet': 'apps/v1', 'DaemonSet': 'apps/v1',
                'ReplicaSet': 'apps/v1'}
_NUMBERS = re.compile(r'\d+(?:\.\d+)?')


def micro_time(seconds):
    """A MicroTime of the API (RFC 3339 with microseconds, UTC)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def shape(note):
    """The note without its numbers: repeats of one message with other counts or times are one series."""
    return _NUMBERS.sub('#', note)


def short(note):
    """``note`` cut to NOTE_BYTES (UTF-8)."""
    data = note.encode('utf-8')
    return note if len(data) <= NOTE_BYTES else data[:NOTE_BYTES - 3].decode('utf-8', 'ignore') + '...'


def instance(run=None):
    """reportingInstance: this host and the run (or this process)."""
    return ('%s/%s' % (socket.gethostname(), run or 'pid-%d' % os.getpid()))[:128]


class Recorder:
    """The Events of one run. ``enabled``: false (the events option, check mode) writes none. ``warn(message)``
    takes the one warning of a failed write. ``clock``: time.time, injectable for tests."""

    def __init__(self, kube, enabled=True, run=None, warn=None, clock=time.time, successes=POD_SUCCESSES):
        self.kube = kube
        self.enabled = bool(enabled) and kube is not None
        self.instance = instance(run)
        self.warn = warn or (lambda message: None)
        self.clock = clock
        self.successes = successes
        self.requests = 0
        self._lock = threading.Lock()
        self._series = {}    # key -> [event name, namespace, count, last seen]
        self._told = set()   # pods whose start was told (their success is told too)

    @classmethod
    def off(cls):
        return cls(None, enabled=False)

    # ---- any object

    def record(self, obj, kind, reason, note, warning=False, exact=False):
        """Tell ``reason`` (a reason above) on ``obj`` (a pod or workload as read; ``kind`` its kind) with ``note``,
        a short sentence; ``exact``: a series only of the very same note. Never raises."""
        if not self.enabled or obj is None:
            return
        meta = obj.get('metadata') or {}
        note = short(note)
        key = (kind, meta.get('namespace'), meta.get('name'), meta.get('uid'), reason, warning,
               note if exact else shape(note))
        with self._lock:
            if not self.enabled:
                return
            try:
                self._write(key, obj, kind, reason, note, warning)
            except Exception as exc:   # noqa: BLE001 - best effort: any failure is one warning, then no more
                self.enabled = False
                self.warn(failure_message(exc))

    def _write(self, key, obj, kind, reason, note, warning):
        now = self.clock()
        meta = obj.get('metadata') or {}
        namespace = meta.get('namespace')
        found = self._series.get(key)
        if found is not None and now - found[3] <= SERIES_SECONDS:
            found[2] += 1
            found[3] = now
            try:
                self._send('PATCH', namespace, found[0], {
                    'series': {'count': found[2], 'lastObservedTime': micro_time(now)}}, content_type=MERGE_PATCH)
                return
            except NotFoundError:   # the Event expired (the server's event TTL) or was deleted: a new one
                pass
        name = '%s.%x' % (meta.get('name'), int(now * 1e9) + len(self._series))
        self._send('POST', namespace, None, {
            'apiVersion': 'events.k8s.io/v1', 'kind': 'Event',
            'metadata': {'name': name, 'namespace': namespace},
            'eventTime': micro_time(now), 'reportingController': CONTROLLER, 'reportingInstance': self.instance,
            'action': ACTIONS.get(reason, 'Update'), 'reason': reason, 'note': note,
            'type': WARNING if warning else NORMAL,
            'regarding': {'apiVersion': obj.get('apiVersion') or API_VERSIONS.get(kind, 'v1'), 'kind': kind,
                          'namespace': namespace, 'name': meta.get('name'), 'uid': meta.get('uid'),
                          'resourceVersion': meta.get('resourceVersion')}})
        self._series[key] = [name, namespace, 1, now]

    def _send(self, method, namespace, name, body, content_type=None):
        path = paths.api_path('events.k8s.io/v1', 'events', namespace or 'default', name or None)
        self.requests += 1
        self.kube.request_once(method, path, body=body, content_type=content_type)

    # ---- a pod's change (operations/podsteps.py)

    def pod_started(self, pod, plan):
        """A pod's change starts (drain, then the write): told for the first ``successes`` pods of the run."""
        if not self.enabled:
            return
        with self._lock:
            if len(self._told) >= self.successes:
                return
            self._told.add(podstate.meta(pod, 'name'))
        self.record(pod, 'Pod', UPDATE_STARTED, 'Updating in place: %s' % changes(plan))

    def pod_finished(self, run):
        """A pod's change ended (a podrun.PodRun): done (if its start was told), failed, or rolled back."""
        if not self.enabled:
            return
        name, seconds = run.plan.name, run.timings.get('total')
        if run.status in FINISHED_OK and name in self._told:
            self.record(run.pod, 'Pod', UPDATED, 'Updated in place in %ss: %s' % (seconds, changes(run.plan)))
        elif run.status == ROLLED_BACK:
            self.record(run.pod, 'Pod', POD_ROLLED_BACK, 'Rolled back in place to %s; %s'
                        % (values(run.rollback), run.reason), warning=True)
        elif run.status == FAILED and (run.written or run.gate or run.error):
            reason = (run.error or {}).get('reason')
            self.record(run.pod, 'Pod', UPDATE_FAILED, 'In-place update failed%s: %s'
                        % (' (%s)' % reason if reason else '', run.reason), warning=True)


def changes(plan):
    """'app: registry/app:1.0 -> registry/app:2.0' of the containers a plan updates."""
    return '; '.join('%s: %s -> %s' % (c.name, brief(c.current), brief(c.desired)) for c in plan.updates()) or \
        'nothing to change'


def values(mapping):
    return ', '.join('%s=%s' % (name, brief(value)) for name, value in sorted((mapping or {}).items())) or 'as before'


def brief(value):
    """A value for a note: an image as it is, resources as 'requests cpu=500m,memory=192Mi limits cpu=1'."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            return ' '.join('%s %s' % (k, brief(v)) for k, v in sorted(value.items()))
        return ','.join('%s=%s' % (k, v) for k, v in sorted(value.items()))
    return '%s' % (value,)


def failure_message(exc):
    """The one warning of a run whose Events could not be written."""
    why = getattr(exc, 'msg', None) or str(exc) or type(exc).__name__
    if isinstance(exc, ForbiddenError):
        return ('Kubernetes Events were not written (forbidden: %s): grant create and patch on events '
                '(events.k8s.io), as rbac/inplace-k8s-rbac.yml does, or set events=false (role: rollout_events: '
                'false); the run went on without them' % why)
    return 'Kubernetes Events were not written (%s); the run went on without them' % why
