# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The workload controllers' side of a rollout in place (docs/rollouts.md): one adapter, ``Workload``,
for StatefulSet, DaemonSet, Deployment and ReplicaSet - hold, template, revision labels, release and status
convergence (rollout/release.py) - and the write of its rollout record (record.workload_record).

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

import copy
import json
import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import JSON_PATCH, MERGE_PATCH, retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    InplaceError, NotFoundError, ValidationError, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import poll, podstate, record, targets
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rolloutrecord import RolloutRecord
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import history, partition, status
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.release import WorkloadRelease
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.selectors import owned_by, selector_string
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import apply_change, change_ops, label_ops

KINDS = {
    'Deployment': 'deployments',
    'StatefulSet': 'statefulsets',
    'DaemonSet': 'daemonsets',
    'ReplicaSet': 'replicasets',
}
REVISION_LABEL = 'controller-revision-hash'
TEMPLATE_GENERATION_LABEL = 'pod-template-generation'
TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation'
HASH_LABEL = 'pod-template-hash'
# The workload's status is read again, not watched (rbac/inplace-k8s-rbac.yml grants get and patch on workloads,
# no list or watch): poll.until's delays, from the first to at most this far apart. A controller usually answers a
# write within tens of milliseconds, and each look is one GET of one object: the first looks come sooner than the
# other waits' (docs/performance.md, "Facts behind the code").
STATUS_FIRST_SECONDS = 0.01
STATUS_POLL_SECONDS = 0.25


class RolloutError(InplaceError):
    """The workload could not be coordinated (unexpected controller state, convergence timeout)."""


# --------------------------------------------------------------------------- pure: revisions


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


sts_partition_for = partition.sts_partition_for   # the rule lives with the other partition rules


# --------------------------------------------------------------------------- the controllers

