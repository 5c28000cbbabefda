# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Benchmarks of in-place rollouts on the local cluster (hack/bench.sh runs this).

For each pod count N and each scenario: a fresh namespace with a workload of N pods, one rollout
from OLD_IMAGE to NEW_IMAGE, then the measurements, then the namespace is deleted. In-place
scenarios run ansible-playbook as a child process (wall time, CPU and peak RSS from wait4) with
the request trace hook on its PYTHONPATH; native scenarios patch the workload's template and
watch the controller. Prints a table and the targets, writes a JSON summary.

Usage: run.py --pods 10,100 --kubeconfig KUBECONFIG --hook DIR --collections DIR --out FILE --work DIR
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

from ansible_collections.inplace.k8s.plugins.module_utils import batching

import kcore
import measure
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
]

IMAGE_TASK = {
    'name': 'Update one batch with inplace_image',
    'inplace.k8s.inplace_image': {
        'namespace': '{{ bench_namespace }}', 'names': '{{ item }}', 'containers': {'app': '{{ bench_image }}'},
        'max_concurrency': '{{ bench_concurrency | default(item | length) }}', 'wait_timeout': '{{ bench_timeout }}',
        'readiness_gate': '{{ bench_gate | default(omit) }}', 'drain_seconds': 0},
    'loop': '{{ bench_batches }}',
}
ROLE_TASK = {
    'name': 'Roll out with the rollout role',
    'ansible.builtin.include_role': {'name': 'inplace.k8s.rollout'},
    'vars': {'rollout_target': {'kind': '{{ bench_kind }}', 'name': 'bench', 'namespace': '{{ bench_namespace }}'},
             'rollout_images': {'app': '{{ bench_image }}'}, 'rollout_batch_size': '{{ bench_batch }}',
             'rollout_wait_timeout': '{{ bench_timeout }}',
             # Like for like with the native rolling updates measured beside it (minReadySeconds 0).
             'rollout_min_ready_seconds': 0},
}


