# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The recreate operation (what container_recreate runs): restart chosen containers of running pods
without recreating the pods, with one of the strategies of restart.Strategy.

Per container the plan is: restart (``update``), skip (``unchanged``: started after
``restarted_after``) or refuse with the reason (not running, restart policy, strategy limits). The
state record is written first; then the strategy acts, one group of containers at a time
(``ordered``: one container per group), and each group is done when every container in it runs as
a new container (new containerID, restartCount + 1), started and ready, and the strategy agrees (the
ContainerRecreateRequest succeeded, the image is the switched one); the engine then holds it for
``min_ready_seconds`` (alias ``min_started_seconds``). A crash or a failed pull after the restart
fails the pod at once.
"""

import threading
import time
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.operation import Operation
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import cri, imageref, kruise, podexec, restart
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan, podstate

# select: a config rollout's choice of containers per pod; hooks: its checks in the pod before and after each
# restart (config/checks.py ConfigChecks: before(pod, names, tracked), after(...), permissions).
Settings = namedtuple('Settings', 'containers ordered restarted_after select hooks', defaults=(None, None))


class Target(str):
    """A container's desired value (JSON: the plain string) carrying the decision for ``judge``."""

    def __new__(cls, value, action=plan.UPDATE, current=None, reason=None):
        self = str.__new__(cls, value)
        self.action = action
        self.current = current
        self.reason = reason
        return self

    def __getnewargs__(self):
        return str(self), self.action, self.current, self.reason


def default_containers(pod):
    """The app containers (spec.containers), in spec order."""
    return [item['name'] for item in (pod.get('spec') or {}).get('containers') or []]


def decide(pod, name, settings, strategy):
    """The Target of one container: restart it, skip it (and why) or refuse it (and why)."""
    info = podstate.find_container(pod, name)
    if info is None or info.kind == podstate.INIT:
        return Target(restart.RESTART, plan.UPDATE)   # plan.plan_pod refuses these with the reason
    status = info.status
    current = strategy.current(info)
    started = restart.started_at(status)
    if settings.restarted_after is not None and started is not None and started >= settings.restarted_after:
        return Target(restart.RESTART, plan.UNCHANGED, current, 'started at %s, after restarted_after %s' % (
            restart.started_at_text(status), settings.restarted_after.strftime('%Y-%m-%dT%H:%M:%SZ')))
    if not restart.is_running(status):
        return Target(restart.RESTART, plan.REFUSED, current,
                      'container is not running (%s)' % restart.state_summary(status))
    if not strategy.spec_change and restart.restart_policy(pod, info) != 'Always':
        return Target(restart.RESTART, plan.REFUSED, current, (
            'restartPolicy %s: the kubelet would not start the container again after it stops; use '
            'strategy image_reference' % restart.restart_policy(pod, info)))
    reason = strategy.refusal(pod, info)
    if reason:
        return Target(restart.RESTART, plan.REFUSED, current, reason)
    value, reason = strategy.target(pod, info)
    if reason:
        return Target(restart.RESTART, plan.REFUSED, current, reason)
    return Target(value, plan.UPDATE, current)


def chosen_target(target, why):
    """A restart decided by ``decide`` that carries why it was chosen (the plan's reason for a config restart)."""
    if target.action != plan.UPDATE:
        return target
    return Target(str(target), target.action, target.current, why)


