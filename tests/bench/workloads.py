# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The benchmark's own access to the cluster (kubernetes client, never the collection's code):
namespaces, the workloads rolled, waits, pod snapshots, the API server's metrics and the native
rolling updates that in-place rollouts are compared with."""

import json
import threading
import time

from kubernetes import client, config, watch
from kubernetes.watch.watch import iter_resp_lines

CONTAINER = 'app'
OLD_IMAGE = 'registry.example/bench:1.0'
NEW_IMAGE = 'registry.example/bench:2.0-slow2'   # the fake runtime takes 2 s to start it
GATE = 'inplace.k8s/ready'
LABEL = 'inplace.k8s/bench'
PORT = 8080             # where the local cluster's app serves HTTP when the container declares it


class Cluster(object):
    """Typed APIs over one kubeconfig."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        self.api_client = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api_client)
        self.apps = client.AppsV1Api(self.api_client)

    def version(self):
        return client.VersionApi(self.api_client).get_code(_request_timeout=10).git_version

    def metrics(self):
        """The API server's /metrics text."""
        method, url, headers, _body, _post = self.api_client.param_serialize(
            'GET', '/metrics', auth_settings=['BearerToken'])
        response = self.api_client.call_api(method, url, header_params=headers, _request_timeout=30)
        response.read()
        return response.data.decode('utf-8')

    # ---- namespaces

    def create_namespace(self, name):
        self.core.create_namespace({'metadata': {'name': name, 'labels': {LABEL: 'true'}}})
        wait_until(lambda: self._has_service_account(name), 60, 'service account of %s' % name)

    def _has_service_account(self, namespace):
        return bool(self.core.list_namespaced_service_account(namespace).items)

    def delete_namespace(self, name, timeout=300):
        try:
            self.core.delete_namespace(name, grace_period_seconds=0)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        wait_until(lambda: not self._exists(name), timeout, 'deletion of namespace %s' % name)

    def _exists(self, name):
        try:
            self.core.read_namespace(name)
            return True
        except client.ApiException as exc:
            if exc.status == 404:
                return False
            raise

    def leftover_namespaces(self):
        return [n.metadata.name for n in self.core.list_namespace(label_selector=LABEL).items]

    # ---- workloads

    def create_workload(self, namespace, kind, replicas, gated=False, max_unavailable='25%', max_surge=None,
                        serve=False, consumer=None):
        """A Deployment or StatefulSet named 'bench' of ``replicas`` pods running OLD_IMAGE,
        rolling ``max_unavailable`` (and ``max_surge`` surge pods for a Deployment, as many by default)
        at a time. ``serve``: the container declares the port its app serves and a readiness probe on it
        (the traffic scenario). ``consumer``: a function that adds to the app container (reloader.py's env
        consumer of a ConfigMap)."""
        spec = {'replicas': replicas, 'selector': {'matchLabels': {'app': 'bench'}},
                'template': pod_template(gated, serve, consumer)}
        body = {'metadata': {'name': 'bench', 'namespace': namespace}, 'spec': spec}
        if kind == 'Deployment':
            spec['strategy'] = {'type': 'RollingUpdate',
                                'rollingUpdate': {'maxSurge': _count(max_surge or max_unavailable),
                                                  'maxUnavailable': _count(max_unavailable)}}
            self.apps.create_namespaced_deployment(namespace, body)
        else:
            spec.update(serviceName='bench', podManagementPolicy='Parallel',
                        updateStrategy={'type': 'RollingUpdate',
                                        'rollingUpdate': {'maxUnavailable': max_unavailable}})
            self.apps.create_namespaced_stateful_set(namespace, body)
        timeout = 120 + 2 * replicas
        if gated:  # Ready only once the gate is open: wait for the containers, then open every gate
            wait_until(lambda: self._all_ready(namespace, replicas, 'ContainersReady'), timeout,
                       '%d pods with ready containers' % replicas)
            for pod in self.pods(namespace):
                self.core.patch_namespaced_pod_status(pod.metadata.name, namespace, {'status': {'conditions': [
                    {'type': GATE, 'status': 'True', 'reason': 'Bench'}]}})
        wait_until(lambda: self._all_ready(namespace, replicas), timeout, '%d ready pods' % replicas)

    def create_service(self, namespace):
        """The Service 'bench' in front of the workload's pods (port 80 to the app's PORT)."""
        self.core.create_namespaced_service(namespace, {'metadata': {'name': 'bench'}, 'spec': {
            'selector': {'app': 'bench'}, 'ports': [{'name': 'http', 'port': 80, 'targetPort': 'http'}]}})

    def ready_endpoints(self, namespace):
        """Ready endpoints in the EndpointSlices of the Service 'bench'."""
        slices = client.DiscoveryV1Api(self.api_client).list_namespaced_endpoint_slice(
            namespace, label_selector='kubernetes.io/service-name=bench').items
        return sum(1 for s in slices for e in s.endpoints or [] if e.conditions is None or e.conditions.ready is not False)

    def pods(self, namespace):
        return self.core.list_namespaced_pod(namespace, label_selector='app=bench').items

    def _all_ready(self, namespace, replicas, kind='Ready'):
        pods = [p for p in self.pods(namespace) if p.metadata.deletion_timestamp is None]
        return len(pods) == replicas and all(condition(p, kind) == 'True' for p in pods)

    def snapshot(self, namespace):
        """{uid: {name, ip, node, image}} of the workload's pods."""
        return dict((p.metadata.uid, {'name': p.metadata.name, 'ip': p.status.pod_ip, 'node': p.spec.node_name,
                                      'image': p.spec.containers[0].image})
                    for p in self.pods(namespace) if p.metadata.deletion_timestamp is None)

    def scheduled_events(self, namespace):
        return len(self.core.list_namespaced_event(namespace, field_selector='reason=Scheduled').items)

    def ready_times(self, namespace):
        """{pod name: epoch seconds} at which it last became ready (the latest of the app container's
        startedAt and the ContainersReady and Ready conditions, so a readiness gate counts; the
        kubelet's 1 s resolution)."""
        times = {}
        for pod in self.pods(namespace):
            moments = []
            for status in pod.status.container_statuses or []:
                if status.name == CONTAINER and status.state.running is not None:
                    moments.append(status.state.running.started_at.timestamp())
            for cond in pod.status.conditions or []:
                if cond.type in ('ContainersReady', 'Ready') and cond.status == 'True' and cond.last_transition_time:
                    moments.append(cond.last_transition_time.timestamp())
            if moments:
                times[pod.metadata.name] = max(moments)
        return times

    def _node_slots(self):
        """The pods each schedulable node may hold."""
        return [int(n.status.allocatable.get('pods', '0')) for n in self.core.list_node().items
                if not n.spec.unschedulable]

    def nodes(self):
        """(schedulable nodes, the most pods one of them may hold): the test bed a run measured."""
        slots = self._node_slots()
        return len(slots), max(slots or [0])

    def pod_slots(self):
        """(pods the nodes can hold, pods running now) over the schedulable nodes."""
        slots = sum(self._node_slots())
        used = len([p for p in self.core.list_pod_for_all_namespaces(field_selector='status.phase!=Succeeded').items
                    if p.spec.node_name])
        return slots, used

    # ---- the native rolling update

    def native_rollout(self, namespace, kind, replicas, timeout, image=NEW_IMAGE, drop_gates=False, patch=None):
        """Set ``image`` on the workload's template (``drop_gates``: and remove its readiness gates, which
        nothing would open on new pods), or send ``patch`` instead, and wait until the controller has rolled it
        out; the seconds it took."""
        patch = patch or {'spec': {'template': {'spec': {'containers': [{'name': CONTAINER, 'image': image}]}}}}
        if drop_gates:
            patch['spec']['template']['spec']['readinessGates'] = None
        read, patcher, lister = {
            'Deployment': (self.apps.read_namespaced_deployment, self.apps.patch_namespaced_deployment,
                           self.apps.list_namespaced_deployment),
            'StatefulSet': (self.apps.read_namespaced_stateful_set, self.apps.patch_namespaced_stateful_set,
                            self.apps.list_namespaced_stateful_set)}[kind]
        version = read('bench', namespace).metadata.resource_version
        start = time.time()
        patcher('bench', namespace, patch)  # a strategic merge (the client's choice for a dict): by container name
        done = rolled_out if kind == 'Deployment' else sts_rolled_out
        stream = watch.Watch()
        for event in stream.stream(lister, namespace, field_selector='metadata.name=bench',
                                   resource_version=version, timeout_seconds=int(timeout)):
            if done(event['object'], replicas):
                stream.stop()
                break
        else:
            raise TimeoutError('%s did not roll out within %ss' % (kind, timeout))
        wait_until(lambda: self._all_ready(namespace, replicas), timeout, 'old pods gone')
        return time.time() - start


