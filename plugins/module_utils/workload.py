# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rollouts of whole workloads in place, coordinated with the built-in controllers (DESIGN.md §4).

Verified on the local cluster (kube-controller-manager 1.36):

- StatefulSet: pods carry ``controller-revision-hash: <ControllerRevision name>`` (``db-956549674``);
  ``status.updateRevision`` names the revision of the current template. Held with a RollingUpdate
  partition = replicas (or OnDelete), a new template makes a new ControllerRevision and deletes
  nothing; relabelled pods count as updated, and once updatedReplicas == readyReplicas == replicas
  under RollingUpdate the controller sets currentRevision = updateRevision. Under OnDelete it never
  does (upstream behaviour), so finishing passes through RollingUpdate{partition: replicas} first.
- DaemonSet: pods carry ``controller-revision-hash: <hash>`` (the ControllerRevision's label, its name
  without the ``<ds>-`` prefix) and ``pod-template-generation: <annotation
  deprecated.daemonset.template.generation>``; there is no updateRevision: the revision is the owned
  ControllerRevision whose data.spec.template equals the template. Held with OnDelete.
- Deployment: paused, the new template put on the current ReplicaSet (its pod-template-hash label
  kept) and then on the Deployment: after resuming, the controller finds that ReplicaSet equal to
  the template (ignoring pod-template-hash), creates no new one and reports it updated.
- ReplicaSet: the controller counts pods by selector only; its template is updated directly.

The rollout record (annotation ``inplace.k8s/rollout`` on the workload) keeps the target, the
template values before, the strategy to restore and the state, so that a re-run resumes and a
rollback knows what to restore.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import time
from urllib.parse import quote

from ansible_collections.inplace.k8s.plugins.module_utils import drain, imageref, podstate, record, targets
from ansible_collections.inplace.k8s.plugins.module_utils import resources as resources_util
from ansible_collections.inplace.k8s.plugins.module_utils.client import JSON_PATCH, MERGE_PATCH, retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.errors import (
    InplaceError, NotFoundError, ValidationError, WaitTimeout,
)

KINDS = {
    'Deployment': 'deployments',
    'StatefulSet': 'statefulsets',
    'DaemonSet': 'daemonsets',
    'ReplicaSet': 'replicasets',
}
RECORD_ANNOTATION = 'inplace.k8s/rollout'
REVISION_LABEL = 'controller-revision-hash'
TEMPLATE_GENERATION_LABEL = 'pod-template-generation'
TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation'
HASH_LABEL = 'pod-template-hash'
IN_PROGRESS, DONE, ROLLING_BACK, ROLLED_BACK, RELEASED = 'in-progress', 'done', 'rolling-back', 'rolled-back', 'released'
POLL_SECONDS = 1.0


class RolloutError(InplaceError):
    """The workload could not be coordinated (unexpected controller state, convergence timeout)."""


# --------------------------------------------------------------------------- pure: resources

def desired_resources(container_spec, wanted):
    """cpu/memory requests and limits of a container after the change (resources.merge rules)."""
    return resources_util.merge(resources_util.of_spec(container_spec), wanted)


def resources_differ(container_spec, wanted):
    current = resources_util.of_spec(container_spec)
    return bool(resources_util.changed(current, resources_util.merge(current, wanted)))


def full_resources(container_spec, wanted):
    """The container's whole resources field after the change: other resources (ephemeral-storage,
    extended resources) and claims kept."""
    result = copy.deepcopy((container_spec or {}).get('resources') or {})
    for section, values in desired_resources(container_spec, wanted).items():
        if values:
            result.setdefault(section, {}).update(values)
    return result


# --------------------------------------------------------------------------- pure: templates

def _as_pod(template):
    return {'spec': (template or {}).get('spec') or {}}


