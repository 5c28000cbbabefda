"""Helpers of hack/demo.sh: deploy the sample app, open readiness gates, snapshot pods, print
before/after tables, and run the native rolling update on a copy of a workload for comparison.

Usage (with the project's virtualenv python, KUBECONFIG set):
  demo.py deploy NAMESPACE
  demo.py snapshot NAMESPACE SELECTOR CONTAINER FILE
  demo.py table BEFORE AFTER
  demo.py native NAMESPACE IMAGE
"""

import json
import sys
import time

from kubernetes import client, config

GATE = 'inplace.k8s/ready'
SIDECAR = {'name': 'log', 'image': 'registry.example/fluent-bit:3.0', 'restartPolicy': 'Always',
           'resources': {'requests': {'cpu': '50m', 'memory': '32Mi'}, 'limits': {'cpu': '100m', 'memory': '64Mi'}}}
# The app takes 3 s to start (-slow3 on the local cluster), like a service that warms caches: in place it
# keeps running; a pod recreated by the controller pays the start again.
APP = {'name': 'app', 'image': 'registry.example/shop:1.0-slow3', 'ports': [{'containerPort': 8080}],
       'resources': {'requests': {'cpu': '250m', 'memory': '128Mi'}, 'limits': {'cpu': '500m', 'memory': '256Mi'}}}


def api():
    config.load_kube_config()
    return client.CoreV1Api(), client.AppsV1Api()


def pod_template(app, gated):
    spec = {'terminationGracePeriodSeconds': 1, 'initContainers': [dict(SIDECAR)], 'containers': [dict(APP)]}
    if gated:
        spec['readinessGates'] = [{'conditionType': GATE}]
    return {'metadata': {'labels': {'app': app}}, 'spec': spec}


def workloads(namespace):
    sts = {'apiVersion': 'apps/v1', 'kind': 'StatefulSet', 'metadata': {'name': 'db', 'namespace': namespace},
           'spec': {'replicas': 3, 'serviceName': 'db', 'podManagementPolicy': 'Parallel',
                    'selector': {'matchLabels': {'app': 'db'}}, 'template': pod_template('db', False)}}
    web = {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'web', 'namespace': namespace},
           'spec': {'replicas': 4, 'selector': {'matchLabels': {'app': 'web'}}, 'template': pod_template('web', True)}}
    # The copy rolled by the controller: no readiness gate (nothing would open it on new pods).
    native = {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'web-native', 'namespace': namespace},
              'spec': {'replicas': 4, 'selector': {'matchLabels': {'app': 'web-native'}},
                       'strategy': {'rollingUpdate': {'maxSurge': 1, 'maxUnavailable': 0}},
                       'template': pod_template('web-native', False)}}
    return sts, web, native


