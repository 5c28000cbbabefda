# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The ``kruise`` restart strategy: an OpenKruise ContainerRecreateRequest (CRR) per pod, followed to
its end through one watch.

OpenKruise's webhook fills in the CRR (each container's current containerID and restart count, pre-stop
hooks, ports). With ``unreadyGracePeriodSeconds`` kruise-manager first sets the pod's ``KruisePodReady``
condition False (only on a pod that carries that readiness gate) and kruise-daemon waits that long; then
kruise-daemon on the pod's node stops the containers through the CRI and the kubelet starts them again.
The CRR's ``status.phase`` goes Pending -> Recreating -> Completed, and
``status.containerRecreateStates[]`` holds each container's phase (Pending, Recreating, Succeeded,
Failed) and message; a container is Succeeded once its new container is ready and started at least
``minStartedSeconds`` ago. With ``failurePolicy: Fail`` the request completes at the first container
that fails. ``activeDeadlineSeconds`` (from the request's creation) completes it with the message
"recreating has exceeded the activeDeadlineSeconds" and the container not Succeeded: request_failure()
reports it. Checked against OpenKruise v1.8.2 on the local cluster (tests/kruise/crr.yml).
"""

import threading
import uuid
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.operations.strategies import restart
from ansible_collections.inplace.k8s.plugins.module_utils.args import WAIT_TIMEOUT
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods.waiter import Watcher

GROUP = 'apps.kruise.io'
API_VERSION = GROUP + '/v1alpha1'
KIND = 'ContainerRecreateRequest'
RESOURCE = 'containerrecreaterequests'
POD_READY_GATE = 'KruisePodReady'          # the readiness gate kruise-daemon uses for unreadyGracePeriodSeconds
LABEL_PREFIX = 'crr.apps.kruise.io/'       # labels OpenKruise's webhook also sets (pod name, uid, node, active)
RUN_LABEL = 'inplace.k8s/recreate-run'     # one value per task: what the watch selects
MANAGED_BY = 'app.kubernetes.io/managed-by'
DEFAULT_TTL = 1800
COMPLETED, SUCCEEDED, FAILED = 'Completed', 'Succeeded', 'Failed'

KruiseOptions = namedtuple('KruiseOptions', 'ordered min_started_seconds unready_grace_seconds active_deadline_seconds '
                                            'ttl_seconds_after_finished termination_grace_period_seconds')


def options_for(ordered, wait, drain, strategy):
    """KruiseOptions from the task's options (options.Wait, Drain, Strategy): ``ordered`` -> orderedRecreate,
    ``min_ready_seconds`` (alias ``min_started_seconds``) -> minStartedSeconds, ``drain_seconds`` with
    ``readiness_gate=KruisePodReady`` -> unreadyGracePeriodSeconds, ``wait_timeout`` -> activeDeadlineSeconds."""
    seconds = drain.seconds or 0
    return KruiseOptions(
        ordered=bool(ordered), min_started_seconds=wait.min_ready_seconds or 0,
        unready_grace_seconds=seconds if drain.readiness_gate == POD_READY_GATE and seconds > 0 else None,
        active_deadline_seconds=wait.timeout or WAIT_TIMEOUT,
        ttl_seconds_after_finished=strategy.kruise_ttl_seconds_after_finished,
        termination_grace_period_seconds=strategy.kruise_termination_grace_period_seconds)


def collection_path(namespace):
    return paths.api_path(API_VERSION, RESOURCE, namespace)


def served(kube):
    """The ContainerRecreateRequest API is served (API discovery of apps.kruise.io/v1alpha1)."""
    try:
        listing = kube.request('GET', '/apis/' + API_VERSION)
    except NotFoundError:
        return False
    return any(item.get('name') == RESOURCE for item in listing.get('resources') or [])


def request_body(pod, containers, options, run_id):
    """The ContainerRecreateRequest restarting ``containers`` (names, in order) of ``pod``."""
    name, uid = podstate.meta(pod, 'name'), podstate.meta(pod, 'uid')
    strategy = {'failurePolicy': 'Fail', 'orderedRecreate': bool(options.ordered),
                'minStartedSeconds': int(options.min_started_seconds or 0)}
    if options.unready_grace_seconds:
        strategy['unreadyGracePeriodSeconds'] = int(options.unready_grace_seconds)
    if options.termination_grace_period_seconds is not None:
        strategy['terminationGracePeriodSeconds'] = int(options.termination_grace_period_seconds)
    ttl = options.ttl_seconds_after_finished
    return {
        'apiVersion': API_VERSION,
        'kind': KIND,
        'metadata': {
            'generateName': '%s-' % name[:52],
            'namespace': podstate.meta(pod, 'namespace'),
            'labels': {
                LABEL_PREFIX + 'pod-name': name[:63],
                LABEL_PREFIX + 'pod-uid': uid,
                LABEL_PREFIX + 'node-name': (pod.get('spec') or {}).get('nodeName') or '',
                MANAGED_BY: 'inplace.k8s',
                RUN_LABEL: run_id,
            },
            'ownerReferences': [{'apiVersion': 'v1', 'kind': 'Pod', 'name': name, 'uid': uid}],
        },
        'spec': {
            'podName': name,
            'containers': [{'name': container} for container in containers],
            'strategy': strategy,
            'activeDeadlineSeconds': int(options.active_deadline_seconds),
            'ttlSecondsAfterFinished': int(DEFAULT_TTL if ttl is None else ttl),
        },
    }


def container_state(request, container):
    """The request's recreate state of one container ({name, phase, message}) or {}."""
    for item in ((request or {}).get('status') or {}).get('containerRecreateStates') or []:
        if item.get('name') == container:
            return item
    return {}


def request_phase(request):
    return ((request or {}).get('status') or {}).get('phase')


def request_failure(request, container):
    """(reason, message) when the request failed for this container, else None."""
    state = container_state(request, container)
    message = state.get('message') or ((request or {}).get('status') or {}).get('message') or ''
    if state.get('phase') == FAILED:
        return 'RecreateFailed', message or 'kruise-daemon reported the recreation failed'
    if request_phase(request) == COMPLETED and state.get('phase') != SUCCEEDED:
        return 'RecreateFailed', message or 'the ContainerRecreateRequest completed without recreating the container'
    return None


def request_succeeded(request, container):
    return request_phase(request) == COMPLETED and container_state(request, container).get('phase') == SUCCEEDED


class KruiseStrategy(restart.Strategy):
    """Restart through a ContainerRecreateRequest per pod (see the module docstring)."""

    name = 'kruise'
    orders_itself = True   # orderedRecreate
    permissions = tuple((verb, 'containerrecreaterequests', 'apps.kruise.io') for verb in ('create', 'list', 'watch'))

    def __init__(self, kube, namespace, options):
        self.kube = kube
        self.namespace = namespace
        self.options = options
        self.run_id = uuid.uuid4().hex[:16]
        self._watch = None
        self._lock = threading.Lock()

    def drains_itself(self, drain):
        """kruise-daemon drains the pod through its own gate (unreadyGracePeriodSeconds)."""
        return drain.readiness_gate == POD_READY_GATE

    def refusal(self, pod, info):
        if info.kind != podstate.CONTAINER:
            return ('a ContainerRecreateRequest restarts only spec.containers, not the %s container %s; use '
                    'strategy image_reference' % (info.kind, info.name))
        return None

    def _requests(self):
        with self._lock:
            if self._watch is None:
                self._watch = Watcher(self.kube, collection_path(self.namespace),
                                      '%s=%s' % (RUN_LABEL, self.run_id)).start()
            return self._watch

    def act(self, kube, pod, cplans, tracked):
        watch = self._requests()
        created = kube.request('POST', collection_path(self.namespace),
                               body=request_body(pod, [c.name for c in cplans], self.options, self.run_id))
        watch.observe(created)
        for cplan in cplans:
            tracked[cplan.name].details['request'] = podstate.meta(created, 'name')
        return pod

    def _request_of(self, tracked):
        """(name, latest version or None once deleted) of the request that restarts this container."""
        name = tracked.details.get('request')
        return name, (self._watch.get(name) if name and self._watch else None)

    def failure(self, pod, cplan, tracked, now):
        name, request = self._request_of(tracked)
        if name and request is None:
            return 'RecreateRequestDeleted', 'the ContainerRecreateRequest %s was deleted before it completed' % name
        return request_failure(request, cplan.name) if request else None

    def finished(self, pod, cplan, tracked):
        request = self._request_of(tracked)[1]
        return bool(request) and request_succeeded(request, cplan.name)

    def describe(self, cplan, tracked):
        name, request = self._request_of(tracked)
        request = request or {}
        state = container_state(request, cplan.name)
        return {'request': name, 'request_phase': request_phase(request),
                'request_container_phase': state.get('phase'),
                'request_message': state.get('message') or (request.get('status') or {}).get('message')}

    def close(self):
        if self._watch is not None:
            self._watch.stop()