def template_refusals(template, images=None, resources=None):
    """Why the change cannot be made in place on pods of this template: [{field, reason}].

    A container unknown to the template raises ValidationError (a typo, not a recreate case).
    """
    pod = _as_pod(template)
    unknown = sorted(set(images or {}).union(resources or {}) - set(podstate.container_names(pod)))
    if unknown:
        raise ValidationError('unknown container(s) %s; the template has: %s' % (
            ', '.join(unknown), ', '.join(podstate.container_names(pod))))
    refusals = []
    for name, image in sorted((images or {}).items()):
        info = podstate.find_container(pod, name)
        if info.kind == podstate.INIT and not podstate.same_image(info.spec.get('image'), image):
            refusals.append({'field': 'spec.initContainers[%s].image' % name,
                             'reason': 'a plain init container has already run in existing pods; its image '
                                       'only applies to new pods'})
    wanted, errors = resources_util.normalize_input(resources) if resources else ({}, [])
    if errors:
        raise ValidationError('invalid resources: %s' % '; '.join(errors))
    overrides = {}
    for name, partial in sorted(wanted.items()):
        info = podstate.find_container(pod, name)
        if not resources_differ(info.spec, partial):
            continue
        if info.kind == podstate.INIT:
            refusals.append({'field': 'spec.initContainers[%s].resources' % name,
                             'reason': 'plain init containers cannot be resized'})
            continue
        after = desired_resources(info.spec, partial)
        overrides[name] = after
        for error in resources_util.container_errors(name, resources_util.of_spec(info.spec), after):
            refusals.append({'field': 'spec.containers[%s].resources' % name, 'reason': error})
    if overrides and not refusals:
        reason = resources_util.qos_error(pod['spec'], overrides)
        if reason:
            refusals.append({'field': 'spec.containers[*].resources', 'reason': reason})
    return refusals


def apply_change(template, images=None, resources=None):
    """A copy of the template with the images and resources set."""
    result = copy.deepcopy(template)
    pod = _as_pod(result)
    for name, image in (images or {}).items():
        podstate.find_container(pod, name).spec['image'] = image
    for name, wanted in (resources or {}).items():
        spec = podstate.find_container(pod, name).spec
        spec['resources'] = full_resources(spec, wanted)
    return result


def change_ops(template, base, images=None, resources=None):
    """JSON patch operations setting images and resources in the template found at ``base``
    (for example '/spec/template'); each guarded by a test of the container name."""
    ops = []
    pod = _as_pod(template)
    for name in sorted(set(images or {}).union(resources or {})):
        info = podstate.find_container(pod, name)
        path = base + podstate.spec_path(info)
        changed = []
        current = info.spec.get('image')
        # The tag pinned to its digest (an admission policy does that to templates too) is the tag.
        if name in (images or {}) and current != images[name] and not imageref.pins_tag(current or '', images[name]):
            changed.append({'op': 'add', 'path': path + '/image', 'value': images[name]})
        if name in (resources or {}) and resources_differ(info.spec, resources[name]):
            changed.append({'op': 'add', 'path': path + '/resources', 'value': full_resources(info.spec, resources[name])})
        if changed:
            ops.append({'op': 'test', 'path': path + '/name', 'value': name})
            ops.extend(changed)
    return ops


def snapshot(template, images=None, resources=None):
    """The template's current values of what the change touches: {images: {...}, resources: {...}}."""
    pod = _as_pod(template)
    return {
        'images': dict((n, podstate.find_container(pod, n).spec.get('image')) for n in (images or {})),
        'resources': dict((n, resources_util.of_spec(podstate.find_container(pod, n).spec)) for n in (resources or {})),
    }


def pod_matches(pod, images=None, resources=None):
    """The pod's spec already has the target images and resources."""
    for name, image in (images or {}).items():
        info = podstate.find_container(pod, name)
        if info is None:
            return False
        # The tag pinned to its digest (by admission, or by container_recreate's image_reference) counts as the tag.
        if not imageref.satisfies(pod, name, image):
            return False
    for name, wanted in (resources or {}).items():
        info = podstate.find_container(pod, name)
        if info is None or resources_differ(info.spec, wanted):
            return False
    return True


def pod_converged(pod, images=None, resources=None):
    """The pod runs the target: spec matches, the containers run the images, started and ready, and
    the kubelet reports the resources."""
    if not pod_matches(pod, images, resources):
        return False
    for name, image in (images or {}).items():
        info = podstate.find_container(pod, name)
        if info.kind != podstate.INIT and not podstate.image_converged(
                info.status, imageref.effective_image(pod, name, image)):
            return False
    for name, wanted in (resources or {}).items():
        info = podstate.find_container(pod, name)
        reported = info.status.get('resources')
        if reported is not None and not resources_util.reported_matches(reported, desired_resources(info.spec, wanted)):
            return False
    return not podstate.condition_is(pod, 'PodResizePending', 'True') and \
        not podstate.condition_is(pod, 'PodResizeInProgress', 'True')


