# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory API server + kubelet for engine tests: JSON patches with real `test` semantics,
resourceVersion/generation bumps, a kubelet that restarts changed containers at once (tags ending
in -pullfail fail to pull, -crash crash-loop) and folds readiness gates into Ready."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import itertools
import threading

import jsonpatch

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH, Kube
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, ConflictError, NotFoundError, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate


# The APIs of CRDs (and autoscaling.k8s.io) a fake cluster does not serve: 404, as a cluster without them.
NOT_SERVED = ('/apis/autoscaling', '/apis/argoproj.io', '/apis/kustomize.toolkit', '/apis/helm.toolkit')


class FakeCluster(object):

    def __init__(self, pods, kubelet=True):
        self.pods = dict((p['metadata']['name'], copy.deepcopy(p)) for p in pods)
        self.kubelet = kubelet
        self.calls = []
        self.before_write = None     # hook(cluster, name): runs before a spec patch is applied
        self.admission = None        # hook(pod): a mutating webhook on spec writes (may change the pod, or raise)
        self._ids = itertools.count(1)
        self._version = itertools.count(2000)
        self.watches_end = threading.Event()   # set: every watch of this cluster ends at once (and so do later ones)

    # ---- the API used by module_utils

    namespaces = None                # names of the namespaces that exist (None: every one)
    services = {}                    # Service name -> selector: the EndpointSlices list its Ready pods
    objects = {}                     # other paths GET answers (a pod's controller, for example)
    undeletable = ()                 # names of pods a DELETE is refused for (403)
    pod_path = staticmethod(Kube.pod_path)

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append(('request', method, path))
        name = path.rsplit('/', 1)[-1]
        if method == 'GET' and path.startswith('/api/v1/namespaces/') and path.count('/') == 4:
            if self.namespaces is not None and name not in self.namespaces:
                raise NotFoundError('namespaces "%s" not found' % name, status=404)
            return {'metadata': {'name': name}}
        if path.endswith('/selfsubjectaccessreviews'):
            return {'status': {'allowed': True}}
        if method == 'GET' and path.endswith('/endpointslices'):
            return {'items': [self._slice(service, selector) for service, selector in sorted(self.services.items())]}
        if method == 'GET' and path in self.objects:
            if isinstance(self.objects[path], Exception):
                raise self.objects[path]
            return copy.deepcopy(self.objects[path])
        if method == 'GET' and path.startswith(NOT_SERVED):
            raise NotFoundError('the server could not find the requested resource', status=404)
        if method == 'POST' and path.endswith('/pods'):
            return self._create(body)
        if method == 'DELETE' and '/pods/' in path:
            if name not in self.pods:
                raise NotFoundError('pods "%s" not found' % name, status=404)
            if name in self.undeletable:
                raise ApiError('pods "%s" is forbidden' % name, status=403)
            del self.pods[name]
            return {}
        raise NotImplementedError(path)

    def get_managed(self, path):
        return self.request('GET', path)

    def list_collection(self, path, label_selector=None, field_selector=None):
        parts = path.strip('/').split('/')
        if parts[:3] == ['api', 'v1', 'namespaces'] and parts[4:] == ['pods']:
            return self.list_pods(parts[3], label_selector, field_selector)
        answer = self.request('GET', path, {'labelSelector': label_selector, 'fieldSelector': field_selector})
        return answer.get('items') or [], '1'

    def watch_collection(self, path, resource_version, label_selector=None, field_selector=None,
                         timeout_seconds=60):
        """A quiet watch: no event until the server would end it (``timeout_seconds``, or ``watches_end``
        set). What the code under test needs to see of its own writes it offers to its watcher (observe)."""
        self.watches_end.wait(timeout_seconds)
        yield from ()

    def request_once(self, method, path, query=None, body=None, content_type=None):
        """The Events API (operations/events.py): events.k8s.io Events kept in ``kube_events`` by name."""
        if '/apis/events.k8s.io/v1/' not in path:
            raise NotImplementedError(path)
        store = self.__dict__.setdefault('kube_events', {})
        if method == 'POST':
            store[body['metadata']['name']] = copy.deepcopy(body)
            return copy.deepcopy(body)
        name = path.rsplit('/', 1)[-1]
        if name not in store:
            raise NotFoundError('events "%s" not found' % name, status=404)
        store[name].update(copy.deepcopy(body))
        return copy.deepcopy(store[name])

    def _create(self, body):
        """A pod created (a pre-pull pod): its kubelet pulls each image at once, images ending in -pullfail fail to
        pull, in -slowpull are still pulling; a pulled image's container cannot start (prepull.NOOP_COMMAND)."""
        pod = copy.deepcopy(body)
        name = pod['metadata']['name']
        if name in self.pods:
            raise ConflictError('pods "%s" already exists' % name, status=409)
        pod['metadata'].update(uid='uid-%s' % name, resourceVersion=str(next(self._version)))
        statuses = []
        for container in pod['spec']['containers']:
            image = container['image']
            waiting = {'reason': 'CreateContainerError', 'message': 'no such file or directory'}
            if image.endswith('-pullfail'):
                waiting = {'reason': 'ErrImagePull', 'message': 'pull %s failed' % image}
            elif image.endswith('-slowpull'):
                waiting = {'reason': 'ContainerCreating'}
            statuses.append({'name': container['name'], 'image': image, 'state': {'waiting': waiting}})
        pod['status'] = {'containerStatuses': statuses}
        self.pods[name] = pod
        return copy.deepcopy(pod)

    def get_pod(self, namespace, name):
        self.calls.append(('get', name))
        if name not in self.pods:
            raise NotFoundError('pods "%s" not found' % name, status=404)
        return copy.deepcopy(self.pods[name])

    def list_pods(self, namespace, label_selector=None, field_selector=None):
        return [copy.deepcopy(p) for p in self.pods.values()], str(next(self._version))

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None, dry_run=False):
        pod = self.pods[name]
        if dry_run:
            self.calls.append(('dry-run', name, subresource))
            patched = jsonpatch.apply_patch(pod, body)
            if self.admission:
                self.admission(patched)
            return copy.deepcopy(patched)
        self.calls.append(('patch', name, subresource))
        if self.before_write:
            hook, self.before_write = self.before_write, None
            hook(self, name)
        if content_type == MERGE_PATCH and subresource is None:
            # Metadata merge patches (labels, annotations), a resourceVersion in them a precondition.
            metadata = body.get('metadata') or {}
            if metadata.get('resourceVersion') not in (None, pod['metadata']['resourceVersion']):
                raise ConflictError('Operation cannot be fulfilled on pods "%s": the object has been modified' % name,
                                    status=409)
            for key in ('labels', 'annotations'):
                pod['metadata'].setdefault(key, {}).update(metadata.get(key) or {})
            self._touch(pod)
        elif subresource == 'status':
            # Like the API server: a resourceVersion in a merge patch is a precondition (409), and
            # pods/status takes annotations too.
            metadata = body.get('metadata') or {}
            if metadata.get('resourceVersion') not in (None, pod['metadata']['resourceVersion']):
                raise ConflictError('Operation cannot be fulfilled on pods "%s": the object has been modified' % name,
                                    status=409)
            pod['metadata'].setdefault('annotations', {}).update(metadata.get('annotations') or {})
            for item in body['status']['conditions']:
                conditions = pod['status']['conditions']
                conditions[:] = [c for c in conditions if c['type'] != item['type']] + [item]
            self._touch(pod)
        else:
            try:
                patched = jsonpatch.apply_patch(pod, body)
            except jsonpatch.JsonPatchTestFailed as exc:
                raise ConflictError('testing value failed: test failed (%s)' % exc, status=422)
            if patched['spec'] != pod['spec'] and self.admission:
                self.admission(patched)
            if patched['spec'] != pod['spec']:
                patched['metadata']['generation'] = pod['metadata'].get('generation', 1) + 1
            self.pods[name] = pod = patched
            self._touch(pod)
        if self.kubelet:
            self.run_kubelet(name)
        return copy.deepcopy(pod)

    def _slice(self, service, selector):
        endpoints = []
        for pod in sorted(self.pods.values(), key=lambda p: p['metadata']['name']):
            labels = pod['metadata'].get('labels') or {}
            if all(labels.get(k) == v for k, v in selector.items()):
                endpoints.append({'addresses': [pod['status'].get('podIP')], 'conditions': {
                    'ready': podstate.is_ready(pod)}, 'targetRef': {'kind': 'Pod', 'uid': pod['metadata']['uid']}})
        return {'metadata': {'name': service + '-abcde', 'labels': {'kubernetes.io/service-name': service}},
                'endpoints': endpoints}

    # ---- test helpers

    def set_image(self, name, container, image):
        """Another writer changes an image (bumps generation and resourceVersion)."""
        pod = self.pods[name]
        podstate.find_container(pod, container).spec['image'] = image
        pod['metadata']['generation'] += 1
        self._touch(pod)
        if self.kubelet:
            self.run_kubelet(name)

    def _touch(self, pod):
        pod['metadata']['resourceVersion'] = str(next(self._version))

    def run_kubelet(self, name):
        pod = self.pods[name]
        for info in podstate.containers(pod):
            if info.kind == podstate.INIT:
                continue
            image, status = info.spec['image'], info.status
            if status.get('image') == image and 'running' in status.get('state', {}):
                continue
            if image.endswith('-pullfail'):
                status.update(state={'waiting': {'reason': 'ErrImagePull', 'message': 'pull %s failed' % image}},
                              ready=False, started=False)
            elif image.endswith('-crash'):
                status.update(state={'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}},
                              ready=False, started=False, containerID='fake://%s_%d' % (info.name, next(self._ids)),
                              restartCount=status.get('restartCount', 0) + 1, image=image)
            else:
                status.update(state={'running': {'startedAt': 'now'}}, ready=True, started=True, image=image,
                              containerID='fake://%s_%d' % (info.name, next(self._ids)),
                              restartCount=status.get('restartCount', 0) + 1)
        infos = [i for i in podstate.containers(pod) if i.kind != podstate.INIT]
        ready = all(i.status.get('ready') for i in infos) and all(
            podstate.condition_is(pod, g['conditionType'], 'True') for g in pod['spec'].get('readinessGates', []))
        podstate.condition(pod, 'Ready')['status'] = 'True' if ready else 'False'
        pod['status']['observedGeneration'] = pod['metadata'].get('generation')
        self._touch(pod)


class FakeWatcher(object):
    """The waiter's interface over a FakeCluster: the fake kubelet is synchronous, so a predicate
    that is not true now never will be (WaitTimeout at once)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.waits = []

    stopped = False   # the watch was stopped (the end of a with block)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stopped = True

    def get(self, name):
        pod = self.cluster.pods.get(name)
        return copy.deepcopy(pod) if pod else None

    def observe(self, pod):
        pass

    def freshest(self, pod):
        latest = self.get(podstate.meta(pod, 'name'))
        return latest if latest is not None and podstate.meta(latest, 'uid') == podstate.meta(pod, 'uid') else pod

    def hold(self, name, failed, seconds):
        pod = self.get(name)
        failure = failed(pod)
        if failure is not None:
            raise failure
        return pod

    during_wait = None   # hook(cluster, name): runs once, when the next wait starts (another writer)

    def wait_for(self, name, done, failed=None, timeout=300):
        self.waits.append(name)
        if self.during_wait:
            hook, self.during_wait = self.during_wait, None
            hook(self.cluster, name)
        pod = self.get(name)
        failure = failed(pod) if failed else None
        if failure is not None:
            raise failure
        if pod is not None and done(pod):
            return pod
        raise WaitTimeout('pod %s: timed out' % name)


class FakePodWatcher(FakeWatcher):
    """waiter.PodWatcher's construction and lifecycle over FakeWatcher."""

    def __init__(self, kube, namespace, label_selector=None, field_selector=None):
        super(FakePodWatcher, self).__init__(kube)

    def start(self, pods=None, resource_version=None):
        return self

    def stop(self):
        pass

    def items(self):
        return [self.get(name) for name in sorted(self.cluster.pods)]

    def changes(self, since):
        """Cannot tell what changed: every look judges every pod again."""
        return (since or 0) + 1, None
