# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every container restart strategy shares: the ``Strategy`` interface, what is known about
each container acted on (``Tracked``), and pure reading of restart facts (start times, the restart
policy that applies to a container, whether a crash-loop back-off is only the back-off of our own stop).

Strategies: imageref.ImageReferenceStrategy, kruise.KruiseStrategy, podexec.ExecStrategy,
cri.CriStrategy; recreate.RecreateOperation drives them through the engine.
"""

import datetime

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

RESTART = 'restart'   # the desired value of a container restarted without a change of its spec


class Strategy:
    """One way of restarting containers. ``act`` restarts a group of containers of one pod; the
    operation then waits for new containers, calling ``failure`` and ``finished`` on each pod update."""

    name = None
    spec_change = False   # True: the restart is a spec change (works whatever the restartPolicy)
    orders_itself = False  # True: act() gets all containers at once and restarts them in order itself
    # API permissions act() needs beyond patching pods (the record): (verb, 'resource[/sub]', group).
    permissions = ()

    def target(self, pod, info):
        """(the desired value of this container, None) or (None, why it cannot be restarted this way)."""
        return RESTART, None

    def current(self, info):
        """The container's current value, as the diff shows it."""
        return info.status.get('containerID')

    def refusal(self, pod, info):
        """Why this strategy cannot restart the container of this pod, or None."""
        return None

    def drains_itself(self, drain):
        """Does the strategy drain the pod itself with these options (options.Drain)? The engine then
        does not."""
        return False

    def act(self, kube, pod, cplans, tracked):
        """Restart the containers of ``cplans``; ``tracked`` {name: Tracked} keeps details. The pod after."""
        raise NotImplementedError

    def failure(self, pod, cplan, tracked, now):
        """(reason, message) when the restart failed in a way only this strategy knows, else None."""
        return None

    def finished(self, pod, cplan, tracked):
        """What this strategy adds to "the container is restarted, started, ready" (default nothing)."""
        return True

    def describe(self, cplan, tracked):
        """Extra result fields for one container."""
        return {}

    def close(self):
        """Release what the strategy started (watches)."""


class Tracked:
    """One container acted on: its state just before (containerID, restartCount), when it was acted
    on (monotonic clock) and how long its successor took to be started and ready."""

    def __init__(self, status, acted):
        self.container_id = status.get('containerID')
        self.restart_count = status.get('restartCount') or 0
        self.acted = acted
        self.ready_seconds = None
        self.details = {}


# --------------------------------------------------------------------------- time

def parse_time(text):
    """An RFC 3339 / ISO 8601 timestamp -> aware UTC datetime; raise ValueError. A value without
    offset is taken as UTC."""
    if isinstance(text, datetime.datetime):
        value = text
    else:
        raw = str(text).strip()
        if raw.endswith(('Z', 'z')):
            raw = raw[:-1] + '+00:00'
        raw = raw.replace(' ', 'T', 1) if 'T' not in raw else raw
        value = datetime.datetime.fromisoformat(raw)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)


def started_at_text(status):
    return (((status or {}).get('state') or {}).get('running') or {}).get('startedAt')


def started_at(status):
    """When the running container started (aware datetime), or None."""
    text = started_at_text(status)
    try:
        return parse_time(text) if text else None
    except ValueError:
        return None


# --------------------------------------------------------------------------- containers

def is_running(status):
    return 'running' in ((status or {}).get('state') or {})


def state_summary(status):
    """``waiting (CrashLoopBackOff)``, ``terminated (Error, exit code 1)``, ``unknown``."""
    state = (status or {}).get('state') or {}
    for key in ('waiting', 'terminated', 'running'):
        if key in state:
            detail = state[key] or {}
            parts = [p for p in (detail.get('reason'),
                                 'exit code %s' % detail['exitCode'] if 'exitCode' in detail else None) if p]
            return '%s (%s)' % (key, ', '.join(parts)) if parts else key
    return 'unknown'


def restart_policy(pod, info):
    """The restart policy that applies to the container: Always for sidecars, else the pod's."""
    if info.kind == podstate.SIDECAR:
        return 'Always'
    return (pod.get('spec') or {}).get('restartPolicy') or 'Always'


def stopped_by_us(status, tracked):
    """The container's last termination is the container we stopped: a crash-loop back-off now is the
    kubelet's back-off for our own stop, not a crash of the new container."""
    last = ((status or {}).get('lastState') or {}).get('terminated') or {}
    return bool(tracked and last.get('containerID') and last.get('containerID') == tracked.container_id)


def crash_after_restart(status, tracked):
    """(reason, message) when the container restarted again after our restart (it crashed), else None."""
    if not tracked or not status:
        return None
    if (status.get('restartCount') or 0) <= tracked.restart_count + 1:
        return None
    last = (status.get('lastState') or {}).get('terminated') or {}
    message = 'the container restarted %d times since it was restarted' % (
        (status.get('restartCount') or 0) - tracked.restart_count - 1)
    if last:
        message += '; last exit: %s, exit code %s%s' % (
            last.get('reason') or 'Error', last.get('exitCode'), ': %s' % last['message'] if last.get('message') else '')
    return 'CrashedAfterRestart', message