def strip_hash(template):
    """The template without the pod-template-hash label (how the Deployment controller compares)."""
    result = copy.deepcopy(template or {})
    labels = (result.get('metadata') or {}).get('labels') or {}
    labels.pop(HASH_LABEL, None)
    return result


def revision_from_history(revisions, template):
    """DaemonSet: the ControllerRevision whose stored template equals ``template`` (highest revision
    first); (name, hash label) or (None, None)."""
    for item in sorted(revisions, key=lambda r: r.get('revision') or 0, reverse=True):
        stored = copy.deepcopy(((item.get('data') or {}).get('spec') or {}).get('template') or {})
        stored.pop('$patch', None)
        if stored == template:
            return podstate.meta(item, 'name'), (podstate.meta(item, 'labels') or {}).get(REVISION_LABEL)
    return None, None


def sts_partition_for(old_ordinals, replicas):
    """The RollingUpdate partition that keeps the controller away from pods left on the old
    revision: their count when they are exactly the lowest ordinals, else replicas (held)."""
    old = sorted(old_ordinals)
    if old == list(range(len(old))):
        return len(old)
    return replicas


def selector_string(selector):
    """A label selector (matchLabels / matchExpressions) as the API's string form."""
    parts = ['%s=%s' % (k, v) for k, v in sorted(((selector or {}).get('matchLabels') or {}).items())]
    for expr in (selector or {}).get('matchExpressions') or []:
        operator, values = expr.get('operator'), ','.join(expr.get('values') or [])
        if operator == 'In':
            parts.append('%s in (%s)' % (expr['key'], values))
        elif operator == 'NotIn':
            parts.append('%s notin (%s)' % (expr['key'], values))
        elif operator == 'Exists':
            parts.append(expr['key'])
        elif operator == 'DoesNotExist':
            parts.append('!' + expr['key'])
    return ','.join(parts)


def selector_matches(selector, labels):
    """Does a label selector (matchLabels / matchExpressions) select these labels? An empty
    selector selects everything (PodDisruptionBudget semantics in policy/v1)."""
    labels = labels or {}
    for key, value in ((selector or {}).get('matchLabels') or {}).items():
        if labels.get(key) != value:
            return False
    for expr in (selector or {}).get('matchExpressions') or []:
        key, operator, values = expr.get('key'), expr.get('operator'), expr.get('values') or []
        if operator == 'In' and labels.get(key) not in values:
            return False
        if operator == 'NotIn' and key in labels and labels[key] in values:
            return False
        if operator == 'Exists' and key not in labels:
            return False
        if operator == 'DoesNotExist' and key in labels:
            return False
    return True


def owned_by(obj, uid):
    return any(ref.get('uid') == uid and ref.get('controller') for ref in podstate.meta(obj, 'ownerReferences') or [])


def get_record(obj):
    raw = (podstate.meta(obj, 'annotations') or {}).get(RECORD_ANNOTATION)
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def record_patch(obj, rec, spec=None):
    """Merge patch writing the rollout record (and spec fields), guarded by resourceVersion."""
    body = {'metadata': {'resourceVersion': podstate.meta(obj, 'resourceVersion'), 'annotations': {
        RECORD_ANNOTATION: json.dumps(rec, sort_keys=True, separators=(',', ':')) if rec is not None else None}}}
    if spec:
        body['spec'] = spec
    return body


# --------------------------------------------------------------------------- the controllers

