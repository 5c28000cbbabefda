# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The soak's cluster access: its API client (as the cluster's admin, stdlib only), small readers of objects
and the workloads it rolls (tests/soak/soak.py)."""

from __future__ import absolute_import, division, print_function

import http.client
import json
import os
import ssl
import time

import moves


HISTORY_HASH_PREFIX = 'i'   # history.OUR_HASH_PREFIX: a pod-template-hash the Deployment controller never makes

GATE = 'inplace.k8s/ready'
CONTAINER = 'app'
IMAGES = ('registry.example/soak:1.0', 'registry.example/soak:2.0')   # --images alternate; else a new tag each time
SOAK_LABEL = 'inplace.k8s/soak'
TOUCH_ANNOTATION = 'soak.inplace.k8s/touched'
MANAGER = 'inplace.k8s'          # the collection's User-Agent: its field manager in managedFields
KINDS = ('apiserver', 'controller-manager', 'node', 'kill-term', 'kill-kill', 'writer-pod-image',
         'writer-template', 'writer-annotations', 'api-429', 'api-5xx', 'watch-stall') + moves.MOVE_KINDS
PROXY_KINDS = ('api-429', 'api-5xx', 'watch-stall')
INVARIANTS = ('pod-recreated', 'pod-drained', 'off-target-no-reason', 'not-converged', 'template-pods-differ',
              'controller-held', 'bystander-touched', 'gone-as-failed', 'move-halted')
PDB_MAX_UNAVAILABLE = '50%'      # the workloads' PodDisruptionBudget when pods move (the drains honour it)
ACTIVE_RECORD = ('in-progress', 'rolling-back')
API_PATIENCE = 150               # seconds a cluster call keeps retrying connection errors (API server restart)


class ApiError(Exception):
    def __init__(self, status, body):
        Exception.__init__(self, '%s: %s' % (status, (body or '')[:300]))
        self.status = status


class Api(object):
    """JSON requests to the local cluster's API server as its admin (stdlib only)."""

    def __init__(self, clusterdir, server=None):
        pki = os.path.join(clusterdir, 'pki')
        if server is None:
            with open(os.path.join(clusterdir, 'state.json')) as handle:
                server = json.load(handle)['server']
        self.host, port = server.split('://', 1)[1].rsplit(':', 1)
        self.port = int(port)
        self.context = ssl.create_default_context(cafile=os.path.join(pki, 'ca.crt'))
        self.context.load_cert_chain(os.path.join(pki, 'admin.crt'), os.path.join(pki, 'admin.key'))

    def once(self, method, path, body=None, content_type='application/merge-patch+json', timeout=30):
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        try:
            headers = {'Accept': 'application/json', 'User-Agent': 'inplace-soak'}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers['Content-Type'] = content_type
            connection.request(method, path, body=data, headers=headers)
            answer = connection.getresponse()
            text = answer.read().decode('utf-8', 'replace')
        finally:
            connection.close()
        if answer.status >= 300:
            raise ApiError(answer.status, text)
        return json.loads(text) if text else {}

    def call(self, method, path, body=None, content_type='application/merge-patch+json', patience=API_PATIENCE):
        """once(), retrying connection errors and 429/5xx for ``patience`` seconds."""
        deadline = time.monotonic() + patience
        while True:
            try:
                return self.once(method, path, body, content_type)
            except (OSError, http.client.HTTPException) as exc:
                error = exc
            except ApiError as exc:
                if exc.status not in (429, 500, 502, 503, 504):
                    raise
                error = exc
            if time.monotonic() > deadline:
                raise RuntimeError('the API server did not answer %s %s within %ss: %s' % (method, path, patience, error))
            time.sleep(1)

    def get(self, path):
        return self.call('GET', path)

    def items(self, path):
        return self.get(path).get('items') or []


# --------------------------------------------------------------------------- small helpers

def meta(obj, key, default=None):
    return (obj.get('metadata') or {}).get(key, default)


def condition(pod, kind):
    for item in (pod.get('status') or {}).get('conditions') or []:
        if item.get('type') == kind:
            return item
    return None


def container(pod_or_template, name=CONTAINER):
    for item in (pod_or_template.get('spec') or {}).get('containers') or []:
        if item.get('name') == name:
            return item
    return {}


def container_status(pod, name=CONTAINER):
    for item in (pod.get('status') or {}).get('containerStatuses') or []:
        if item.get('name') == name:
            return item
    return {}


