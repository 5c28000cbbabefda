# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory API server that knows apps/v1 (Deployment, StatefulSet, DaemonSet, ReplicaSet,
ControllerRevision) and policy/v1 PodDisruptionBudgets, on top of fakes.FakeCluster (pods and a
synchronous kubelet).

Requests are served as the API server does for the code paths of workload.py and rollout.py: GET by
path, lists by label selector, PATCH with JSON patches (a failed ``test`` op is a 422 ConflictError)
and merge patches (metadata.resourceVersion is a precondition: 409), ``dryRun=All`` (admission runs,
nothing is stored), generation bumped by spec changes. After every write the fake controllers run
at once, with just the behaviour the rollout relies on:

- StatefulSet: a template change makes a ControllerRevision ``<name>-<hash>`` and status.updateRevision
  names it; RollingUpdate replaces pods at ordinals >= partition that are not on it; currentRevision
  follows updateRevision once updated == ready == replicas under RollingUpdate (never under OnDelete).
- DaemonSet: ControllerRevisions labelled ``controller-revision-hash: <hash>`` with the template, the
  template generation annotation; RollingUpdate replaces outdated pods, OnDelete does not.
- Deployment: the ReplicaSet whose template equals the Deployment's (pod-template-hash aside) is the
  new one; unless paused, a missing one is created and the old ones scaled to 0 (their pods deleted);
  the new one gets max(revision of the others) + 1 when its own is lower, and the Deployment's
  annotations. POST creates and DELETE removes apps objects (a ReplicaSet of the revision history).
- ReplicaSet: keeps ``replicas`` pods from its template; a template change touches no pod.

``observe = False`` freezes status.observedGeneration (a controller that did not see the change yet);
``template_admission(resource, obj)`` is a validating webhook on workload writes (dry run included).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import hashlib
import itertools
import json

import jsonpatch

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import JSON_PATCH, MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConflictError, NotFoundError
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import NOT_SERVED, FakeCluster

KIND_OF = {'deployments': 'Deployment', 'statefulsets': 'StatefulSet', 'daemonsets': 'DaemonSet',
           'replicasets': 'ReplicaSet', 'controllerrevisions': 'ControllerRevision'}
RESOURCE_OF = dict((kind, resource) for resource, kind in KIND_OF.items())
NAMESPACE = 'shop'
REVISION = 'deployment.kubernetes.io/revision'


def template(image='reg/app:1', labels=None, **app):
    """A pod template: container app (with cpu/memory requests and limits) and a plain init container."""
    container = {'name': 'app', 'image': image, 'resources': {
        'requests': {'cpu': '100m', 'memory': '64Mi'}, 'limits': {'cpu': '200m', 'memory': '128Mi'}}}
    container.update(app)
    return {'metadata': {'labels': dict(labels or {'app': 'web'})},
            'spec': {'initContainers': [{'name': 'setup', 'image': 'reg/setup:1'}], 'containers': [container]}}


def workload(kind, name='web', replicas=3, strategy=None, tmpl=None, **spec):
    """A workload object as a user would create it."""
    tmpl = tmpl or template()
    body = {'selector': {'matchLabels': dict(tmpl['metadata']['labels'])}, 'template': tmpl}
    if kind != 'DaemonSet':
        body['replicas'] = replicas
    if strategy is not None:
        body['updateStrategy' if kind in ('StatefulSet', 'DaemonSet') else 'strategy'] = strategy
    body.update(spec)
    return {'apiVersion': 'apps/v1', 'kind': kind, 'metadata': {'name': name, 'namespace': NAMESPACE}, 'spec': body}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def parse_selector(text):
    """A label selector string (as workload.selector_string writes it) as a predicate on labels."""
    terms, depth, current = [], 0, ''
    for char in text or '':
        depth += {'(': 1, ')': -1}.get(char, 0)
        if char == ',' and depth == 0:
            terms.append(current.strip())
            current = ''
        else:
            current += char
    if current.strip():
        terms.append(current.strip())

    def matches(labels):
        labels = labels or {}
        for term in terms:
            if ' notin ' in term:
                key, values = term.split(' notin ')
                if labels.get(key) in values.strip('()').split(','):
                    return False
            elif ' in ' in term:
                key, values = term.split(' in ')
                if labels.get(key) not in values.strip('()').split(','):
                    return False
            elif '=' in term:
                key, value = term.split('=', 1)
                if labels.get(key) != value:
                    return False
            elif term.startswith('!'):
                if term[1:] in labels:
                    return False
            elif term not in labels:
                return False
        return True
    return matches