class Workload(object):
    """One Deployment, StatefulSet, DaemonSet or ReplicaSet and the pods it owns."""

    def __init__(self, kube, kind, namespace, name, clock=time.monotonic, sleep=time.sleep):
        if kind not in KINDS:
            raise ValidationError('kind must be one of %s' % ', '.join(sorted(KINDS)))
        self.kube, self.kind, self.namespace, self.name = kube, kind, namespace, name
        self.clock, self.sleep = clock, sleep
        self.obj = None
        self.warnings = []

    # ---- API access

    def path(self, resource=None, name=None, group='apps/v1'):
        base = '/apis/%s' % group if group != 'v1' else '/api/v1'
        path = '%s/namespaces/%s/%s' % (base, quote(self.namespace, safe=''), resource or KINDS[self.kind])
        return path + ('/' + quote(name, safe='') if name else '')

    def read(self):
        try:
            self.obj = self.kube.request('GET', self.path(name=self.name))
        except NotFoundError:
            targets.require_namespace(self.kube, self.namespace)
            raise ValidationError('%s %s not found in namespace %s (rollout_target.kind / name): nothing was changed'
                                  % (self.kind, self.name, self.namespace))
        return self.obj

    def patch(self, body, content_type=MERGE_PATCH):
        self.obj = self.kube.request('PATCH', self.path(name=self.name), body=body, content_type=content_type)
        return self.obj

    @property
    def spec(self):
        return self.obj.get('spec') or {}

    @property
    def template(self):
        return self.spec.get('template') or {}

    @property
    def record(self):
        return get_record(self.obj)

    def pods(self):
        """Pods the workload controls (selector + controller owner), not terminating."""
        uid = podstate.meta(self.obj, 'uid')
        owners = set([uid])
        if self.kind == 'Deployment':
            owners.update(podstate.meta(rs, 'uid') for rs in self.replicasets())
        items, _version = self.kube.list_pods(self.namespace, selector_string(self.spec.get('selector')))
        return [p for p in items if any(owned_by(p, o) for o in owners) and not podstate.is_terminating(p)]

    def replicasets(self):
        answer = self.kube.request('GET', self.path('replicasets'),
                                   {'labelSelector': selector_string(self.spec.get('selector'))})
        return [rs for rs in answer.get('items') or [] if owned_by(rs, podstate.meta(self.obj, 'uid'))]

    def wait_for(self, what, predicate, timeout):
        """Re-read the workload until predicate(obj) is true; WaitTimeout naming ``what``."""
        deadline = self.clock() + timeout
        while True:
            self.read()
            if predicate(self.obj):
                return self.obj
            if self.clock() >= deadline:
                raise WaitTimeout('%s %s/%s: timed out after %ss waiting for %s (status: %s)' % (
                    self.kind, self.namespace, self.name, timeout, what, json.dumps(self.obj.get('status'))))
            self.sleep(POLL_SECONDS)

    def observed(self, obj):
        status = obj.get('status') or {}
        return (status.get('observedGeneration') or 0) >= (podstate.meta(obj, 'generation') or 0)

    # ---- hold / release

    def hold_spec(self):
        """Spec fields that stop the controller from replacing pods, or None when already held."""
        if self.kind == 'Deployment':
            return None if self.spec.get('paused') else {'paused': True}
        strategy = self.spec.get('updateStrategy') or {}
        if self.kind == 'StatefulSet' and strategy.get('type', 'RollingUpdate') == 'RollingUpdate':
            replicas = self.spec.get('replicas', 1)
            if ((strategy.get('rollingUpdate') or {}).get('partition') or 0) >= replicas:
                return None
            return {'updateStrategy': {'type': 'RollingUpdate', 'rollingUpdate': {'partition': replicas}}}
        if self.kind == 'DaemonSet' and strategy.get('type', 'RollingUpdate') == 'RollingUpdate':
            return {'updateStrategy': {'type': 'OnDelete', 'rollingUpdate': None}}
        return None

    def saved_strategy(self):
        """What hold_spec changes, as it is now (restored by finish)."""
        if self.kind == 'Deployment':
            return {'paused': bool(self.spec.get('paused'))}
        if self.kind in ('StatefulSet', 'DaemonSet'):
            return {'updateStrategy': copy.deepcopy(self.spec.get('updateStrategy') or {'type': 'RollingUpdate'})}
        return {}

    # ---- template and revision

    def current_replicaset(self, templates):
        """Deployment: the ReplicaSet whose template (without pod-template-hash) equals one of
        ``templates``, with the pods; RolloutError if another ReplicaSet still has replicas."""
        sets = self.replicasets()
        wanted = [strip_hash(t) for t in templates]
        matching = [rs for rs in sets if strip_hash((rs.get('spec') or {}).get('template')) in wanted]
        if not matching:
            raise RolloutError('Deployment %s/%s: no ReplicaSet matches its template; wait for the '
                               'controller to finish its own rollout first' % (self.namespace, self.name))
        current = max(matching, key=lambda rs: (rs.get('spec') or {}).get('replicas') or 0)
        others = [podstate.meta(rs, 'name') for rs in sets
                  if rs is not current and ((rs.get('spec') or {}).get('replicas') or 0) > 0]
        if others:
            raise RolloutError('Deployment %s/%s is in the middle of a rollout (ReplicaSets %s still have '
                               'replicas); wait for it to finish' % (self.namespace, self.name, ', '.join(others)))
        return current

    def set_template(self, images, resources, check_mode=False, rolling=False, dry_run=False):
        """Put the target values on the template(s) (Deployment: current ReplicaSet first, unless
        ``rolling``: then only the Deployment's, so that its controller rolls new pods out). True if
        anything was written (or would be). Each write tests resourceVersion and is recomputed on a
        fresh read when the controller wrote in between (status updates bump resourceVersion).
        ``dry_run``: the server validates the writes (admission included) and stores nothing: a refusal
        raises before anything was written."""
        changed = False
        if self.kind == 'Deployment' and not rolling:
            target = apply_change(self.template, images, resources)
            rs = self.current_replicaset([self.template, target])
            changed = self._patch_template('replicasets', podstate.meta(rs, 'name'), rs, images, resources,
                                           check_mode, dry_run)
        return self._patch_template(KINDS[self.kind], self.name, self.obj, images, resources, check_mode,
                                    dry_run) or changed

    def _patch_template(self, resource, name, obj, images, resources, check_mode, dry_run=False):
        state = {'obj': obj}

        def reread(_exc):
            state['obj'] = self.kube.request('GET', self.path(resource, name))

        @retry_conflict(on_retry=reread)
        def attempt():
            current = state['obj']
            ops = change_ops((current.get('spec') or {}).get('template'), '/spec/template', images, resources)
            if not ops or check_mode:
                return bool(ops)
            query = {'dryRun': 'All'} if dry_run else None
            answer = self.kube.request('PATCH', self.path(resource, name), query, body=[
                {'op': 'test', 'path': '/metadata/resourceVersion', 'value': podstate.meta(current, 'resourceVersion')}
            ] + ops, content_type=JSON_PATCH)
            if resource == KINDS[self.kind] and name == self.name and not dry_run:
                self.obj = answer
            return True
        return attempt()

    def revision(self, timeout):
        """(labels the updated pods must carry, description) once the controller saw the template."""
        if self.kind in ('StatefulSet', 'DaemonSet'):
            self.wait_for('the controller to observe the new template', self.observed, timeout)
        if self.kind == 'StatefulSet':
            name = (self.obj.get('status') or {}).get('updateRevision')
            return {REVISION_LABEL: name}, name
        if self.kind == 'DaemonSet':
            deadline = self.clock() + timeout
            while True:
                answer = self.kube.request('GET', self.path('controllerrevisions'),
                                           {'labelSelector': selector_string(self.spec.get('selector'))})
                owned = [r for r in answer.get('items') or [] if owned_by(r, podstate.meta(self.obj, 'uid'))]
                name, hashed = revision_from_history(owned, self.template)
                if hashed:
                    labels = {REVISION_LABEL: hashed}
                    generation = (podstate.meta(self.obj, 'annotations') or {}).get(TEMPLATE_GENERATION_ANNOTATION)
                    if generation:
                        labels[TEMPLATE_GENERATION_LABEL] = generation
                    return labels, name
                if self.clock() >= deadline:
                    raise WaitTimeout('DaemonSet %s/%s: no ControllerRevision for the new template after %ss'
                                      % (self.namespace, self.name, timeout))
                self.sleep(POLL_SECONDS)
                self.read()
        if self.kind == 'Deployment':
            rs = self.current_replicaset([self.template])
            return {}, podstate.meta(rs, 'name')
        return {}, None

    # ---- pods

    def relabel(self, pods, labels, check_mode=False):
        """Set the revision labels on pods that lack them; names of the pods changed."""
        changed = []
        for pod in pods:
            have = podstate.meta(pod, 'labels') or {}
            missing = dict((k, v) for k, v in labels.items() if v and have.get(k) != v)
            if not missing:
                continue
            changed.append(podstate.meta(pod, 'name'))
            if not check_mode:
                self.kube.patch_pod(self.namespace, podstate.meta(pod, 'name'), {'metadata': {
                    'resourceVersion': podstate.meta(pod, 'resourceVersion'), 'labels': missing}},
                    content_type=MERGE_PATCH)
        return changed

    # ---- finish

    def release_spec(self, saved, old_ordinals, pod_count):
        """Spec fields that restore the saved strategy without letting the controller replace pods
        left on the old version; (spec, two_step) where two_step asks for the StatefulSet
        OnDelete convergence pass first."""
        if self.kind == 'Deployment':
            return ({'paused': saved.get('paused', False)} if bool(self.spec.get('paused')) != saved.get(
                'paused', False) else None), False
        if self.kind not in ('StatefulSet', 'DaemonSet'):
            return None, False
        strategy = copy.deepcopy(saved.get('updateStrategy') or {'type': 'RollingUpdate'})
        kind = strategy.get('type', 'RollingUpdate')
        if self.kind == 'StatefulSet' and kind == 'RollingUpdate':
            replicas = self.spec.get('replicas', pod_count)
            rolling = strategy.setdefault('rollingUpdate', {})
            needed = sts_partition_for(old_ordinals, replicas) if old_ordinals else 0
            if needed > (rolling.get('partition') or 0):
                if needed >= replicas:
                    self.warnings.append('pods left on the old revision are not the lowest ordinals: the '
                                         'partition stays at %d so that the controller does not replace them'
                                         % replicas)
                rolling['partition'] = needed
        if self.kind == 'DaemonSet' and kind == 'RollingUpdate' and old_ordinals is not None and old_ordinals:
            self.warnings.append('%d pod(s) stay on the old template: the DaemonSet keeps updateStrategy '
                                 'OnDelete so that the controller does not replace them' % len(old_ordinals))
            strategy = {'type': 'OnDelete'}
        if strategy.get('type') == 'OnDelete':
            strategy['rollingUpdate'] = None
        # Under OnDelete the StatefulSet controller never moves currentRevision: converge it through
        # RollingUpdate{partition: replicas} first, and then OnDelete has to be written back.
        status = self.obj.get('status') or {}
        two_step = (self.kind == 'StatefulSet' and kind == 'OnDelete' and not old_ordinals
                    and status.get('currentRevision') != status.get('updateRevision'))
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
            return (status.get('updateRevision') == status.get('currentRevision')
                    and status.get('updatedReplicas', 0) == replicas and status.get('readyReplicas', 0) == replicas)
        if self.kind == 'DaemonSet':
            return not all_updated or (status.get('updatedNumberScheduled', 0) == status.get('desiredNumberScheduled')
                                       and status.get('numberReady', 0) == status.get('desiredNumberScheduled'))
        if self.kind == 'Deployment':
            replicas = (obj.get('spec') or {}).get('replicas', 1)
            return (status.get('updatedReplicas', 0) == replicas and status.get('availableReplicas', 0) == replicas
                    and status.get('replicas', 0) == replicas)
        return True

    def status_summary(self):
        status = self.obj.get('status') or {}
        keys = ('replicas', 'readyReplicas', 'updatedReplicas', 'availableReplicas', 'currentRevision',
                'updateRevision', 'desiredNumberScheduled', 'updatedNumberScheduled', 'numberReady',
                'observedGeneration')
        result = dict((k, status[k]) for k in keys if k in status)
        result['generation'] = podstate.meta(self.obj, 'generation')
        if self.kind == 'Deployment':
            result['replicasets'] = sorted(podstate.meta(rs, 'name') for rs in self.replicasets())
        return result