class RecreateOperation(Operation):
    """Restart containers with a strategy; see the module docstring."""

    name = imageref.RECORD_KEY
    can_rollback = False   # a restart cannot be undone

    def __init__(self, strategy, settings, clock=time.monotonic):
        self.strategy = strategy
        self.settings = settings
        self.clock = clock
        self._tracked = {}
        self._lock = threading.Lock()

    @property
    def permissions(self):
        """The record (and the image_reference switch) is a pod patch; the strategy may need more. cri
        needs nothing more of the API: it stops containers through the node's runtime socket."""
        hooks = tuple(self.settings.hooks.permissions) if self.settings.hooks is not None else ()
        return Operation.permissions + tuple(self.strategy.permissions) + hooks

    # ---- planning

    def desired(self, pod):
        if self.settings.select is not None:
            # A config rollout: the containers of this pod whose config changed (config/rollout.py), and why.
            chosen = self.settings.select(pod)
            return {name: chosen_target(decide(pod, name, self.settings, self.strategy), chosen[name])
                    for name in chosen}
        names = self.settings.containers or default_containers(pod)
        return {name: decide(pod, name, self.settings, self.strategy) for name in names}

    def judge(self, info, value):
        return plan.verdict(value.action, value.current, restart=value.action == plan.UPDATE, reason=value.reason)

    def settled(self, pod, rec):
        """A restart leaves nothing in the spec to compare with (its targets are decisions, not values):
        the engine writes the final state."""
        return None

    def snapshot(self, info):
        snap = super().snapshot(info)
        snap.update(image=info.spec.get('image'), imageID=info.status.get('imageID'),
                    startedAt=restart.started_at_text(info.status), strategy=self.strategy.name)
        return snap

    # ---- acting

    def steps(self, pod_plan):
        updates = pod_plan.updates()
        if self.settings.ordered and not self.strategy.orders_itself:
            return [[cplan] for cplan in updates]
        return [updates]

    def act(self, kube, pod, pod_plan, group):
        latest = pod
        tracked = {}
        with self._lock:
            for cplan in group:
                info = podstate.find_container(latest, cplan.name)
                tracked[cplan.name] = self._tracked[self._key(pod, cplan.name)] = restart.Tracked(
                    info.status if info else {}, self.clock())
        if self.settings.hooks is not None:   # a config rollout: its volumes show the new data first
            self.settings.hooks.before(latest, [cplan.name for cplan in group], tracked)
        return self.strategy.act(kube, latest, group, tracked) or latest

    def verify(self, kube, pod, pod_plan, group):
        """A config rollout: its check command in the restarted containers, now ready."""
        if self.settings.hooks is not None:
            names = [cplan.name for cplan in group]
            tracked = dict((name, self.tracked(pod, name)) for name in names)
            self.settings.hooks.after(pod, names, dict((name, item) for name, item in tracked.items() if item is not None))

    def _key(self, pod, name):
        return podstate.meta(pod, 'uid'), name

    def tracked(self, pod, name):
        with self._lock:
            return self._tracked.get(self._key(pod, name))

    # ---- waiting

    def restarted(self, pod, cplan, before):
        tracked = self.tracked(pod, cplan.name)
        info = podstate.find_container(pod, cplan.name)
        return bool(tracked and info) and podstate.restarted(info.status, tracked.container_id)

    def done(self, pod, cplan, before):
        tracked = self.tracked(pod, cplan.name)
        info = podstate.find_container(pod, cplan.name)
        if not (tracked and info):
            return False
        status = info.status
        up = podstate.restarted(status, tracked.container_id) and podstate.started_and_ready(status)
        up = up and (status.get('restartCount') or 0) == tracked.restart_count + 1
        up = up and self.strategy.finished(pod, cplan, tracked)
        if up and tracked.ready_seconds is None:
            tracked.ready_seconds = round(self.clock() - tracked.acted, 3)
        return up

    def failure(self, pod, cplan, before, generation):
        tracked = self.tracked(pod, cplan.name)
        info = podstate.find_container(pod, cplan.name)
        status = info.status if info else {}
        crashed = restart.crash_after_restart(status, tracked)
        if crashed:
            return crashed
        found = podstate.container_failure(status, 'Always')
        if found and not (found[0] == 'CrashLoopBackOff' and restart.stopped_by_us(status, tracked)):
            return found
        return self.strategy.failure(pod, cplan, tracked, self.clock()) if tracked else None

    def stalled(self, pod, cplans):
        waiting = []
        for cplan in cplans:
            status = podstate.container_status(pod, cplan.name)
            state = (status.get('state') or {}).get('waiting') or {}
            if state.get('reason') == 'CrashLoopBackOff' and restart.stopped_by_us(status, self.tracked(pod, cplan.name)):
                waiting.append('container %s waits for the kubelet\'s restart back-off after it was stopped (%s); '
                               'stopping a container again soon makes the back-off grow (10s, 20s, ... 5m)'
                               % (cplan.name, state.get('message') or 'back-off'))
        return '; '.join(waiting) or None

    # ---- results

    def describe(self, cplan, before_info, after_info):
        result = {'strategy': self.strategy.name,
                  'started_at_before': restart.started_at_text(before_info.status) if before_info else None,
                  'started_at_after': restart.started_at_text(after_info.status) if after_info else None,
                  'seconds_to_ready': None}
        container_id = before_info.status.get('containerID') if before_info else None
        with self._lock:
            tracked = [t for t in self._tracked.values() if container_id and t.container_id == container_id]
        if tracked:
            result['seconds_to_ready'] = tracked[0].ready_seconds
            result.update(self.strategy.describe(cplan, tracked[0]))
            result.update((key, tracked[0].details[key]) for key in ('projection', 'config_check')
                          if key in tracked[0].details)
        return result

    def report(self, failed=False):
        return {'strategy': self.strategy.name}

    def close(self):
        self.strategy.close()