def wait_until(predicate, timeout, interval=1.0):
    """True once predicate() is true, False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


def pod_template(image, labels):
    return {'metadata': {'labels': labels},
            'spec': {'terminationGracePeriodSeconds': 1, 'enableServiceLinks': False,
                     'readinessGates': [{'conditionType': GATE}],
                     'containers': [{'name': CONTAINER, 'image': image}]}}


# --------------------------------------------------------------------------- the workloads

class Workload(object):
    """One Deployment or StatefulSet the soak rolls (or a bystander)."""

    def __init__(self, api, kind, namespace, name, replicas):
        self.api, self.kind, self.namespace, self.name, self.replicas = api, kind, namespace, name, replicas
        self.resource = 'deployments' if kind == 'Deployment' else 'statefulsets'
        self.labels = {'app': name}
        self.image = IMAGES[0]        # the image it converged to last
        self.baseline = {}            # pod name -> uid
        self.replicaset = None        # Deployment: uid of its one ReplicaSet
        self.strategy = None          # what the spec holds when released

    @property
    def path(self):
        return '/apis/apps/v1/namespaces/%s/%s/%s' % (self.namespace, self.resource, self.name)

    def create(self):
        spec = {'replicas': self.replicas, 'selector': {'matchLabels': self.labels},
                'template': pod_template(IMAGES[0], self.labels)}
        if self.kind == 'Deployment':
            spec['strategy'] = {'type': 'RollingUpdate', 'rollingUpdate': {'maxSurge': '25%', 'maxUnavailable': '25%'}}
        else:
            spec.update(serviceName=self.name, podManagementPolicy='Parallel',
                        updateStrategy={'type': 'RollingUpdate', 'rollingUpdate': {'partition': 0}})
        self.api.call('POST', '/apis/apps/v1/namespaces/%s/%s' % (self.namespace, self.resource),
                      {'apiVersion': 'apps/v1', 'kind': self.kind, 'metadata': {'name': self.name}, 'spec': spec},
                      content_type='application/json')

    def read(self):
        return self.api.get(self.path)

    def pods(self):
        pods = self.api.items('/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s' % (self.namespace, self.name))
        return sorted([p for p in pods if not meta(p, 'deletionTimestamp')], key=lambda p: meta(p, 'name'))

    def replicasets(self):
        return self.api.items('/apis/apps/v1/namespaces/%s/replicasets?labelSelector=app%%3D%s'
                              % (self.namespace, self.name))

    def running_replicasets(self):
        """The ReplicaSets of the Deployment but those that only keep its revision history: the template of an
        in-place rollout's before, kept without replicas under a pod-template-hash of ours (HISTORY_HASH_PREFIX)."""
        return [rs for rs in self.replicasets() if (rs.get('spec') or {}).get('replicas')
                or not (meta(rs, 'labels') or {}).get('pod-template-hash', '').startswith(HISTORY_HASH_PREFIX)]

    def containers_ready(self):
        pods = self.pods()
        return len(pods) == self.replicas and all(
            (condition(p, 'ContainersReady') or {}).get('status') == 'True' for p in pods)

    def open_gates(self):
        """Set the gate True where it is absent (new pods: nothing else opens it here)."""
        for pod in self.pods():
            if condition(pod, GATE) is None:
                self.api.call('PATCH', '/api/v1/namespaces/%s/pods/%s/status' % (self.namespace, meta(pod, 'name')),
                              {'status': {'conditions': [{'type': GATE, 'status': 'True', 'reason': 'SoakSetUp'}]}},
                              content_type='application/strategic-merge-patch+json')

    def ready(self):
        pods = self.pods()
        return len(pods) == self.replicas and all((condition(p, 'Ready') or {}).get('status') == 'True' for p in pods)

    def wait_created(self, timeout):
        if not wait_until(self.containers_ready, timeout):
            raise RuntimeError('%s %s/%s: %d pods with ready containers not reached within %ss'
                               % (self.kind, self.namespace, self.name, self.replicas, timeout))
        self.open_gates()
        if not wait_until(self.ready, timeout):
            raise RuntimeError('%s %s/%s: %d ready pods not reached within %ss'
                               % (self.kind, self.namespace, self.name, self.replicas, timeout))
        status_done = (lambda: (self.read().get('status') or {}).get('availableReplicas') == self.replicas) \
            if self.kind == 'Deployment' else (lambda: (self.read().get('status') or {}).get('readyReplicas') == self.replicas)
        wait_until(status_done, timeout)
        self.snapshot_baseline()

    def snapshot_baseline(self):
        self.baseline = dict((meta(p, 'name'), meta(p, 'uid')) for p in self.pods())
        obj = self.read()
        self.strategy = self.released_spec(obj)
        if self.kind == 'Deployment':
            self.replicaset = sorted(meta(rs, 'uid') for rs in self.running_replicasets())

    def released_spec(self, obj):
        spec = obj.get('spec') or {}
        if self.kind == 'Deployment':
            return {'paused': bool(spec.get('paused'))}
        return {'updateStrategy': spec.get('updateStrategy')}

    def held(self, obj):
        spec = obj.get('spec') or {}
        if self.kind == 'Deployment':
            return bool(spec.get('paused'))
        strategy = spec.get('updateStrategy') or {}
        return strategy.get('type') == 'OnDelete' or (
            ((strategy.get('rollingUpdate') or {}).get('partition') or 0) >= (spec.get('replicas') or 0) > 0)