def template_hash(tmpl):
    stripped = copy.deepcopy(tmpl or {})
    ((stripped.get('metadata') or {}).get('labels') or {}).pop('pod-template-hash', None)
    return hashlib.sha1(json.dumps(stripped, sort_keys=True).encode()).hexdigest()[:8]


class FakeApps(FakeCluster):
    """FakeCluster + apps/v1 objects and their controllers, PodDisruptionBudgets, namespaces."""

    def __init__(self, objects=(), pdbs=(), nodes=3, namespaces=(NAMESPACE,)):
        super(FakeApps, self).__init__([])
        self.objects = {}            # (resource, name) -> object
        self.pdbs = list(pdbs)
        self.nodes = nodes           # DaemonSet pods
        self.namespaces = set(namespaces)
        self.observe = True
        self.template_admission = None
        self.before_apps_write = None    # hook(cluster, resource, name): once, before the next apps write
        self.stored = []                 # (resource, name, body) of each stored apps write, in order
        self._uids = itertools.count(1)
        for obj in objects:
            self.create(obj)

    # ---- objects

    def create(self, obj):
        obj = copy.deepcopy(obj)
        meta = obj['metadata']
        meta.setdefault('namespace', NAMESPACE)
        meta.update(uid='uid-%s-%d' % (meta['name'], next(self._uids)), generation=1)
        resource = RESOURCE_OF[obj['kind']]
        # the API server's defaults
        if obj['kind'] == 'StatefulSet':
            obj['spec'].setdefault('updateStrategy', {'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}})
        if obj['kind'] == 'DaemonSet':
            obj['spec'].setdefault('updateStrategy', {'type': 'RollingUpdate', 'rollingUpdate': {
                'maxUnavailable': 1, 'maxSurge': 0}})
        self.objects[(resource, meta['name'])] = obj
        self._touch(obj)
        self.reconcile()
        return obj

    def get(self, kind, name):
        return self.objects[(RESOURCE_OF[kind], name)]

    def of_kind(self, kind):
        return [obj for (resource, _name), obj in sorted(self.objects.items()) if resource == RESOURCE_OF[kind]]

    def apps_writes(self):
        return [call for call in self.calls if call[:2] == ('request', 'PATCH') and '/apis/apps/' in call[2]]

    # ---- the API

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append(('request', method, path) + ((query,) if query else ()))
        parts = path.strip('/').split('/')
        if path == access.REVIEW_PATH:
            return {'status': {'allowed': True}}
        if path == '/version':
            return {'major': '1', 'minor': '36', 'gitVersion': 'v1.36.0'}
        if path.startswith(('/apis/apps.kruise.io',) + NOT_SERVED):   # CRDs and APIs this fake cluster does not serve
            raise NotFoundError('the server could not find the requested resource', status=404)
        if parts[:3] == ['api', 'v1', 'namespaces'] and len(parts) == 4:
            if parts[3] not in self.namespaces:
                raise NotFoundError('namespaces "%s" not found' % parts[3], status=404)
            return {'metadata': {'name': parts[3]}}
        if parts[:2] == ['apis', 'policy'] and parts[-1] == 'poddisruptionbudgets':
            return {'items': copy.deepcopy(self.pdbs)}
        if parts[:2] != ['apis', 'apps'] or parts[3] != 'namespaces':
            raise AssertionError('unexpected request %s %s' % (method, path))
        if parts[4] not in self.namespaces:
            if len(parts) == 6:
                return {'items': []}
            raise NotFoundError('%s "%s" not found' % (parts[5], parts[6]), status=404)
        resource = parts[5]
        if len(parts) == 6 and method == 'GET':
            selected = parse_selector((query or {}).get('labelSelector'))
            return {'items': [copy.deepcopy(obj) for (res, _name), obj in sorted(self.objects.items())
                              if res == resource and selected(obj['metadata'].get('labels'))]}
        if len(parts) == 6 and method == 'POST':
            return self._post(resource, body)
        name = parts[6]
        if method == 'DELETE' and (resource, name) in self.objects:
            self.calls.append(('delete', resource, name))
            del self.objects[(resource, name)]
            self.reconcile()
            return {'kind': 'Status', 'status': 'Success'}
        if (resource, name) not in self.objects:
            raise NotFoundError('%s.apps "%s" not found' % (resource, name), status=404)
        if method == 'GET':
            return copy.deepcopy(self.objects[(resource, name)])
        if method == 'PATCH':
            return self._patch(resource, name, body, content_type, dry_run=(query or {}).get('dryRun') == 'All')
        raise AssertionError('unexpected request %s %s' % (method, path))

    def _post(self, resource, body):
        name = body['metadata']['name']
        if (resource, name) in self.objects:
            raise ConflictError('%s.apps "%s" already exists' % (resource, name), status=409)
        return copy.deepcopy(self.create(dict(body, kind=KIND_OF[resource])))

    def _patch(self, resource, name, body, content_type, dry_run=False):
        if self.before_apps_write and not dry_run:
            hook, self.before_apps_write = self.before_apps_write, None
            hook(self, resource, name)
        current = self.objects[(resource, name)]
        patched = self._apply(current, body, content_type, '%s.apps "%s"' % (resource, name))
        if self.template_admission and patched.get('spec') != current.get('spec'):
            self.template_admission(resource, patched)
        if dry_run:
            return patched
        self.stored.append((resource, name, copy.deepcopy(body)))
        if patched.get('spec') != current.get('spec'):
            patched['metadata']['generation'] = current['metadata'].get('generation', 1) + 1
        self.objects[(resource, name)] = patched
        self._touch(patched)
        self.reconcile()
        return copy.deepcopy(self.objects[(resource, name)])

    @staticmethod
    def _apply(current, body, content_type, what):
        if content_type == JSON_PATCH:
            try:
                return jsonpatch.apply_patch(current, body)
            except jsonpatch.JsonPatchTestFailed as exc:
                raise ConflictError('testing value failed: test failed (%s)' % exc, status=422)
        assert content_type == MERGE_PATCH, content_type
        version = (body.get('metadata') or {}).get('resourceVersion')
        if version is not None and version != current['metadata']['resourceVersion']:
            raise ConflictError('Operation cannot be fulfilled on %s: the object has been modified; please apply '
                                'your changes to the latest version and try again' % what, status=409)
        return merge_patch(current, body)

    def list_pods(self, namespace, label_selector=None, field_selector=None):
        selected = parse_selector(label_selector)
        names = [term.split('=', 1)[1] for term in (field_selector or '').split(',') if term.startswith('metadata.name=')]
        return [copy.deepcopy(p) for _name, p in sorted(self.pods.items())
                if selected(p['metadata'].get('labels')) and (not names or p['metadata']['name'] in names)
                and p['metadata'].get('namespace', NAMESPACE) == namespace], str(next(self._version))

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None, dry_run=False):
        if content_type != MERGE_PATCH:
            return super(FakeApps, self).patch_pod(namespace, name, body, content_type, subresource, dry_run)
        self.calls.append(('patch', name, 'merge'))
        if name not in self.pods:
            raise NotFoundError('pods "%s" not found' % name, status=404)
        patched = self._apply(self.pods[name], body, MERGE_PATCH, 'pods "%s"' % name)
        self.pods[name] = patched
        self._touch(patched)
        self.reconcile()
        return copy.deepcopy(patched)

    # ---- pods

    def spawn(self, owner, name, tmpl, labels=None):
        """A running pod made by ``owner`` from ``tmpl`` (a new uid when it replaces one)."""
        spec = copy.deepcopy(tmpl['spec'])
        spec['nodeName'] = 'node-1'
        statuses = [{'name': c['name'], 'imageID': '%s@sha256:%s' % (c['image'].rsplit(':', 1)[0], hashlib.sha256(
            c['image'].encode()).hexdigest())} for c in spec['containers']]
        pod = {'metadata': {'name': name, 'namespace': NAMESPACE, 'uid': 'uid-%s-%d' % (name, next(self._uids)),
                            'generation': 1, 'labels': dict((tmpl.get('metadata') or {}).get('labels') or {}, **(labels or {})),
                            'ownerReferences': [{'apiVersion': 'apps/v1', 'kind': owner['kind'], 'name': owner['metadata']['name'],
                                                 'uid': owner['metadata']['uid'], 'controller': True}]},
               'spec': spec,
               'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}],
                          'containerStatuses': statuses,
                          'initContainerStatuses': [{'name': c['name'], 'state': {'terminated': {'exitCode': 0}}}
                                                    for c in spec.get('initContainers') or []]}}
        self.pods[name] = pod
        self.run_kubelet(name)
        return pod

    def owned(self, owner):
        uid = owner['metadata']['uid']
        return [p for _name, p in sorted(self.pods.items())
                if any(ref.get('uid') == uid for ref in p['metadata'].get('ownerReferences') or [])]

    def delete_pod(self, name):
        del self.pods[name]

    # ---- the controllers

    def reconcile(self):
        for kind in ('Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet'):
            for obj in self.of_kind(kind):
                getattr(self, '_' + kind.lower())(obj)

    def _observed(self, obj, status):
        if self.observe:
            status['observedGeneration'] = obj['metadata']['generation']
        if obj.get('status') != status:
            obj['status'] = status
            self._touch(obj)

    def _revision(self, owner, tmpl, labels):
        """The ControllerRevision of ``tmpl`` (created when missing): (name, hash)."""
        hashed = template_hash(tmpl)
        name = '%s-%s' % (owner['metadata']['name'], hashed)
        if ('controllerrevisions', name) not in self.objects:
            numbers = [r['revision'] for r in self.of_kind('ControllerRevision') if r['metadata']['ownerReferences'][0]
                       ['uid'] == owner['metadata']['uid']]
            self.objects[('controllerrevisions', name)] = rev = {
                'kind': 'ControllerRevision', 'revision': max(numbers or [0]) + 1,
                'metadata': {'name': name, 'namespace': NAMESPACE, 'labels': dict(labels),
                             'ownerReferences': [{'uid': owner['metadata']['uid'], 'controller': True}]},
                'data': {'spec': {'template': dict(copy.deepcopy(tmpl), **{'$patch': 'replace'})}}}
            self._touch(rev)
            rev['metadata']['labels']['controller-revision-hash'] = hashed
        return name, hashed

    def _statefulset(self, sts):
        spec, status = sts['spec'], dict(sts.get('status') or {})
        name = sts['metadata']['name']
        revision, _hashed = self._revision(sts, spec['template'], spec['selector']['matchLabels'])
        status['updateRevision'] = revision
        status.setdefault('currentRevision', revision)
        strategy = spec.get('updateStrategy') or {'type': 'RollingUpdate'}
        partition = (strategy.get('rollingUpdate') or {}).get('partition') or 0
        for ordinal in range(spec['replicas']):
            pod_name = '%s-%d' % (name, ordinal)
            pod = self.pods.get(pod_name)
            replace = pod is not None and strategy.get('type', 'RollingUpdate') == 'RollingUpdate' and \
                ordinal >= partition and pod['metadata']['labels'].get('controller-revision-hash') != revision
            if pod is None or replace:
                labels = {'controller-revision-hash': revision, 'apps.kubernetes.io/pod-index': str(ordinal)}
                self.spawn(sts, pod_name, spec['template'], labels)
        pods = self.owned(sts)
        updated = [p for p in pods if p['metadata']['labels'].get('controller-revision-hash') == revision]
        ready = [p for p in pods if _ready(p)]
        status.update(replicas=len(pods), readyReplicas=len(ready), updatedReplicas=len(updated))
        if strategy.get('type', 'RollingUpdate') == 'RollingUpdate' and len(updated) == len(ready) == spec['replicas']:
            status['currentRevision'] = revision
        self._observed(sts, status)

    def _daemonset(self, ds):
        spec, status = ds['spec'], dict(ds.get('status') or {})
        name = ds['metadata']['name']
        annotations = ds['metadata'].setdefault('annotations', {})
        _revision, hashed = self._revision(ds, spec['template'], spec['selector']['matchLabels'])
        if annotations.get('inplace.test/hash') != hashed:
            annotations['inplace.test/hash'] = hashed
            generation = int(annotations.get('deprecated.daemonset.template.generation') or 0) + 1
            annotations['deprecated.daemonset.template.generation'] = str(generation)
        generation = annotations['deprecated.daemonset.template.generation']
        rolling = (spec.get('updateStrategy') or {}).get('type', 'RollingUpdate') == 'RollingUpdate'
        for node in range(self.nodes):
            pod_name = '%s-node%d' % (name, node)
            pod = self.pods.get(pod_name)
            if pod is None or rolling and pod['metadata']['labels'].get('controller-revision-hash') != hashed:
                labels = {'controller-revision-hash': hashed, 'pod-template-generation': generation}
                self.spawn(ds, pod_name, spec['template'], labels)
        pods = self.owned(ds)
        status.update(desiredNumberScheduled=self.nodes, numberReady=len([p for p in pods if _ready(p)]),
                      updatedNumberScheduled=len([p for p in pods if p['metadata']['labels'].get(
                          'controller-revision-hash') == hashed]))
        self._observed(ds, status)

    def _deployment(self, deploy):
        spec, status = deploy['spec'], dict(deploy.get('status') or {})
        wanted = template_hash(spec['template'])
        sets = [rs for rs in self.of_kind('ReplicaSet')
                if any(ref['uid'] == deploy['metadata']['uid'] for ref in rs['metadata']['ownerReferences'])]
        current = [rs for rs in sets if template_hash(rs['spec']['template']) == wanted]
        revisions = [int((rs['metadata'].get('annotations') or {}).get(REVISION) or 0) for rs in sets
                     if not current or rs is not current[0]]
        if not spec.get('paused'):
            if not current:
                tmpl = copy.deepcopy(spec['template'])
                tmpl['metadata'].setdefault('labels', {})['pod-template-hash'] = wanted
                owner = {'uid': deploy['metadata']['uid'], 'controller': True, 'kind': 'Deployment',
                         'name': deploy['metadata']['name']}
                selector = {'matchLabels': dict(spec['selector']['matchLabels'], **{'pod-template-hash': wanted})}
                rs = {'kind': 'ReplicaSet',
                      'metadata': {'name': '%s-%s' % (deploy['metadata']['name'], wanted), 'namespace': NAMESPACE,
                                   'labels': dict(tmpl['metadata']['labels']), 'ownerReferences': [owner]},
                      'spec': {'replicas': spec['replicas'], 'template': tmpl, 'selector': selector}}
                rs['metadata'].update(uid='uid-%s-%d' % (rs['metadata']['name'], next(self._uids)), generation=1)
                rs['metadata']['annotations'] = dict(_copied(deploy), **{REVISION: str(max(revisions or [0]) + 1)})
                self.objects[('replicasets', rs['metadata']['name'])] = rs
                self._touch(rs)
                current = [rs]
                sets.append(rs)
            annotations = current[0]['metadata'].setdefault('annotations', {})
            # the new ReplicaSet: the next revision when its own is lower, the Deployment's annotations copied
            if int(annotations.get(REVISION) or 0) <= max(revisions or [0]):
                annotations[REVISION] = str(max(revisions) + 1)
            annotations.update(_copied(deploy))
            for rs in sets:
                replicas = spec['replicas'] if rs is current[0] else 0
                if rs['spec']['replicas'] != replicas:
                    rs['spec']['replicas'] = replicas
                    rs['metadata']['generation'] += 1
                    self._touch(rs)
                self._replicaset(rs)
        pods = [p for rs in sets for p in self.owned(rs)]
        updated = [p for rs in current for p in self.owned(rs)]
        status.update(replicas=len(pods), updatedReplicas=len(updated),
                      availableReplicas=len([p for p in pods if _ready(p)]), readyReplicas=len([p for p in pods if _ready(p)]))
        self._observed(deploy, status)

    def _replicaset(self, rs):
        spec, status = rs['spec'], dict(rs.get('status') or {})
        pods = self.owned(rs)
        for pod in pods[spec['replicas']:]:
            self.delete_pod(pod['metadata']['name'])
        taken = set(self.pods)
        for index in range(len(pods), spec['replicas']):
            name = next('%s-%d' % (rs['metadata']['name'], n) for n in itertools.count(index) if
                        '%s-%d' % (rs['metadata']['name'], n) not in taken)
            taken.add(name)
            self.spawn(rs, name, spec['template'])
        pods = self.owned(rs)
        status.update(replicas=len(pods), readyReplicas=len([p for p in pods if _ready(p)]))
        self._observed(rs, status)


def _copied(deploy):
    """The Deployment's annotations its controller copies to the new ReplicaSet."""
    return dict((k, v) for k, v in (deploy['metadata'].get('annotations') or {}).items()
                if k != REVISION and not k.startswith('inplace.k8s/'))


def _ready(pod):
    return any(c.get('type') == 'Ready' and c.get('status') == 'True' for c in pod['status'].get('conditions') or [])
