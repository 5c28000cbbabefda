# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout's sliding window: which pod may start now, asked each time a pod is about to be drained or
changed, as the Deployment controller's maxUnavailable does, instead of batches that wait for their slowest pod.

A pod starts when
- fewer than ``width`` pods are in flight (the engine's worker pool is that wide too);
- with ``max_unavailable``: the pods of the workload that are not ready, with the pods in flight and this
  one, stay within it (a pod that is not ready already costs nothing more and may always start);
- every PodDisruptionBudget that selects the pod keeps its desiredHealthy (rollout/budgets.py): the ready pods
  it selects, less the pods in flight and this one. Counted from a watch of the workload's pods, each time, so
  the budget is checked continuously and not from the disruption controller's status, which lags behind our changes;
- no pod counted done (earlier steps' ``watched`` and this window's) has crashed, restarted or turned
  unready since, and no more than ``max_failed`` pods have failed: otherwise the window halts, pods in
  flight finish and the others are not started (the role then halts or rolls back, as for a batch).

A pod that waits longer than ``timeout`` for its turn is blocked (WaitTimeout naming why); nothing of it
was written.
"""

import threading
import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations.engine import CONFLICT, FAILED, NotStarted, PodGone
from ansible_collections.inplace.k8s.plugins.module_utils.args import WAIT_TIMEOUT
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, podstate
from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import budgets
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.selectors import selector_matches

POLL_SECONDS = 0.2    # how often a waiting pod looks at the watch's pods again (a finished pod wakes it at once)
HEALTH_SECONDS = 0.5  # how often the pods counted done are checked while pods start


class Window:
    """Admission of pods into the window (see the module docstring). ``watcher``: a started
    waiter.Watcher of the workload's pods; ``budgets``: the PodDisruptionBudgets as listed;
    ``watched``: {pod: watch_entry} counted done before this window; ``containers``: the containers whose
    health counts; ``overwritten(pod)``: what another writer set on a counted-done pod, or None."""

    def __init__(self, watcher, width, max_unavailable=None, budgets=(), max_failed=0, timeout=WAIT_TIMEOUT,
                 watched=None, containers=(), overwritten=None, clock=time.monotonic, progress=None, cancel=None):
        self.watcher, self.width, self.max_unavailable = watcher, max(1, width), max_unavailable
        self.cancel = cancel or Cancel()   # the run's token (process/cancel.py): once cancelled no pod starts
        self.progress = progress   # rollout/progress.py: told when a pod starts and ends
        self.budgets = list(budgets)
        self.max_failed, self.timeout, self.clock = max_failed, timeout, clock
        self.watched = dict(watched or {})
        self.containers, self.overwritten = list(containers), overwritten
        self.flight = set()
        self.failed = []          # failed_pods entries the window saw: pods counted done that failed since
        self.gone = []            # gone entries (pods/departure.entry): pods counted done that went away since
        self.failures = 0         # pods of this window whose change failed
        self.halted = None        # why no pod starts any more
        self.waited = 0.0         # seconds pods spent waiting for their turn, all together
        self._checked = 0.0
        self._judged = {}         # pod counted done -> the resourceVersion its health was last judged on
        self._cond = threading.Condition()
        # What the checks read of the watch's pods, kept up to date from its change log (see _refresh): judging
        # every pod at every turn cost CPU per pod that grew with the number of pods (docs/performance.md).
        self._serial = None
        self._unready = set()     # the pods not terminating and not ready
        self._selected = [set() for _pdb in self.budgets]   # the pods not terminating that each budget selects

    # ---- the engine's side

    def acquire(self, name):
        """Block until pod ``name`` may start; the seconds it waited. Raise engine.NotStarted (halted) or WaitTimeout."""
        start = self.clock()
        deadline = start + self.timeout
        with self._cond:
            while True:
                if self.halted is None:
                    self._check_health()
                self.cancel.raise_if_cancelled(NotStarted, 'not started: %s')   # no pod starts any more
                if self.halted is not None:
                    raise NotStarted('not started: the window halted: %s' % self.halted)
                pod = self.watcher.get(name)
                left = departure.departure(pod) if pod is not None else None
                if left is not None:   # going away before its turn: nothing to do, nothing of it counts
                    raise PodGone(name, *left)
                reasons = self._blocked(name)
                if not reasons:
                    self.flight.add(name)
                    if self.progress is not None:
                        self.progress.start(name)
                    waited = self.clock() - start
                    self.waited += waited
                    return round(waited, 3)
                remaining = deadline - self.clock()
                if remaining <= 0:
                    self.failures += 1   # a blocked pod counts as failed: the others are not kept waiting too
                    if self.failures + len(self.failed) > self.max_failed:
                        self.halted = 'pod %s waited %ss for its turn' % (name, self.timeout)
                    raise WaitTimeout('pod %s waited %ss for its turn: %s' % (name, self.timeout, '; '.join(reasons)),
                                      blocked=reasons)
                self._cond.wait(min(POLL_SECONDS, remaining))

    def left(self, name):
        """Pod ``name`` went away before its turn (it never took a slot): the progress counts it gone."""
        if self.progress is not None:
            self.progress.left(name)

    def release(self, name, ok, pod=None, gone=False):
        """Pod ``name`` left the window: ``ok`` (counted done, ``pod`` as last seen: watched from now on),
        ``gone`` (it went away: neither done nor failed) or failed (counts against max_failed)."""
        with self._cond:
            self.flight.discard(name)
            if self.progress is not None:
                self.progress.end(name, ok, gone)
            if gone:
                self._judged.pop(name, None)
                self._cond.notify_all()
                return
            self._judged.pop(name, None)   # judged afresh against what it is counted done with now
            if ok and pod is not None:
                self.watched[name] = watch_entry(pod, self.containers)
                # This watch may lag behind the one the engine waited with: never judge the pod by an older version.
                self.watcher.observe(pod)
            elif not ok:
                self.failures += 1
                if self.failures + len(self.failed) > self.max_failed and self.halted is None:
                    self.halted = '%d pod(s) failed (max_failed_pods %d)' % (self.failures, self.max_failed)
            self._cond.notify_all()

    # ---- the checks

    def _refresh(self):
        """Bring the pod sets up to the watch: only the pods it changed since the last call are looked at again,
        all of them when it cannot tell which (after a new list, for one)."""
        serial, names = self.watcher.changes(self._serial)
        if names is None:
            self._unready = set()
            self._selected = [set() for _pdb in self.budgets]
            for pod in self.watcher.items():
                self._index(podstate.meta(pod, 'name'), pod)
        else:
            for name in set(names):
                self._index(name, self.watcher.get(name))
        self._serial = serial

    def _index(self, name, pod):
        """File pod ``name`` (None: gone) in the pod sets."""
        live = pod is not None and not podstate.is_terminating(pod)
        labels = podstate.meta(pod, 'labels') if live else None
        _file(self._unready, name, live and not podstate.is_ready(pod))
        for pdb, selected in zip(self.budgets, self._selected):
            _file(selected, name, live and selector_matches((pdb.get('spec') or {}).get('selector'), labels))

    def _blocked(self, name):
        """Why pod ``name`` may not start now (empty: it may)."""
        if len(self.flight) >= self.width:
            return ['%d pod(s) in flight, the window is %d wide' % (len(self.flight), self.width)]
        if self.max_unavailable is None and not self.budgets:
            return []
        self._refresh()
        if name in self._unready:
            return []   # down already: changing it takes nothing more away
        reasons = []
        if self.max_unavailable is not None:
            unready = self._unready - self.flight
            if len(unready) + len(self.flight) + 1 > max(self.max_unavailable, 1):
                reasons.append('max_unavailable %d: %d pod(s) not ready (%s) and %d in flight' % (
                    self.max_unavailable, len(unready), ', '.join(sorted(unready)[:5]) or '-', len(self.flight)))
        for pdb, selected in zip(self.budgets, self._selected):
            if name in selected:
                reasons.append(budgets.refusal(pdb, 1, healthy=len(selected - self._unready - self.flight)))
        return [reason for reason in reasons if reason]

    def _check_health(self):
        """Halt when a pod counted done failed since (at most every HEALTH_SECONDS). Only the pods the watch
        delivered a new version of since the last check are judged again (a crash, a restart or a readiness
        change is a new version): the check costs a lookup per pod, not a judgement of every pod counted done."""
        now = self.clock()
        if not self.watched or now - self._checked < HEALTH_SECONDS:
            return
        self._checked = now
        changed, pods = {}, []
        # A pod in flight again (its resize after its image) is the engine's to judge until it is released.
        for name, entry in self.watched.items():
            if name in self.flight:
                continue
            pod = self.watcher.get(name)
            version = podstate.meta(pod, 'resourceVersion') if pod is not None else None
            if pod is not None and self._judged.get(name) == version:
                continue
            self._judged[name] = version
            changed[name] = entry
            if pod is not None:
                pods.append(pod)
            gone = departure.gone_entry(self.watcher, name, departure.AFTER, entry.get('uid'), pod)
            if gone is not None:   # went away after it was counted done: not ours to judge any more
                self.gone.append(gone)
        for item in self.gone:
            self.watched.pop(item['name'], None)
        found = watch_failures(pods, changed, self.overwritten)
        for item in found:
            self.failed.append(item)
            self.watched.pop(item['name'], None)
        if found and self.failures + len(self.failed) > self.max_failed:
            self.halted = '%d pod(s) failed (max_failed_pods %d), counted done and failed since: %s' % (
                self.failures + len(self.failed), self.max_failed,
                '; '.join('%s: %s' % (item['name'], item['reason']) for item in self.failed))

    def report(self):
        return {'width': self.width, 'max_unavailable': self.max_unavailable, 'halted': self.halted,
                'waited_seconds': round(self.waited, 3)}


def _file(names, name, member):
    """``name`` in ``names`` when ``member``, else out of it."""
    if member:
        names.add(name)
    else:
        names.discard(name)


def watch_entry(pod, containers):
    """What a pod is watched against once it was counted done: its uid and the containers' IDs."""
    return {'uid': podstate.meta(pod, 'uid'), 'containers': dict(
        (name, podstate.container_status(pod, name).get('containerID')) for name in containers
        if podstate.find_container(pod, name) is not None and podstate.find_container(pod, name).kind != podstate.INIT)}


def watch_failures(pods, watched, overwritten=None):
    """failed_pods entries ({name, status, reason}) for watched pods that crashed, restarted or turned
    unready since they were counted done. A pod that is gone or was replaced (another uid) is not ours
    any more and not reported (a scale-down, or the controller's doing). ``overwritten(pod)``: what another
    writer set on a pod that no longer has the rollout's target in its spec (a conflict, not a failure)."""
    by_name = {podstate.meta(p, 'name'): p for p in pods}
    found = []
    for name in sorted(watched):
        entry = watched[name] or {}
        pod = by_name.get(name)
        if pod is None or podstate.is_terminating(pod) or (entry.get('uid') and podstate.meta(pod, 'uid') != entry['uid']):
            continue
        moved = overwritten(pod) if overwritten else None
        if moved:
            found.append({'name': name, 'status': CONFLICT, 'reason': 'changed by another writer after it '
                          'was counted done (its spec now has %s); not overwritten' % moved})
            continue
        for container, container_id in sorted((entry.get('containers') or {}).items()):
            status = podstate.container_status(pod, container)
            left = podstate.left_running(status, container_id) if container_id else None
            if left:
                reason, message = left
                detail = podstate.exit_detail(status) if reason not in ('Error', 'Completed') else ''
                found.append({'name': name, 'status': FAILED, 'reason': 'container %s %s after it was counted '
                              'done: %s%s%s' % (container, 'restarted' if status.get('restartCount') else 'stopped',
                                                reason, ': ' + message if message else '', detail)})
                break
            if not status.get('ready'):
                found.append({'name': name, 'status': FAILED, 'reason': 'container %s turned unready after it '
                              'was counted done (readiness probe or gate)' % container})
                break
    return found
