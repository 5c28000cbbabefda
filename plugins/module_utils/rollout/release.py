# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The end of a rollout on the controller's side (rollout/workload.py's Workload has it): the strategy to restore
without letting the controller replace pods left on the old version, and when the controller's own status says
the workload is fully updated."""

import copy

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import partition


class WorkloadRelease:
    """Release and status of Workload (rollout/workload.py): its kind, spec, obj, warnings and observed()."""

    def release_spec(self, saved, old_ordinals, pod_count, asked=None):
        """Spec fields that restore the saved strategy without letting the controller replace pods
        left on the old version; (spec, two_step) where two_step asks for the StatefulSet
        OnDelete convergence pass first. ``asked``: the StatefulSet partition the finished run was given
        (rollout/partition.py: it stays, as the user's setting); None: the saved one."""
        if self.kind == 'Deployment':
            return ({'paused': saved.get('paused', False)} if bool(self.spec.get('paused')) != saved.get(
                'paused', False) else None), False
        if self.kind not in ('StatefulSet', 'DaemonSet'):
            return None, False
        strategy = copy.deepcopy(saved.get('updateStrategy') or {'type': 'RollingUpdate'})
        kind = strategy.get('type', 'RollingUpdate')
        user = copy.deepcopy(strategy)   # the strategy the user has after this run, without our protection
        if self.kind == 'StatefulSet' and kind == 'RollingUpdate':
            replicas = self.spec.get('replicas', pod_count)
            rolling = strategy.setdefault('rollingUpdate', {})
            before = rolling.get('partition') or 0
            needed, warning = partition.final_partition(before, asked, old_ordinals, replicas)
            if warning:
                self.warnings.append(warning)
            rolling['partition'] = needed
            user.setdefault('rollingUpdate', {})['partition'] = before if asked is None else asked
            note = partition.partition_note(self.kind, self.namespace, self.name, before, needed)
            if note and asked is not None and needed == asked:
                self.warnings.append(note)
        if self.kind == 'DaemonSet' and kind == 'RollingUpdate' and old_ordinals is not None and old_ordinals:
            self.warnings.append('%d pod(s) stay on the old template: the DaemonSet keeps updateStrategy '
                                 'OnDelete so that the controller does not replace them' % len(old_ordinals))
            strategy = {'type': 'OnDelete'}
        if strategy.get('type') == 'OnDelete':
            strategy['rollingUpdate'] = None
        self.protection = partition.protection(strategy, user)
        # Under OnDelete the StatefulSet controller never moves currentRevision: converge it through
        # RollingUpdate{partition: replicas} first, and then OnDelete has to be written back.
        status = self.obj.get('status') or {}
        converging = status.get('currentRevision') != status.get('updateRevision')
        two_step = self.kind == 'StatefulSet' and kind == 'OnDelete' and not old_ordinals and converging
        if not two_step and (self.spec.get('updateStrategy') or {}) == dict(
                (k, v) for k, v in strategy.items() if v is not None):
            return None, two_step
        return {'updateStrategy': strategy}, two_step

    def converged(self, obj, all_updated):
        """The workload's own status says it is fully updated (when every pod was)."""
        status = obj.get('status') or {}
        if not self.observed(obj):
            return False
        if self.kind == 'StatefulSet':
            replicas = (obj.get('spec') or {}).get('replicas', 1)
            if not all_updated:
                return True
            return status.get('updateRevision') == status.get('currentRevision') and all(
                status.get(field, 0) == replicas for field in ('updatedReplicas', 'readyReplicas'))
        if self.kind == 'DaemonSet':
            desired = status.get('desiredNumberScheduled')
            return not all_updated or all(status.get(field, 0) == desired
                                          for field in ('updatedNumberScheduled', 'numberReady'))
        if self.kind == 'Deployment':
            replicas = (obj.get('spec') or {}).get('replicas', 1)
            return all(status.get(field, 0) == replicas for field in ('updatedReplicas', 'availableReplicas', 'replicas'))
        return True

    def status_summary(self):
        status = self.obj.get('status') or {}
        keys = ('replicas', 'readyReplicas', 'updatedReplicas', 'availableReplicas', 'currentRevision',
                'updateRevision', 'desiredNumberScheduled', 'updatedNumberScheduled', 'numberReady',
                'observedGeneration')
        result = {k: status[k] for k in keys if k in status}
        result['generation'] = podstate.meta(self.obj, 'generation')
        if self.kind == 'Deployment':
            result['replicasets'] = sorted(podstate.meta(rs, 'name') for rs in self.replicasets())
        return result
