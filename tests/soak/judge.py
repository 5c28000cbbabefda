# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How the soak tells a legitimate recreation from one of ours (issue 45; tests/soak/soak.py).

A pod of the workload that went away during a scenario (its uid no longer there at the end, or seen deleted by the
pod watch, PodTracker) is legitimate when a cause is on record, from any of:
  - the soak's own fault log (tests/soak/moves.py): it evicted, deleted, drained or scaled the pod down;
  - the rollout's result (``gone``, each with uid and cause), read from each run's custom stats;
  - the cluster: the pod's DisruptionTarget condition as the watch last saw it (EvictionByEvictionAPI,
    PreemptionByScheduler, DeletionByTaintManager, DeletionByPodGC, TerminationByKubelet), its phase Failed with
    reason Evicted (the kubelet's pressure eviction), or an Event of the pod with reason Evicted, Preempted or
    TaintManagerEviction.
A pod that is new at the end is legitimate when the rollout reports it ``replaced`` or when it is one of as many
new pods as went away with a cause (the controller replaces each once; a scale-up that is undone removes as many).
Anything else is the invariant pod-recreated. A pod the soak moved that a run reports among its failed_pods is the
invariant gone-as-failed (a pod that went away did not fail).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import http.client
import json
import threading
import time

CLUSTER_REASONS = ('Evicted', 'Preempted', 'TaintManagerEviction')   # Events of a pod that name why it went
LIFETIME = 3600                 # seconds a tracker watches at most


def rollout_results(text):
    """The rollout_result each run published with set_stats, from ansible-playbook's output with
    ANSIBLE_SHOW_CUSTOM_STATS (the default callback prints them as one JSON line after CUSTOM STATS); [] when there
    is none (a killed run)."""
    found = []
    stats = False
    for line in text.splitlines():
        if line.startswith('CUSTOM STATS'):
            stats = True
            continue
        head, _sep, body = line.strip().partition(': ')
        if stats and head in ('RUN', 'localhost') and body.startswith('{'):
            try:
                value = json.loads(body).get('rollout_result')
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def verified_at(text):
    """Seconds since the epoch at which the last run of the log listed the pods once more before its result
    (rollout_result.verified_at), or None (a killed or halted run, a result without it)."""
    results = rollout_results(text)
    stamp = results[-1].get('verified_at') if results else None
    if not stamp:
        return None
    try:
        moment = datetime.datetime.strptime(stamp, '%Y-%m-%dT%H:%M:%S.%fZ')
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def causes(fault_log, results, tracked, events):
    """({uid: why it went away}, {uid: why it is new}) from the soak's fault log, the runs' results, the pods the
    watch saw ({uid: PodTracker entry}) and the namespace's Events (pure)."""
    gone, created = {}, {}
    for entry in fault_log:
        done = {'scaled-down': 'scaled it down'}.get(entry['cause'], entry['cause'] + ' it')
        gone.setdefault(entry['uid'], 'the soak %s' % done)
    for result in results:
        for item in result.get('gone') or []:
            if isinstance(item, dict) and item.get('uid'):
                gone.setdefault(item['uid'], 'reported gone: %s%s (%s)' % (
                    item.get('cause'), ', %s' % item['detail'] if item.get('detail') else '', item.get('when')))
        for item in result.get('replaced') or []:
            if isinstance(item, dict) and item.get('uid'):
                created.setdefault(item['uid'], 'reported replaced by its controller (ready %s)' % item.get('ready'))
    for uid, pod in tracked.items():
        if pod.get('disruption'):
            gone.setdefault(uid, 'the cluster: DisruptionTarget %s' % pod['disruption'])
        elif pod.get('evicted'):
            gone.setdefault(uid, 'the cluster: phase Failed, reason Evicted')
    for event in events:
        involved = event.get('involvedObject') or {}
        if involved.get('kind') == 'Pod' and involved.get('uid') and event.get('reason') in CLUSTER_REASONS:
            gone.setdefault(involved['uid'], 'the cluster: event %s: %s' % (event['reason'], event.get('message')))
    return gone, created


def judge_recreations(baseline, final, tracked, gone, created):
    """(violations, explained) of the workload's pods: ``baseline`` and ``final`` are {name: uid} at the start and
    the end, ``tracked`` the pods seen during it ({uid: {name, deleted}}), ``gone`` and ``created`` from causes()
    (pure)."""
    violations, explained = [], []
    final_uids = set(final.values())
    went = dict((uid, name) for name, uid in baseline.items() if uid not in final_uids)
    went.update((uid, pod['name']) for uid, pod in tracked.items() if pod.get('deleted') and uid not in final_uids)
    replaceable = 0
    for uid, name in sorted(went.items(), key=lambda item: (item[1], item[0])):
        if uid in gone:
            replaceable += 1
            explained.append('%s (uid %s) went away: %s' % (name, uid, gone[uid]))
        else:
            violations.append('%s: uid %s went away with no cause on record (not moved by the soak, not reported '
                              'gone, no DisruptionTarget or eviction by the cluster)' % (name, uid))
    baseline_uids = set(baseline.values())
    for name, uid in sorted(final.items()):
        if uid in baseline_uids:
            continue
        if uid in created:
            explained.append('%s (uid %s) is new: %s' % (name, uid, created[uid]))
        elif replaceable > 0:
            replaceable -= 1
            explained.append('%s (uid %s) is new: its controller replaced a pod that went away' % (name, uid))
        else:
            violations.append('%s: uid %s (was %s) is new and no pod went away with a cause that it replaces' % (
                name, uid, baseline.get(name)))
    return violations, explained


def gone_as_failed(fault_log, results):
    """The pods the soak moved that a run reports among its failed_pods (pure): a pod that went away did not fail."""
    moved = set(entry['name'] for entry in fault_log)
    found = []
    for index, result in enumerate(results):
        for item in result.get('failed_pods') or []:
            if isinstance(item, dict) and item.get('name') in moved:
                found.append('run %d: %s reported failed (%s: %s) though the soak %s it' % (
                    index, item['name'], item.get('status'), item.get('reason') or item.get('error'), ', '.join(
                        sorted(set(e['cause'] for e in fault_log if e['name'] == item['name'])))))
    return found


def failure(text):
    """The message of the first task that failed in ansible-playbook's output (pure); None when none failed."""
    for line in text.splitlines():
        if line.startswith('fatal: ') and '=> {' in line:
            try:
                return json.loads(line.split('=> ', 1)[1]).get('msg')
            except ValueError:
                return line[:500]
    return None


def move_halted(kind, runs):
    """A fault that only moves pods (not a node lost: ``node-stop`` may halt a run without max_failed_pods) made the
    first run fail (pure): pods that come and go neither halt a rollout nor make a run refuse them. ``runs``: the
    scenario's runs ({rc, failure})."""
    if kind not in ('evict', 'drain', 'delete-pod', 'scale') or not runs or runs[0]['rc'] == 0:
        return []
    return ['the first run failed (rc %d) under %s: %s' % (runs[0]['rc'], kind, runs[0].get('failure'))]


def pod_entry(pod, deleted=False):
    """What the tracker keeps of a pod (its JSON)."""
    status = pod.get('status') or {}
    disruption = [c.get('reason') for c in status.get('conditions') or []
                  if c.get('type') == 'DisruptionTarget' and c.get('status') == 'True']
    return {'name': pod['metadata']['name'], 'node': (pod.get('spec') or {}).get('nodeName'),
            'deleted': deleted or bool(pod['metadata'].get('deletionTimestamp')),
            'disruption': disruption[0] if disruption else None,
            'evicted': status.get('phase') == 'Failed' and status.get('reason') == 'Evicted'}


class PodTracker(object):
    """Every pod of a workload seen during a scenario ({uid: pod_entry}), from a watch of its pods that runs in a
    thread until stop() (at most LIFETIME s). A watch broken (the API server restarted) starts again from the last
    resourceVersion, or from a new list after 410 Gone: pods missing from that list are marked deleted."""

    def __init__(self, api, namespace, selector):
        self.api, self.path = api, '/api/v1/namespaces/%s/pods?labelSelector=%s' % (namespace, selector)
        self.pods = {}
        self.version = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.errors = 0
        self.last_error = None
        self.relist()
        self.thread = threading.Thread(target=self._run, name='soak-pod-tracker')
        self.thread.daemon = True
        self.thread.start()

    def relist(self):
        listing = self.api.get(self.path)
        live = set()
        with self.lock:
            for pod in listing.get('items') or []:
                live.add(pod['metadata']['uid'])
                self.pods[pod['metadata']['uid']] = pod_entry(pod)
            for uid, entry in self.pods.items():
                if uid not in live:
                    entry['deleted'] = True
        self.version = listing['metadata']['resourceVersion']

    def _run(self):
        deadline = time.monotonic() + LIFETIME
        while not self.done.is_set() and time.monotonic() < deadline:
            try:
                if self.version is None:
                    self.relist()
                self._watch()
            except (OSError, http.client.HTTPException, ValueError, KeyError, RuntimeError) as exc:
                self.errors += 1
                self.last_error = str(exc)
                self.done.wait(1)

    def _watch(self):
        connection = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api.context, timeout=10)
        try:
            connection.request('GET', '%s&watch=1&timeoutSeconds=5&resourceVersion=%s' % (self.path, self.version),
                               headers={'Accept': 'application/json', 'User-Agent': 'inplace-soak'})
            answer = connection.getresponse()
            if answer.status != 200:
                self.version = None if answer.status == 410 else self.version
                raise RuntimeError('watch answered %d' % answer.status)
            while not self.done.is_set():
                line = answer.readline()
                if not line:
                    return
                event = json.loads(line)
                pod = event.get('object') or {}
                if event.get('type') == 'ERROR':
                    self.version = None     # 410 Gone: list again
                    return
                with self.lock:
                    self.pods[pod['metadata']['uid']] = pod_entry(pod, deleted=event.get('type') == 'DELETED')
                self.version = pod['metadata']['resourceVersion']
        finally:
            connection.close()

    def stop(self):
        """{uid: pod_entry} of every pod seen."""
        self.done.set()
        self.thread.join(15)
        with self.lock:
            return dict((uid, dict(entry)) for uid, entry in self.pods.items())