def _count(value):
    """'25%' stays a percentage, '0' becomes the number 0 (an IntOrString)."""
    return value if str(value).endswith('%') else int(value)


def pod_template(gated, serve=False, consumer=None):
    container = {'name': CONTAINER, 'image': OLD_IMAGE}
    if consumer:
        consumer(container)
    if serve:
        container.update(ports=[{'name': 'http', 'containerPort': PORT}], readinessProbe={
            'httpGet': {'path': '/ready', 'port': 'http'}, 'periodSeconds': 1})
    spec = {'terminationGracePeriodSeconds': 1, 'enableServiceLinks': False, 'containers': [container]}
    if gated:
        spec['readinessGates'] = [{'conditionType': GATE}]
    return {'metadata': {'labels': {'app': 'bench'}}, 'spec': spec}


def condition(pod, kind):
    for cond in pod.status.conditions or []:
        if cond.type == kind:
            return cond.status
    return None


def rolled_out(deployment, replicas):
    status = deployment.status
    return (status.observed_generation or 0) >= deployment.metadata.generation and (
        status.updated_replicas == replicas == status.replicas == status.ready_replicas
        and status.available_replicas == replicas)


def sts_rolled_out(sts, replicas):
    status = sts.status
    return (status.observed_generation or 0) >= sts.metadata.generation and (
        status.update_revision == status.current_revision
        and status.updated_replicas == replicas == status.ready_replicas)


