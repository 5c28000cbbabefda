# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The drain scenarios of the benchmark (issue 45): a node drained during a rollout, for the role and for the
native rolling update under the same drain.

At a fixed moment of the rollout (DRAIN_AT of the pods run the new image in their spec) the node that holds the most
of the workload's pods still on the old image is drained as `kubectl drain NODE --ignore-daemonsets
--delete-emptydir-data --force` does it: cordoned, then each pod of the workload on it evicted through the Eviction
API (all at once, as kubectl does, each retried while a disruption budget refuses it, for at most DRAIN_TIMEOUT s).
The node stays cordoned until the rollout ends (as a node being upgraded or removed), then it is uncordoned. The
role's run that fails is run again, at most RERUNS times, and counted: halts (runs that failed) and re-runs; its wall
is the sum of its runs. Measured beside the wall: when the drain started, how many pods it evicted, how long the
evictions took to end the pods, and when the last replacement was Ready (the controller's time to replace them; the
role's target: its wall grows by no more than that, with 0 halts and 0 re-runs).
"""

import threading
import time

from kubernetes import client

DRAIN_AT = 0.3          # the drain starts once this share of the pods runs the new image (spec)
DRAIN_TIMEOUT = 120     # seconds the evictions may take together
RERUNS = 2              # runs of the role after a failed one, at most
ROLE = 'role Deployment 25% + drain'
NATIVE = 'native Deployment 25%/0 + drain'
BASELINES = {ROLE: 'role Deployment 25%', NATIVE: 'native Deployment 25%/0'}
SCENARIOS = [(ROLE, 'role', 'Deployment', '25%', False), (NATIVE, 'native', 'Deployment', '25%/0', False)]


def is_drain(result):
    return result.get('scenario') in BASELINES


def pick_node(pods, image):
    """The node that holds the most of ``pods`` (snapshot values: name, node, image) not yet on ``image``; ties go
    to the first name (pure)."""
    counts = {}
    for pod in pods:
        if pod['image'] != image and pod.get('node'):
            counts[pod['node']] = counts.get(pod['node'], 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0] if counts else None


class Drainer(object):
    """A thread that drains a node of the workload in ``namespace`` once DRAIN_AT of its ``pods`` run ``image``."""

    def __init__(self, cluster, namespace, pods, image, timeout):
        self.cluster, self.namespace, self.pods, self.image = cluster, namespace, pods, image
        self.started = time.time()
        self.figures = {'node': None, 'at': None, 'evicted': 0, 'refused': 0, 'gone_after': None}
        self.uids = []
        self.error = None
        self.done = threading.Event()
        self.deadline = self.started + timeout
        self.thread = threading.Thread(target=self._run, name='bench-drain-%s' % namespace)
        self.thread.daemon = True
        self.thread.start()

    def _run(self):
        try:
            while not self.done.is_set() and time.time() < self.deadline:
                snapshot = self.cluster.snapshot(self.namespace).values()
                if sum(1 for pod in snapshot if pod['image'] == self.image) >= DRAIN_AT * self.pods:
                    self.drain(pick_node(snapshot, self.image))
                    return
                self.done.wait(0.25)
        except Exception as exc:  # pylint: disable=broad-except
            self.error = '%s: %s' % (type(exc).__name__, exc)

    def drain(self, node):
        if node is None:
            raise RuntimeError('no node holds a pod on the old image when the drain is due')
        self.figures.update(node=node, at=round(time.time() - self.started, 2))
        began = time.time()
        self.cluster.core.patch_node(node, {'spec': {'unschedulable': True}})
        victims = [p for p in self.cluster.pods(self.namespace)
                   if p.spec.node_name == node and p.metadata.deletion_timestamp is None]
        self.uids = [p.metadata.uid for p in victims]
        threads = [threading.Thread(target=self.evict, args=(p.metadata.name, began + DRAIN_TIMEOUT)) for p in victims]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DRAIN_TIMEOUT + 30)
        while time.time() < began + DRAIN_TIMEOUT:
            live = set(p.metadata.uid for p in self.cluster.pods(self.namespace))
            if not live & set(self.uids):
                self.figures['gone_after'] = round(time.time() - began, 2)
                return
            time.sleep(0.25)
        raise RuntimeError('the drained pods were not gone within %ss' % DRAIN_TIMEOUT)

    def evict(self, name, deadline):
        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=self.namespace))
        while True:
            try:
                self.cluster.core.create_namespaced_pod_eviction(name, self.namespace, body)
                self.figures['evicted'] += 1
                return
            except client.ApiException as exc:
                if exc.status == 404:
                    return
                if exc.status != 429 or time.time() > deadline:
                    self.error = 'eviction of %s: %s %s' % (name, exc.status, exc.reason)
                    return
                self.figures['refused'] += 1
            time.sleep(1)

    def stop(self, events):
        """End the thread, uncordon the node; the drain's figures, with the replacements' Ready time from the pod
        watch's ``events`` (workloads.PodWatch) when ``replacements`` is known. Raises when the drain failed."""
        self.done.set()
        self.thread.join(DRAIN_TIMEOUT + 60)
        if self.figures['node']:
            self.cluster.core.patch_node(self.figures['node'], {'spec': {'unschedulable': None}})
        if self.error or not self.figures['node']:
            raise RuntimeError('the drain %s' % (self.error or 'never started: %d%% of the pods did not reach the new '
                                                 'image' % (100 * DRAIN_AT)))
        self.figures['replaced_ready'] = replaced_ready(events, self.uids, self.started + self.figures['at'])
        return dict(self.figures)


def replaced_ready(events, evicted, began):
    """Seconds from ``began`` (the drain) until the last of the pods created after it was Ready (pure): the
    controller's replacements of the ``evicted`` pods (and, under a native rolling update, its own new pods)."""
    first_seen = {}
    ready = {}
    for seen, pod in events:
        first_seen.setdefault(pod['uid'], seen)
        if pod['ready'] == 'True' and not pod['deleted']:
            ready.setdefault(pod['uid'], seen)
    new = [uid for uid, seen in first_seen.items() if seen >= began and uid not in evicted]
    if not evicted or not new or any(uid not in ready for uid in new):
        return None
    return round(max(ready[uid] for uid in new) - began, 2)


def run_role(bench, result, namespace, names, image):
    """The role under the drain: run again after a failed run (at most RERUNS); fills halts, reruns and the wall
    (the sum of the runs)."""
    walls, halts = [], 0
    for attempt in range(RERUNS + 1):
        result.pop('error', None)
        bench.rollout(result, namespace, names, image=image, run='' if not attempt else '.r%d' % attempt)
        walls.append(result['wall'])
        if 'error' not in result:
            break
        halts += 1
    result.update(wall=round(sum(walls), 2), run_walls=walls, halts=halts, reruns=len(walls) - 1)


def targets(results, pods_of, verdict):
    """The drain target per N: the role's wall under the drain grows by no more than the controller's replacement
    time, with 0 halts and 0 re-runs; beside it the native rolling update under the same drain."""
    found = {}
    for pods in sorted(set(r['pods'] for r in results)):
        role, plain = pods_of(results, pods, ROLE), pods_of(results, pods, BASELINES[ROLE])
        native, native_plain = pods_of(results, pods, NATIVE), pods_of(results, pods, BASELINES[NATIVE])
        if not role:
            continue
        drain = role['node_drain']
        grown = round(role['wall'] - plain['wall'], 2) if plain else None
        budget = drain.get('replaced_ready')
        ok = role['halts'] == 0 and role['reruns'] == 0 and None not in (grown, budget) and grown <= budget
        found['N=%d role under a drain: wall grows <= the replacements\' time, 0 halts, 0 re-runs' % pods] = verdict(
            ok if plain else None, 'wall %s s vs %s s without the drain (+%s s); replacements Ready %s s after the drain '
            '(%s: %d evicted at %s s, gone after %s s, %d refusals); halts %d, re-runs %d%s' % (
                role['wall'], plain['wall'] if plain else '-', grown, budget, drain['node'], drain['evicted'],
                drain['at'], drain['gone_after'], drain['refused'], role['halts'], role['reruns'],
                '; native 25%%/0 under the same drain %s s (%s s without), role / native %sx' % (
                    native['wall'], native_plain['wall'] if native_plain else '-',
                    round(role['wall'] / native['wall'], 2)) if native else ''))
    return found


def report_lines(results):
    """One line per drain row, beside the table."""
    return ['%s N=%d: wall %s s (runs %s), halts %s, re-runs %s; drained %s at %s s: %d evicted (%d refusals), gone '
            'after %s s, last new pod Ready %s s after the drain' % (
                r['scenario'], r['pods'], r['wall'], r.get('run_walls', [r['wall']]), r['halts'], r['reruns'],
                r['node_drain']['node'], r['node_drain']['at'], r['node_drain']['evicted'], r['node_drain']['refused'],
                r['node_drain']['gone_after'], r['node_drain']['replaced_ready'])
            for r in results if is_drain(r) and 'error' not in r]
