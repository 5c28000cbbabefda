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
import subprocess
import sys
import threading
import time

import judge
import moves
import table as summary_table
from cluster import (GATE, CONTAINER, IMAGES, SOAK_LABEL, KINDS, PROXY_KINDS, INVARIANTS, PDB_MAX_UNAVAILABLE,
                     ApiError, Api, meta, condition, wait_until, Workload)
from invariants import check_invariants, bystander_state, bystander_diff
from faults import Faults
from procs import mentions, kill_tree, leftovers


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
        self.started = time.time()
        self.expected = {}            # kind of workload -> seconds a first run is expected to take
        self.results = []
        self.workloads = []
        self.current = None           # the ansible-playbook process running now
        self.bystander = None
        self.namespaces = []
        self.fault_log = []           # the pods the scenario's fault removed (moves.Mover)
        self.faults = Faults(self.api, args, self.rng, self.nodes, self.kinds, self.expected)
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
        fault = self.faults.draw(self.faults.next_kind(), w)
        fault['writer_image'] = 'registry.example/soak:%d.0-writer' % (index + 2)
        label = 's%03d-%s' % (index, w.kind.lower())
        result = {'scenario': index, 'workload': '%s/%s' % (w.kind, w.name), 'target': target, 'fault': fault,
                  'runs': []}
        start = time.time()
        proxy = None
        kubeconfig = None
        if fault['kind'] in PROXY_KINDS:
            proxy, kubeconfig, proxy_log = self.faults.start_proxy(fault, label)
        self.fault_log = []       # the pods the fault removed (moves.Mover)
        tracker = judge.PodTracker(self.api, w.namespace, 'app%%3D%s' % w.name)
        proc, log = self.playbook(w, target, label + '-r0', kubeconfig)
        run_start = time.time()
        injector = threading.Thread(target=self.faults.inject, args=(fault, w, proc, run_start, self.fault_log))
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
        self.faults.after_verified(fault, log)
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
