# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bounded-concurrency execution of one ``Operation`` over many pods, with one result shape.

Per pod: plan -> (claim the record + drain, one write) -> guarded write of the change + state
record -> wait (restart, ready) -> on failure stop or roll back and record it -> (undrain, with the
record marked done in the same write). Without a readiness gate a success costs exactly one write:
the record is settled by the pod's own state (Operation.settled). Waiting is watch-driven: no GET
per pod. Everything an operation does differently (what it compares, writes and waits for) is a
method of its ``Operation`` (operation.py).

The engine is this file (the whole run: plan, pre-pull, the pods in a pool of max_concurrency threads,
the result) and its parts, one responsibility each: podsteps.py (one pod's state machine), ownership.py
(records and guarded writes), draining.py, waiting.py, results.py; podrun.py holds the statuses and
PodRun, prepull.py the pre-pull. The names the rest of the code uses are importable from here.
"""

import os
import threading
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import events as kube_events, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.operations.draining import Draining
from ansible_collections.inplace.k8s.plugins.module_utils.operations.operation import Operation
from ansible_collections.inplace.k8s.plugins.module_utils.operations.ownership import Ownership
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import (
    BLOCKED, CONFLICT, CONVERGED, ERROR_STATUSES, FAILED, FINISHED_OK, GONE, NOT_READY_TIMEOUT, NOT_STARTED,
    OWNER_MARGIN, REFUSED, RESUMED, ROLLED_BACK, STATUSES, UNCHANGED, UPDATED, WOULD_UPDATE, WRITTEN, ConcurrentChange,
    NotStarted, PodGone, PodRun,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podsteps import PodSteps
from ansible_collections.inplace.k8s.plugins.module_utils.operations.results import Results
from ansible_collections.inplace.k8s.plugins.module_utils.operations.waiting import Waiting
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, plan as planning, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.nodes import NodeHealth
from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel

__all__ = ['Engine', 'Options', 'Operation', 'PodRun', 'ConcurrentChange', 'NotStarted', 'STATUSES', 'ERROR_STATUSES',
           'FINISHED_OK', 'UNCHANGED', 'WOULD_UPDATE', 'REFUSED', 'UPDATED', 'CONVERGED', 'WRITTEN', 'FAILED',
           'ROLLED_BACK', 'CONFLICT', 'RESUMED', 'BLOCKED', 'NOT_STARTED', 'NOT_READY_TIMEOUT', 'OWNER_MARGIN', 'GONE',
           'PodGone']


Options = namedtuple('Options', 'check_mode wait wait_timeout max_concurrency readiness_gate drain_seconds '
                                'require_readiness_gate gate_on_failure on_failure min_ready_seconds '
                                'force_takeover drain_label prepull prepull_run prepull_ahead window')
Options.__new__.__defaults__ = (False, None, False, None, None, None)


class Engine(PodSteps, Ownership, Draining, Waiting, Results):
    """Runs one operation over many pods. ``watcher`` (waiter.PodWatcher) is needed unless check
    mode or no waiting is asked; ``warnings`` collects what the module should warn about. ``owner``
    (record.new_owner) is written into every record; another run's live record refuses the pod. ``events``
    (events.Recorder): the Kubernetes Events of the pods' changes (default: none). ``cancel``: the run's token
    (process/cancel.Cancel; default: one never cancelled): once cancelled no pod starts."""

    def __init__(self, kube, operation, options, watcher=None, sleep=time.sleep, clock=time.monotonic, owner=None,
                 events=None, cancel=None):
        self.kube = kube
        self.cancel = cancel or Cancel()
        self.op = operation
        self.options = options
        self.watcher = watcher
        self.sleep = sleep
        self.clock = clock
        self.owner = owner or record.new_owner(pid=os.getpid())
        # The ansible process of this run: once it is gone a relaunch waits for this one to finish (podsteps.py).
        self.owner.setdefault('playbook', self.cancel.playbook)
        self.warnings = []
        self.events = events or kube_events.Recorder.off()
        self._lock = threading.Lock()
        self._started = clock()
        self._denied = None   # admission denied the change on a pod: the others are not attempted
        self.drainer = drain.drainer(options.readiness_gate, options.drain_label)
        self._pull_failed = {}   # node -> why the pre-pull of the new image(s) failed there (prepull.Pass.failed)
        self.prepulled = None    # the pre-pull's report (options.prepull)
        # The nodes of the pods waited for: a node that stops is named within about a minute (pods/nodes.py).
        self.nodes = NodeHealth(kube, warn=self.warn) if watcher is not None else None

    def warn(self, message):
        with self._lock:
            self.warnings.append(message)

    # ---- the whole run

    def plan(self, pods):
        """Plans for the pods; raise ValidationError (nothing written) on unknown containers or,
        with require_readiness_gate, pods to update that lack the gate."""
        plans = [planning.plan_pod(pod, self.op.desired(pod), self.op.judge) for pod in pods]
        names = set()
        for pod in pods:
            names.update(self.op.desired(pod))
        unknown = planning.unknown_containers(pods, sorted(names))
        if unknown:
            raise ValidationError('unknown container(s) %s; the targeted pods have: %s' % (
                ', '.join(sorted(unknown)), ', '.join(next(iter(unknown.values())))))
        drainer = self.drainer
        if drainer and self.options.require_readiness_gate:
            missing = ['%s (%s)' % (p.name, drainer.missing(p.pod)) for p in plans
                       if p.action == planning.UPDATE and not drainer.applies(p.pod)]
            if missing:
                raise ValidationError('require_readiness_gate: draining by %s %s is required but not possible on '
                                      'pod(s): %s; nothing was changed' % (drainer.mode.replace('_', ' '), drainer.name,
                                                                           ', '.join(missing)))
        if drainer:
            for note in drainer.check(self.kube, podstate.meta(pods[0], 'namespace') if pods else None,
                                      [p.pod for p in plans if p.action == planning.UPDATE and drainer.applies(p.pod)]):
                self.warn(note)
        self.op.check(plans)
        return plans

    def run(self, pods):
        """Plan and execute; the result dict (changed, pods, summary, diff)."""
        plans = self.plan(pods)
        self._started = self.clock()
        if self.options.check_mode:
            runs = [self._preview(p) for p in plans]
        else:
            pulled = None
            if self.options.prepull:
                pulled = prepull.Pass(self.kube, self.op, self.options, self.options.prepull_run or self.owner['run'],
                                      self.warn, self.clock).start(plans, self.cancel.cancelled)
                self._pull_failed, self.prepulled = pulled.failed, pulled.report
            try:
                with ThreadPoolExecutor(max_workers=self.options.max_concurrency) as pool:
                    runs = list(pool.map(self._execute, plans))
            finally:
                if self.nodes is not None:
                    self.nodes.stop()
                if pulled is not None:
                    pulled.done()
        result = self.result(runs)
        if self.prepulled is not None:
            result['prepull'] = self.prepulled
        return result
