# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The workload's revision history through an in-place change of its template, so that
``kubectl rollout history`` lists the in-place revision and ``kubectl rollout undo`` returns to the
version that ran just before (docs/rollouts.md, "Revision history").

What kubectl and the controllers do (kubectl 1.36, kube-controller-manager 1.36, checked on the
local cluster):

- Deployment: ``rollout history`` lists the ReplicaSets the Deployment controls by their
  ``deployment.kubernetes.io/revision`` annotation, with their ``kubernetes.io/change-cause``;
  ``rollout undo`` copies the chosen ReplicaSet's template (pod-template-hash aside) and its
  annotations into the Deployment. The controller's new ReplicaSet is the oldest one whose template
  equals the Deployment's, pod-template-hash aside; it gets max(revision of the others) + 1 when its
  own is lower, and the Deployment's annotations are copied onto it (change-cause included). Old
  ReplicaSets with no replicas beyond revisionHistoryLimit are pruned, oldest revision first; the new
  one never is.
  An in-place rollout reuses the current ReplicaSet and rewrites its template; before that, the
  template it had is kept as a ReplicaSet of its own (no replicas, controlled by the Deployment, the
  old revision and change-cause, a pod-template-hash of ours: ``i`` + hex, which the controller's
  hashes - consonants and digits without 0, 1 and 3 - never are), and the reused one gets the next
  revision and a change-cause. A kept ReplicaSet whose template is the target (an undo, a rollback)
  is deleted first: its revision moves to the reused one, as kubectl's undo moves a revision.
- StatefulSet, DaemonSet: ``rollout history`` lists the ControllerRevisions, with their
  change-cause. The controller makes a ControllerRevision for a new template even under our hold
  (or gives the existing one of that template the next revision) and copies the workload's
  annotations onto a new one: the change-cause is put on the workload before the template is
  written, and on its ControllerRevision once the controller made it. The old one stays until
  revisionHistoryLimit prunes it.

The change-cause is written on the workload too, as ``kubectl annotate`` or ``rollout undo`` leave it:
it describes its current template (a later native change that does not set it inherits it).
"""

import copy
import hashlib
import json

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConflictError, ForbiddenError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods import resources as resources_util
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import apply_change, change_ops

REVISION = 'deployment.kubernetes.io/revision'
CHANGE_CAUSE = 'kubernetes.io/change-cause'
HASH_LABEL = 'pod-template-hash'
OUR_HASH_PREFIX = 'i'   # never the first letter of a hash the Deployment controller makes


# --------------------------------------------------------------------------- pure

def revision_of(obj):
    """The revision number of a ReplicaSet (annotation) or ControllerRevision (field); 0 when none."""
    if obj.get('kind') == 'ControllerRevision' or 'revision' in obj:
        return int(obj.get('revision') or 0)
    try:
        return int((podstate.meta(obj, 'annotations') or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def without_hash(template):
    """A template as the controllers compare them: no pod-template-hash label, no ``$patch``."""
    result = copy.deepcopy(template or {})
    result.pop('$patch', None)
    ((result.get('metadata') or {}).get('labels') or {}).pop(HASH_LABEL, None)
    return result


def stored_template(obj):
    """The pod template a ReplicaSet or ControllerRevision holds."""
    if obj.get('kind') == 'ControllerRevision' or 'data' in obj:
        return without_hash(((obj.get('data') or {}).get('spec') or {}).get('template'))
    return without_hash((obj.get('spec') or {}).get('template'))


def describe(template, images=None, resources=None):
    """'app image web:1.1 -> web:2.0, app resources cpu 100m/200m -> 150m/300m' for the change on ``template``."""
    pod = {'spec': (template or {}).get('spec') or {}}
    parts = []
    for name in sorted(images or {}):
        info = podstate.find_container(pod, name)
        before = info.spec.get('image') if info else None
        if before != images[name]:
            parts.append('%s image %s -> %s' % (name, before, images[name]))
    for name in sorted(resources or {}):
        info = podstate.find_container(pod, name)
        if info is None or not resources_util.resources_differ(info.spec, resources[name]):
            continue
        before = resources_util.of_spec(info.spec)
        after = resources_util.full_resources(info.spec, resources[name])
        parts.append('%s resources %s -> %s' % (name, _brief_resources(before), _brief_resources(after)))
    return ', '.join(parts) or 'no change'


def _brief_resources(value):
    """{'requests': {'cpu': '100m'}, 'limits': {'cpu': '200m'}} -> 'requests cpu=100m, limits cpu=200m'."""
    out = []
    for kind in ('requests', 'limits'):
        items = (value or {}).get(kind) or {}
        if items:
            out.append('%s %s' % (kind, ' '.join('%s=%s' % item for item in sorted(items.items()))))
    return '{%s}' % '; '.join(out)


def change_cause(template, images=None, resources=None):
    """The kubernetes.io/change-cause of an in-place change of ``template``."""
    return 'inplace.k8s: %s (in place)' % describe(template, images, resources)


def our_hash(template, taken):
    """A pod-template-hash value of ours for a kept template: ``i`` + hex, none of ``taken``."""
    seed = json.dumps(without_hash(template), sort_keys=True)
    for salt in range(1000):
        value = OUR_HASH_PREFIX + hashlib.sha256(('%s/%d' % (seed, salt)).encode()).hexdigest()[:9]
        if value not in taken:
            return value
    raise ValueError('no free pod-template-hash')   # pragma: no cover - 1000 collisions of 36 bits


def images_of(template):
    """{container: image} of the template's containers and init containers."""
    spec = (template or {}).get('spec') or {}
    return dict((c.get('name'), c.get('image')) for key in ('initContainers', 'containers')
                for c in spec.get(key) or [])


