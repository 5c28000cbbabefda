# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The soak's faults that move pods (issue 45; tests/soak/soak.py draws them, tests/soak/judge.py judges them).

  evict       one pod through the Eviction API (policy/v1), retried while a PodDisruptionBudget refuses it (429)
  drain       a node as `kubectl drain --ignore-daemonsets --delete-emptydir-data --force` does it: cordon, evict the
              pods of the soak's namespace on it through the Eviction API (honouring the budget), wait for them to go,
              keep it cordoned a while, uncordon (the bystander namespace is left alone: it must not change)
  delete-pod  one pod deleted (its grace period)
  scale       the workload scaled up or down by 1 or 2, then back to its size a while later
  node-stop   a node's process (its kubelet and runtime) stopped with SIGSTOP for 50-80 s, past the node monitor's
              grace period (the node turns Ready=Unknown; its pods keep running, as under a kubelet that hangs),
              well before the taint manager's 300 s, then SIGCONT

Half of the evictions, deletions, drains and node stops aim at a pod in flight (its gate False, its record active or
its image changing), when there is one. Every fault is bounded in time and undone (uncordon, SIGCONT, the size back)
before it returns, whatever happens. Each pod a fault removes is written to the fault log (its uid and the cause):
the soak's own record of what it did, which the invariant pod-recreated accepts as a cause.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import signal
import time

MOVE_KINDS = ('evict', 'drain', 'delete-pod', 'scale', 'node-stop')
DRAIN_HOLD = (10, 40)      # seconds a drained node stays cordoned once its pods are gone
NODE_STOP = (50, 80)       # seconds a node's process stays stopped
SCALE_HOLD = (5, 25)       # seconds the workload keeps its new size
EVICT_PATIENCE = 60        # seconds an eviction is retried while a disruption budget refuses it (kubectl: until --timeout)
GONE_WAIT = 60             # seconds a drain or a scale-down waits for its pods to go
AIM_WAIT = 5               # seconds a fault aimed at a pod in flight waits for one
ACTIVE_RECORD = ('in-progress', 'rolling-back')
STATE_ANNOTATION = 'inplace.k8s/state'


def draw_move(rng, kind, replicas, nodes):
    """The random parts of a move fault of ``kind`` for a workload of ``replicas`` pods on ``nodes`` (pure: the seed
    decides them before the fault runs)."""
    if kind in ('evict', 'delete-pod'):
        return {'in_flight': rng.random() < 0.5, 'pod_index': rng.randrange(replicas)}
    if kind == 'drain':
        return {'in_flight': rng.random() < 0.5, 'node': rng.choice(nodes), 'hold': rng.randint(*DRAIN_HOLD)}
    if kind == 'node-stop':
        return {'in_flight': rng.random() < 0.5, 'node': rng.choice(nodes), 'seconds': rng.randint(*NODE_STOP)}
    if kind == 'scale':
        delta = rng.choice([-2, -1, 1, 2])
        if replicas + delta < 1:    # never to 0: a scale-down keeps one pod
            delta = -delta
        return {'delta': delta, 'hold': rng.randint(*SCALE_HOLD)}
    raise ValueError('not a move fault: %s' % kind)


def in_flight(pod, gate):
    """Whether the rollout is changing ``pod`` now: its gate False (drained), a record of ours active, or its spec's
    image not yet the one its container runs."""
    status = pod.get('status') or {}
    for item in status.get('conditions') or []:
        if item.get('type') == gate and item.get('status') == 'False':
            return True
    try:
        records = json.loads(((pod.get('metadata') or {}).get('annotations') or {}).get(STATE_ANNOTATION) or '{}')
    except ValueError:
        records = {}
    if isinstance(records, dict) and any(isinstance(r, dict) and r.get('state') in ACTIVE_RECORD
                                         for r in records.values()):
        return True
    wanted = dict((c.get('name'), c.get('image')) for c in (pod.get('spec') or {}).get('containers') or [])
    return any(s.get('name') in wanted and last(s.get('image')) != last(wanted[s['name']])
               for s in status.get('containerStatuses') or [])


def last(image):
    """An image's last path part with its tag (the runtime reports registry.example/soak:2.0 as it is named)."""
    return str(image or '').split('@', 1)[0].rsplit('/', 1)[-1]


