# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``cri`` restart strategy: stop the container through the node's container runtime (CRI), as
an operator on the node would; the kubelet then starts it again per the restart policy.

The task must run on the pod's node (``delegate_to``). Two command-line clients are understood:
``crictl`` (``crictl --runtime-endpoint unix:///run/containerd/containerd.sock ps -a -o json``,
``stop --timeout S ID``) and ``local-cluster``, the crictl-like client of this repository's test
cluster (``cluster cri --socket PATH ps|stop``); ``parse_ps`` reads the JSON of both.
Stopping through the runtime bypasses the kubelet: no preStop hook runs.
"""

import json

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

CRICTL, LOCAL_CLUSTER = 'crictl', 'local-cluster'
CLIENTS = (CRICTL, LOCAL_CLUSTER)
RUNNING = 'CONTAINER_RUNNING'
POD_NAME_LABEL = 'io.kubernetes.pod.name'
POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace'
POD_UID_LABEL = 'io.kubernetes.pod.uid'
DEFAULT_GRACE = 30


def runtime_id(container_id):
    """``containerd://abc`` -> ``abc`` (the ID the runtime knows)."""
    return (container_id or '').split('://', 1)[-1]


def parse_ps(text):
    """Containers listed by ``crictl ps -o json`` ({"containers": [...]}) or ``cluster cri ps`` ([...]),
    as dicts with id, name, pod, namespace, pod_uid, state and attempt."""
    data = json.loads(text or 'null')
    rows = []
    if isinstance(data, dict):          # crictl
        for item in data.get('containers') or []:
            labels = item.get('labels') or {}
            metadata = item.get('metadata') or {}
            rows.append({'id': item.get('id'), 'name': metadata.get('name'), 'pod': labels.get(POD_NAME_LABEL),
                         'namespace': labels.get(POD_NAMESPACE_LABEL), 'pod_uid': labels.get(POD_UID_LABEL),
                         'state': item.get('state'), 'attempt': metadata.get('attempt')})
    elif isinstance(data, list):        # cluster cri
        for item in data:
            rows.append({'id': item.get('ID'), 'name': item.get('Name'), 'pod': item.get('Pod'),
                         'namespace': item.get('Namespace'), 'pod_uid': item.get('PodUID'),
                         'state': item.get('State'), 'attempt': item.get('Attempt')})
    else:
        raise ValueError('unexpected container list: %s' % (text or '')[:200])
    return rows


class CriClient:
    """Builds and runs the commands of one client. ``run_command(args)`` -> (rc, stdout, stderr)."""

    def __init__(self, client, command, endpoint, run_command):
        if client not in CLIENTS:
            raise ValidationError('cri_client must be one of %s' % ', '.join(CLIENTS))
        if client == LOCAL_CLUSTER and not endpoint:
            raise ValidationError('cri_client local-cluster needs cri_endpoint (the node\'s CRI socket)')
        self.client = client
        self.command = command or ('cluster' if client == LOCAL_CLUSTER else 'crictl')
        self.endpoint = endpoint
        self.run_command = run_command

    def _base(self):
        if self.client == LOCAL_CLUSTER:
            path = self.endpoint[len('unix://'):] if self.endpoint.startswith('unix://') else self.endpoint
            return [self.command, 'cri', '--socket', path]
        if not self.endpoint:
            return [self.command]   # crictl's own configuration (/etc/crictl.yaml, CONTAINER_RUNTIME_ENDPOINT)
        endpoint = self.endpoint if '://' in self.endpoint else 'unix://' + self.endpoint
        return [self.command, '--runtime-endpoint', endpoint]

    def ps_args(self, namespace, pod):
        if self.client == LOCAL_CLUSTER:
            return self._base() + ['ps', '--namespace', namespace, '--pod', pod]
        return self._base() + ['ps', '-a', '-o', 'json', '--label', '%s=%s' % (POD_NAMESPACE_LABEL, namespace),
                               '--label', '%s=%s' % (POD_NAME_LABEL, pod)]

    def stop_args(self, container_id, timeout):
        return self._base() + ['stop', '--timeout', str(int(timeout)), container_id]

    def _run(self, args):
        rc, out, err = self.run_command(args)
        if rc != 0:
            raise RuntimeError('%s failed (rc %s): %s' % (' '.join(args), rc, (err or out or '').strip()))
        return out

    def containers(self, namespace, pod):
        args = self.ps_args(namespace, pod)
        try:
            return parse_ps(self._run(args))
        except ValueError as exc:
            raise RuntimeError('%s: %s' % (' '.join(args), exc))

    def stop(self, container_id, timeout):
        self._run(self.stop_args(container_id, timeout))

    def where(self):
        return self.endpoint or '%s default endpoint' % self.command


def client_for(strategy, run_command):
    """The CriClient of an options.Strategy."""
    return CriClient(strategy.cri_client or CRICTL, strategy.cri_command, strategy.cri_endpoint, run_command)


def find_row(rows, container_id):
    """The listed container with this runtime ID (IDs may be shown shortened), or None."""
    wanted = runtime_id(container_id)
    for row in rows:
        if row['id'] and wanted and (row['id'] == wanted or wanted.startswith(row['id'])):
            return row
    return None


class CriStrategy(restart.Strategy):
    """Stop each container through the CRI endpoint of the node the task runs on."""

    name = 'cri'

    def __init__(self, client):
        self.client = client

    def act(self, kube, pod, cplans, tracked):
        name, namespace = podstate.meta(pod, 'name'), podstate.meta(pod, 'namespace')
        grace = (pod.get('spec') or {}).get('terminationGracePeriodSeconds')
        grace = DEFAULT_GRACE if grace is None else grace
        try:
            rows = self.client.containers(namespace, name)
        except RuntimeError as exc:
            raise PodFailure(name, 'CriError', str(exc))
        for cplan in cplans:
            container_id = tracked[cplan.name].container_id
            row = find_row(rows, container_id)
            if row is None or (row.get('pod_uid') and row['pod_uid'] != podstate.meta(pod, 'uid')):
                raise PodFailure(name, 'ContainerNotOnNode', (
                    'container %s is not known to the runtime at %s; run the task on the pod\'s node %s '
                    '(delegate_to) with that node\'s CRI endpoint' % (
                        runtime_id(container_id), self.client.where(), (pod.get('spec') or {}).get('nodeName'))),
                    container=cplan.name)
            if row.get('state') != RUNNING:
                raise PodFailure(name, 'NotRunning', 'the runtime reports container %s as %s' % (
                    row['id'], row.get('state')), container=cplan.name)
            tracked[cplan.name].details.update(runtime_id=row['id'], grace_seconds=grace)
            try:
                self.client.stop(row['id'], grace)
            except RuntimeError as exc:
                raise PodFailure(name, 'CriError', str(exc), container=cplan.name)
        return pod

    def describe(self, cplan, tracked):
        return {'runtime_id': tracked.details.get('runtime_id'), 'cri_endpoint': self.client.where()}