def kept_replicaset(deployment, current, value):
    """The ReplicaSet that keeps ``current``'s template (before it is rewritten) as history: no replicas,
    controlled by the Deployment, its revision and change-cause, pod-template-hash ``value``."""
    name = podstate.meta(deployment, 'name')
    template = copy.deepcopy((current.get('spec') or {}).get('template') or {})
    template.setdefault('metadata', {}).setdefault('labels', {})[HASH_LABEL] = value
    selector = copy.deepcopy((deployment.get('spec') or {}).get('selector') or {})
    selector.setdefault('matchLabels', {})[HASH_LABEL] = value
    annotations = {REVISION: str(revision_of(current)),
                   'inplace.k8s/history': 'kept by inplace.k8s: this template ran before an in-place rollout'}
    cause = (podstate.meta(current, 'annotations') or {}).get(CHANGE_CAUSE)
    if cause:
        annotations[CHANGE_CAUSE] = cause
    spec = {'replicas': 0, 'selector': selector, 'template': template}
    if (current.get('spec') or {}).get('minReadySeconds'):
        spec['minReadySeconds'] = current['spec']['minReadySeconds']
    return {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet',
            'metadata': {'name': '%s-%s' % (name, value), 'labels': dict(template['metadata']['labels']),
                         'annotations': annotations,
                         'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': name,
                                              'uid': podstate.meta(deployment, 'uid'), 'controller': True,
                                              'blockOwnerDeletion': True}]},
            'spec': spec}


def _label(template):
    """'app=web:2.0' for the images of a template."""
    return ', '.join('%s=%s' % item for item in sorted(images_of(template).items()))


# --------------------------------------------------------------------------- the plan and its writes