# --------------------------------------------------------------------------- the rollout steps

def undrain_leftovers(kube, pods, gate, images=None, resources=None, check_mode=False):
    """Pods left with the readiness gate False by an interrupted run (reason InplaceUpdate) that are
    converged and healthy: set the gate True again. Names of the pods."""
    names = []
    if not gate:
        return names
    for pod in pods:
        if not drain.left_drained(pod, gate):
            continue
        if pod_converged(pod, images, resources) and podstate.containers_healthy(pod) and not _record_busy(pod):
            names.append(podstate.meta(pod, 'name'))
            if not check_mode:
                drain.set_gate(kube, pod, gate, True)
    return names


def _record_busy(pod):
    """Another live run holds one of the pod's records. A record left in progress by a run that was killed
    (its process gone, or expired) holds nothing: its drained pod must get its gate back."""
    anyone = record.new_owner()
    return any(isinstance(r, dict) and record.holder(r, anyone) is not None for r in record.records(pod).values())


@retry_conflict()
def write_record(workload, rec, spec=None, stamp=None):
    """Write the rollout record (and spec fields) on a fresh read of the workload. ``stamp(current, rec)``
    returns the record to write given the one the workload has now (ownership: it raises when another
    run holds it)."""
    workload.read()
    if stamp is not None:
        rec = stamp(workload.record, rec)
    return workload.patch(record_patch(workload.obj, rec, spec))