def pick_pod(pods, fault, gate):
    """The pod a fault aims at (pure): one in flight when the fault asks for it and there is one, else the one at
    ``pod_index``; (pod, whether it was in flight)."""
    busy = [p for p in pods if in_flight(p, gate)]
    if fault.get('in_flight') and busy:
        return busy[fault.get('pod_index', 0) % len(busy)], True
    pod = pods[fault.get('pod_index', 0) % len(pods)]
    return pod, pod in busy


def pick_node(pods, fault, gate):
    """The node a drain or a node stop aims at (pure): the node of a pod in flight when asked and there is one."""
    busy = [p for p in pods if in_flight(p, gate) and (p.get('spec') or {}).get('nodeName')]
    if fault.get('in_flight') and busy:
        return busy[0]['spec']['nodeName'], True
    return fault['node'], False


def statefulset_victims(pods, name, replicas):
    """The pods a StatefulSet's scale-down to ``replicas`` removes: ordinals from ``replicas`` on (pure)."""
    prefix = name + '-'
    return [p for p in pods if p['metadata']['name'].startswith(prefix)
            and p['metadata']['name'][len(prefix):].isdigit() and int(p['metadata']['name'][len(prefix):]) >= replicas]


def node_pid(clusterdir, node):
    """The pid of ``node``'s process in the local cluster of ``clusterdir`` (its state.json), checked to be that
    cluster's process (its environment marker) before anyone signals it."""
    with open(os.path.join(clusterdir, 'state.json')) as handle:
        components = json.load(handle)['components']
    pid = [c['pid'] for c in components if c['name'] == node][0]
    with open('/proc/%d/environ' % pid, 'rb') as handle:
        environ = handle.read().split(b'\0')
    marker = ('INPLACE_LOCAL_CLUSTER_DIR=%s' % os.path.abspath(clusterdir)).encode()
    if marker not in environ:
        raise RuntimeError('pid %d is not %s of the cluster in %s' % (pid, node, clusterdir))
    return pid


