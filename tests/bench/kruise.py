# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The same rollout through OpenKruise (hack/kruise.sh up runs it on the local cluster): a CloneSet of the
same pods with updateStrategy InPlaceIfPossible and the same unavailability budget (maxUnavailable 25%,
maxSurge 0). Kruise's controller patches each pod's image in place after setting its own readiness gate
(InPlaceUpdateReady) False, waits ``gracePeriodSeconds`` (the drain), and the kubelet restarts the container.
The rollout is done when the CloneSet's status says so: every replica updated and ready at the observed
generation. Also: what Kruise has installed in the cluster, read from the API server."""

import time

from kubernetes import client, watch

import workloads

GROUP, VERSION, PLURAL = 'apps.kruise.io', 'v1alpha1', 'clonesets'
READY_GATE = 'InPlaceUpdateReady'   # the readiness gate Kruise adds to a CloneSet's pods
WEBHOOKS = ('kruise-mutating-webhook-configuration', 'kruise-validating-webhook-configuration')


class NotInstalled(RuntimeError):
    pass


def _custom(cluster):
    return client.CustomObjectsApi(cluster.api_client)


def check(cluster):
    """Raises NotInstalled, naming the fix, unless the CloneSet API is served."""
    try:
        resources = client.CustomObjectsApi(cluster.api_client).get_api_resources(GROUP, VERSION).resources
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        resources = []
    if not any(r.name == PLURAL for r in resources):
        raise NotInstalled('OpenKruise is not installed on this cluster (no %s/%s %s): make kruise-up'
                           % (GROUP, VERSION, PLURAL))


def create(cluster, namespace, replicas, max_unavailable='25%', drain_seconds=0, serve=False):
    """A CloneSet named 'bench' of ``replicas`` pods running OLD_IMAGE (no gate of ours: Kruise adds its own),
    InPlaceIfPossible with ``max_unavailable`` and no surge, ``drain_seconds`` between the gate going False and
    the image patch (inPlaceUpdateStrategy.gracePeriodSeconds); waits until every pod is Ready."""
    check(cluster)
    body = {'apiVersion': GROUP + '/' + VERSION, 'kind': 'CloneSet',
            'metadata': {'name': 'bench', 'namespace': namespace},
            'spec': {'replicas': replicas, 'selector': {'matchLabels': {'app': 'bench'}},
                     'template': workloads.pod_template(False, serve),
                     'updateStrategy': {'type': 'InPlaceIfPossible', 'maxUnavailable': max_unavailable,
                                        'maxSurge': 0,
                                        'inPlaceUpdateStrategy': {'gracePeriodSeconds': int(drain_seconds)}}}}
    _custom(cluster).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    timeout = 120 + 2 * replicas
    workloads.wait_until(lambda: cluster._all_ready(namespace, replicas), timeout,  # pylint: disable=protected-access
                         '%d ready pods of the CloneSet' % replicas)


def rolled_out(cloneset, replicas):
    status = cloneset.get('status') or {}
    return (status.get('observedGeneration') or 0) >= cloneset['metadata']['generation'] and (
        status.get('updatedReplicas') == replicas == status.get('replicas') == status.get('readyReplicas')
        and status.get('updatedReadyReplicas') == replicas
        and status.get('updateRevision') == status.get('currentRevision'))


def rollout(cluster, namespace, replicas, timeout, image=workloads.NEW_IMAGE):
    """Set ``image`` on the CloneSet's template and wait until Kruise has rolled it out; the seconds it took."""
    custom = _custom(cluster)
    current = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, 'bench')
    version = current['metadata']['resourceVersion']
    containers = current['spec']['template']['spec']['containers']
    containers[0]['image'] = image
    start = time.time()
    # The client sends a merge patch to custom objects (no strategic merge): the container list as a whole.
    custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, 'bench', {
        'spec': {'template': {'spec': {'containers': containers}}}})
    stream = watch.Watch()
    deadline = start + timeout
    done = False
    while not done and time.time() < deadline:
        for event in stream.stream(custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL,
                                   field_selector='metadata.name=bench', resource_version=version,
                                   timeout_seconds=max(1, int(deadline - time.time()))):
            version = event['object']['metadata']['resourceVersion']
            if event['type'] != 'ERROR' and rolled_out(event['object'], replicas):
                stream.stop()
                done = True
                break
    if not done:
        raise TimeoutError('the CloneSet did not roll out within %ss' % timeout)
    workloads.wait_until(lambda: cluster._all_ready(namespace, replicas), timeout,  # pylint: disable=protected-access
                         'every pod Ready')
    return time.time() - start


def installed(cluster):
    """What OpenKruise put into the cluster: its CRDs, webhook configurations (and how many webhooks, which of
    them on pods), and what a real install runs that hack/kruise.sh runs as processes instead."""
    ext = client.ApiextensionsV1Api(cluster.api_client)
    crds = sorted(c.metadata.name for c in ext.list_custom_resource_definition().items
                  if c.spec.group.endswith('kruise.io'))
    admission = client.AdmissionregistrationV1Api(cluster.api_client)
    hooks, on_pods = 0, 0
    for read, name in ((admission.read_mutating_webhook_configuration, WEBHOOKS[0]),
                       (admission.read_validating_webhook_configuration, WEBHOOKS[1])):
        try:
            found = read(name).webhooks or []
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            found = []
        hooks += len(found)
        on_pods += sum(1 for h in found if any('pods' in (r.resources or []) for r in h.rules or []))
    return {'crds': len(crds), 'crd_names': crds, 'webhook_configurations': 2, 'webhooks': hooks,
            'webhooks_on_pods': on_pods,
            'runs': 'kruise-manager (a Deployment in a real install; here a process) and kruise-daemon on every '
                    'node (a DaemonSet; here a process per node)'}
