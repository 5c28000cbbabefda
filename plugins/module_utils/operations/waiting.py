# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Waiting for one pod's change, watch-driven (waiter.PodWatcher, no GET per pod): each stage of the
operation in turn (restart, ready), failing early on a failure the operation recognises, another
writer's change or the pod's replacement; then min_ready_seconds of stability.

A part of Engine (engine.py): it works on what Engine.__init__ sets (kube, op, options, watcher, clock).
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import ConcurrentChange, PodGone
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, plan as planning, podstate


class Waiting:
    """Waits (module docstring)."""

    def _check_same_pod(self, run, pod):
        failure = self._gone(run)(pod)
        if failure is not None:
            raise failure

    def _departure(self, run, pod):
        """PodGone when ``pod`` (the latest version of the run's pod, None when the watch saw it go) went away,
        else None; the one place a pod's departure becomes a PodGone (pods/departure.py)."""
        left = departure.of(self.watcher, run.plan.name, podstate.meta(run.plan.pod, 'uid'), pod)
        return PodGone(run.plan.name, *left) if left is not None else None

    def _gone(self, run):
        """failed(pod) of a wait: PodGone when the pod went away (pods/departure.py: not a failure of the change),
        PodFailure when it failed as a whole or its node is not ready (pods/nodes.py), else None."""
        node = (run.plan.pod.get('spec') or {}).get('nodeName')

        def failed(pod):
            gone = self._departure(run, pod)
            if gone is not None:
                return gone
            failure = podstate.pod_failure(pod)
            if failure:
                return PodFailure(run.plan.name, *failure)
            lost = self.nodes.trouble(node) if self.nodes is not None else None
            return PodFailure(run.plan.name, 'NodeNotReady', lost) if lost else None
        return failed

    def _wait(self, run, plan, rec, pod, prefix=''):
        """Wait for the containers of ``plan``: each stage in turn, failing early. ``prefix``: of the
        timings' names (a rollback's waits are told apart from the change's)."""
        before = (rec or {}).get('before') or {}
        generation = (rec or {}).get('generation') or podstate.meta(pod, 'generation')
        containers = plan.to_wait()
        self.watcher.observe(pod)   # the answer of the write: the watch may not have delivered it yet
        gone = self._gone(run)

        def failed(latest):
            failure = gone(latest)
            if failure is not None:
                return failure
            for cplan in containers:
                moved = self.op.overwritten(latest, cplan) if latest is not None else None
                if moved:
                    return ConcurrentChange('pod %s: %s; not overwritten' % (plan.name, moved))
                found = self.op.failure(latest, cplan, before.get(cplan.name, {}), generation)
                if found:
                    return PodFailure(plan.name, found[0], found[1], container=cplan.name)
            return None

        since = run.write_time or self.clock()
        deadline = since + self.options.wait_timeout
        node = (pod.get('spec') or {}).get('nodeName')
        if self.nodes is not None:
            self.nodes.follow(node)
        try:
            return self._stages(run, plan, containers, before, failed, gone, since, deadline, prefix)
        finally:
            if self.nodes is not None:
                self.nodes.unfollow(node)

    def _stages(self, run, plan, containers, before, failed, gone, since, deadline, prefix):
        """The stages of _wait: restart, ready, then min_ready_seconds of stability."""
        checks = {'restart': self.op.restarted, 'ready': self.op.done}
        for stage in ('restart', 'ready'):
            check = checks[stage]
            try:
                run.pod = self.watcher.wait_for(
                    plan.name, lambda p, check=check: all(check(p, c, before.get(c.name, {})) for c in containers),
                    failed, max(0.0, deadline - self.clock()))
            except WaitTimeout as exc:
                latest = self.watcher.get(plan.name)
                why = self.op.stalled(latest, containers) if latest is not None else None
                if why:
                    raise WaitTimeout('%s: %s' % (exc.msg, why))
                raise
            run.mark(prefix + stage, since)
        if self.options.min_ready_seconds > 0:
            verified = {c.name: podstate.container_status(run.pod, c.name) for c in containers}

            def unstable(latest):
                failure = gone(latest)
                if failure is not None:
                    return failure
                for cplan in containers:
                    found = self.op.unstable(latest, cplan, verified[cplan.name])
                    if found:
                        return PodFailure(plan.name, found[0], found[1], container=cplan.name)
                return None
            run.pod = self.watcher.hold(plan.name, unstable, self.options.min_ready_seconds)
            run.mark(prefix + 'stable', since)
        return run.pod

    def _act(self, run, rec, groups):
        """Operations with steps(): act on each group in turn and, with wait, wait for it before the next."""
        for group in groups:
            run.pod = self.op.act(self.kube, run.pod, run.plan, group)
            run.write_time = self.clock()
            if self.options.wait:
                self._wait(run, planning.PodPlan(run.plan.pod, group), rec, run.pod)
                self.op.verify(self.kube, run.pod, run.plan, group)