class PodWatch(object):
    """The workload's pods as a watch of their namespace sees them during a change: a list of
    (epoch seconds when this process saw it, pod state as pod_state() gives it), from a listing at
    construction on. The watch runs in a thread of its own with its own client, until stop() or
    ``timeout`` seconds.

    It reads the API server's JSON as plain data, never as the client's model objects: building a V1Pod
    costs about 2 ms of CPU against 0.05 ms for the JSON alone, CPU that the measured rollout shares (at
    1000 pods the runner now uses under 0.02 of a core; the walls moved within their noise)."""

    def __init__(self, kubeconfig, namespace, timeout):
        self.core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        self.namespace = namespace
        listing = self._call(_request_timeout=60)
        seen = time.time()
        listing = json.loads(listing.data)
        self.events = [(seen, pod_state(p)) for p in listing['items']]
        self.version = listing['metadata']['resourceVersion']
        self.error = None
        self.done = threading.Event()
        self.deadline = time.time() + timeout
        self.thread = threading.Thread(target=self._run, name='pod-watch-%s' % namespace)
        self.thread.daemon = True
        self.thread.start()

    def _call(self, **kwargs):
        """The pods of the workload (a list, or a watch with watch=True): the raw response, not decoded."""
        return self.core.list_namespaced_pod(self.namespace, label_selector='app=bench', _preload_content=False,
                                             **kwargs)

    def _run(self):
        try:
            while not self.done.is_set() and time.time() < self.deadline:
                # Short server-side timeouts: the loop looks at done at least every 2 s.
                response = self._call(watch=True, resource_version=self.version, timeout_seconds=2,
                                      _request_timeout=30)
                try:
                    for line in iter_resp_lines(response):
                        if not line:
                            continue
                        seen = time.time()
                        event = json.loads(line)
                        pod = event['object']
                        if event['type'] == 'ERROR':   # e.g. 410 Gone: transitions would be missed
                            raise RuntimeError('watch error: %s' % pod.get('message'))
                        self.version = pod['metadata']['resourceVersion']
                        self.events.append((seen, pod_state(pod, deleted=event['type'] == 'DELETED')))
                        if self.done.is_set():
                            break
                finally:
                    response.release_conn()
        except Exception as exc:  # pylint: disable=broad-except
            self.error = '%s: %s' % (type(exc).__name__, exc)

    def stop(self):
        """The events seen; raises when the watch broke (its events would miss transitions)."""
        self.done.set()
        self.thread.join(10)
        if self.error:
            raise RuntimeError('the pod watch of %s broke: %s' % (self.namespace, self.error))
        return list(self.events)


def pod_state(pod, deleted=False):
    """What the unavailable-time analysis (measure.py) needs of a pod (its JSON, as the API server sends it):
    uid, name, Ready and the gate (condition status or None), the image in the spec and the one the app
    container runs, and whether the pod is going (deletion timestamp) or gone."""
    meta, status = pod['metadata'], pod.get('status') or {}
    running = [s.get('image') for s in status.get('containerStatuses') or []
               if s.get('name') == CONTAINER and (s.get('state') or {}).get('running') is not None]
    conditions = dict((c.get('type'), c.get('status')) for c in status.get('conditions') or [])
    return {'uid': meta['uid'], 'name': meta['name'], 'ready': conditions.get('Ready'),
            'gate': conditions.get(GATE), 'image': pod['spec']['containers'][0]['image'],
            'running': running[0] if running else None,
            'deleted': deleted or meta.get('deletionTimestamp') is not None}


def wait_until(predicate, timeout, what, interval=0.5):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise TimeoutError('timed out after %ss waiting for %s' % (timeout, what))
        time.sleep(interval)
