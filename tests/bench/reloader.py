# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The config rollout scenarios of the benchmark (issue 48): a ConfigMap the pods read through env and envFrom
changed, then rolled out by the role's in-place config restart, or by `kubectl rollout restart` (what Stakater
Reloader triggers: a new pod template annotation, so the Deployment controller recreates every pod).

Both under the same disruption budget (25% unavailable, no surge) and under the same traffic: the Deployment 'bench'
of N pods (the app's port, an httpGet readiness probe every second) behind the Service 'bench', the test bed's
traffic client sending TRAFFIC_RATE requests/s through it from before the change to after it. The role drains each
pod before its restart (its readiness gate, drain_seconds as the traffic scenario's); the native Deployment has no
readiness gate (nothing would open it on the new pods). The ConfigMap's data changes before either starts, outside
the wall: the role's wall is its ansible-playbook run, native's from the template patch to every new pod Ready.
Measured: wall, pods recreated, IPs changed, Scheduled events, requests sent and failed, the pods that run the new
config (role: the app container's restart count grew; native: a new pod), the API server's requests. Beside them
UNDRAINED: the role without the gate and drain, under the same traffic (what the drain costs in wall time).
"""

import datetime
import os
import time

import measure
import workloads

CONFIGMAP = 'bench-config'
KEY = 'mode'
ROLE = 'role config 25%'
NATIVE = 'native rollout restart 25%/0'
# The role without its readiness gate and drain (under the same traffic): what the drain costs in wall time.
UNDRAINED = 'role config 25% no drain'
# name -> (method, workload kind, batch, drain through the readiness gate), as run.SCENARIOS
SCENARIOS = [(ROLE, 'config', 'Deployment', '25%', True), (NATIVE, 'restart', 'Deployment', '25%/0', False),
             (UNDRAINED, 'config', 'Deployment', '25%', False)]
NAMES = tuple(s[0] for s in SCENARIOS)
GROUP = 'config'     # SCENARIOS=config selects both
RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt'


def is_config(result):
    return result.get('scenario') in NAMES


def role_task(task):
    """run.py's ROLE_TASK (``task``) for the config restart: rollout_config instead of rollout_images."""
    variables = dict(task['vars'])
    del variables['rollout_images']
    variables['rollout_config'] = ['ConfigMap/' + CONFIGMAP]
    return dict(task, vars=variables)


def configmap(value):
    return {'metadata': {'name': CONFIGMAP}, 'data': {KEY: value, 'app.conf': 'mode=%s\n' % value}}


def env_consumer(container):
    """``container`` (a pod template's container) reading CONFIGMAP through envFrom and one key through env."""
    container.update(envFrom=[{'configMapRef': {'name': CONFIGMAP}}], env=[{
        'name': 'BENCH_MODE', 'valueFrom': {'configMapKeyRef': {'name': CONFIGMAP, 'key': KEY}}}])
    return container


def restart_patch(now):
    """What `kubectl rollout restart` sends: the template annotation kubectl.kubernetes.io/restartedAt (RFC 3339)."""
    return {'spec': {'template': {'metadata': {'annotations': {RESTARTED_AT: now.strftime('%Y-%m-%dT%H:%M:%SZ')}}}}}


def restart_counts(pods):
    """{uid: the app container's restart count} of ``pods`` (V1Pod objects not going away)."""
    return dict((p.metadata.uid, sum(s.restart_count for s in p.status.container_statuses or []
                                     if s.name == workloads.CONTAINER))
                for p in pods if p.metadata.deletion_timestamp is None)


def new_config_pods(before, after):
    """Pods that run the new config (pure): ``before``/``after`` are restart_counts(); a pod that is new, or whose
    app container's restart count grew."""
    return sum(1 for uid, count in after.items() if uid not in before or count > before[uid])


def scenario(bench, result, namespace, timing):
    """One run of ROLE or NATIVE in ``namespace`` (created by the caller, deleted by it): fills ``result``.
    ``timing``: run.py's traffic settings (delay, settle, drain_seconds, timeout)."""
    pods, role, gated = result['pods'], result['method'] == 'config', result['drain']
    cluster = bench.cluster
    cluster.core.create_namespaced_config_map(namespace, configmap('one'))
    cluster.create_workload(namespace, 'Deployment', pods, gated=gated, max_unavailable='25%', max_surge='0',
                            serve=True, consumer=env_consumer)
    cluster.create_service(namespace)
    workloads.wait_until(lambda: cluster.ready_endpoints(namespace) == pods, 60 + pods,
                         '%d ready endpoints of the Service' % pods)
    listed = cluster.pods(namespace)
    before, counts = cluster.snapshot(namespace), restart_counts(listed)
    scheduled = cluster.scheduled_events(namespace)
    report = os.path.join(bench.args.work, namespace + '.traffic.json')
    client = bench.start_traffic(namespace, report)
    try:
        time.sleep(timing['delay'] + timing['settle'])
        if client.poll() is not None:
            raise RuntimeError('the traffic client exited early (log: %s.log)' % report)
        time.sleep(1)   # the change is a second after every container's start (the role compares seconds)
        cluster.core.replace_namespaced_config_map(CONFIGMAP, namespace, configmap('two'))
        metrics = measure.request_totals(cluster.metrics())
        if role:
            bench.rollout(result, namespace, sorted(v['name'] for v in before.values()),
                          drain_seconds=timing['drain_seconds'] if gated else 0)
        else:
            patch = restart_patch(datetime.datetime.now(datetime.timezone.utc))
            result['wall'] = round(cluster.native_rollout(namespace, 'Deployment', pods, timing['timeout'],
                                                          patch=patch), 2)
        result['cluster_requests'] = measure.delta(metrics, measure.request_totals(cluster.metrics()))
        time.sleep(max(timing['settle'], timing['delay']))   # the last endpoint changes reach the client
    finally:
        served = bench.stop_traffic(client, report)
    result['traffic'] = measure.traffic_summary(served)
    result['cluster_writes'] = measure.writes(result['cluster_requests'])
    after = cluster.snapshot(namespace)
    result.update(recreated=len(set(before) - set(after)), ips_changed=len(
        set(v['ip'] for v in before.values()) - set(v['ip'] for v in after.values())),
        scheduled=cluster.scheduled_events(namespace) - scheduled,
        new_config=new_config_pods(counts, restart_counts(cluster.pods(namespace))))
    if result['new_config'] != pods and 'error' not in result:
        result['error'] = '%d of %d pods run the new config (a restarted app container or a new pod)' % (
            result['new_config'], pods)


def targets(results, pods_of, verdict):
    """Per N: the role's config restart <= 0.5x native's rollout restart wall, 0 recreated, 0 failed requests."""
    found = {}
    for pods in sorted(set(r['pods'] for r in results)):
        role, native, undrained = (pods_of(results, pods, name) for name in (ROLE, NATIVE, UNDRAINED))
        if not role:
            continue
        ratio = round(role['wall'] / native['wall'], 2) if native else None
        found['N=%d role config restart <= 0.5x native rollout restart (Reloader), 0 recreated, 0 failed requests'
              % pods] = verdict(
            None if native is None else ratio <= 0.5 and role['recreated'] == 0 and role['traffic']['failed'] == 0,
            '%sx: %s s vs %s s; recreated %d vs %s; failed requests %d of %d vs %s' % (
                ratio, role['wall'], native['wall'] if native else '-', role['recreated'],
                native['recreated'] if native else '-', role['traffic']['failed'], role['traffic']['sent'],
                '%d of %d' % (native['traffic']['failed'], native['traffic']['sent']) if native else '-') + (
                    '; without the drain %s s (%sx), failed %d of %d' % (
                        undrained['wall'], round(undrained['wall'] / native['wall'], 2) if native else '-',
                        undrained['traffic']['failed'], undrained['traffic']['sent']) if undrained else ''))
    return found


COLUMNS = [('N', 'pods'), ('scenario', 'scenario'), ('wall s', 'wall'), ('wall range', 'wall_range'),
           ('sent', ('traffic', 'sent')), ('failed', ('traffic', 'failed')), ('recreated', 'recreated'),
           ('IPs changed', 'ips_changed'), ('Scheduled', 'scheduled'), ('new config', 'new_config'),
           ('cluster req', 'cluster_total'), ('CPU s', 'cpu')]