class Bench(object):
    def __init__(self, args):
        self.args = args
        self.cluster = workloads.Cluster(args.kubeconfig)
        self.run_id = uuid.uuid4().hex[:6]

    def capacity_error(self, pods, native_deployment):
        """Why the cluster cannot hold the largest workload (and the native Deployment's 25% surge), or None."""
        slots, used = self.cluster.pod_slots()
        needed = pods + (-(-pods // 4) if native_deployment else 0)
        if slots - used >= needed:
            return None
        nodes = max(1, len(self.cluster.core.list_node().items))
        per_node = -(-(needed + used + 10) // nodes)
        return ('N=%d needs %d free pod slots (with the native Deployment\'s 25%% surge); the cluster has %d, '
                '%d in use. Start it with more: make cluster-down; NODE_MAX_PODS=%d make cluster-up (hack/bench.sh '
                'does this itself when it starts the cluster)' % (pods, needed, slots, used, per_node))

    def child_env(self, trace, collections=False):
        env = dict(os.environ)
        env.update(INPLACE_BENCH_TRACE=trace, K8S_AUTH_KUBECONFIG=self.args.kubeconfig, ANSIBLE_NOCOLOR='1',
                   ANSIBLE_COLLECTIONS_PATH=self.args.collections, ANSIBLE_LOCALHOST_WARNING='False',
                   PYTHONPATH=os.pathsep.join([self.args.hook] + ([self.args.collections] if collections else [])))
        return env

    def spawn(self, command, env, log):
        """Run a child to its end; (exit code, wall seconds, CPU seconds, peak RSS MiB) from wait4."""
        with open(log, 'w') as out:
            start = time.time()
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
            _pid, status, usage = os.wait4(proc.pid, 0)
            wall = time.time() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0

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
            unavailable, _slash, surge = batch.partition('/')
            self.cluster.create_workload(namespace, kind, pods, gated=gated, max_unavailable=unavailable,
                                         max_surge=surge or unavailable)
            before = self.cluster.snapshot(namespace)
            scheduled = self.cluster.scheduled_events(namespace)
            metrics = measure.request_totals(self.cluster.metrics())
            if method == 'native':
                result['wall'] = round(self.cluster.native_rollout(namespace, kind, pods, TIMEOUT), 2)
            else:
                self.rollout(result, namespace, sorted(v['name'] for v in before.values()))
            result['cluster_requests'] = measure.delta(metrics, measure.request_totals(self.cluster.metrics()))
            result['cluster_writes'] = measure.writes(result['cluster_requests'])
            after = self.cluster.snapshot(namespace)
            result['recreated'] = len(set(before) - set(after))
            result['ips_changed'] = len(set(v['ip'] for v in before.values()) - set(v['ip'] for v in after.values()))
            result['scheduled'] = self.cluster.scheduled_events(namespace) - scheduled
            stale = [v['name'] for v in after.values() if v['image'] != workloads.NEW_IMAGE]
            if stale:
                result['error'] = '%d pod(s) not on the new image: %s' % (len(stale), ', '.join(stale[:5]))
            if method == 'image' and name == SCENARIOS[0][0] and self.args.startup_runs:
                result['startup'] = self.startup(namespace)
        except Exception as exc:  # pylint: disable=broad-except
            result['error'] = '%s: %s' % (type(exc).__name__, exc)
        finally:
            self.cluster.delete_namespace(namespace)
        return result

    def rollout(self, result, namespace, names):
        """An in-place rollout through ansible-playbook; fills wall, CPU, RSS, trace and floor figures."""
        trace = os.path.join(self.args.work, namespace + '.trace.jsonl')
        size = batching.batch_size(len(names), result['batch'])
        extra = {'bench_namespace': namespace, 'bench_image': workloads.NEW_IMAGE, 'bench_timeout': TIMEOUT,
                 'bench_kind': result['kind'], 'bench_batch': result['batch'],
                 'bench_batches': batching.plan_batches(names, names, size)['batches']}
        if result['method'] == 'window':
            extra.update(bench_batches=[names], bench_concurrency=size)
        if result['drain']:
            extra['bench_gate'] = workloads.GATE
        task = {'role': ROLE_TASK, 'kcore': kcore.TASK}.get(result['method'], IMAGE_TASK)
        command = self.playbook(task, extra, namespace)
        code, wall, cpu, rss = self.spawn(command, self.child_env(trace), os.path.join(
            self.args.work, namespace + '.log'))
        entries = measure.load_trace(trace)
        if result['method'] == 'kcore':
            result.update(kcore.observe(self.cluster, namespace, len(names), time.time() - wall, TIMEOUT, entries),
                          wall=round(wall, 2), cpu=round(cpu, 2), rss_mib=round(rss, 1),
                          cpu_ms_per_pod=round(1000 * cpu / result['pods'], 1),
                          client=measure.trace_summary(entries, result['pods']))
            if code != 0:
                result['error'] = 'ansible-playbook exited %d (log: %s.log)' % (code, os.path.join(self.args.work, namespace))
            return
        ready = self.cluster.ready_times(namespace)
        if result['method'] == 'window':
            floors = measure.window_floors(entries, ready, size)
        else:
            floors = measure.batch_floors(entries, ready)
        result.update(wall=round(wall, 2), cpu=round(cpu, 2), cpu_ms_per_pod=round(1000 * cpu / result['pods'], 1),
                      rss_mib=round(rss, 1), batches=len(floors), floors=floors,
                      module_startup=measure.startup_seconds(entries),
                      client=measure.trace_summary(entries, result['pods']))
        result.update(measure.overhead(wall, floors, measure.outside_modules(entries, wall)))
        if code != 0:
            result['error'] = 'ansible-playbook exited %d (log: %s.log)' % (code, os.path.join(self.args.work, namespace))

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


def verdict(ok, text):
    return {'status': 'n/a' if ok is None else ('PASS' if ok else 'MISS'), 'value': text}


def targets(results):
    """Each target with PASS/MISS (or n/a when its scenario did not run) at the largest pod count."""
    pods = max(r['pods'] for r in results)
    plain, drained = by_name(results, pods, 'image 100%'), by_name(results, pods, 'image 100% drain')
    inplace = [r for r in results if r['pods'] == pods and r['method'] not in ('native', 'kcore') and 'error' not in r]
    found = {}
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
           ('floor s', 'floor'), ('over s/batch', 'per_batch'), ('Ansible s', 'outside_modules'),
           ('modules over s/batch', 'modules_per_batch'), ('batches', 'batches'), ('our req', ('client', 'total')),
           ('pod writes/pod', ('client', 'pod_writes_per_pod')), ('pod GETs/pod', ('client', 'pod_gets_per_pod')),
           ('watches', ('client', 'watches_opened')), ('cluster req', 'cluster_total'),
           ('cluster writes', 'cluster_writes'), ('CPU s', 'cpu'), ('ms/pod', 'cpu_ms_per_pod'),
           ('RSS MiB', 'rss_mib'), ('recreated', 'recreated'), ('IPs changed', 'ips_changed'),
           ('Scheduled', 'scheduled')]


def cell(result, key):
    if key == 'wall_range':
        return '%s-%s' % (result['wall_min'], result['wall_max']) if result.get('repeats', 1) > 1 else '-'
    if key == 'cluster_total':
        return str(sum(result['cluster_requests'].values())) if 'cluster_requests' in result else '-'
    if isinstance(key, tuple):
        value = result.get(key[0], {}).get(key[1])
    else:
        value = result.get(key)
    return '-' if value is None else str(value)


def table(results):
    rows = [[title for title, _key in COLUMNS]]
    for result in results:
        rows.append([cell(result, key) for _title, key in COLUMNS])
    lines = ['| ' + ' | '.join(row) + ' |' for row in rows]
    lines.insert(1, '|' + '|'.join(' --- ' for _row in COLUMNS) + '|')
    for result in results:
        if 'error' in result:
            lines.append('\nERROR %s N=%d: %s' % (result['scenario'], result['pods'], result['error']))
    return '\n'.join(lines)


def report(results, found):
    lines = [table(results), '', 'Targets (goals, at the largest N):']
    for name, outcome in found.items():
        lines.append('  %-4s %s: %s' % (outcome['status'], name, outcome['value']))
    lines.extend(kcore.report_lines(results))
    startups = [r['startup'] for r in results if r.get('startup')]
    if startups:
        lines.append('Module start-up (python -m, spawn to first request): %s s, runs %s' % (
            startups[-1]['seconds'], startups[-1]['runs']))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pods', default='10')
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--hook', required=True, help='directory of the trace sitecustomize.py')
    parser.add_argument('--collections', required=True, help='ANSIBLE_COLLECTIONS_PATH holding inplace.k8s')
    parser.add_argument('--out', required=True)
    parser.add_argument('--work', required=True)
    parser.add_argument('--scenarios', default='', help='comma-separated names (default: all)')
    parser.add_argument('--startup-runs', type=int, default=3)
    parser.add_argument('--repeat', type=int, default=1, help='runs per scenario (the median is reported)')
    args = parser.parse_args(argv)
    bench = Bench(args)
    wanted = [s for s in SCENARIOS if not args.scenarios or s[0] in args.scenarios.split(',')]
    sizes = [int(p) for p in args.pods.split(',') if p.strip()]
    unknown = set(args.scenarios.split(',')) - set(s[0] for s in SCENARIOS) if args.scenarios else set()
    if unknown or not wanted or not sizes or args.repeat < 1:
        parser.error('--scenarios: unknown %s (known: %s); --pods and --repeat must be positive' % (
            ', '.join(sorted(unknown)) or '-', ', '.join(s[0] for s in SCENARIOS)))
    capacity_error = bench.capacity_error(max(sizes), any(s[1] == 'native' and s[2] == 'Deployment' for s in wanted))
    if capacity_error:
        print('bench: %s' % capacity_error, file=sys.stderr)
        return 2
    print('bench: cluster %s, pods %s, repeat %d, run %s, work %s' % (
        bench.cluster.version(), args.pods, args.repeat, bench.run_id, args.work))
    results = []
    for pods in sizes:
        for name, method, kind, batch, gated in wanted:
            runs = []
            for attempt in range(args.repeat):
                started = time.time()
                result = bench.scenario(pods, name, method, kind, batch, gated, attempt)
                runs.append(result)
                print('bench: N=%d %-26s run %d/%d wall %6ss  %s (%.0f s with setup)' % (
                    pods, name, attempt + 1, args.repeat, result.get('wall', '-'), result.get('error', 'ok'),
                    time.time() - started), flush=True)
            results.append(measure.aggregate(runs))
    found = targets(results)
    text = report(results, found)
    print('\n' + text)
    summary = {'cluster': bench.cluster.version(), 'pods': args.pods, 'old_image': workloads.OLD_IMAGE,
               'new_image': workloads.NEW_IMAGE, 'targets': found, 'growth': growth(results),
               'results': results}
    with open(args.out, 'w') as handle:
        json.dump(summary, handle, indent=1, sort_keys=True)
        handle.write('\n')
    errors = [r for r in results if 'error' in r or r.get('errors_in_repeats')]
    for result in errors:
        print('bench: N=%d %s: %s' % (result['pods'], result['scenario'], result.get('error') or '; '.join(
            result['errors_in_repeats'])), file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