class Workload(WorkloadRelease):
    """One Deployment, StatefulSet, DaemonSet or ReplicaSet and the pods it owns."""

    def __init__(self, kube, kind, namespace, name, clock=time.monotonic, sleep=time.sleep):
        if kind not in KINDS:
            raise ValidationError('kind must be one of %s' % ', '.join(sorted(KINDS)))
        self.kube, self.kind, self.namespace, self.name = kube, kind, namespace, name
        self.clock, self.sleep = clock, sleep
        self.obj = None
        self.warnings = []
        self.history = None   # set_template: what it does to the revision history (history.History.summary)
        self._book = None     # set_template: the History whose revision revision() names
        self.protection = None   # release_spec: what it left to protect pods, and the user's strategy under it
        self.progress = None     # what the status annotation tells of the pods (rollout/status.py Teller.progress)
        self._replicaset_uids = None   # Deployment: the uids of its ReplicaSets as last listed (replicasets())
        self._replicasets_seen = set()  # ... and of every ReplicaSet that list had (another owner's too)

    # ---- API access

    def path(self, resource=None, name=None, group='apps/v1'):
        return paths.api_path(group, resource or KINDS[self.kind], self.namespace, name or None)

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
        """The rollout record as written (a dict, or None): what a write starts from."""
        return record.workload_record(self.obj)

    @property
    def held(self):
        """The rollout record read through its typed reader (rollout/rolloutrecord.py)."""
        return RolloutRecord(self.record)

    def pods(self, items=None):
        """Pods the workload controls (selector + controller owner), not terminating: of ``items`` (pods listed
        by the workload's selector), or of a list made here."""
        if items is None:
            items, _version = self.kube.list_pods(self.namespace, self.selector())
        owners = set([podstate.meta(self.obj, 'uid')])
        if self.kind == 'Deployment':
            owners.update(self._owning_replicasets(items))
        return [p for p in items if any(owned_by(p, o) for o in owners) and not podstate.is_terminating(p)]

    def _owning_replicasets(self, pods):
        """The uids of the Deployment's ReplicaSets: as last listed, listed again when one of ``pods`` has a ReplicaSet
        controller that list did not have (one made since, by the controller or another writer). A list of
        ReplicaSets is a consistent read, and the API server's cache of them sees few events: the read waits for the
        cache to catch up (docs/performance.md, "Facts behind the code")."""
        owners = set(ref.get('uid') for pod in pods for ref in podstate.meta(pod, 'ownerReferences') or []
                     if ref.get('controller') and ref.get('kind') == 'ReplicaSet')
        if self._replicaset_uids is None or not owners <= self._replicasets_seen:
            self.replicasets()
        return self._replicaset_uids

    def selector(self):
        """The workload's pod selector as the API takes it (labelSelector)."""
        return selector_string(self.spec.get('selector'))

    def replicasets(self):
        answer = self.kube.request('GET', self.path('replicasets'),
                                   {'labelSelector': self.selector()})
        items = answer.get('items') or []
        sets = [rs for rs in items if owned_by(rs, podstate.meta(self.obj, 'uid'))]
        self._replicaset_uids = set(podstate.meta(rs, 'uid') for rs in sets)
        self._replicasets_seen = set(podstate.meta(rs, 'uid') for rs in items)
        return sets

    def wait_for(self, what, predicate, timeout):
        """Re-read the workload until predicate(obj) is true; WaitTimeout naming ``what``. The controllers
        usually answer within a fraction of a second: the first re-reads come quickly, then every
        STATUS_POLL_SECONDS, so that the end of a rollout is seen within STATUS_POLL_SECONDS of the status."""
        def check():
            self.read()
            return predicate(self.obj)
        if poll.until(check, timeout, first=STATUS_FIRST_SECONDS, most=STATUS_POLL_SECONDS, clock=self.clock,
                      sleep=self.sleep):
            return self.obj
        raise WaitTimeout('%s %s/%s: timed out after %ss waiting for %s (status: %s)' % (
            self.kind, self.namespace, self.name, timeout, what, json.dumps(self.obj.get('status'))))

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
        changed, rs, book = False, None, None
        if self.kind == 'Deployment' and not rolling:
            target = apply_change(self.template, images, resources)
            rs = self.current_replicaset([self.template, target])
        if not rolling and not dry_run:
            # The revision history stays true (history.py): planned here (check mode too), written around.
            book = history.for_change(self, images, resources, rs)
            self.history = book.summary if book is not None else self.history
            rs = book.before() if book is not None and not check_mode else rs
        if rs is not None:
            changed = self._patch_template('replicasets', podstate.meta(rs, 'name'), rs, images, resources,
                                           check_mode, dry_run)
        changed = self._patch_template(KINDS[self.kind], self.name, self.obj, images, resources, check_mode,
                                       dry_run) or changed
        if book is not None and not check_mode:
            book.after()
            self._book = book
        return changed

    def set_template_labels(self, labels, check_mode=False):
        """Add ``labels`` to the pod template(s) (Deployment: its current ReplicaSet's first, so that the
        controller keeps that ReplicaSet and its pods); True if anything was written (or would be). Hold the
        controller first (hold_spec): a template change alone would start its rolling update."""
        changed = False
        if self.kind == 'Deployment':
            target = copy.deepcopy(self.template)
            target.setdefault('metadata', {}).setdefault('labels', {}).update(labels)
            rs = self.current_replicaset([self.template, target])
            changed = self._patch_template('replicasets', podstate.meta(rs, 'name'), rs, None, None, check_mode,
                                           labels=labels)
        return self._patch_template(KINDS[self.kind], self.name, self.obj, None, None, check_mode,
                                    labels=labels) or changed

    def _patch_template(self, resource, name, obj, images, resources, check_mode, dry_run=False, labels=None):
        state = {'obj': obj}

        def reread(_exc):
            state['obj'] = self.kube.request('GET', self.path(resource, name))

        @retry_conflict(on_retry=reread)
        def attempt():
            current = state['obj']
            ops = change_ops((current.get('spec') or {}).get('template'), '/spec/template', images, resources)
            ops.extend(label_ops((current.get('spec') or {}).get('template'), '/spec/template', labels))
            if not ops or check_mode:
                return bool(ops)
            query = {'dryRun': 'All'} if dry_run else None
            answer = self.kube.request('PATCH', self.path(resource, name), query, body=[_unchanged_spec(current)] + ops,
                                       content_type=JSON_PATCH)
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
            self._stamp(name)
            return {REVISION_LABEL: name}, name
        if self.kind == 'DaemonSet':
            def find():
                answer = self.kube.request('GET', self.path('controllerrevisions'),
                                           {'labelSelector': self.selector()})
                owned = [r for r in answer.get('items') or [] if owned_by(r, podstate.meta(self.obj, 'uid'))]
                found = revision_from_history(owned, self.template)
                if not found[1]:
                    self.read()
                return found
            name, hashed = poll.until(find, timeout, done=lambda found: found[1], first=STATUS_FIRST_SECONDS,
                                      most=STATUS_POLL_SECONDS, clock=self.clock, sleep=self.sleep)
            if not hashed:
                raise WaitTimeout('DaemonSet %s/%s: no ControllerRevision for the new template after %ss'
                                  % (self.namespace, self.name, timeout))
            self._stamp(name)
            labels = {REVISION_LABEL: hashed}
            generation = (podstate.meta(self.obj, 'annotations') or {}).get(TEMPLATE_GENERATION_ANNOTATION)
            if generation:
                labels[TEMPLATE_GENERATION_LABEL] = generation
            return labels, name
        if self.kind == 'Deployment':
            rs = self.current_replicaset([self.template])
            return {}, podstate.meta(rs, 'name')
        return {}, None

    def _stamp(self, name):
        """The change-cause of set_template's change on the ControllerRevision the controller named, once."""
        book, self._book = self._book, None
        if book is not None:
            book.stamp(name)

    # ---- pods

    def relabel(self, pods, labels, check_mode=False):
        """Set the revision labels on pods that lack them; names of the pods changed."""
        changed = []
        for pod in pods:
            have = podstate.meta(pod, 'labels') or {}
            missing = {k: v for k, v in labels.items() if v and have.get(k) != v}
            if not missing:
                continue
            changed.append(podstate.meta(pod, 'name'))
            if not check_mode:
                self.kube.patch_pod(self.namespace, podstate.meta(pod, 'name'), {'metadata': {
                    'resourceVersion': podstate.meta(pod, 'resourceVersion'), 'labels': missing}},
                    content_type=MERGE_PATCH)
        return changed


