# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The soak's faults (tests/soak/soak.py): which kind comes next, everything random about one drawn from the seed
before it runs, and its injection at its moment (a component restarted, ansible-playbook killed, another writer,
tests/faults/proxy.py's 429/5xx/stalled watches, or a move of pods through tests/soak/moves.py)."""

from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import sys
import time

import yaml

import judge
import moves
from cluster import GATE, CONTAINER, TOUCH_ANNOTATION, ACTIVE_RECORD, ApiError, meta, container, wait_until
from invariants import rollout_record
from procs import kill_tree, port_open


class Faults(object):
    """The faults of one soak: ``kinds`` drawn in a seeded order by ``rng``; ``expected`` (kind of workload ->
    seconds a first run takes, kept up to date by the soak) places a fault's moment within a run."""

    def __init__(self, api, args, rng, nodes, kinds, expected):
        self.api, self.args, self.rng, self.nodes, self.kinds, self.expected = api, args, rng, nodes, kinds, expected
        self.sequence = []

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

    def inject(self, fault, w, proc, started, fault_log):
        """Run in a thread: at started + delay, inject the fault; fills fault['landed'] and fault['note'].
        ``fault_log``: the scenario's list of the pods the fault removed (moves.Mover appends to it)."""
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
                fault['note'] = moves.Mover(self.api, self.args.clusterdir, w, GATE, fault_log, ApiError).run(fault)
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