class History:
    """What an in-place change of a workload's template does to its revision history: the plan (``summary``,
    also in check mode) and its writes (``before`` the template writes, ``after`` them, ``stamp`` once the
    controller named the revision). ``current``: the Deployment's current ReplicaSet."""

    def __init__(self, workload, images, resources, current=None):
        self.w, self.images, self.resources = workload, images or {}, resources or {}
        self.current = current
        self.kind = workload.kind
        source = (current.get('spec') or {}).get('template') if current is not None else workload.template
        self.before_template = copy.deepcopy(source or {})
        self.target = without_hash(apply_change(source or {}, self.images, self.resources))
        self.cause = change_cause(source, self.images, self.resources)
        self.entries = self.entries_of(workload)
        self.revision = max([revision_of(e) for e in self.entries] or [0]) + 1
        self.kept = None    # Deployment: the ReplicaSet that will keep the template from before
        self.failed = False  # a history write was forbidden (_not_kept): the others are skipped
        current_name = podstate.meta(current, 'name') if current is not None else None
        # The entries whose template is the target (an undo, a rollback): the newest moves to the next revision.
        equal = [e for e in self.entries if podstate.meta(e, 'name') != current_name and stored_template(e) == self.target]
        self.moved = max(equal, key=revision_of) if equal else None
        self.extra = [e for e in equal if e is not self.moved]
        if self.kind == 'Deployment':
            taken = set((podstate.meta(e, 'labels') or {}).get(HASH_LABEL) for e in self.entries)
            self.kept = kept_replicaset(self.w.obj, self.current, our_hash(self.before_template, taken))
        self.summary = self._summary()

    @staticmethod
    def entries_of(workload):
        """The revisions kubectl rollout history lists: the ReplicaSets (Deployment) or ControllerRevisions the
        workload controls."""
        if workload.kind == 'Deployment':
            return workload.replicasets()
        answer = workload.kube.request('GET', workload.path('controllerrevisions'), {'labelSelector': workload.selector()})
        uid = podstate.meta(workload.obj, 'uid')
        return [r for r in answer.get('items') or []
                if any(ref.get('uid') == uid and ref.get('controller') for ref in podstate.meta(r, 'ownerReferences') or [])]

    def _previous(self):
        """The entry that holds the template from before: (revision, name)."""
        if self.kind == 'Deployment':
            return revision_of(self.current), podstate.meta(self.kept, 'name')
        before = without_hash(self.before_template)
        found = [e for e in self.entries if stored_template(e) == before]
        if not found:
            return None, None
        entry = max(found, key=revision_of)
        return revision_of(entry), podstate.meta(entry, 'name')

    def _summary(self):
        revision, name = self._previous()
        what = 'ReplicaSet' if self.kind == 'Deployment' else 'ControllerRevision'
        out = {'revision': self.revision, 'change_cause': self.cause,
               'previous': {'revision': revision, 'name': name, 'images': images_of(self.before_template)}}
        lines = ['history: revision %d (in place, %s)' % (self.revision, _label(self.target))]
        if revision is not None:
            lines.append('revision %d (%s) kept as %s %s' % (revision, _label(self.before_template), what, name))
        if self.moved is not None:
            out['moved'] = {'revision': revision_of(self.moved), 'name': podstate.meta(self.moved, 'name')}
            lines.append('revision %d (the target) becomes revision %d, as kubectl rollout undo does'
                         % (revision_of(self.moved), self.revision))
        out['message'] = '; '.join(lines)
        return out

    # ---- writes

    def _annotate(self, resource, name, annotations):
        return self.w.kube.request('PATCH', self.w.path(resource, name), body={'metadata': {'annotations': annotations}},
                                   content_type=MERGE_PATCH)

    def before(self):
        """Before the template writes: the entry equal to the target leaves the history (its revision moves to
        the reused ReplicaSet), the reused ReplicaSet gets the next revision and the change-cause, the workload
        the change-cause. Returns the current ReplicaSet as written (Deployment), else None."""
        if self.kind != 'Deployment':
            self.w.patch({'metadata': {'annotations': {CHANGE_CAUSE: self.cause}}})
            return None
        for entry in ([self.moved] if self.moved is not None else []) + self.extra:
            try:
                self.w.kube.request('DELETE', self.w.path('replicasets', podstate.meta(entry, 'name')),
                                    body={'preconditions': {'uid': podstate.meta(entry, 'uid')}})
            except NotFoundError:
                pass
            except ForbiddenError as exc:
                return self._not_kept(exc, 'delete')
        current = self._annotate('replicasets', podstate.meta(self.current, 'name'),
                                 {REVISION: str(self.revision), CHANGE_CAUSE: self.cause})
        self.w.patch({'metadata': {'annotations': {CHANGE_CAUSE: self.cause}}})
        return current

    def _not_kept(self, exc, verb, resource='replicasets'):
        """Credentials without the history's permission: the rollout goes on, a warning says what kubectl rollout
        history lacks and what to grant. Returns the current ReplicaSet (nothing of the history written)."""
        self.failed = True
        self.w.warnings.append(
            'the revision history is not kept (%s): the credentials may not %s %s (apps); kubectl rollout undo may go '
            'to another version than the one before this rollout. Grant it: %s of rbac/inplace-k8s-rbac.yml'
            % (exc.msg, verb, resource, 'the role inplace-k8s-history' if resource == 'replicasets' and verb != 'patch'
               else 'the role inplace-k8s'))
        return self.current

    def after(self):
        """After the template writes (the Deployment's included): the ReplicaSet keeping the template from
        before is created (it then never equals the Deployment's template)."""
        if self.kind != 'Deployment' or self.failed:
            return
        try:
            self.w.kube.request('POST', self.w.path('replicasets'), body=self.kept)
        except ConflictError:   # already kept (a run that stopped after this write)
            pass
        except ForbiddenError as exc:
            self._not_kept(exc, 'create')

    def stamp(self, name):
        """StatefulSet, DaemonSet: the change-cause on the ControllerRevision ``name`` the controller made
        (or moved to the next revision) for the new template."""
        if self.kind == 'Deployment' or not name:
            return
        try:
            self._annotate('controllerrevisions', name, {CHANGE_CAUSE: self.cause})
        except ForbiddenError as exc:
            self._not_kept(exc, 'patch', 'controllerrevisions')


def for_change(workload, images, resources, current=None):
    """The History of writing images/resources on the workload's template (Deployment: on ``current``, its
    ReplicaSet), or None when the template has them already or the kind keeps no history (ReplicaSet)."""
    if workload.kind not in ('Deployment', 'StatefulSet', 'DaemonSet'):
        return None
    template = (current.get('spec') or {}).get('template') if current is not None else workload.template
    if not change_ops(template, '', images, resources):
        return None
    return History(workload, images, resources, current)
