# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the engine knows of one pod while it runs (PodRun) and the words of its result: the statuses, the
errors that stop one pod (ConcurrentChange, NotStarted) and the timing constants of drains and records."""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError

# Pod statuses in the result. RESUMED: a run stopped before it set the readiness gate True again
# (gate False with drain.DRAIN_REASON); this one waited for the containers and set it True.
# With a window (Options.window, the rollout's): BLOCKED, the pod waited wait_timeout for its turn; NOT_STARTED,
# the window halted before its turn (a failure). Nothing of either was written.
UNCHANGED, WOULD_UPDATE, REFUSED, UPDATED, CONVERGED, WRITTEN, FAILED, ROLLED_BACK, CONFLICT, RESUMED = (
    'unchanged', 'would_update', 'refused', 'updated', 'converged', 'written', 'failed', 'rolled_back',
    'conflict', 'resumed')
BLOCKED, NOT_STARTED = 'blocked', 'not_started'
# GONE: the pod went away during the run (deleted, evicted, preempted, its node lost: pods/departure.py); not a
# failure, nothing of it is undone.
GONE = 'gone'
STATUSES = (UNCHANGED, WOULD_UPDATE, REFUSED, UPDATED, CONVERGED, WRITTEN, FAILED, ROLLED_BACK, CONFLICT, RESUMED,
            BLOCKED, NOT_STARTED, GONE)
ERROR_STATUSES = (FAILED, ROLLED_BACK, CONFLICT, BLOCKED)
FINISHED_OK = (UPDATED, CONVERGED, RESUMED)
NOT_READY_TIMEOUT = 30  # how long a drain waits to see the pod report NotReady
OWNER_MARGIN = 60       # seconds a pod record stays owned beyond the waits of its run


class ConcurrentChange(InplaceError):
    """What this plan was about changed after it was made: another writer is at work."""


class PodGone(InplaceError):
    """The pod went away (pods/departure.py): ``cause`` (evicted, deleted, ...) and the cluster's ``detail``."""

    def __init__(self, name, cause, detail):
        super().__init__('pod %s is gone (%s): %s' % (name, cause, detail))
        self.name, self.cause, self.detail = name, cause, detail


class NotStarted(InplaceError):
    """Raised by a window's acquire(): it halted, the pod is not to be started."""


class PodRun:
    """What happened to one pod; becomes one entry of the result's ``pods``."""

    def __init__(self, plan, clock):
        self.plan = plan
        self.clock = clock
        self.started = clock()
        self.status = None
        self.reason = None
        self.error = None
        self.written = False
        self.conflicts = 0
        self.pod = plan.pod          # latest version seen
        self.gate = None             # the drain entry of the result (Drainer.report()), once drained
        self.services = None         # label drain: the Services that listed the pod before the drain
        self.timings = {}
        self.write_time = None
        self.rollback = None
        self.claim = None            # the record written to own the pod before draining
        self.record = None           # the record of the change, once written (or found)
        self.gone = None             # status GONE: {cause, detail, when} (pods/departure.py)

    def mark(self, name, since):
        self.timings[name] = round(self.clock() - since, 3)

    def went(self, gone, when):
        """The pod went away (``gone``: a PodGone) ``when`` (departure.BEFORE, IN_FLIGHT, AFTER)."""
        self.gone = {'cause': gone.cause, 'detail': gone.detail, 'when': when}
        return self.finish(GONE, gone.msg)

    def finish(self, status, reason=None):
        self.status = status
        if reason:
            self.reason = reason
        self.timings['total'] = round(self.clock() - self.started, 3)
        return self


def planned_values(plan):
    """The current values of the containers a plan updates, for messages."""
    return ', '.join('%s=%s' % (c.name, c.current) for c in plan.updates()) or 'nothing to change'
