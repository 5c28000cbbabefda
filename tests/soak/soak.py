#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Chaos soak of the rollout role on the local cluster (hack/soak.sh, `make soak`; issue 19).

A Deployment and a StatefulSet of PODS pods each (readiness-gated) are rolled, one per scenario and
in turn, each time to a new image tag (--images alternate: back and forth between two) by ``ansible-playbook playbooks/rollout.yml``; during each first run one
fault fires at a random moment (seeded): an API server, controller-manager or node (kubelet) restart,
ansible-playbook killed (SIGTERM to it, as AWX cancels a job, or SIGKILL to it and every process under it), another
writer (a pod's image or the held template set to a third image, or annotations written again and
again so that guarded writes conflict), a burst of 429 or 5xx answers or a stalled watch (through
tests/faults/proxy.py), or a fault that moves pods (tests/soak/moves.py: an eviction, a node drain, a pod deleted,
a scale up or down, a node's kubelet stopped; with these the workloads get a PodDisruptionBudget and the readiness
gate's admission policy, which opens the gate of the pods their controllers create). Then the rollout is run
again, a bounded number of times, until it succeeds, and the invariants are checked on the cluster's own state:

  pod-recreated         a pod of the workload went away or is new with no cause on record (tests/soak/judge.py:
                        the soak's fault log, the runs' results ``gone`` / ``replaced``, the cluster's
                        DisruptionTarget conditions and eviction events), or the Deployment has another ReplicaSet
                        (the ReplicaSets that keep the revision history of an in-place rollout,
                        plugins/module_utils/rollout/history.py, do not count while they have no replicas)
  pod-drained           a pod's readiness-gate condition is not True (left drained)
  off-target-no-reason  a pod does not run the target (spec, status, ready) and its record says nothing
  not-converged         a pod is off target and its record says why (the rollout did not converge)
  template-pods-differ  the template (and the Deployment's ReplicaSet / the StatefulSet's revision) is not
                        the target, or the pods' revision labels or the controller's status disagree
  controller-held       the workload is still held (paused, partition, OnDelete), its rollout record is not
                        done, or a pod's record is still active
  bystander-touched     anything of the bystander namespace changed (same names and labels as the targets)
  gone-as-failed        a pod that the soak evicted, deleted, drained or scaled down is in a run's failed_pods
  move-halted           the first run failed under a fault that only moved pods (evict, drain, delete-pod, scale)

A writer that sets a third image changes what a pod or the template runs on purpose: the role must
not overwrite it silently (it reports conflict and halts, the workload held), and the re-run, once the
writer is done, writes the requested target again: the soak expects convergence to the requested
target. The template writer writes only while the workload is held by the role (a write guarded by the
resourceVersion at which it saw the workload held): a template edited on a released Deployment is a
native rollout that recreates every pod, which is nothing the role can prevent.

Every first run is followed by at least one more run when the fault fired after it had ended, so the
state is always judged after a run that started after the fault. Exit 1 on any violation or when a
rollout did not converge within --reruns runs. Prints a table and writes a JSON summary (--json).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import collections
import http.client
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import yaml

import judge
import moves
import table as summary_table

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


def rollout_record(obj):
    raw = (meta(obj, 'annotations') or {}).get('inplace.k8s/rollout')
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {'unreadable': raw}


def pod_records(pod):
    raw = (meta(pod, 'annotations') or {}).get('inplace.k8s/state')
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {'unreadable': {'state': 'unreadable'}}
    return value if isinstance(value, dict) else {}


def normal_image(image):
    """The runtime's report of an image (tests/cluster: a registry host stays, no tag means latest)."""
    image = (image or '').split('@', 1)[0]
    if '/' not in image.split(':', 1)[0] or '.' not in image.split('/', 1)[0]:
        image = 'docker.io/' + (image if '/' in image else 'library/' + image)
    return image if ':' in image.rsplit('/', 1)[-1] else image + ':latest'


def on_target(pod, target):
    spec_image = container(pod).get('image') or ''
    status = container_status(pod)
    return (spec_image.split('@', 1)[0] == target and normal_image(status.get('image')) == normal_image(target)
            and 'running' in (status.get('state') or {}) and status.get('ready') is True)


# --------------------------------------------------------------------------- invariants

def check_invariants(w, target, moved=None):
    """{invariant: [what, ...]} for workload ``w`` after its rollout to ``target``. ``moved``: what judge.py needs
    to tell a legitimate recreation ({tracked, gone, created}); without it every recreation is one of ours."""
    found = collections.defaultdict(list)
    obj = w.read()
    pods = w.pods()
    uids = dict((meta(p, 'name'), meta(p, 'uid')) for p in pods)
    moved = moved or {}
    flagged, explained = judge.judge_recreations(w.baseline, uids, moved.get('tracked') or {}, moved.get('gone') or {},
                                                 moved.get('created') or {})
    found['pod-recreated'].extend(flagged)
    if explained:
        found['explained'] = explained     # not an invariant: the legitimate recreations, for the record
    if w.kind == 'Deployment':
        sets = w.running_replicasets()
        if sorted(meta(rs, 'uid') for rs in sets) != w.replicaset:
            found['pod-recreated'].append('ReplicaSets now %s (created with %s)' % (
                ', '.join('%s(%s replicas)' % (meta(rs, 'name'), (rs.get('spec') or {}).get('replicas')) for rs in sets),
                w.replicaset))
    for pod in pods:
        name = meta(pod, 'name')
        gate = condition(pod, GATE)
        if not gate or gate.get('status') != 'True':
            found['pod-drained'].append('%s: %s %s' % (name, GATE, json.dumps(gate)))
        records = pod_records(pod)
        if not on_target(pod, target):
            status = container_status(pod)
            what = '%s: spec %s, status %s ready %s' % (name, container(pod).get('image'), status.get('image'),
                                                        status.get('ready'))
            reasons = ['%s %s: %s' % (op, rec.get('state'), rec.get('error') or rec.get('reason'))
                       for op, rec in sorted(records.items()) if isinstance(rec, dict)
                       and (rec.get('error') or rec.get('reason') or rec.get('state') == 'failed')]
            if reasons:
                found['not-converged'].append('%s; record: %s' % (what, '; '.join(reasons)))
            else:
                found['off-target-no-reason'].append(what)
        for op, rec in sorted(records.items()):
            if isinstance(rec, dict) and rec.get('state') in ACTIVE_RECORD and not on_target(pod, target):
                found['controller-held'].append('%s: %s record still %s' % (name, op, rec.get('state')))
    template_image = container(obj['spec']['template']).get('image')
    if template_image != target:
        found['template-pods-differ'].append('template image %s, target %s' % (template_image, target))
    status = obj.get('status') or {}
    if (status.get('observedGeneration') or 0) < (meta(obj, 'generation') or 0):
        found['template-pods-differ'].append('status.observedGeneration %s < generation %s' % (
            status.get('observedGeneration'), meta(obj, 'generation')))
    if status.get('updatedReplicas') != w.replicas:
        found['template-pods-differ'].append('status.updatedReplicas %s of %s' % (status.get('updatedReplicas'), w.replicas))
    if w.kind == 'Deployment':
        live = [rs for rs in w.replicasets() if (rs.get('spec') or {}).get('replicas')]
        for rs in live:
            rs_image = container(rs['spec']['template']).get('image')
            rs_hash = (meta(rs, 'labels') or {}).get('pod-template-hash')
            if rs_image != target:
                found['template-pods-differ'].append('ReplicaSet %s image %s' % (meta(rs, 'name'), rs_image))
            off = [meta(p, 'name') for p in pods if (meta(p, 'labels') or {}).get('pod-template-hash') != rs_hash]
            if off:
                found['template-pods-differ'].append('pods %s not of ReplicaSet %s' % (off, meta(rs, 'name')))
        if len(live) != 1:
            found['template-pods-differ'].append('%d ReplicaSets with replicas' % len(live))
    else:
        revision = status.get('updateRevision')
        if status.get('currentRevision') != revision:
            found['template-pods-differ'].append('currentRevision %s, updateRevision %s' % (
                status.get('currentRevision'), revision))
        off = [meta(p, 'name') for p in pods if (meta(p, 'labels') or {}).get('controller-revision-hash') != revision]
        if off:
            found['template-pods-differ'].append('pods %s not of revision %s' % (off, revision))
    if w.released_spec(obj) != w.strategy:
        found['controller-held'].append('spec %s, released it is %s' % (
            json.dumps(w.released_spec(obj)), json.dumps(w.strategy)))
    rec = rollout_record(obj)
    if rec.get('state') != 'done':
        found['controller-held'].append('rollout record state %s' % rec.get('state'))
    return found


def bystander_state(api, namespace):
    """What must not change in the bystander namespace: per object, its uid, generation, spec (pods: images),
    labels, annotations, and whether our field manager ever wrote it."""
    state = {}
    for path in ('/apis/apps/v1/namespaces/%s/deployments', '/apis/apps/v1/namespaces/%s/statefulsets',
                 '/apis/apps/v1/namespaces/%s/replicasets', '/api/v1/namespaces/%s/pods',
                 '/apis/apps/v1/namespaces/%s/controllerrevisions'):
        for obj in api.items(path % namespace):
            key = '%s/%s' % (path.rsplit('/', 1)[1], meta(obj, 'name'))
            spec = obj.get('spec') or {}
            if key.startswith('pods/'):
                spec = [(c.get('name'), c.get('image')) for c in spec.get('containers') or []]
                gate = (condition(obj, GATE) or {}).get('status')
            else:
                gate = None
            state[key] = {'uid': meta(obj, 'uid'), 'generation': meta(obj, 'generation'), 'spec': spec,
                          'labels': meta(obj, 'labels'), 'annotations': meta(obj, 'annotations'), 'gate': gate,
                          'ours': any(m.get('manager') == MANAGER for m in meta(obj, 'managedFields') or [])}
    return state


def bystander_diff(before, after):
    changes = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append('%s deleted' % key)
        elif key not in before:
            changes.append('%s created' % key)
        else:
            fields = [f for f in before[key] if before[key][f] != after[key][f]]
            if fields or after[key]['ours']:
                changes.append('%s: %s changed%s' % (key, ', '.join(fields) or 'nothing',
                                                     ' (written by %s)' % MANAGER if after[key]['ours'] else ''))
    return changes


# --------------------------------------------------------------------------- the soak

class Soak(object):
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.api = Api(args.clusterdir)
        with open(os.path.join(args.clusterdir, 'state.json')) as handle:
            state = json.load(handle)
        self.nodes = sorted(c['name'] for c in state['components'] if c['name'].startswith('node-'))
        self.kinds = list(args.kinds)
        self.sequence = []
        self.started = time.time()
        self.expected = {}            # kind of workload -> seconds a first run is expected to take
        self.results = []
        self.workloads = []
        self.current = None           # the ansible-playbook process running now
        self.bystander = None
        self.namespaces = []
        self.fault_log = []           # the pods the scenario's fault removed (moves.Mover)
        self.policy = None            # the readiness gate's admission policy, when pods move
        tag = '%d-%s' % (args.seed, os.urandom(2).hex())
        self.namespace = 'soak-%s' % tag
        self.bystander_namespace = 'soak-%s-bystander' % tag

    def log(self, text):
        print('[%6.1fs] %s' % (time.time() - self.started, text), flush=True)

    # ---- set-up and clean-up

    def create_namespace(self, name):
        self.api.call('POST', '/api/v1/namespaces', {'metadata': {'name': name, 'labels': {SOAK_LABEL: 'true'}}},
                      content_type='application/json')
        self.namespaces.append(name)
        if not wait_until(lambda: bool(self.api.items('/api/v1/namespaces/%s/serviceaccounts' % name)), 60):
            raise RuntimeError('no service account in namespace %s within 60s' % name)

    def set_up(self):
        self.create_namespace(self.namespace)
        self.create_namespace(self.bystander_namespace)
        pods = self.args.pods
        self.workloads = [Workload(self.api, 'Deployment', self.namespace, 'web', pods),
                          Workload(self.api, 'StatefulSet', self.namespace, 'db', pods)]
        # The bystander has the same names and labels as the targets, in another namespace.
        bystanders = [Workload(self.api, 'Deployment', self.bystander_namespace, 'web', 3),
                      Workload(self.api, 'StatefulSet', self.bystander_namespace, 'db', 2)]
        for w in self.workloads + bystanders:
            w.create()
        for w in self.workloads + bystanders:
            w.wait_created(120 + 4 * pods)
        self.bystander = bystander_state(self.api, self.bystander_namespace)
        for w in self.workloads:
            self.expected[w.kind] = 10 + 0.5 * pods
        if set(self.kinds) & set(moves.MOVE_KINDS):
            self.prepare_moves()

    def prepare_moves(self):
        """Pods that come and go need what a cluster that moves has: the readiness gate's admission policy
        (inplace.k8s.readiness_gate, scoped to the soak's namespace: it opens the gate of the pods a controller
        creates) and a PodDisruptionBudget per workload (the evictions honour it)."""
        self.policy = 'inplace-k8s-gate-%s' % self.namespace
        self.gate_policy('present')
        for w in self.workloads:
            budget = {'metadata': {'name': w.name},
                      'spec': {'maxUnavailable': PDB_MAX_UNAVAILABLE, 'selector': {'matchLabels': w.labels}}}
            self.api.call('POST', '/apis/policy/v1/namespaces/%s/poddisruptionbudgets' % w.namespace, budget,
                          content_type='application/json')
        self.log('pods move: readiness gate policy %s, PodDisruptionBudgets maxUnavailable %s' % (
            self.policy, PDB_MAX_UNAVAILABLE))

    def gate_policy(self, state):
        arguments = {'state': state, 'gate': GATE, 'policy_name': self.policy, 'namespaces': [self.namespace],
                     'kubeconfig': self.args.kubeconfig}
        done = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-i', 'localhost,',
                               '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                               '-m', 'inplace.k8s.readiness_gate', '-a', json.dumps(arguments)],
                              env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=self.args.collections, ANSIBLE_NOCOLOR='1',
                                       ANSIBLE_LOCALHOST_WARNING='False'),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)
        if done.returncode:
            raise RuntimeError('readiness_gate state=%s failed: %s' % (state, done.stdout.decode('utf-8', 'replace')[-800:]))

    def clean_up(self, keep):
        if self.policy:
            try:
                self.gate_policy('absent')
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                self.log('the readiness gate policy %s is left: %s' % (self.policy, exc))
        if keep:
            self.log('namespaces kept for inspection: %s' % ', '.join(self.namespaces))
            return
        for name in self.namespaces:
            try:
                self.api.call('DELETE', '/api/v1/namespaces/%s' % name, patience=30)
            except (ApiError, RuntimeError) as exc:
                self.log('namespace %s not deleted: %s' % (name, exc))
        for name in self.namespaces:
            if not wait_until(lambda: self._gone(name), 180, 2):
                self.log('namespace %s still terminating after 180s' % name)

    def _gone(self, name):
        try:
            self.api.once('GET', '/api/v1/namespaces/%s' % name)
            return False
        except ApiError as exc:
            return exc.status == 404
        except (OSError, http.client.HTTPException):
            return False

    # ---- ansible-playbook

    def playbook(self, w, target, label, kubeconfig=None):
        """Start ansible-playbook playbooks/rollout.yml in its own process group: (process, log path)."""
        path = os.path.join(self.args.work, label)
        extra = {'rollout_target': {'kind': w.kind, 'name': w.name, 'namespace': w.namespace},
                 'rollout_images': {CONTAINER: target}, 'rollout_batch_size': self.args.batch,
                 'rollout_min_ready_seconds': 0, 'rollout_readiness_gate': GATE,
                 'rollout_wait_timeout': self.args.wait_timeout, 'rollout_on_failure': 'halt',
                 'kubeconfig': kubeconfig or self.args.kubeconfig}
        with open(path + '.vars.json', 'w') as handle:
            json.dump(extra, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=self.args.collections, K8S_AUTH_KUBECONFIG=extra['kubeconfig'],
                   ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False',
                   ANSIBLE_SHOW_CUSTOM_STATS='True')   # rollout_result, for judge.rollout_results()
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                   '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s.vars.json' % path,
                   os.path.join(self.args.root, 'playbooks', 'rollout.yml')]
        out = open(path + '.log', 'w')
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        finally:
            out.close()
        proc.marker = path + '.vars.json'   # in the command line of ansible-playbook and of its workers
        self.current = proc
        return proc, path + '.log'

    def finish_process(self, proc, timeout):
        """Wait for the playbook (at most ``timeout`` s), then for what it left running (Ansible's workers run in
        sessions of their own: a killed ansible-playbook can leave a worker and its module running, which then
        races the next run, as it would on a real host); after 60 s those are ended too. The exit code."""
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.log('ansible-playbook (pid %d) still runs after %ss: killed' % (proc.pid, timeout))
            kill_tree(proc.pid, signal.SIGKILL)
            proc.wait(30)
        if not wait_until(lambda: not leftovers(proc.marker), 60, 0.5):
            left = leftovers(proc.marker)
            self.log('  processes of the run still there 60s after ansible-playbook ended: %s: killed' % left)
            proc.leftovers = len(left)
            for pid in left:
                kill_tree(pid, signal.SIGKILL)
            wait_until(lambda: not leftovers(proc.marker), 10, 0.5)
        self.current = None
        return proc.returncode

    def kill_group(self, pgid, sig):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def run_to_end(self, w, target, label):
        proc, log = self.playbook(w, target, label)
        start = time.time()
        rc = self.finish_process(proc, self.args.run_timeout)
        return rc, time.time() - start, log

    # ---- faults

    def next_kind(self):
        if not self.sequence:   # each round: every kind once, in a seeded order
            self.sequence = list(self.kinds)
            self.rng.shuffle(self.sequence)
        return self.sequence.pop(0)

    def draw(self, kind, w):
        """Everything random about one fault, drawn before it runs (the seed decides, not the timing)."""
        fault = {'kind': kind, 'fraction': round(self.rng.uniform(0.05, 0.85), 3)}
        fault['delay'] = round(fault['fraction'] * self.expected[w.kind], 1)
        if kind == 'node':
            fault['node'] = self.rng.choice(self.nodes)
        elif kind in ('writer-pod-image', 'writer-annotations'):
            fault['pod_index'] = self.rng.randrange(w.replicas)
        elif kind == 'api-429':
            fault.update(status=429, count=self.rng.randint(5, 30), match='.', retry_after=1)
        elif kind == 'api-5xx':
            fault.update(status=self.rng.choice([500, 502, 503, 504]), count=self.rng.randint(3, 15),
                         match='.', retry_after=0)
        elif kind in moves.MOVE_KINDS:
            fault.update(moves.draw_move(self.rng, kind, w.replicas, self.nodes))
        return fault

    def start_proxy(self, fault, label):
        """tests/faults/proxy.py on --proxy-port, its faults starting at the fault's moment; (process, kubeconfig, log)."""
        log = os.path.join(self.args.work, label + '.proxy.log')
        command = [sys.executable, os.path.join(self.args.root, 'tests', 'faults', 'proxy.py'),
                   '--clusterdir', self.args.clusterdir, '--port', str(self.args.proxy_port), '--log', log,
                   '--after', str(fault['delay'])]
        if fault['kind'] == 'watch-stall':
            command += ['--count', '0', '--stall-watches', '1', '--stall-seconds', '90']
        else:
            command += ['--match', fault['match'], '--status', str(fault['status']), '--count', str(fault['count']),
                        '--retry-after', str(fault['retry_after'])]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(log + '.err', 'w'),
                                start_new_session=True)
        if not wait_until(lambda: port_open(self.args.proxy_port) or proc.poll() is not None, 15, 0.2) \
                or proc.poll() is not None:
            raise RuntimeError('tests/faults/proxy.py did not listen on 127.0.0.1:%d (see %s.err)'
                               % (self.args.proxy_port, log))
        with open(self.args.kubeconfig) as handle:
            config = yaml.safe_load(handle)
        for cluster in config['clusters']:
            cluster['cluster']['server'] = 'https://127.0.0.1:%d' % self.args.proxy_port
        kubeconfig = os.path.join(self.args.work, label + '.proxy.kubeconfig')
        with os.fdopen(os.open(kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as handle:
            yaml.safe_dump(config, handle)
        return proc, kubeconfig, log

    def inject(self, fault, w, proc, started):
        """Run in a thread: at started + delay, inject the fault; fills fault['landed'] and fault['note']."""
        time.sleep(max(0.0, started + fault['delay'] - time.time()))
        kind = fault['kind']
        fault['landed'] = proc.poll() is None
        fault['at'] = round(time.time() - started, 1)
        try:
            if kind in ('apiserver', 'controller-manager', 'node'):
                component = fault.get('node', kind)
                done = subprocess.run([os.path.join(self.args.root, 'hack', 'cluster.sh'), 'restart', component],
                                      env=dict(os.environ, CLUSTERDIR=self.args.clusterdir),
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240, check=False)
                fault['note'] = 'restarted %s (exit %d)' % (component, done.returncode)
                if done.returncode:
                    fault['error'] = done.stdout.decode('utf-8', 'replace')[-500:]
            elif kind == 'kill-term':
                # As AWX cancels a job: SIGTERM to ansible-playbook, which ends its workers itself.
                if fault['landed']:
                    os.kill(proc.pid, signal.SIGTERM)
                fault['note'] = 'SIGTERM to ansible-playbook'
            elif kind == 'kill-kill':
                # As an OOM kill or a job container torn down: SIGKILL to ansible-playbook, its workers and modules.
                killed = kill_tree(proc.pid, signal.SIGKILL) if fault['landed'] else []
                fault['note'] = 'SIGKILL to ansible-playbook and %d process(es) under it' % max(0, len(killed) - 1)
            elif kind == 'writer-pod-image':
                pod = w.pods()[fault['pod_index'] % w.replicas]
                fault['sent_at'] = time.time()
                # As `kubectl set image pod/...` does: a strategic merge patch, no precondition.
                self.api.call('PATCH', '/api/v1/namespaces/%s/pods/%s' % (w.namespace, meta(pod, 'name')),
                              {'spec': {'containers': [{'name': CONTAINER, 'image': fault['writer_image']}]}},
                              content_type='application/strategic-merge-patch+json')
                fault['note'] = 'pod %s set to %s (was %s)' % (
                    meta(pod, 'name'), fault['writer_image'], container(pod).get('image'))
            elif kind == 'writer-template':
                fault['note'] = self.write_template(w, proc, fault['writer_image'])
            elif kind == 'writer-annotations':
                fault['note'] = self.write_annotations(w, fault['pod_index'])
            elif kind in moves.MOVE_KINDS:
                fault['note'] = moves.Mover(self.api, self.args.clusterdir, w, GATE, self.fault_log, ApiError).run(fault)
        except (ApiError, RuntimeError, OSError, subprocess.SubprocessError) as exc:
            fault['error'] = str(exc)

    @staticmethod
    def after_verified(fault, log):
        """A pod write sent after the run's end listed the pods (its result's verified_at) came after everything
        the run claims: no run can see it, so it counts as after the run (one more run must find it)."""
        if not fault.get('landed') or fault.get('sent_at') is None:
            return
        try:
            with open(log) as handle:
                verified = judge.verified_at(handle.read())
        except OSError:
            return
        if verified is not None and fault['sent_at'] > verified:
            fault['landed'] = False
            fault['note'] = fault.get('note', '') + ' (sent %.1f s after the run verified its pods: for the next run)' % (
                fault['sent_at'] - verified)

    def write_template(self, w, proc, image):
        """Set the template's image to ``image``, only while the role holds the workload (guarded by the
        resourceVersion at which it was seen held); waits for that up to 30 s while the playbook runs."""
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            obj = w.read()
            if w.held(obj) and rollout_record(obj).get('state') in ACTIVE_RECORD:
                ops = [{'op': 'test', 'path': '/metadata/resourceVersion', 'value': meta(obj, 'resourceVersion')},
                       {'op': 'replace', 'path': '/spec/template/spec/containers/0/image', 'value': image}]
                try:
                    self.api.call('PATCH', w.path, ops, content_type='application/json-patch+json', patience=10)
                    return 'template set to %s while held' % image
                except ApiError as exc:
                    if exc.status not in (409, 422):
                        raise
            time.sleep(0.3)
        return 'not written: the workload was not held while the playbook ran'

    def write_annotations(self, w, index):
        """Annotate the workload and pods again and again for 6 s (bounded: 40 writes): the guarded writes of
        the role meet 409 Conflict; nothing it compares changes."""
        writes = 0
        deadline = time.monotonic() + 6
        names = [meta(p, 'name') for p in w.pods()]
        while writes < 40 and time.monotonic() < deadline:
            body = {'metadata': {'annotations': {TOUCH_ANNOTATION: str(writes)}}}
            self.api.call('PATCH', w.path, body, patience=10)
            name = names[(index + writes) % len(names)]
            self.api.call('PATCH', '/api/v1/namespaces/%s/pods/%s' % (w.namespace, name), body, patience=10)
            writes += 2
            time.sleep(0.15)
        return '%d annotation writes on %s and its pods' % (writes, w.name)

    # ---- recovery between runs

    def recover(self):
        """After a fault: the API server answers, every node is Ready, the pods' containers are ready (bounded)."""
        self.api.call('GET', '/version')

        def nodes_ready():
            nodes = self.api.items('/api/v1/nodes')
            return len(nodes) == len(self.nodes) and all(
                (condition(n, 'Ready') or {}).get('status') == 'True' for n in nodes)
        if not wait_until(nodes_ready, 120):
            self.log('  nodes not all Ready after 120s')
        for node in self.api.items('/api/v1/nodes'):   # a fault that cordoned a node uncordons it; checked here
            if (node.get('spec') or {}).get('unschedulable'):
                self.log('  node %s left cordoned: uncordoned' % meta(node, 'name'))
                self.api.call('PATCH', '/api/v1/nodes/%s' % meta(node, 'name'), {'spec': {'unschedulable': None}})
        if not wait_until(lambda: all(w.containers_ready() for w in self.workloads), 120):
            self.log('  pods not all with ready containers after 120s')

    # ---- one scenario

    def scenario(self, index):
        w = self.workloads[index % 2]
        if self.args.images == 'alternate':
            target = IMAGES[1] if w.image == IMAGES[0] else IMAGES[0]
        else:
            target = 'registry.example/soak:%d.0' % (index + 2)
        fault = self.draw(self.next_kind(), w)
        fault['writer_image'] = 'registry.example/soak:%d.0-writer' % (index + 2)
        label = 's%03d-%s' % (index, w.kind.lower())
        result = {'scenario': index, 'workload': '%s/%s' % (w.kind, w.name), 'target': target, 'fault': fault,
                  'runs': []}
        start = time.time()
        proxy = None
        kubeconfig = None
        if fault['kind'] in PROXY_KINDS:
            proxy, kubeconfig, proxy_log = self.start_proxy(fault, label)
        self.fault_log = []       # the pods the fault removed (moves.Mover)
        tracker = judge.PodTracker(self.api, w.namespace, 'app%%3D%s' % w.name)
        proc, log = self.playbook(w, target, label + '-r0', kubeconfig)
        run_start = time.time()
        injector = threading.Thread(target=self.inject, args=(fault, w, proc, run_start))
        injector.daemon = True
        injector.start()
        rc = self.finish_process(proc, self.args.run_timeout)
        first = time.time() - run_start
        injector.join(300)
        if injector.is_alive():
            fault['error'] = 'the fault did not end within 300s'
        if proxy is not None:
            self.kill_group(proxy.pid, signal.SIGTERM)
            proxy.wait(30)
            with open(proxy_log) as handle:
                lines = handle.read().splitlines()
            hits = [line for line in lines if line.startswith(('injected', 'stalled'))]
            fault['landed'] = bool(hits)
            fault['note'] = '%d request(s) answered by the fault: %s' % (len(hits), summarize(hits))
        result['runs'].append({'rc': rc, 'seconds': round(first, 1), 'log': log, 'conflict': mentions(log, 'conflict')})
        if fault['kind'] not in ('kill-term', 'kill-kill') or not fault.get('landed'):
            self.expected[w.kind] = round(0.7 * self.expected[w.kind] + 0.3 * first, 1)
        self.after_verified(fault, log)
        self.recover()
        # Re-run until it succeeds; at least once when the fault fired after the first run had ended.
        reruns = 0
        while (rc != 0 or (reruns == 0 and not fault.get('landed'))) and reruns < self.args.reruns:
            reruns += 1
            rc, seconds, log = self.run_to_end(w, target, '%s-r%d' % (label, reruns))
            result['runs'].append({'rc': rc, 'seconds': round(seconds, 1), 'log': log})
            if rc != 0:
                self.recover()
        result['reruns'] = reruns
        result['converged'] = rc == 0
        moved = self.moved(w, tracker, result['runs'])
        violations = check_invariants(w, target, moved)
        result['explained'] = violations.pop('explained', [])
        violations['gone-as-failed'] = judge.gone_as_failed(self.fault_log, moved['results'])
        if fault.get('landed'):
            violations['move-halted'] = judge.move_halted(fault['kind'], result['runs'])
        result['moved'] = self.fault_log
        changes = bystander_diff(self.bystander, bystander_state(self.api, self.bystander_namespace))
        if changes:
            violations['bystander-touched'] = changes
            self.bystander = bystander_state(self.api, self.bystander_namespace)
        if not result['converged'] and not violations.get('not-converged'):
            violations['not-converged'].append('ansible-playbook still failed after %d re-run(s): %s' % (reruns, log))
        result['violations'] = dict((k, v) for k, v in violations.items() if v)
        result['seconds'] = round(time.time() - start, 1)
        if result['converged']:
            w.image = target
        if violations.get('pod-recreated'):
            w.snapshot_baseline()   # judge the next scenarios on their own
        elif result['explained']:   # legitimate recreations: the next scenario starts from the pods there are now
            w.baseline = dict((meta(p, 'name'), meta(p, 'uid')) for p in w.pods())
        self.results.append(result)
        self.log('%s %-12s %-19s at %5.1fs %-7s first rc %d (%5.1fs), re-runs %d, %5.1fs%s%s' % (
            label, w.kind, fault['kind'], fault.get('at', fault['delay']),
            'landed' if fault.get('landed') else 'after', result['runs'][0]['rc'], first, reruns, result['seconds'],
            '' if not result['violations'] else ', VIOLATIONS: ' + json.dumps(result['violations'])[:2000],
            ' [%s]' % fault.get('note', '') + (' ERROR %s' % fault['error'] if fault.get('error') else '')))
        return result

    def moved(self, w, tracker, runs):
        """What judge.py needs after a scenario: the pods the watch saw, the runs' results and the causes."""
        tracked = tracker.stop()
        results = []
        for run in runs:
            try:
                with open(run['log']) as handle:
                    text = handle.read()
            except OSError:
                continue
            results.extend(judge.rollout_results(text))
            run['failure'] = judge.failure(text)
        events = self.api.items('/api/v1/namespaces/%s/events' % w.namespace)
        gone, created = judge.causes(self.fault_log, results, tracked, events)
        return {'tracked': tracked, 'results': results, 'gone': gone, 'created': created}

    def run(self):
        index = 0
        deadline = self.started + self.args.minutes * 60 if self.args.minutes else None
        while index < self.args.faults:
            if deadline and time.time() > deadline:
                self.log('--minutes %s reached: no new scenario' % self.args.minutes)
                break
            result = self.scenario(index)
            index += 1
            if not result['converged']:
                self.log('the rollout did not converge: the soak stops here')
                break

    # ---- report

    def summary(self):
        by_kind = collections.OrderedDict()
        for kind in KINDS:
            rows = [r for r in self.results if r['fault']['kind'] == kind]
            if not rows:
                continue
            by_kind[kind] = {
                'faults': len(rows), 'landed': len([r for r in rows if r['fault'].get('landed')]),
                'first_run_failed': len([r for r in rows if r['runs'][0]['rc'] != 0]),
                'conflict_reported': len([r for r in rows if r['runs'][0].get('conflict')]),
                'reruns': sum(r['reruns'] for r in rows), 'max_reruns': max(r['reruns'] for r in rows),
                'violations': sum(len(v) for r in rows for v in r['violations'].values()),
                'fault_errors': len([r for r in rows if r['fault'].get('error')])}
        violations = collections.OrderedDict((name, sum(len(r['violations'].get(name, [])) for r in self.results))
                                             for name in INVARIANTS)
        return {'seed': self.args.seed, 'pods_per_workload': self.args.pods, 'batch': self.args.batch,
                'images': self.args.images, 'kinds': self.kinds,
                'scenarios': len(self.results), 'faults': len(self.results),
                'faults_landed': len([r for r in self.results if r['fault'].get('landed')]),
                'by_kind': by_kind, 'violations': violations, 'violations_total': sum(violations.values()),
                'converged': all(r['converged'] for r in self.results),
                'reruns': sum(r['reruns'] for r in self.results),
                'wall_seconds': round(time.time() - self.started, 1), 'scenario_results': self.results}


def summarize(lines):
    counts = collections.Counter(' '.join(line.split()[:3]) for line in lines)
    return ', '.join('%s x%d' % kv for kv in sorted(counts.items()))


def mentions(path, word):
    try:
        with open(path) as handle:
            return word in handle.read()
    except OSError:
        return False


def processes():
    """{pid: (parent pid, command line)} of the live processes (zombies left out)."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                fields = handle.read().rpartition(')')[2].split()
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                cmdline = handle.read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except OSError:
            continue
        if fields[0] != 'Z':
            found[int(entry)] = (int(fields[1]), cmdline)
    return found


def kill_tree(pid, sig):
    """Signal ``pid`` and every process under it (whatever their session); the pids signalled."""
    table = processes()
    pids, queue = [], [pid]
    while queue:
        current = queue.pop()
        pids.append(current)
        queue.extend(child for child, (parent, _cmd) in table.items() if parent == current and child not in pids)
    for each in pids:
        try:
            os.kill(each, sig)
        except ProcessLookupError:
            pass
    return pids


def leftovers(marker):
    """Live processes of one run: those whose command line names its vars file (ansible-playbook and its
    workers), and every process under them (the modules)."""
    table = processes()
    roots = [pid for pid, (_parent, cmdline) in table.items() if marker in cmdline]
    found, queue = [], list(roots)
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(child for child, (parent, _cmd) in table.items() if parent == current and child not in found)
    return sorted(found)


def port_open(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=1).close()
        return True
    except OSError:
        return False


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description='Seeded, bounded chaos soak of the rollout role (local cluster)')
    parser.add_argument('--clusterdir', required=True, help='the local cluster directory (state.json, pki, kubeconfig)')
    parser.add_argument('--root', required=True, help='the collection checkout (playbooks, hack, tests/faults)')
    parser.add_argument('--collections', required=True, help='ANSIBLE_COLLECTIONS_PATH with inplace/k8s in it')
    parser.add_argument('--work', required=True, help='directory for playbook logs, vars and proxy logs')
    parser.add_argument('--seed', type=int, default=19)
    parser.add_argument('--faults', type=int, default=55, help='scenarios, one fault each')
    parser.add_argument('--minutes', type=float, default=0, help='no new scenario after this many minutes (0: none)')
    parser.add_argument('--pods', type=int, default=30, help='pods of the Deployment and of the StatefulSet')
    parser.add_argument('--batch', default='25%', help='rollout_batch_size')
    parser.add_argument('--kinds', default=','.join(KINDS), help='fault kinds to draw from (comma-separated)')
    parser.add_argument('--reruns', type=int, default=4, help='runs after the first, at most, per scenario')
    parser.add_argument('--wait-timeout', type=int, default=120, help='rollout_wait_timeout')
    parser.add_argument('--run-timeout', type=int, default=600, help='seconds an ansible-playbook run may take')
    parser.add_argument('--proxy-port', type=int, default=17600)
    parser.add_argument('--json', help='write the summary here')
    parser.add_argument('--images', choices=['fresh', 'alternate'], default='fresh',
                        help='fresh: each rollout to a new tag; alternate: back and forth between two (see docs/safety.md: '
                        'the kubelet then delays the starts with its crash-loop back-off)')
    parser.add_argument('--keep', action='store_true', help='keep the namespaces (also kept after a violation)')
    args = parser.parse_args(argv)
    args.kubeconfig = os.path.join(args.clusterdir, 'kubeconfig')
    args.kinds = [k.strip() for k in args.kinds.split(',') if k.strip()]
    unknown = [k for k in args.kinds if k not in KINDS]
    if unknown or not args.kinds:
        parser.error('--kinds: unknown %s; known: %s' % (', '.join(unknown) or '(none given)', ', '.join(KINDS)))
    if args.faults < 1 or args.pods < 1 or args.reruns < 1:
        parser.error('--faults, --pods and --reruns must be at least 1')
    return args


def main(argv=None):
    args = parse_args(argv)
    soak = Soak(args)

    def stop(signum, _frame):
        raise SystemExit('soak: stopped by signal %d' % signum)
    signal.signal(signal.SIGTERM, stop)
    soak.log('seed %d, %d faults of %s, %d pods per workload, namespaces %s and %s' % (
        args.seed, args.faults, ','.join(args.kinds), args.pods, soak.namespace, soak.bystander_namespace))
    ok = False
    try:
        soak.set_up()
        soak.log('workloads ready; first-run length expected: %s' % soak.expected)
        soak.run()
        summary = soak.summary()
        ok = summary['violations_total'] == 0 and summary['converged'] and summary['faults'] > 0
    finally:
        if soak.current is not None and soak.current.poll() is None:
            kill_tree(soak.current.pid, signal.SIGKILL)
        summary = soak.summary()
        summary_table.print_table(summary)
        if args.json:
            with open(args.json, 'w') as handle:
                json.dump(summary, handle, indent=1, sort_keys=False)
            print('summary written to %s' % args.json)
        soak.clean_up(keep=args.keep or not ok)
    if not ok:
        print('soak FAILED: %d invariant violation(s), all converged: %s (logs in %s)' % (
            summary['violations_total'], summary['converged'], args.work))
        return 1
    print('soak passed: 0 invariant violations over %d faults' % summary['faults'])
    return 0


if __name__ == '__main__':
    sys.exit(main())
