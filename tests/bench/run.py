# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Benchmarks of in-place rollouts on the local cluster (hack/bench.sh runs this).

For each pod count N and each scenario: a fresh namespace with a workload of N pods, one rollout
from OLD_IMAGE to NEW_IMAGE, then the measurements, then the namespace is deleted. In-place
scenarios run ansible-playbook as a child process (wall time, CPU and peak RSS from wait4, started by
launcher.py so that the peak is the child's own) with
the request trace hook on its PYTHONPATH; native scenarios patch the workload's template and
watch the controller. Prints a table and the targets, writes a JSON summary.

The traffic scenario (TRAFFIC) runs once per run, at --traffic-pods: one Deployment of N pods behind a
Service while the test bed's traffic client (`cluster traffic`) sends a steady request rate through it;
three image changes one after the other, each measured on its own: requests sent and failed, and each
pod's unavailable time from a pod watch.

Usage: run.py --pods 10,100 --kubeconfig KUBECONFIG --hook DIR --collections DIR --out FILE --work DIR
              [--cluster-bin CLUSTER] [--traffic-pods N]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid

from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching

import charts
import drain
import kcore
import kruise
import launcher
import measure
import reloader
import workloads

MODULE = 'ansible_collections.inplace.k8s.plugins.modules.inplace_image'
TIMEOUT = 900

# name -> (method, workload kind, batch size, drain through the readiness gate). 'window': one
# inplace_image call over all pods with max_concurrency = the batch size, a sliding window of pods in
# flight (as the Deployment controller's maxUnavailable) instead of batches that wait for each other.
SCENARIOS = [
    ('image 100%', 'image', 'Deployment', '100%', False),
    ('image 25%', 'image', 'Deployment', '25%', False),
    ('image window 25%', 'window', 'Deployment', '25%', False),
    ('image 100% drain', 'image', 'Deployment', '100%', True),
    ('role Deployment 100%', 'role', 'Deployment', '100%', False),
    ('role Deployment 25%', 'role', 'Deployment', '25%', False),
    ('role StatefulSet 25%', 'role', 'StatefulSet', '25%', False),
    ('native Deployment 25%/25%', 'native', 'Deployment', '25%', False),
    # maxUnavailable 25%, maxSurge 0: the same pods in flight as an in-place window of 25%
    ('native Deployment 25%/0', 'native', 'Deployment', '25%/0', False),
    ('native StatefulSet 25%', 'native', 'StatefulSet', '25%', False),
    # what kubernetes.core users do today: k8s state=patched on each pod with wait (tests/bench/kcore.py)
    ('kubernetes.core patched+wait', 'kcore', 'Deployment', '100%', False),
    # the role in batches that wait for their slowest pod (rollout_window false), as before the window
    ('role Deployment 25% batches', 'role', 'Deployment', '25%', False),
    # an image that takes PULL_SECONDS to pull on each node, without and with the role's pre-pull
    ('role Deployment 25% pull', 'role', 'Deployment', '25%', False),
    ('role Deployment 25% pull prepull', 'role', 'Deployment', '25%', False),
    # the role with Ansible's internal_poll_interval at 10 ms instead of 1 ms (docs/rollouts.md): ansible-playbook
    # checks for the task's result a tenth as often. Ansible reads this setting from ansible.cfg only: the scenario
    # writes one and names it in ANSIBLE_CONFIG.
    ('role Deployment 25% poll 10 ms', 'role', 'Deployment', '25%', False),
    # OpenKruise's CloneSet, InPlaceIfPossible, maxUnavailable 25%, maxSurge 0 (tests/bench/kruise.py): opt-in, it
    # needs Kruise on the cluster (make kruise-up); named or through SCENARIOS=kruise (KRUISE_GROUP), never by default.
    ('kruise CloneSet 25%', 'kruise', 'CloneSet', '25%', False),
    # a node drained (kubectl drain's evictions) at a fixed moment of the rollout (tests/bench/drain.py): the role
    # and the native rolling update under the same drain
] + drain.SCENARIOS + reloader.SCENARIOS
# The config rollouts (tests/bench/reloader.py, issue 48): the role's in-place config restart (with and without its
# drain) and `kubectl rollout restart`, each under traffic; opt-in, named or through SCENARIOS=config, never by
# default (they need --cluster-bin).
OPT_IN = ('kruise', 'config', 'restart')
PULL_SECONDS = 5
PULL_IMAGE = 'registry.example/bench:2.0-slow2-pull%d' % PULL_SECONDS
# What a scenario changes beyond its SCENARIOS entry: the image it rolls to, the role's variables, the [defaults]
# of the ansible.cfg ansible-playbook runs with (none: Ansible's defaults).
VARIANTS = {
    'role Deployment 25% poll 10 ms': {'config': {'internal_poll_interval': '0.01'}},
    'role Deployment 25% batches': {'vars': {'bench_window': False}},
    'role Deployment 25% pull': {'image': PULL_IMAGE},
    'role Deployment 25% pull prepull': {'image': PULL_IMAGE, 'vars': {'bench_prepull': True}},
}
# Above LARGE pods only these run (the targets' pairs: role and module windows, native 25%/0 and 25%/25%),
# so that N=1000 fits in the time and on 2 cores; the others run at every smaller N.
LARGE = 100
AT_ANY_SIZE = ('image window 25%', 'role Deployment 25%', 'native Deployment 25%/25%', 'native Deployment 25%/0',
               'kruise CloneSet 25%')

# The traffic scenario: one Deployment (a readiness gate, the app's port and an httpGet readiness probe
# every second) behind a Service; the changes run in this order, each from the image the one before left.
# name -> (method, drain through the gate, new image, from N pods on). The module's changes are a sliding
# window as 'image window 25%', the role's are its sliding window of as many pods (from N=50 on: with its
# prepare and finish steps it would double the smoke run's traffic time); native is the Deployment's rolling update with maxUnavailable = maxSurge = the same
# number of pods (traffic_batch()), its template's readiness gate removed with the new image (nothing would
# open it on new pods). Images start in 1 s (-slow1, as in the service_continuity target).
TRAFFIC = [
    ('traffic in place drain', 'window', True, 'registry.example/bench:2.0-slow1', 1),
    ('traffic role drain', 'role', True, 'registry.example/bench:2.5-slow1', 50),
    ('traffic in place', 'window', False, 'registry.example/bench:3.0-slow1', 1),
    ('traffic native', 'native', False, 'registry.example/bench:4.0-slow1', 1),
]
# The CloneSet under the same traffic, its own workload (a CloneSet of N pods behind the same Service): Kruise's
# in-place update with its InPlaceUpdateReady gate and gracePeriodSeconds = DRAIN_SECONDS, as wide a window.
KRUISE_TRAFFIC = [('traffic kruise CloneSet drain', 'kruise', True, 'registry.example/bench:2.0-slow1', 1)]
# SCENARIOS=kruise: the CloneSet beside the role's window and the native rolling updates, each also under traffic.
KRUISE_GROUP = ('kruise CloneSet 25%', 'role Deployment 25%', 'native Deployment 25%/0', 'native Deployment 25%/25%',
                'traffic', KRUISE_TRAFFIC[0][0])
TRAFFIC_MIN_WINDOW = 5  # pods in flight at least: a small N (the CI smoke run) rolls in two waves, not four
TRAFFIC_RATE = 100      # requests per second through the Service
TRAFFIC_DELAY = 1       # seconds: the client uses an EndpointSlice change this long after it sees it
DRAIN_SECONDS = 2       # the in-place drain: at least the propagation delay
TRAFFIC_SETTLE = 1      # seconds of traffic before and after each change

IMAGE_TASK = {
    'name': 'Update one batch with inplace_image',
    'inplace.k8s.inplace_image': {
        'namespace': '{{ bench_namespace }}', 'names': '{{ item }}', 'containers': {'app': '{{ bench_image }}'},
        'max_concurrency': '{{ bench_concurrency | default(item | length) }}', 'wait_timeout': '{{ bench_timeout }}',
        'readiness_gate': '{{ bench_gate | default(omit) }}', 'drain_seconds': '{{ bench_drain | default(0) }}'},
    'loop': '{{ bench_batches }}',
}
ROLE_TASK = {
    'name': 'Roll out with the rollout role',
    'ansible.builtin.include_role': {'name': 'inplace.k8s.rollout'},
    'vars': {'rollout_target': {'kind': '{{ bench_kind }}', 'name': 'bench', 'namespace': '{{ bench_namespace }}'},
             'rollout_images': {'app': '{{ bench_image }}'}, 'rollout_batch_size': '{{ bench_batch }}',
             'rollout_wait_timeout': '{{ bench_timeout }}',
             'rollout_readiness_gate': "{{ bench_gate | default('') }}", 'rollout_drain_seconds': '{{ bench_drain }}',
             'rollout_window': '{{ bench_window | default(true) }}', 'rollout_prepull': '{{ bench_prepull | default(false) }}',
             # Like for like with the native rolling updates measured beside it (minReadySeconds 0).
             'rollout_min_ready_seconds': 0},
}


class Bench(object):
    def __init__(self, args, launcher):
        self.args = args
        self.launcher = launcher
        self.cluster = workloads.Cluster(args.kubeconfig)
        self.run_id = uuid.uuid4().hex[:6]

    def capacity_error(self, pods, native_deployment):
        """Why the cluster cannot hold the largest workload (and the native Deployment's 25% surge), or None."""
        slots, used = self.cluster.pod_slots()
        needed = pods + (-(-pods // 4) if native_deployment else 0)
        if slots - used >= needed:
            return None
        nodes, per_node = measure.cluster_size(needed + used + 10)
        return ('N=%d needs %d free pod slots (with the native Deployment\'s 25%% surge); the cluster has %d, '
                '%d in use. Start it with more: make cluster-down; NODES=%d NODE_MAX_PODS=%d make cluster-up '
                '(hack/bench.sh does this itself when it starts the cluster)'
                % (pods, needed, slots, used, nodes, per_node))

    def child_env(self, trace, collections=False, more=None):
        env = dict(os.environ, **(more or {}))
        env.update(INPLACE_BENCH_TRACE=trace, K8S_AUTH_KUBECONFIG=self.args.kubeconfig, ANSIBLE_NOCOLOR='1',
                   ANSIBLE_COLLECTIONS_PATH=self.args.collections, ANSIBLE_LOCALHOST_WARNING='False',
                   PYTHONPATH=os.pathsep.join([self.args.hook] + ([self.args.collections] if collections else [])))
        return env

    def ansible_cfg(self, name, defaults):
        """An ansible.cfg in the work directory with ``defaults`` under [defaults]; its path. Checked with
        ansible-config: a setting Ansible does not read from there (a typo, an unknown key) fails the scenario."""
        path = os.path.join(self.args.work, name + '.ansible.cfg')
        with open(path, 'w') as handle:
            handle.write('[defaults]\n' + ''.join('%s = %s\n' % item for item in sorted(defaults.items())))
        dump = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-config'), 'dump', '--only-changed',
                               '--format', 'json'], env=dict(os.environ, ANSIBLE_CONFIG=path), check=True,
                              stdout=subprocess.PIPE, universal_newlines=True).stdout
        read = [entry['name'] for entry in json.loads(dump) if entry.get('origin') == path]
        if len(read) != len(defaults):
            raise RuntimeError('ansible-config reads %s of %s from %s' % (
                ', '.join(read) or 'none', ', '.join(sorted(defaults)), path))
        return path

    def spawn(self, command, env, log):
        """Run a child to its end through the launcher (a small process: the peak RSS is the child's own, see
        launcher.py); (exit code, wall seconds, CPU seconds, peak RSS MiB) from wait4."""
        return self.launcher.run(command, env, log)

    def playbook(self, task, extra, name):
        path = os.path.join(self.args.work, name)
        play = [{'name': 'Benchmark', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                 'tasks': [task]}]
        with open(path + '.yml', 'w') as handle:
            json.dump(play, handle, indent=1)
        with open(path + '.vars.json', 'w') as handle:
            json.dump(extra, handle)
        return [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', '@%s.vars.json' % path, path + '.yml']

    # ---- one scenario

    def scenario(self, pods, name, method, kind, batch, gated, attempt=0):
        # One namespace per run: its name also names the run's trace, log and playbook files.
        namespace = 'bench-%s-%d-%d-%d' % (self.run_id, pods, [s[0] for s in SCENARIOS].index(name), attempt)
        result = {'pods': pods, 'scenario': name, 'method': method, 'kind': kind, 'batch': batch,
                  'drain': gated}
        self.cluster.create_namespace(namespace)
        try:
            if reloader.is_config(result):
                reloader.scenario(self, result, namespace, {'delay': TRAFFIC_DELAY, 'settle': TRAFFIC_SETTLE,
                                                            'drain_seconds': DRAIN_SECONDS, 'timeout': TIMEOUT})
                return result
            unavailable, _slash, surge = batch.partition('/')
            if kind == 'CloneSet':
                kruise.create(self.cluster, namespace, pods, max_unavailable=unavailable)
            else:
                self.cluster.create_workload(namespace, kind, pods, gated=gated, max_unavailable=unavailable,
                                             max_surge=surge or unavailable)
            before = self.cluster.snapshot(namespace)
            scheduled = self.cluster.scheduled_events(namespace)
            metrics = measure.request_totals(self.cluster.metrics())
            variant = VARIANTS.get(name, {})
            image = variant.get('image', workloads.NEW_IMAGE)
            if name in drain.BASELINES:
                self.drained(result, namespace, before, image)
            elif method == 'native':
                result['wall'] = round(self.cluster.native_rollout(namespace, kind, pods, TIMEOUT), 2)
            elif method == 'kruise':
                pod_watch = workloads.PodWatch(self.args.kubeconfig, namespace, TIMEOUT + 60)
                try:
                    result['wall'] = round(kruise.rollout(self.cluster, namespace, pods, TIMEOUT, image=image), 2)
                finally:
                    events = pod_watch.stop()
                seconds, missing = measure.unavailable_in_place(events, workloads.OLD_IMAGE)
                result.update(unavailable=measure.spread(seconds), kruise=kruise.installed(self.cluster))
                if missing:
                    result['error'] = 'the pod watch saw pods leave service and not come back: %s' % ', '.join(
                        missing[:5])
            elif method == 'kcore':
                self.rollout(result, namespace, sorted(v['name'] for v in before.values()))
            else:
                # Each pod's unavailable time, from a pod watch: its image change to Ready again; the
                # same watch gives the kubelet floor its pods' times.
                pod_watch = workloads.PodWatch(self.args.kubeconfig, namespace, TIMEOUT + 60)
                try:
                    rolled = self.rollout(result, namespace, sorted(v['name'] for v in before.values()), image=image,
                                          extra=variant.get('vars'), config=variant.get('config'))
                finally:
                    events = pod_watch.stop()
                seconds, missing = measure.unavailable_in_place(events, workloads.OLD_IMAGE)
                result['unavailable'] = measure.spread(seconds)
                self.floors(result, rolled, events, workloads.OLD_IMAGE)
                if missing:
                    result['error'] = 'the pod watch saw pods leave service and not come back: %s' % ', '.join(
                        missing[:5])
            result['cluster_requests'] = measure.delta(metrics, measure.request_totals(self.cluster.metrics()))
            result['cluster_writes'] = measure.writes(result['cluster_requests'])
            after = self.cluster.snapshot(namespace)
            result['recreated'] = len(set(before) - set(after))
            result['ips_changed'] = len(set(v['ip'] for v in before.values()) - set(v['ip'] for v in after.values()))
            result['scheduled'] = self.cluster.scheduled_events(namespace) - scheduled
            stale = [v['name'] for v in after.values() if v['image'] != image]
            if stale:
                result['error'] = '%d pod(s) not on the new image: %s' % (len(stale), ', '.join(stale[:5]))
            if method == 'image' and name == SCENARIOS[0][0] and self.args.startup_runs:
                result['startup'] = self.startup(namespace)
        except Exception as exc:  # pylint: disable=broad-except
            result['error'] = '%s: %s' % (type(exc).__name__, exc)
        finally:
            self.cluster.delete_namespace(namespace)
        return result

    def drained(self, result, namespace, before, image):
        """A rollout while a node is drained (drain.py): the role (again after a failed run) or the native rolling
        update; fills the wall, halts, re-runs and the drain's figures (node_drain)."""
        pod_watch = workloads.PodWatch(self.args.kubeconfig, namespace, TIMEOUT + 60)
        drainer = drain.Drainer(self.cluster, namespace, result['pods'], image, TIMEOUT)
        try:
            if result['method'] == 'native':
                result.update(wall=round(self.cluster.native_rollout(namespace, result['kind'], result['pods'], TIMEOUT,
                                                                     image=image), 2), halts=0, reruns=0)
            else:
                drain.run_role(self, result, namespace, sorted(v['name'] for v in before.values()), image)
        finally:
            events = pod_watch.stop()
            result['node_drain'] = drainer.stop(events)

    def rollout(self, result, namespace, names, image=workloads.NEW_IMAGE, drain_seconds=0, run='', extra=None,
                config=None):
        """An in-place rollout through ansible-playbook; fills wall, CPU, RSS and trace figures and returns
        what floors() (after the pod watch) needs for the floor figures: (request trace, pods in a window or
        batch, whether it rolled through a window, the kubelet's clock of each pod's readiness).
        ``extra``: more variables for the playbook, ``config``: the [defaults] of an ansible.cfg to run it with
        (VARIANTS)."""
        trace = os.path.join(self.args.work, namespace + run + '.trace.jsonl')
        size = batching.batch_size(len(names), result['batch'])
        variables = dict(extra or {})
        extra = {'bench_namespace': namespace, 'bench_image': image, 'bench_timeout': TIMEOUT, 'bench_drain': drain_seconds,
                 'bench_kind': result['kind'], 'bench_batch': result['batch'],
                 'bench_batches': batching.plan_batches(names, names, size)['batches']}
        extra.update(variables)
        if result['method'] == 'window':
            extra.update(bench_batches=[names], bench_concurrency=size)
        if result['drain']:
            extra['bench_gate'] = workloads.GATE
        task = {'role': ROLE_TASK, 'kcore': kcore.TASK, 'config': reloader.role_task(ROLE_TASK)}.get(result['method'], IMAGE_TASK)
        command = self.playbook(task, extra, namespace + run)
        more = {'ANSIBLE_CONFIG': self.ansible_cfg(namespace + run, config)} if config else None
        code, wall, cpu, rss = self.spawn(command, self.child_env(trace, more=more), os.path.join(
            self.args.work, namespace + run + '.log'))
        entries = measure.load_trace(trace)
        if result['method'] == 'kcore':
            result.update(kcore.observe(self.cluster, namespace, len(names), time.time() - wall, TIMEOUT, entries),
                          wall=round(wall, 2), cpu=round(cpu, 2), rss_mib=round(rss, 1),
                          cpu_ms_per_pod=round(1000 * cpu / result['pods'], 1),
                          client=measure.trace_summary(entries, result['pods']))
            if code != 0:
                result['error'] = 'ansible-playbook exited %d (log: %s.log)' % (code, os.path.join(self.args.work, namespace))
            return
        # The role rolls through a window unless told not to (or run under traffic, in batches of as many).
        window = result['method'] == 'window' or (result['method'] == 'role' and extra.get('bench_window', True))
        if result['method'] in ('role', 'config'):
            result['fixed'] = measure.fixed_seconds(entries)
        module_cpu = measure.module_cpu_seconds(entries)
        result.update(wall=round(wall, 2), cpu=round(cpu, 2), cpu_ms_per_pod=round(1000 * cpu / result['pods'], 1),
                      module_cpu_ms_per_pod=round(1000 * module_cpu / result['pods'], 1) if module_cpu is not None else None,
                      module_cpu_phases=measure.module_cpu_phases(entries), rss_mib=round(rss, 1), module_startup=measure.startup_seconds(entries),
                      client=measure.trace_summary(entries, result['pods']))
        if code != 0:
            result['error'] = 'ansible-playbook exited %d (log: %s.log)' % (
                code, os.path.join(self.args.work, namespace + run))
        # The kubelet's own clock (1 s resolution), for the floor as measured before the pod watch's.
        return entries, size, window, self.cluster.ready_times(namespace)

    @staticmethod
    def floors(result, rolled, events, old_image):
        """The kubelet floor of a rollout's batches or window and the wall time above it, from what
        rollout() returned (``rolled``) and the pods' times as the pod watch (``events``) saw them
        (measure.ready_after)."""
        trace, size, window, clock = rolled
        floors = measure.window_floors if window else lambda entries, ready, _size: measure.batch_floors(entries, ready)
        ready = measure.ready_after(events, old_image)
        found = floors(trace, ready, size)
        result.update(batches=len(found), floors=found, window=window,
                      floor_kubelet_clock=round(sum(floors(trace, clock, size)), 2))
        if window:
            result['refill'] = measure.spread(measure.refill_seconds(trace, ready, size))
        result.update(measure.overhead(result['wall'], found, measure.outside_modules(trace, result['wall'])))

    # ---- the traffic scenario

    def traffic(self, pods, changes, attempt=0, kind='Deployment'):
        """The traffic scenario at ``pods`` pods: one result per change of ``changes`` (TRAFFIC entries, or
        KRUISE_TRAFFIC's on a CloneSet)."""
        namespace = 'bench-%s-%d-traffic-%s%d' % (self.run_id, pods, kind[0].lower(), attempt)
        batch = traffic_batch(pods)
        results = [{'pods': pods, 'scenario': name, 'method': method, 'kind': kind, 'batch': batch,
                    'drain': gated, 'image': image} for name, method, gated, image, smallest in changes
                   if pods >= smallest]
        self.cluster.create_namespace(namespace)
        try:
            if kind == 'CloneSet':
                kruise.create(self.cluster, namespace, pods, max_unavailable=batch, drain_seconds=DRAIN_SECONDS,
                              serve=True)
            else:
                self.cluster.create_workload(namespace, kind, pods, gated=True, max_unavailable=batch, serve=True)
            self.cluster.create_service(namespace)
            workloads.wait_until(lambda: self.cluster.ready_endpoints(namespace) == pods, 60 + pods,
                                 '%d ready endpoints of the Service' % pods)
            image = workloads.OLD_IMAGE
            for index, result in enumerate(results):
                if index and 'error' in results[index - 1]:
                    result['error'] = 'not measured: the change before it failed'
                    continue
                try:
                    self.traffic_change(result, namespace, image, '.%d' % index)
                except Exception as exc:  # pylint: disable=broad-except
                    result['error'] = '%s: %s' % (type(exc).__name__, exc)
                image = result['image']
        except Exception as exc:  # pylint: disable=broad-except
            for result in results:
                result.setdefault('error', 'setup: %s: %s' % (type(exc).__name__, exc))
        finally:
            self.cluster.delete_namespace(namespace)
        return results

    def traffic_change(self, result, namespace, old_image, run):
        """One change under traffic: the client runs TRAFFIC_SETTLE s before and after it, a pod watch
        during it; fills the traffic figures, the per-pod unavailable time and the usual ones."""
        before = self.cluster.snapshot(namespace)
        scheduled = self.cluster.scheduled_events(namespace)
        metrics = measure.request_totals(self.cluster.metrics())
        report = os.path.join(self.args.work, namespace + run + '.traffic.json')
        client = self.start_traffic(namespace, report)
        try:
            time.sleep(TRAFFIC_DELAY + TRAFFIC_SETTLE)    # the client uses its first endpoints after the delay
            if client.poll() is not None:
                raise RuntimeError('the traffic client exited early (log: %s.log)' % report)
            pod_watch = workloads.PodWatch(self.args.kubeconfig, namespace, TIMEOUT + 60)
            try:
                if result['method'] == 'native':
                    result['wall'] = round(self.cluster.native_rollout(
                        namespace, 'Deployment', result['pods'], TIMEOUT, image=result['image'], drop_gates=True), 2)
                elif result['method'] == 'kruise':
                    result['wall'] = round(kruise.rollout(self.cluster, namespace, result['pods'], TIMEOUT,
                                                          image=result['image']), 2)
                else:
                    rolled = self.rollout(result, namespace, sorted(v['name'] for v in before.values()), image=result['image'],
                                          drain_seconds=DRAIN_SECONDS if result['drain'] else 0, run=run)
                time.sleep(max(TRAFFIC_SETTLE, TRAFFIC_DELAY))   # the last endpoint changes reach the client
            finally:
                events = pod_watch.stop()
        finally:
            served = self.stop_traffic(client, report)
        result['traffic'] = measure.traffic_summary(served)
        if result['method'] == 'native':
            seconds, missing = measure.unavailable_native(events, set(before))
        else:
            seconds, missing = measure.unavailable_in_place(events, old_image)
            if result['method'] != 'kruise':
                self.floors(result, rolled, events, old_image)
        result['unavailable'] = measure.spread(seconds)
        result['cluster_requests'] = measure.delta(metrics, measure.request_totals(self.cluster.metrics()))
        result['cluster_writes'] = measure.writes(result['cluster_requests'])
        after = self.cluster.snapshot(namespace)
        result['recreated'] = len(set(before) - set(after))
        result['ips_changed'] = len(set(v['ip'] for v in before.values()) - set(v['ip'] for v in after.values()))
        result['scheduled'] = self.cluster.scheduled_events(namespace) - scheduled
        stale = [v['name'] for v in after.values() if v['image'] != result['image']]
        if stale:
            result['error'] = '%d pod(s) not on the new image: %s' % (len(stale), ', '.join(stale[:5]))
        elif missing or result['unavailable']['pods'] != result['pods']:
            result['error'] = 'the pod watch saw %d of %d pods leave and come back; not back: %s' % (
                result['unavailable']['pods'], result['pods'], ', '.join(missing[:5]) or '-')

    def start_traffic(self, namespace, report):
        """`cluster traffic` against the Service, bounded by count and time (it stops by itself)."""
        seconds = TIMEOUT + 120
        command = [self.args.cluster_bin, 'traffic', '--kubeconfig', self.args.kubeconfig, '--namespace', namespace,
                   '--service', 'bench', '--rate', str(TRAFFIC_RATE), '--delay', '%ds' % TRAFFIC_DELAY,
                   '--duration', '%ds' % seconds, '--count', str(TRAFFIC_RATE * seconds), '--out', report]
        with open(report + '.log', 'w') as log:
            return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    @staticmethod
    def stop_traffic(client, report):
        """Stop the client (SIGTERM: it finishes the requests in flight and writes its report); the report."""
        if client.poll() is None:
            client.send_signal(signal.SIGTERM)
        try:
            client.wait(60)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()
            raise RuntimeError('the traffic client did not stop within 60 s (log: %s.log)' % report)
        if client.returncode != 0 or not os.path.exists(report):
            raise RuntimeError('the traffic client exited %d without a report (log: %s.log)' % (client.returncode, report))
        with open(report) as handle:
            return json.load(handle)

    def startup(self, namespace):
        """Module start-up: the module run as `python -m` with an args file (no Ansible around it), from
        the moment before the process is spawned to its first API request; median of the runs."""
        args = os.path.join(self.args.work, namespace + '.args.json')
        with open(args, 'w') as handle:
            json.dump({'ANSIBLE_MODULE_ARGS': {
                'namespace': namespace, 'label_selectors': ['app=bench'], 'kubeconfig': self.args.kubeconfig,
                'containers': {'app': workloads.NEW_IMAGE}}}, handle)
        values, cpu = [], []
        for attempt in range(self.args.startup_runs):
            trace = os.path.join(self.args.work, '%s.startup%d.jsonl' % (namespace, attempt))
            spawned = time.time()
            code, _wall, seconds, _rss = self.spawn([sys.executable, '-m', MODULE, args],
                                                    self.child_env(trace, collections=True), trace + '.log')
            first = [e['t'] for e in measure.load_trace(trace) if e.get('event') == 'request']
            if code != 0 or not first:
                raise RuntimeError('the module run for start-up failed (log: %s.log)' % trace)
            values.append(min(first) - spawned)
            cpu.append(seconds)
        return {'seconds': round(statistics.median(values), 3), 'runs': [round(v, 3) for v in values],
                'cpu_seconds': round(statistics.median(cpu), 3)}


# --------------------------------------------------------------------------- report

def by_name(results, pods, name):
    for result in results:
        if result['pods'] == pods and result['scenario'] == name and 'error' not in result:
            return result
    return None


def traffic_batch(pods):
    """Pods in flight in the traffic scenario: 25% (as the other scenarios), at least TRAFFIC_MIN_WINDOW."""
    if batching.batch_size(pods, '25%') >= TRAFFIC_MIN_WINDOW:
        return '25%'
    return str(min(pods, TRAFFIC_MIN_WINDOW))


def is_traffic(result):
    return result['scenario'] in [t[0] for t in TRAFFIC + KRUISE_TRAFFIC]


def verdict(ok, text):
    return {'status': 'n/a' if ok is None else ('PASS' if ok else 'MISS'), 'value': text}


def targets(results):
    """Each target with PASS/MISS (or n/a when its scenario did not run) at the largest pod count."""
    found = traffic_targets(results)
    found.update(drain.targets([r for r in results if 'error' not in r], by_name, verdict))
    found.update(reloader.targets([r for r in results if 'error' not in r], by_name, verdict))
    results = [r for r in results if not is_traffic(r) and not drain.is_drain(r) and not reloader.is_config(r)]
    if not results:
        return found
    found.update(window_targets(results))
    pods = max(r['pods'] for r in results)
    plain, drained = by_name(results, pods, 'image 100%'), by_name(results, pods, 'image 100% drain')
    inplace = [r for r in results if r['pods'] == pods and r['method'] not in ('native', 'kcore', 'kruise') and 'error' not in r]
    # Targets are judged with Ansible's defaults; rows run with other Ansible settings are told beside.
    inplace, settings = by_settings(inplace)
    if plain:
        value = plain['client']['pod_writes_per_pod']
        found['writes per pod, no drain (1)'] = verdict(value <= 1, value)
        value = plain['client']['pod_gets_per_pod']
        found['pod GETs per pod (0)'] = verdict(value == 0, value)
        value = plain['cpu_ms_per_pod']
        found['Ansible CPU per pod, image 100%% at N=%d (<=20 ms)' % pods] = verdict(value <= 20, '%s ms' % value)
        found['module start-up (<=0.5 s)'] = verdict(
            plain['startup']['seconds'] <= 0.5 if plain.get('startup') else None,
            plain.get('startup', {}).get('seconds'))
    if drained:
        value = drained['client']['pod_writes_per_pod']
        found['writes per pod, drain (<=3)'] = verdict(value <= 3, value)
    if inplace:
        worst = max(inplace, key=lambda r: r['per_batch'] or 0)
        ok = all((r['ratio'] or 0) <= 0.10 or (r['per_batch'] or 0) <= 2 for r in inplace)
        found['overhead above the kubelet floor (<=10% or <=2 s per batch)'] = verdict(
            ok, 'worst %s: %s s per batch (%s%%); best %s' % (
                worst['scenario'], worst['per_batch'], round(100 * (worst['ratio'] or 0)), ', '.join(
                    '%s %s s' % (r['scenario'], r['per_batch']) for r in inplace
                    if (r['ratio'] or 0) <= 0.10 or (r['per_batch'] or 0) <= 2) or 'none'))
        worst = max(inplace, key=lambda r: r.get('modules_per_batch') or 0)
        ok = all((r.get('modules_per_batch') or 0) <= 2 for r in inplace)
        found['same, Ansible\'s own time outside our modules left out (<=2 s per batch)'] = verdict(
            ok, 'worst %s: %s s per batch' % (worst['scenario'], worst.get('modules_per_batch')))
        rss = max(r['rss_mib'] for r in inplace)
        found['peak RSS at N=%d (<=150 MiB at 300)' % pods] = verdict(rss <= 150, '%s MiB' % rss)
        worst = max(inplace, key=lambda r: r['cpu_ms_per_pod'])
        phases = worst.get('module_cpu_phases')
        found['Ansible CPU per pod at N=%d (<=10 ms)' % pods] = verdict(
            worst['cpu_ms_per_pod'] <= 10, 'worst %s: %s ms, of which our module %s ms%s%s' % (
                worst['scenario'], worst['cpu_ms_per_pod'], worst.get('module_cpu_ms_per_pod'),
                '; its CPU s by phase: ' + ', '.join('%s %s' % item for item in phases.items()) if phases else '',
                beside(settings, lambda r: '%s ms (module %s ms)' % (r['cpu_ms_per_pod'], r.get('module_cpu_ms_per_pod')))))
    smallest = min(r['pods'] for r in results)
    first, last = by_name(results, smallest, 'image 25%'), by_name(results, pods, 'image 25%')
    if first and last and pods > smallest:
        grown = (last['per_batch'] or 0) - (first['per_batch'] or 0)
        found['cost grows with batches, not pods: image 25%% overhead per batch N=%d vs N=%d (<=+1 s)'
              % (smallest, pods)] = verdict(grown <= 1.0, '%s s vs %s s; requests per pod %s vs %s' % (
                  first['per_batch'], last['per_batch'], round(first['client']['total'] / float(smallest), 2),
                  round(last['client']['total'] / float(pods), 2)))
    for kind in ('Deployment', 'StatefulSet'):
        native = [r for r in results if r['pods'] == pods and r['method'] == 'native' and r['kind'] == kind
                  and 'error' not in r]
        ours = [r for r in inplace if r['kind'] == kind and r['batch'] == '25%']
        if kind == 'Deployment' and ours:
            same = [r for r in native if r['batch'] == '25%/0']
            if same:
                mine, theirs = min(ours, key=lambda r: r['wall']), same[0]
                text = '%s s (%s) vs %s s' % (mine['wall'], mine['scenario'], theirs['wall'])
                found['in place faster than native Deployment 25%/0 (same pods in flight, no surge)'] = verdict(
                    mine['wall'] < theirs['wall'], text)
            native = [r for r in native if r['batch'] != '25%/0']
        if native and ours:
            mine, theirs = min(ours, key=lambda r: r['wall']), native[0]
            found['in place faster than native %s' % kind] = verdict(
                mine['wall'] < theirs['wall'], '%s s (%s) vs %s s' % (mine['wall'], mine['scenario'], theirs['wall']))
            found['recreated / IPs changed, %s (0/0 vs N/N)' % kind] = verdict(
                mine['recreated'] == 0 and mine['ips_changed'] == 0,
                '%d/%d vs %d/%d' % (mine['recreated'], mine['ips_changed'], theirs['recreated'],
                                    theirs['ips_changed']))
    return found


def tuned(row):
    """A row run with Ansible settings other than its defaults (VARIANTS 'config')."""
    return bool(VARIANTS.get(row['scenario'], {}).get('config'))


def judged(oks):
    """All of ``oks`` true; None (n/a) when there is none to judge."""
    oks = list(oks)
    return all(oks) if oks else None


def by_settings(rows):
    """(the rows run with Ansible's defaults, the rows run with other Ansible settings)."""
    return [r for r in rows if not tuned(r)], [r for r in rows if tuned(r)]


def beside(rows, figure):
    """'; with <settings>: <figure>' for each of ``rows`` (run with other Ansible settings), to follow a target's
    value."""
    return ''.join('; with %s: %s' % (', '.join('%s %s' % item for item in sorted(VARIANTS[r['scenario']]['config'].items())),
                                      figure(r)) for r in rows)


def window_targets(results):
    """The role's sliding window against the module's and the native rolling updates, at every N; its fixed
    cost and its overhead per step at the largest N; the pre-pull pair."""
    found = {}
    sizes = sorted(set(r['pods'] for r in results))
    for pods in sizes:
        role, module = by_name(results, pods, 'role Deployment 25%'), by_name(results, pods, 'image window 25%')
        same, surge = by_name(results, pods, 'native Deployment 25%/0'), by_name(results, pods, 'native Deployment 25%/25%')
        if role and module:
            ratio = round(role['wall'] / module['wall'], 2)
            found['N=%d role window / module window (<=1.1x)' % pods] = verdict(
                ratio <= 1.1, '%sx: %s s vs %s s' % (ratio, role['wall'], module['wall']))
        clone = by_name(results, pods, 'kruise CloneSet 25%')
        if role and clone:
            ratio = round(role['wall'] / clone['wall'], 2)
            found['N=%d role window / Kruise CloneSet InPlaceIfPossible 25%% (<=1.1x, 0 recreated)' % pods] = verdict(
                ratio <= 1.1 and role['recreated'] == 0, '%sx: %s s vs %s s; recreated %d vs %d; cluster requests %s vs %s' % (
                    ratio, role['wall'], clone['wall'], role['recreated'], clone['recreated'],
                    sum(role['cluster_requests'].values()), sum(clone['cluster_requests'].values())))
        if role and same:
            found['N=%d role window faster than native 25%%/0, 0 recreated' % pods] = verdict(
                role['wall'] < same['wall'] and role['recreated'] == 0, '%sx: %s s vs %s s; recreated %d vs %d%s' % (
                    round(role['wall'] / same['wall'], 2), role['wall'], same['wall'], role['recreated'],
                    same['recreated'], '; vs native 25%%/25%% %sx (%s s)' % (
                        round(role['wall'] / surge['wall'], 2), surge['wall']) if surge else ''))
    roles = [r for r in results if r['pods'] == sizes[-1] and r['method'] == 'role' and r.get('fixed', {}).get('total')
             is not None and 'error' not in r] if sizes else []
    roles, settings = by_settings(roles)
    if roles:
        worst = max(roles, key=lambda r: r['fixed']['total'])
        found['role prepare + finish at N=%d (<=2 s)' % sizes[-1]] = verdict(
            worst['fixed']['total'] <= 2, 'worst %s: %s s (prepare %s s, finish %s s)%s' % (
                worst['scenario'], worst['fixed']['total'], worst['fixed']['prepare'], worst['fixed']['finish'],
                beside(settings, lambda r: '%s s' % r['fixed']['total'])))
    for pods in sizes:
        over = []
        # A pull's time lies outside the kubelet floor (before the first write): those rows are left out; so
        # are the role's batches and rows measured before the floor came from the pod watch (no 'window').
        for r in (r for r in results if r['pods'] == pods and r['method'] == 'role' and 'error' not in r and r.get('window')
                  and r.get('floor') and r.get('fixed', {}).get('total') is not None and 'pull' not in r['scenario']):
            steps = max(1, r['fixed']['steps'])
            per_step = (r['wall'] - r['floor'] - r['fixed']['total']) / steps
            r['over_per_step'] = round(per_step, 2)
            # ansible-playbook's own start-up and task handling outside our modules: once per playbook.
            inside = per_step - (r.get('outside_modules') or 0) / steps
            over.append((inside <= max(0.1 * r['floor'] / steps, 1.0), round(inside, 2), r))
        if not over:
            continue
        module = by_name(results, pods, 'image window 25%')
        found['N=%d role overhead above the kubelet floor per step, prepare, finish and Ansible\'s start-up left out '
              '(<=max(10%%, 1 s))' % pods] = verdict(judged(ok for ok, _inside, r in over if not tuned(r)), ', '.join(
                  '%s %s s per step (%d steps, floor %s s; %s s with Ansible\'s own time)' % (
                      r['scenario'], inside, r['fixed']['steps'], r['floor'], r['over_per_step'])
                  for _ok, inside, r in over) + ('; the module\'s window: %s s above its floor of %s s' % (
                      round(module['wall'] - module['floor'] - (module.get('outside_modules') or 0), 2), module['floor'])
                      if module and module.get('floor') else ''))
    for pods in sizes:
        local, pulled = by_name(results, pods, 'role Deployment 25%'), by_name(results, pods, 'role Deployment 25% pull')
        prepulled = by_name(results, pods, 'role Deployment 25% pull prepull')
        if not (local and pulled and prepulled and local.get('unavailable') and prepulled.get('unavailable')):
            continue
        found['N=%d pre-pull: unavailable per pod with -pull%d as a local image (within 1 s)' % (
            pods, PULL_SECONDS)] = verdict(
                prepulled['unavailable']['median'] <= local['unavailable']['median'] + 1 and
                prepulled['unavailable']['p95'] <= local['unavailable']['p95'] + 1,
                'median/p95/max %s/%s/%s s with pre-pull, %s/%s/%s s without, %s/%s/%s s local' % tuple(
                    r['unavailable'][k] for r in (prepulled, pulled, local) for k in ('median', 'p95', 'max')))
        found['N=%d pre-pull: wall no worse than without' % pods] = verdict(
            prepulled['wall'] <= pulled['wall'], '%s s vs %s s' % (prepulled['wall'], pulled['wall']))
    return found


def traffic_targets(results):
    """The traffic scenario's target at its largest N: no failed request in place with the drain."""
    measured = [r for r in results if is_traffic(r) and 'error' not in r]
    if not measured:
        return {}
    pods = max(r['pods'] for r in measured)
    drained = [r for r in (by_name(results, pods, t[0]) for t in TRAFFIC if t[2]) if r]
    found = {'traffic at N=%d: no failed request in place with the drain (0)' % pods: verdict(
        all(r['traffic']['failed'] == 0 for r in drained) if drained else None, ', '.join(
            '%s %d of %d' % (r['scenario'], r['traffic']['failed'], r['traffic']['sent']) for r in drained))}
    role, clone = by_name(results, pods, TRAFFIC[1][0]), by_name(results, pods, KRUISE_TRAFFIC[0][0])
    if role and clone:
        found['traffic at N=%d: the role with its gate fails no more requests than Kruise with its gate' % pods] = verdict(
            role['traffic']['failed'] <= clone['traffic']['failed'], 'role %d of %d (%s s), CloneSet %d of %d (%s s)' % (
                role['traffic']['failed'], role['traffic']['sent'], role['wall'], clone['traffic']['failed'],
                clone['traffic']['sent'], clone['wall']))
    return found


def traffic_ratios(results):
    """Each measured traffic row gets ``vs_native``: its failed requests, wall time and per-pod unavailable
    time (median, p95, total) divided by the native rolling update's at the same N (None where native's is 0)."""
    for result in results:
        native = by_name(results, result['pods'], TRAFFIC[-1][0])
        if not is_traffic(result) or 'error' in result or not native or result is native:
            continue
        pairs = {'failed': (result['traffic']['failed'], native['traffic']['failed']),
                 'wall': (result['wall'], native['wall'])}
        for key in ('median', 'p95', 'total'):
            pairs['unavailable_' + key] = (result['unavailable'][key], native['unavailable'][key])
        result['vs_native'] = dict((key, round(mine / float(theirs), 2) if theirs else None)
                                   for key, (mine, theirs) in pairs.items())


def growth(results):
    """Per scenario: wall time, client requests and Ansible CPU as the pod count grows."""
    table = {}
    for result in results:
        if 'error' in result:
            continue
        table.setdefault(result['scenario'], []).append({
            'pods': result['pods'], 'wall': result['wall'],
            'client_requests': result.get('client', {}).get('total'), 'cluster_requests': sum(
                result['cluster_requests'].values()), 'cpu': result.get('cpu')})
    for rows in table.values():
        rows.sort(key=lambda row: row['pods'])
        first, last = rows[0], rows[-1]
        if last['pods'] > first['pods'] and first.get('cpu') is not None:
            last['marginal_cpu_ms_per_pod'] = round(
                1000 * (last['cpu'] - first['cpu']) / (last['pods'] - first['pods']), 1)
    return table


COLUMNS = [('N', 'pods'), ('scenario', 'scenario'), ('wall s', 'wall'), ('wall range', 'wall_range'),
           ('floor s', 'floor'), ('floor, kubelet clock s', 'floor_kubelet_clock'), ('over s/batch', 'per_batch'), ('Ansible s', 'outside_modules'),
           ('modules over s/batch', 'modules_per_batch'), ('batches', 'batches'), ('prepare+finish s', ('fixed', 'total')),
           ('role over s/step', 'over_per_step'), ('refill median/p95 s', 'refill_pair'),
           ('unavailable median/p95 s', 'unavailable_pair'), ('our req', ('client', 'total')),
           ('pod writes/pod', ('client', 'pod_writes_per_pod')), ('pod GETs/pod', ('client', 'pod_gets_per_pod')),
           ('watches', ('client', 'watches_opened')), ('cluster req', 'cluster_total'),
           ('cluster writes', 'cluster_writes'), ('CPU s', 'cpu'), ('ms/pod', 'cpu_ms_per_pod'),
           ('module ms/pod', 'module_cpu_ms_per_pod'),
           ('RSS MiB', 'rss_mib'), ('module RSS MiB', ('client', 'module_peak_mib')), ('recreated', 'recreated'), ('IPs changed', 'ips_changed'),
           ('Scheduled', 'scheduled')]


def _cell(result, key):
    if key == 'wall_range':
        return '%s-%s' % (result['wall_min'], result['wall_max']) if result.get('repeats', 1) > 1 else '-'
    if key in ('unavailable_pair', 'refill_pair'):
        spread = result.get(key[:-len('_pair')]) or {}
        return '%s/%s' % (spread['median'], spread['p95']) if spread.get('median') is not None else '-'
    if key == 'cluster_total':
        return str(sum(result['cluster_requests'].values())) if 'cluster_requests' in result else '-'
    if isinstance(key, tuple):
        value = result.get(key[0], {}).get(key[1])
    else:
        value = result.get(key)
    return '-' if value is None else str(value)


TRAFFIC_COLUMNS = [('N', 'pods'), ('change', 'scenario'), ('in flight', 'batch'), ('wall s', 'wall'), ('sent', ('traffic', 'sent')),
                   ('failed', ('traffic', 'failed')), ('failure %', 'failure_percent'),
                   ('unavailable median s', ('unavailable', 'median')), ('p95 s', ('unavailable', 'p95')),
                   ('max s', ('unavailable', 'max')), ('pod-s total', ('unavailable', 'total')),
                   ('recreated', 'recreated'), ('IPs changed', 'ips_changed'),
                   ('failed / native', ('vs_native', 'failed')), ('wall / native', ('vs_native', 'wall')),
                   ('unavailable median / native', ('vs_native', 'unavailable_median')),
                   ('pod-s / native', ('vs_native', 'unavailable_total'))]


def cell(result, key):
    if key == 'failure_percent':
        rate = result.get('traffic', {}).get('failure_rate')
        return '-' if rate is None else '%.2f' % (100 * rate)
    return _cell(result, key)


def table(results, columns=None):
    columns = columns or COLUMNS
    rows = [[title for title, _key in columns]]
    for result in results:
        rows.append([cell(result, key) for _title, key in columns])
    lines = ['| ' + ' | '.join(row) + ' |' for row in rows]
    lines.insert(1, '|' + '|'.join(' --- ' for _row in columns) + '|')
    for result in results:
        if 'error' in result:
            lines.append('\nERROR %s N=%d: %s' % (result['scenario'], result['pods'], result['error']))
    return '\n'.join(lines)


def report(results, found):
    plain = [r for r in results if not is_traffic(r) and not reloader.is_config(r)]
    lines = [table(plain), ''] if plain else []
    configs = [r for r in results if reloader.is_config(r)]
    if configs:
        lines += ['Config rollouts under %d requests/s through the Service (tests/bench/reloader.py): the role\'s config '
                  'restart with its gate and drain_seconds %d against kubectl rollout restart:' % (
                      TRAFFIC_RATE, DRAIN_SECONDS), table(configs, reloader.COLUMNS), '']
    traffic = [r for r in results if is_traffic(r)]
    if traffic:
        lines += ['Traffic: %d requests/s through a Service (EndpointSlice changes used %d s after they are seen); '
                  'in place: a sliding window of 25%% of the pods (at least %d), with the readiness gate and '
                  'drain_seconds %d, the role through a window as wide (N >= 50), then the window without the gate; '
                  'native: maxUnavailable = maxSurge = as many. Unavailable: per pod, from its drain start (in place '
                  'without drain: its image change; native: the old pod leaving Ready or deleted) to Ready again '
                  '(native: its replacement Ready), from a pod watch.' % (TRAFFIC_RATE, TRAFFIC_DELAY, TRAFFIC_MIN_WINDOW, DRAIN_SECONDS),
                  table(traffic, TRAFFIC_COLUMNS), '']
    lines.append('Targets (goals, at the largest N):')
    for name, outcome in found.items():
        lines.append('  %-4s %s: %s' % (outcome['status'], name, outcome['value']))
    lines.extend(kcore.report_lines(results))
    lines.extend(drain.report_lines(results))
    startups = [r['startup'] for r in results if r.get('startup')]
    if startups:
        lines.append('Module start-up (python -m, spawn to first request): %s s, runs %s' % (
            startups[-1]['seconds'], startups[-1]['runs']))
    return '\n'.join(lines)


def parse(argv):
    """The options, with the selection made: ``wanted`` (SCENARIOS entries), ``sizes``, ``traffic`` (TRAFFIC
    entries) and ``traffic_sizes``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pods', default='10')
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--hook', required=True, help='directory of the trace sitecustomize.py')
    parser.add_argument('--collections', required=True, help='ANSIBLE_COLLECTIONS_PATH holding inplace.k8s')
    parser.add_argument('--out', required=True)
    parser.add_argument('--work', required=True)
    parser.add_argument('--scenarios', default='', help='comma-separated names (default: all; "traffic": the '
                        'traffic scenario\'s changes)')
    parser.add_argument('--startup-runs', type=int, default=3)
    parser.add_argument('--repeat', type=int, default=1, help='runs per scenario (the median is reported)')
    parser.add_argument('--cluster-bin', default='', help='the test bed\'s binary (its traffic client)')
    parser.add_argument('--traffic-pods', default='', help='pod counts of the traffic scenario (default: 100 '
                        'when --pods has it, else the smallest of --pods; 0: none)')
    parser.add_argument('--merge', action='store_true', help='keep the rows of --out that this run does not measure')
    args = parser.parse_args(argv)
    names = [n for n in args.scenarios.split(',') if n]
    names += list(KRUISE_GROUP) if 'kruise' in names else []
    names += list(reloader.NAMES) if reloader.GROUP in names else []
    unknown = set(names) - set([s[0] for s in SCENARIOS] + [t[0] for t in TRAFFIC + KRUISE_TRAFFIC] +
                               ['traffic', 'kruise', reloader.GROUP])
    args.wanted = [s for s in SCENARIOS if s[0] in names or not names and s[1] not in OPT_IN]
    args.traffic = [t for t in TRAFFIC if not names or t[0] in names or 'traffic' in names]
    args.kruise_traffic = [t for t in KRUISE_TRAFFIC if t[0] in names]
    try:
        args.sizes = [int(p) for p in args.pods.split(',') if p.strip()]
        args.traffic_sizes = [int(p) for p in args.traffic_pods.split(',') if p.strip() and int(p)] \
            if args.traffic_pods else [100 if 100 in args.sizes else min(args.sizes or [0])]
    except ValueError:
        parser.error('--pods %r, --traffic-pods %r: comma-separated pod counts' % (args.pods, args.traffic_pods))
    if unknown or not (args.wanted or args.traffic or args.kruise_traffic) or not args.sizes or min(args.sizes + args.traffic_sizes) < 1 \
            or args.repeat < 1:
        parser.error('--scenarios: unknown %s (known: %s, traffic, kruise, config); --pods, --traffic-pods and --repeat must be '
                     'positive' % (', '.join(sorted(unknown)) or '-', ', '.join(
                         s[0] for s in SCENARIOS + TRAFFIC + KRUISE_TRAFFIC)))
    if not args.traffic_sizes:
        args.traffic = args.kruise_traffic = []
    if (args.traffic or args.kruise_traffic or any(reloader.is_config({'scenario': s[0]}) for s in args.wanted)) and not os.access(args.cluster_bin, os.X_OK):
        parser.error('--cluster-bin %r: not an executable; the traffic scenario needs the test bed\'s binary (its '
                     'traffic client, hack/cluster.sh build), or skip the scenario with --traffic-pods 0'
                     % args.cluster_bin)
    return args


def measure_all(bench, args):
    """Every wanted scenario at every size, then the traffic scenario; one aggregated row each.

    The repeats of a size are interleaved, each round in the order opposite to the one before (A B, then B A,
    ...): the test bed's own speed drifts over minutes (a cluster of 1000 pods just created, another just
    deleted), and runs of one scenario back to back would give all of that drift to one side of a ratio."""
    results = []
    for pods in args.sizes:
        wanted = [entry for entry in args.wanted
                  if not (pods > LARGE and entry[0] not in AT_ANY_SIZE and not args.scenarios)]
        runs = dict((entry[0], []) for entry in wanted)
        for attempt in range(args.repeat):
            for name, method, kind, batch, gated in (wanted if attempt % 2 == 0 else wanted[::-1]):
                started = time.time()
                result = bench.scenario(pods, name, method, kind, batch, gated, attempt)
                runs[name].append(result)
                print('bench: N=%d %-26s run %d/%d wall %6ss  %s (%.0f s with setup)' % (
                    pods, name, attempt + 1, args.repeat, result.get('wall', '-'), result.get('error', 'ok'),
                    time.time() - started), flush=True)
        results.extend(measure.aggregate(runs[entry[0]]) for entry in wanted)
    for pods, changes, kind in [(p, args.traffic, 'Deployment') for p in args.traffic_sizes if args.traffic] + [
            (p, args.kruise_traffic, 'CloneSet') for p in args.traffic_sizes if args.kruise_traffic]:
        runs = []
        for attempt in range(args.repeat):
            started = time.time()
            runs.append(bench.traffic(pods, changes, attempt, kind))
            for result in runs[-1]:
                outcome = result.get('error') or 'failed %d of %d requests' % (
                    result['traffic']['failed'], result['traffic']['sent'])
                print('bench: N=%d %-26s run %d/%d wall %6ss  %s' % (
                    pods, result['scenario'], attempt + 1, args.repeat, result.get('wall', '-'), outcome), flush=True)
            print('bench: N=%d traffic scenario run %d/%d: %.0f s with setup' % (
                pods, attempt + 1, args.repeat, time.time() - started), flush=True)
        results.extend(measure.aggregate([run[index] for run in runs]) for index in range(len(runs[0])))
    traffic_ratios(results)
    return results


def merged(path, results):
    """The rows of the summary at ``path`` that ``results`` does not measure again, then ``results``."""
    try:
        with open(path) as handle:
            kept = json.load(handle)['results']
    except (IOError, ValueError, KeyError):
        kept = []
    fresh = set((r['pods'], r['scenario']) for r in results)
    return [r for r in kept if (r['pods'], r['scenario']) not in fresh] + results


def main(argv=None):
    started = launcher.Launcher()   # first, while this process is small (launcher.py)
    try:
        return run(parse(argv), started)
    finally:
        started.close()


def run(args, started):
    bench = Bench(args, started)
    capacity_error = bench.capacity_error(max(args.sizes + args.traffic_sizes), bool(args.traffic) or any(
        s[1] == 'native' and s[2] == 'Deployment' for s in args.wanted))
    if capacity_error:
        print('bench: %s' % capacity_error, file=sys.stderr)
        return 2
    print('bench: cluster %s, pods %s, traffic pods %s, repeat %d, run %s, work %s' % (
        bench.cluster.version(), args.pods, ','.join(map(str, args.traffic_sizes)) if args.traffic else '-',
        args.repeat, bench.run_id, args.work))
    results = measure_all(bench, args)
    if args.merge:
        results = merged(args.out, results)
    found = targets(results)
    print('\n' + report(results, found))
    nodes, per_node = bench.cluster.nodes()
    summary = {'cluster': bench.cluster.version(), 'nodes': nodes, 'max_pods_per_node': per_node,
               'pods': ','.join(map(str, sorted(set(r['pods'] for r in results)))),
               'old_image': workloads.OLD_IMAGE, 'new_image': workloads.NEW_IMAGE, 'targets': found,
               'growth': growth(results), 'results': results}
    with open(args.out, 'w') as handle:
        json.dump(summary, handle, indent=1, sort_keys=True)
        handle.write('\n')
    for path in charts.draw(summary, os.path.dirname(os.path.abspath(args.out))):
        print('bench: chart %s' % path)
    errors = [r for r in results if 'error' in r or r.get('errors_in_repeats')]
    for result in errors:
        print('bench: N=%d %s: %s' % (result['pods'], result['scenario'], result.get('error') or '; '.join(
            result['errors_in_repeats'])), file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
