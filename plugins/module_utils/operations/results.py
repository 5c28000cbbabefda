# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one result shape of the pod operations: per pod (status, reason, the containers before and after,
drain, timings), the summary by status and the diff.

A part of Engine (engine.py): it works on what Engine.__init__ sets (op, watcher, drainer).
"""

from ansible_collections.inplace.k8s.plugins.module_utils.operations.podrun import (
    CONVERGED, FAILED, REFUSED, RESUMED, ROLLED_BACK, STATUSES, UPDATED, WOULD_UPDATE, WRITTEN,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate


class Results:
    """Result shaping (module docstring)."""

    def result(self, runs):
        pods = [self.pod_result(run) for run in sorted(runs, key=lambda r: r.plan.name)]
        summary = {status: 0 for status in STATUSES}
        for item in pods:
            summary[item['status']] += 1
        summary['total'] = len(pods)
        summary['changed'] = sum(1 for item in pods if item['changed'])
        diff = {'before': {}, 'after': {}}
        for run in runs:
            if run.status in (WOULD_UPDATE, UPDATED, WRITTEN, FAILED, ROLLED_BACK) and run.plan.updates():
                diff['before'][run.plan.name] = {c.name: c.current for c in run.plan.updates()}
                diff['after'][run.plan.name] = {c.name: c.desired for c in run.plan.updates()}
        changed = summary['changed'] > 0 or summary[WOULD_UPDATE] > 0
        return {'changed': changed, 'pods': pods, 'summary': summary, 'diff': diff}

    def pod_result(self, run):
        plan = run.plan
        before_pod = plan.pod
        after_pod = run.pod if run.pod is not None else before_pod
        acted = run.written or run.status == RESUMED
        # A pod whose spec was already set and that this run waited for (converged) is reported as
        # it is after the wait, like a pod this run wrote.
        observed = acted or run.status == CONVERGED
        if self.watcher is not None and observed:
            after_pod = self.watcher.get(plan.name) or after_pod
        result = podstate.pod_summary(before_pod)
        after = podstate.pod_summary(after_pod)
        ran = run.status not in (WOULD_UPDATE, REFUSED) and observed
        result.update({
            'action': plan.action,
            'status': run.status,
            'changed': acted or run.status == WOULD_UPDATE,
            'reason': run.reason,
            'uid_after': after['uid'] if ran else None,
            'pod_ip_after': after['pod_ip'] if ran else None,
            'in_place': (after['uid'] == result['uid'] and after['pod_ip'] == result['pod_ip']) if ran else None,
            'conflicts': run.conflicts,
            'readiness_gate': run.gate if self.drainer and self.drainer.mode == 'readiness_gate' else None,
            'drain': run.gate,
            'timings': run.timings,
            'error': run.error,
            'containers': {c.name: self.container_result(c, before_pod, after_pod if ran else None)
                           for c in plan.containers},
        })
        if run.rollback:
            result['rolled_back_to'] = run.rollback
        if run.gone:
            result['gone'] = run.gone
        return result

    def container_result(self, cplan, before_pod, after_pod):
        before = podstate.find_container(before_pod, cplan.name)
        after = podstate.find_container(after_pod, cplan.name) if after_pod is not None else None
        old, new = (before.status if before else {}), (after.status if after else {})
        result = {
            'kind': cplan.kind,
            'action': cplan.action,
            'reason': cplan.reason,
            'restart_expected': cplan.restart,
            'old_container_id': old.get('containerID'),
            'new_container_id': new.get('containerID') if after else None,
            'restart_count_before': old.get('restartCount'),
            'restart_count_after': new.get('restartCount') if after else None,
            'restarted': bool(after and new.get('containerID') and new.get('containerID') != old.get('containerID')),
        }
        result.update(self.op.describe(cplan, before, after))
        return result
