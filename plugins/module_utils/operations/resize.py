# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The resize operation: change CPU and memory of running containers in place (inplace_resize).

Writes. The ``pods/resize`` subresource (1.32+) accepts resource changes only: anything else in
the patch, the record annotation included, is silently dropped. So a resize is two writes:

1. the state record (``inplace.k8s/state``: target + before-resources) on the pod, a JSON patch
   guarded by ``test metadata.resourceVersion`` (record.build_patch), written *first* so that a run
   that dies between the writes leaves the before-state behind: a re-run keeps it (record.begin),
   finds the spec unchanged and resizes again; a rollback always knows what to restore;
2. the resize, a JSON patch on ``pods/resize`` guarded by ``test`` of the container's name and of
   its current resources (so a concurrent resize is detected, not overwritten; the kubelet's status
   updates do not disturb it). A refusal marks the record failed.

Servers 1.27-1.31 (no subresource, feature gate InPlacePodVerticalScaling) take the resources
in an ordinary pod patch, together with the record. Below 1.27 resize is not supported.
"""

import re

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import JSON_PATCH, Kube
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, ConflictError, PodFailure, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations.operation import Operation
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan, podstate, record, resources

RESIZE_MIN = (1, 27)              # InPlacePodVerticalScaling (alpha): resources in a pod patch
SUBRESOURCE_MIN = (1, 32)         # pods/resize
MEMORY_DECREASE_MIN = (1, 34)     # memory-limit decreases with NotRequired: refused before, best effort since
POD_LEVEL_MIN = (1, 36)           # resize of pods with pod-level resources (beta)
PENDING_CONDITION, IN_PROGRESS_CONDITION = 'PodResizePending', 'PodResizeInProgress'
INFEASIBLE, DEFERRED = 'Infeasible', 'Deferred'
NODE_CAPACITY = 'NodeCapacity'
SUBRESOURCE, POD_PATCH = 'pods/resize', 'pod patch'


# --------------------------------------------------------------------------- server

def parse_version(info):
    """(major, minor) from the answer of /version (minor may read '36+')."""
    try:
        return int(re.sub(r'\D', '', str(info.get('major')))), int(re.sub(r'\D', '', str(info.get('minor'))))
    except ValueError:
        match = re.match(r'v?(\d+)\.(\d+)', str(info.get('gitVersion') or ''))
        if not match:
            raise ValidationError('cannot tell the Kubernetes version of the server from /version: %s' % info)
        return int(match.group(1)), int(match.group(2))


def server_version(kube):
    return parse_version(kube.request('GET', '/version'))


def version_text(version):
    return '%d.%d' % tuple(version)


def is_node_capacity(exc):
    """The API server's PodResize admission refusing requests above the node's allocatable (1.36+)."""
    return exc.status == 403 and (NODE_CAPACITY in exc.causes or "didn't have enough allocatable" in exc.msg)


def resize_conditions(pod, generation=None):
    """The PodResizePending / PodResizeInProgress conditions that are about ``generation`` or later
    (conditions carry observedGeneration on 1.34+; without it the pod's status.observedGeneration is
    used; without either every condition counts)."""
    found = []
    observed = (pod.get('status') or {}).get('observedGeneration')
    for kind in (PENDING_CONDITION, IN_PROGRESS_CONDITION):
        item = podstate.condition(pod, kind)
        if not item or item.get('status') != 'True':
            continue
        seen = item.get('observedGeneration', observed)
        if generation is not None and seen is not None and int(seen) < int(generation):
            continue
        found.append(item)
    return found


# --------------------------------------------------------------------------- the operation

class ResizeOperation(Operation):
    """containers {name: {requests, limits}} (partial, merged with each pod's current values).
    Done = no resize condition, the kubelet reports the resources (as quantities, CPU clamps
    allowed), status.observedGeneration caught up; RestartContainer policies restart the container."""

    name = 'resize'
    can_rollback = True

    def __init__(self, containers, allow_restart=True, version=POD_LEVEL_MIN):
        self.version = tuple(version)
        if self.version < RESIZE_MIN:
            raise ValidationError('in-place resize is not supported by this cluster (Kubernetes %s): it needs '
                                  '1.27 or later (1.33+ recommended, where pods/resize is on by default); '
                                  'recreate the pods with the new resources instead' % version_text(self.version))
        self.target, errors = resources.normalize_input(containers)
        if errors:
            raise ValidationError('invalid resize: %s' % '; '.join(errors))
        self.allow_restart = allow_restart
        self.method = SUBRESOURCE if self.version >= SUBRESOURCE_MIN else POD_PATCH

    @property
    def permissions(self):
        """The record is a pod patch; the resources go through pods/resize when the server has it."""
        return (('patch', 'pods', ''),) + ((('patch', 'pods/resize', ''),) if self.method == SUBRESOURCE else ())

    @property
    def fallback_note(self):
        """Why resources go through an ordinary pod patch, or None when pods/resize is used."""
        if self.method == SUBRESOURCE:
            return None
        return ('Kubernetes %s has no pods/resize subresource (1.32+): resources are changed by a pod patch, '
                'which needs the InPlacePodVerticalScaling feature gate' % version_text(self.version))

    # ---- planning

    def desired(self, pod):
        """Each container's full resources after the resize (input merged over the pod's values)."""
        result = {}
        for name, partial in self.target.items():
            info = podstate.find_container(pod, name)
            result[name] = resources.merge(resources.of_spec(info.spec), partial) if info else partial
        return result

    def judge(self, info, value):
        current = resources.of_spec(info.spec)
        if not resources.same_resources(current, value):
            return plan.verdict(plan.UPDATE, current, restart=bool(resources.restarting(info.spec, current, value)))
        reported = info.status.get('resources')
        if info.kind == podstate.INIT or reported is None or resources.reported_matches(reported, value):
            return plan.verdict(plan.UNCHANGED, current)
        return plan.verdict(plan.PENDING, current, reason='spec already resized, waiting for the kubelet')

    def check(self, plans):
        """Every problem of every pod, before anything is written."""
        errors = []
        for pod_plan in plans:
            errors.extend('pod %s container %s: %s' % (pod_plan.name, c.name, c.reason)
                          for c in pod_plan.containers if c.action == plan.REFUSED)
            if pod_plan.updates():
                errors.extend('pod %s: %s' % (pod_plan.name, e) for e in self.pod_errors(pod_plan))
        if errors:
            raise ValidationError('resize refused, nothing was changed: %s' % '; '.join(errors))

    def pod_errors(self, pod_plan):
        """Problems of one pod's planned resize (pure)."""
        pod, errors = pod_plan.pod, []
        spec = pod.get('spec') or {}
        updates = pod_plan.updates()
        for cplan in updates:
            errors.extend(resources.container_errors(cplan.name, cplan.current, cplan.desired))
            info = podstate.find_container(pod, cplan.name)
            restart = resources.restarting(info.spec, cplan.current, cplan.desired)
            if restart and not self.allow_restart:
                errors.append('containers.%s: resizing %s restarts the container (resizePolicy RestartContainer) '
                              'and allow_restart is false; set allow_restart: true or leave %s unchanged'
                              % (cplan.name, ' and '.join(restart), ' and '.join(restart)))
            lowers_memory = resources.memory_limit_decreased(cplan.current, cplan.desired)
            refused = self.version < MEMORY_DECREASE_MIN and lowers_memory
            if refused and resources.resize_policy(info.spec, 'memory') != resources.RESTART_CONTAINER:
                errors.append('containers.%s.limits.memory: Kubernetes %s refuses to lower a memory limit in place '
                              'unless the memory resizePolicy is RestartContainer (1.34+ does it best effort); '
                              'keep the limit or recreate the pod' % (cplan.name, version_text(self.version)))
        if spec.get('resources') and self.version < POD_LEVEL_MIN:
            errors.append('the pod has pod-level resources (spec.resources), which Kubernetes %s cannot resize '
                          'in place (1.36+); recreate the pod instead' % version_text(self.version))
        problem = resources.qos_error(spec, {c.name: c.desired for c in updates})
        if problem:
            errors.append(problem)
        return errors

    # ---- writing

    def snapshot(self, info):
        snap = super().snapshot(info)
        snap['resources'] = resources.of_spec(info.spec)
        return snap

    def changes(self, pod, pod_plan):
        """JSON patch operations setting the desired cpu/memory values (other resources untouched),
        guarded by a test of each container's name and of its resources as read."""
        ops = []
        for cplan in pod_plan.updates():
            info = podstate.find_container(pod, cplan.name)
            path = podstate.spec_path(info)
            ops.append({'op': 'test', 'path': path + '/name', 'value': cplan.name})
            current = info.spec.get('resources')
            if current is None:
                ops.append({'op': 'add', 'path': path + '/resources', 'value': {}})
                current = {}
            else:
                ops.append({'op': 'test', 'path': path + '/resources', 'value': current})
            for section in resources.SECTIONS:
                values = cplan.desired.get(section) or {}
                where = '%s/resources/%s' % (path, section)
                if section not in current:
                    ops.append({'op': 'add', 'path': where, 'value': dict(values)})
                else:
                    ops.extend({'op': 'add', 'path': '%s/%s' % (where, k), 'value': v} for k, v in sorted(values.items()))
        return ops

    def write(self, kube, pod, pod_plan, rec):
        if self.method == POD_PATCH:
            return super().write(kube, pod, pod_plan, rec)
        namespace, name = podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name')
        marked = kube.patch_pod(namespace, name, record.build_patch(
            pod, self.name, rec, self.planned_restarts(pod, pod_plan, rec)))
        try:
            return kube.patch_pod(namespace, name, self.changes(marked, pod_plan), subresource='resize')
        except ConflictError:
            raise  # the engine re-reads and re-plans; the record keeps the first before-state
        except ApiError as exc:
            self._record_refusal(kube, namespace, name, rec, exc)
            if is_node_capacity(exc):
                raise PodFailure(name, INFEASIBLE, exc.msg)
            raise

    def _record_refusal(self, kube, namespace, name, rec, exc):
        try:
            pod = kube.get_pod(namespace, name)
            kube.patch_pod(namespace, name, record.build_patch(pod, self.name, record.transition(
                rec, record.FAILED, error='refused by the API server: %s' % exc.msg)))
        except ApiError:
            pass  # best effort: the record stays in-progress with the before-state, which a re-run keeps

    def preview(self, kube, pod_plan):
        """Server-side dry run (dryRun=All) of the resize: the API server's admission and validation
        (node capacity, QoS, policies) answer as for the real write; nothing is stored."""
        pod = pod_plan.pod
        namespace, name = podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name')
        subresource = 'resize' if self.method == SUBRESOURCE else None
        try:
            kube.request('PATCH', Kube.pod_path(namespace, name, subresource), {'dryRun': 'All'},
                         self.changes(pod, pod_plan), JSON_PATCH)
        except ApiError as exc:
            if is_node_capacity(exc):
                raise PodFailure(name, INFEASIBLE, exc.msg)
            raise

    # ---- waiting

    def done(self, pod, cplan, before):
        if resize_conditions(pod) or podstate.kubelet_saw_generation(pod, podstate.meta(pod, 'generation')) is False:
            return False
        info = podstate.find_container(pod, cplan.name)
        if info is None:
            return False
        reported = info.status.get('resources')
        return reported is None or resources.reported_matches(reported, cplan.desired)

    def failure(self, pod, cplan, before, generation):
        for item in resize_conditions(pod, generation):
            if item.get('type') == PENDING_CONDITION and item.get('reason') == INFEASIBLE:
                return INFEASIBLE, item.get('message') or 'the node cannot do this resize'
            if item.get('type') == IN_PROGRESS_CONDITION and item.get('reason') == 'Error':
                return 'ResizeError', item.get('message') or 'the kubelet failed to resize'
        return super().failure(pod, cplan, before, generation)

    def applied(self, pod, cplan, before):
        """Without status.observedGeneration: the kubelet reports the new resources."""
        info = podstate.find_container(pod, cplan.name)
        return bool(info and resources.reported_matches(info.status.get('resources'), cplan.desired))

    def stalled(self, pod, cplans):
        for item in resize_conditions(pod):
            reason = item.get('reason') or 'no reason'
            if item.get('type') == PENDING_CONDITION and reason == DEFERRED:
                return ('resize Deferred by the kubelet: %s (the node has too little free capacity now; the kubelet '
                        'retries when capacity frees)' % (item.get('message') or 'no message'))
            return '%s %s: %s' % (item.get('type'), reason, item.get('message') or 'no message')
        late = []
        for cplan in cplans:
            info = podstate.find_container(pod, cplan.name)
            reported = info.status.get('resources') if info else None
            if reported is not None and not resources.reported_matches(reported, cplan.desired):
                late.append('%s reports %s' % (cplan.name, resources.describe(reported)))
        if podstate.kubelet_saw_generation(pod, podstate.meta(pod, 'generation')) is False:
            late.append('the kubelet has not observed generation %s yet' % podstate.meta(pod, 'generation'))
        return '; '.join(late) or None

    @staticmethod
    def rollback_target(rec):
        target = rec.get('target') or {}
        return {name: snap['resources'] for name, snap in (rec.get('before') or {}).items()
                if name in target and snap.get('resources') is not None}

    def report(self, failed=False):
        if failed:
            return {}
        return {'method': self.method, 'server_version': version_text(self.version)}

    def describe(self, cplan, before_info, after_info):
        current, desired = cplan.current or resources.empty(), cplan.desired or resources.empty()
        restart = resources.restarting(before_info.spec, current, desired) if before_info else []
        latest = after_info or before_info
        return {
            'requests_before': current.get('requests'), 'limits_before': current.get('limits'),
            'requests_after': desired.get('requests'), 'limits_after': desired.get('limits'),
            'reported': latest.status.get('resources') if latest else None,
            'restart_resources': restart,
            'method': self.method,
        }


def build(kube, task, warn, run_command=None):
    """The operation of an options.ResizeChange (runner.build): the server's version decides how
    resources are written."""
    change = task.change
    operation = ResizeOperation(change.containers, change.allow_restart, server_version(kube))
    if operation.fallback_note:
        warn(operation.fallback_note)
    return operation, task