def wait(what, predicate, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(1)
    sys.exit('demo: timed out waiting for %s' % what)


def open_gates(core, namespace, selector):
    for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
        if pod.status.phase != 'Running':
            continue
        conditions = dict((c.type, c.status) for c in pod.status.conditions or [])
        if conditions.get(GATE) != 'True':
            core.patch_namespaced_pod_status(pod.metadata.name, namespace, {
                'status': {'conditions': [{'type': GATE, 'status': 'True', 'reason': 'DemoReady'}]}})


def deploy(namespace):
    core, apps = api()
    core.create_namespace({'metadata': {'name': namespace}})
    sts, web, native = workloads(namespace)
    apps.create_namespaced_stateful_set(namespace, sts)
    apps.create_namespaced_deployment(namespace, web)
    apps.create_namespaced_deployment(namespace, native)
    for name in ('web', 'web-native'):
        core.create_namespaced_service(namespace, {'metadata': {'name': name}, 'spec': {
            'selector': {'app': name}, 'ports': [{'port': 80, 'targetPort': 8080}]}})

    def ready():
        open_gates(core, namespace, 'app=web')
        pods = core.list_namespaced_pod(namespace).items
        return len(pods) == 11 and all(
            any(c.type == 'Ready' and c.status == 'True' for c in p.status.conditions or []) for p in pods)
    wait('the sample app to be ready', ready)
    print('deployed StatefulSet db (3 pods), Deployment web (4 pods, readiness gate %s), Service web, '
          'Deployment web-native (4 pods, the copy for the native rolling update), Service web-native' % GATE)


def container_status(pod, name):
    for status in (pod.status.init_container_statuses or []) + (pod.status.container_statuses or []):
        if status.name == name:
            return status
    return None


def snapshot(namespace, selector, container, path):
    core, _apps = api()
    rows = []
    for pod in sorted(core.list_namespaced_pod(namespace, label_selector=selector).items,
                      key=lambda p: p.metadata.name):
        if pod.metadata.deletion_timestamp:
            continue
        status = container_status(pod, container)
        spec = [c for c in (pod.spec.init_containers or []) + pod.spec.containers if c.name == container][0]
        app = [c for c in pod.spec.containers if c.name == 'app'][0]
        rows.append({'name': pod.metadata.name, 'uid': pod.metadata.uid, 'ip': pod.status.pod_ip,
                     'node': pod.spec.node_name, 'image': spec.image,
                     'restarts': status.restart_count if status else None,
                     'app_cpu': (app.resources.requests or {}).get('cpu'),
                     'app_memory': (app.resources.requests or {}).get('memory')})
    with open(path, 'w') as handle:
        json.dump(rows, handle)


def table(before_path, after_path):
    with open(before_path) as handle:
        before = json.load(handle)
    with open(after_path) as handle:
        after = json.load(handle)
    by_uid = dict((row['uid'], row) for row in before)
    header = ('POD', 'UID', 'IP', 'NODE', 'IMAGE', 'RESTARTS', 'APP CPU/MEM', 'IN PLACE')
    lines = [header]
    for index, row in enumerate(after):
        old = by_uid.get(row['uid']) or (before[index] if index < len(before) else {})
        in_place = row['uid'] in by_uid

        def both(key, row=row, old=old):
            return str(row[key]) if old.get(key) == row[key] else '%s -> %s' % (old.get(key), row[key])
        lines.append((old.get('name', '-') + ('' if old.get('name') == row['name'] else ' -> ' + row['name']),
                      row['uid'][:8] if in_place else '%s -> %s' % (old.get('uid', '-')[:8], row['uid'][:8]),
                      both('ip'), both('node'), both('image'), both('restarts'),
                      '%s/%s' % (row['app_cpu'], row['app_memory']) if old.get('app_cpu') == row['app_cpu'] else
                      '%s/%s -> %s/%s' % (old.get('app_cpu'), old.get('app_memory'), row['app_cpu'], row['app_memory']),
                      'yes' if in_place else 'no'))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print('  ' + '  '.join(cell.ljust(width) for cell, width in zip(line, widths)))


def native(namespace, image):
    _core, apps = api()
    started = time.time()
    apps.patch_namespaced_deployment('web-native', namespace, {'spec': {'template': {'spec': {
        'initContainers': [dict(SIDECAR, image=image)]}}}})

    def done():
        d = apps.read_namespaced_deployment('web-native', namespace)
        s = d.status
        return (s.observed_generation or 0) >= d.metadata.generation and s.updated_replicas == 4 and \
            s.ready_replicas == 4 and (s.replicas or 0) == 4
    wait('the native rolling update', done, 300)
    replica_sets = apps.list_namespaced_replica_set(namespace, label_selector='app=web-native').items
    print('native rolling update: %.1fs, ReplicaSets now %d' % (time.time() - started, len(replica_sets)))


def traffic(path, what):
    """One line from a `cluster traffic` report: requests served and failed during ``what``."""
    with open(path) as handle:
        report = json.load(handle)
    reasons = ', '.join('%s %d' % item for item in sorted((report.get('failures') or {}).items()))
    print('traffic through the Service during %s: %d requests, %d served, %d failed%s (rate %s/s, endpoint '
          'changes seen after %ss)' % (what, report['sent'], report['ok'], report['failed'],
                                       ' (%s)' % reasons if reasons else '', report.get('rate'),
                                       report.get('delay_seconds')))


if __name__ == '__main__':
    command, args = sys.argv[1], sys.argv[2:]
    {'deploy': deploy, 'snapshot': snapshot, 'table': table, 'native': native, 'traffic': traffic}[command](*args)