# --------------------------------------------------------------------------- its record


@retry_conflict()
def write_record(workload, rec, spec=None, stamp=None, check=None):
    """Write the rollout record (and spec fields) on a fresh read of the workload. ``stamp(current, rec)``
    returns the record to write given the one the workload has now (ownership: it raises when another
    run holds it). ``check(workload)`` returns why that read must not be written (rollout/guard.py: a
    ConcurrentChange), or None: the write is guarded by the read's resourceVersion, so a change in between makes
    it read and check again. Returns that refusal (nothing written), or None once written."""
    workload.read()
    refused = check(workload) if check is not None else None
    if refused is not None:
        return refused
    if stamp is not None:
        rec = stamp(workload.record, rec)
    body = record.workload_patch(workload.obj, rec, spec)
    # The line a person reads (rollout/status.py), with the record: no write of its own.
    body['metadata']['annotations'][status.ANNOTATION] = status.text(RolloutRecord(rec), workload.progress) if rec is not None else None
    workload.patch(body)
    return None


def _unchanged_spec(current):
    """The JSON patch test that ``current``'s spec is the one stored: its generation, which only a spec change moves
    (the controller's status writes, which follow our own writes, do not: they failed a resourceVersion test for
    nothing); the resourceVersion of an object without one."""
    generation = podstate.meta(current, 'generation')
    if generation is None:
        return {'op': 'test', 'path': '/metadata/resourceVersion', 'value': podstate.meta(current, 'resourceVersion')}
    return {'op': 'test', 'path': '/metadata/generation', 'value': generation}