# --------------------------------------------------------------------------- from the task's options

def settings_of(change, wait):
    """Settings of an options.RestartChange; raise ValidationError for values argument_spec cannot check."""
    after = change.restarted_after
    if after:
        try:
            after = restart.parse_time(after)
        except ValueError:
            raise ValidationError('restarted_after: %r is not an ISO 8601 timestamp (for example '
                                  '2026-01-31T12:00:00Z)' % change.restarted_after)
    if (wait.min_ready_seconds or 0) < 0:
        raise ValidationError('min_ready_seconds (min_started_seconds) must not be negative')
    return Settings(containers=change.containers or None, ordered=bool(change.ordered),
                    restarted_after=after or None, select=change.select, hooks=change.hooks)


def resolve_strategy(kube, name):
    """``auto`` -> ``kruise`` when the ContainerRecreateRequest API is served, else ``image_reference``."""
    if name != 'auto':
        return name
    return 'kruise' if kruise.served(kube) else imageref.STRATEGY


def build_strategy(name, task, kube, run_command):
    options = task.change.strategy
    if name == 'kruise':
        if not kruise.served(kube):
            raise ValidationError('strategy kruise: the API %s (ContainerRecreateRequest) is not served by this '
                                  'cluster; install OpenKruise or choose another strategy' % kruise.API_VERSION)
        return kruise.KruiseStrategy(kube, task.target.namespace,
                                     kruise.options_for(task.change.ordered, task.wait, task.drain, options))
    if name == 'exec':
        return podexec.ExecStrategy(kube, podexec.command_for(kube, options.exec_signal, options.exec_command))
    if name == 'cri':
        return cri.CriStrategy(cri.client_for(options, run_command))
    return imageref.ImageReferenceStrategy()


def build(kube, task, warn=None, run_command=None):
    """The operation of an options.RestartChange (runner.build) and the task it runs with: a strategy
    that drains the pod itself runs without the engine's drain (a copy of the task; ``run_command``: how
    strategy cri runs crictl, AnsibleModule.run_command's signature)."""
    settings = settings_of(task.change, task.wait)
    name = resolve_strategy(kube, task.change.strategy.name or 'auto')
    if settings.ordered and not task.wait.enabled and name != 'kruise':
        raise ValidationError('ordered needs wait=true: each container must be ready before the next restarts')
    operation = RecreateOperation(build_strategy(name, task, kube, run_command), settings)
    if operation.strategy.drains_itself(task.drain):
        task = task._replace(drain=task.drain._replace(readiness_gate=None))
    return operation, task