class Mover(object):
    """Runs the move faults against one workload (``w``, tests/soak/soak.py Workload) through ``api``; appends
    each pod it removes to ``log`` ({uid, name, node, cause, at})."""

    def __init__(self, api, clusterdir, w, gate, log, not_error):
        self.api, self.clusterdir, self.w, self.gate, self.log = api, clusterdir, w, gate, log
        self.not_error = not_error          # soak.ApiError: a refusal the faults read
        self.started = time.time()

    def record(self, pod, cause):
        self.log.append({'uid': pod['metadata']['uid'], 'name': pod['metadata']['name'], 'cause': cause,
                         'node': (pod.get('spec') or {}).get('nodeName'), 'at': round(time.time() - self.started, 1)})

    def pods(self, node=None):
        path = '/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s' % (self.w.namespace, self.w.name)
        if node:
            path += '&fieldSelector=spec.nodeName%%3D%s' % node
        return [p for p in self.api.items(path) if not p['metadata'].get('deletionTimestamp')]

    def run(self, fault):
        """Inject ``fault`` (drawn by draw_move); a note of what was done."""
        kind = fault['kind']
        pods = self.pods()
        deadline = time.monotonic() + AIM_WAIT
        while fault.get('in_flight') and not any(in_flight(p, self.gate) for p in pods) and time.monotonic() < deadline:
            time.sleep(0.2)     # aimed at a pod in flight: wait a little for one
            pods = self.pods()
        if kind in ('evict', 'delete-pod'):
            if not pods:
                return 'no pod to %s' % kind
            pod, busy = pick_pod(pods, fault, self.gate)
            done = self.evict(pod) if kind == 'evict' else self.delete(pod)
            return '%s %s on %s%s' % (done, pod['metadata']['name'], pod['spec'].get('nodeName'),
                                      ' (in flight)' if busy else '')
        if kind == 'drain':
            node, busy = pick_node(pods, fault, self.gate)
            return self.drain(node, fault['hold']) + (' (a pod in flight on it)' if busy else '')
        if kind == 'node-stop':
            node, busy = pick_node(pods, fault, self.gate)
            return self.node_stop(node, fault['seconds']) + (' (a pod in flight on it)' if busy else '')
        return self.scale(fault['delta'], fault['hold'])

    def evict(self, pod, patience=EVICT_PATIENCE):
        """Evict ``pod`` through the Eviction API, again every second while a disruption budget refuses it (429),
        for ``patience`` s; what happened."""
        name, namespace = pod['metadata']['name'], pod['metadata']['namespace']
        body = {'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': name, 'namespace': namespace}}
        deadline = time.monotonic() + patience
        refusals = 0
        while True:
            try:
                self.api.call('POST', '/api/v1/namespaces/%s/pods/%s/eviction' % (namespace, name), body,
                              content_type='application/json', patience=20)
                self.record(pod, 'evicted')
                return 'evicted%s' % (' after %d refusal(s) of the disruption budget' % refusals if refusals else '')
            except self.not_error as exc:
                if exc.status == 404:
                    return 'already gone:'
                if exc.status != 429 or time.monotonic() > deadline:
                    raise
            except RuntimeError as exc:    # Api.call's retries (429 included) ran out: keep trying until the deadline
                if time.monotonic() > deadline:
                    raise RuntimeError('eviction of %s refused for %ss: %s' % (name, patience, exc))
            refusals += 1
            time.sleep(1)

    def delete(self, pod):
        try:
            path = '/api/v1/namespaces/%s/pods/%s' % (pod['metadata']['namespace'], pod['metadata']['name'])
            self.api.call('DELETE', path, patience=20)
        except self.not_error as exc:
            if exc.status != 404:
                raise
            return 'already gone:'
        self.record(pod, 'deleted')
        return 'deleted'

    def cordon(self, node, value):
        self.api.call('PATCH', '/api/v1/nodes/%s' % node, {'spec': {'unschedulable': value or None}}, patience=60)

    def drain(self, node, hold):
        """Cordon ``node``, evict the workload's pods on it, wait for them to go, keep it cordoned ``hold`` s,
        uncordon (always)."""
        self.cordon(node, True)
        try:
            pods = self.pods(node)
            deadline = time.monotonic() + EVICT_PATIENCE    # for all of its evictions together
            notes = [self.evict(pod, max(1, deadline - time.monotonic())) for pod in pods]
            left = self.wait_gone([p['metadata']['uid'] for p in pods])
            time.sleep(hold)
        finally:
            self.cordon(node, False)
        return 'drained %s: %d pod(s) evicted (%s)%s, cordoned %d s' % (
            node, len(pods), ', '.join(sorted(set(notes))) or '-', ', %d not gone within %ds' % (left, GONE_WAIT)
            if left else '', hold)

    def wait_gone(self, uids, timeout=GONE_WAIT):
        """Wait until none of ``uids`` is a live pod (bounded); how many are still there."""
        deadline = time.monotonic() + timeout
        while True:
            left = [p for p in self.pods() if p['metadata']['uid'] in uids]
            if not left or time.monotonic() > deadline:
                return len(left)
            time.sleep(0.5)

    def node_stop(self, node, seconds):
        pid = node_pid(self.clusterdir, node)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)
        return 'stopped %s (pid %d) for %d s' % (node, pid, seconds)

    def set_replicas(self, replicas):
        # A paused Deployment scales too (its ReplicaSet); a StatefulSet held by its partition too.
        self.api.call('PATCH', self.w.path, {'spec': {'replicas': replicas}}, patience=60)

    def scale(self, delta, hold):
        """Scale the workload by ``delta`` for ``hold`` s, then back to its size (always); the pods a scale-down
        removes are logged as scaled-down."""
        size = self.w.replicas
        notes = []
        try:
            notes.append(self.resize(size, size + delta))
            time.sleep(hold)
        finally:
            notes.append(self.resize(size + delta, size))
        return '; '.join(notes)

    def resize(self, before, after):
        pods = self.pods()
        self.set_replicas(after)
        if after >= before:
            return 'scaled %s from %d to %d' % (self.w.name, before, after)
        if self.w.kind == 'StatefulSet':
            victims = statefulset_victims(pods, self.w.name, after)
        else:
            victims = self.deployment_victims(pods, before - after)
        for pod in victims:
            self.record(pod, 'scaled-down')
        removed = ', '.join(p['metadata']['name'] for p in victims) or 'none yet'
        return 'scaled %s from %d to %d (removed %s)' % (self.w.name, before, after, removed)

    def deployment_victims(self, pods, count):
        """The pods the ReplicaSet controller removes on a scale-down by ``count``: the first ``count`` of ``pods``
        to go or to turn terminating (bounded wait)."""
        uids = dict((p['metadata']['uid'], p) for p in pods)
        gone = []
        deadline = time.monotonic() + GONE_WAIT
        while len(gone) < count and time.monotonic() < deadline:
            live = set(p['metadata']['uid'] for p in self.pods())
            gone.extend(uid for uid in uids if uid not in live and uid not in gone)
            time.sleep(0.3)
        return [uids[uid] for uid in gone[:count]]
