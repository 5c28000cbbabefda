# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Image pre-pull without a controller: before the pods of a node are drained, the node already has
their new images, so the drained window covers the container restart only, not the pull.

One short-lived pod per node, pinned by ``spec.nodeName`` (no scheduler), with one container per image
whose command is a path no image holds (``/nonexistent/...``): the kubelet pulls the image first and
then fails to start the container, so nothing of the application ever runs. A container whose state
moved past the pull (CreateContainerError, RunContainerError, CreateContainerConfigError, terminated,
even running) means the image is on the node; ErrImagePull / ImagePullBackOff / InvalidImageName mean
it cannot be pulled there, which is known before any pod was drained. The pods carry the label
``inplace.k8s/prepull=<run>`` and are deleted when the run is done with them; a leftover of an
interrupted run is deleted by the next run with the same label (or by hand: kubectl delete pod -l
inplace.k8s/prepull)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import re
import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, ConflictError, NotFoundError, WaitTimeout,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan as planning, podstate
from ansible_collections.inplace.k8s.plugins.module_utils.pods.waiter import PodWatcher

LABEL = 'inplace.k8s/prepull'
NOOP_COMMAND = ['/nonexistent/inplace-k8s-prepull']
PULLING = ('ContainerCreating', 'PodInitializing')
PULL_FAILED = ('ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'RegistryUnavailable',
               'SignatureValidationFailed')
PERMISSIONS = (('create', 'pods', ''), ('delete', 'pods', ''), ('list', 'pods', ''), ('watch', 'pods', ''))


def run_label(owner):
    """The label value for one run: a DNS-safe digest of its owner id."""
    return 'r' + hashlib.sha256((owner or 'run').encode('utf-8')).hexdigest()[:16]


def pod_name(node, images, label):
    digest = hashlib.sha256(('%s|%s|%s' % (node, label, '|'.join(sorted(images)))).encode('utf-8')).hexdigest()[:10]
    stem = re.sub('[^a-z0-9-]+', '-', node.lower()).strip('-')[:35].strip('-') or 'node'
    return 'inplace-prepull-%s-%s' % (stem, digest)


def pod_body(node, images, label, pull_secrets=None):
    """A pod that pulls ``images`` on ``node`` and runs nothing of them (restricted PodSecurity profile)."""
    security = {'allowPrivilegeEscalation': False, 'capabilities': {'drop': ['ALL']}, 'runAsNonRoot': True,
                'runAsUser': 65534, 'seccompProfile': {'type': 'RuntimeDefault'}}
    containers = [{
        'name': 'pull-%d' % index, 'image': image, 'imagePullPolicy': 'IfNotPresent', 'command': NOOP_COMMAND,
        'resources': {'requests': {'cpu': '1m', 'memory': '4Mi'}, 'limits': {'cpu': '10m', 'memory': '16Mi'}},
        'securityContext': security,
    } for index, image in enumerate(sorted(images))]
    spec = {'nodeName': node, 'restartPolicy': 'Never', 'containers': containers,
            'automountServiceAccountToken': False, 'enableServiceLinks': False,
            'terminationGracePeriodSeconds': 0, 'tolerations': [{'operator': 'Exists'}]}
    if pull_secrets:
        spec['imagePullSecrets'] = pull_secrets
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {
        'name': pod_name(node, images, label), 'labels': {LABEL: label},
        'annotations': {'inplace.k8s/prepull-images': ','.join(sorted(images))}}, 'spec': spec}


def pull_state(pod):
    """('pulled' | 'pulling' | 'failed', message) of a pre-pull pod from its container statuses."""
    statuses = (pod.get('status') or {}).get('containerStatuses') or []
    wanted = len((pod.get('spec') or {}).get('containers') or [])
    if len(statuses) < wanted:
        return 'pulling', None
    pulling = False
    for status in statuses:
        state = status.get('state') or {}
        waiting = state.get('waiting')
        if waiting is None:
            continue   # running or terminated: the image was there
        reason = waiting.get('reason')
        if reason in PULL_FAILED:
            return 'failed', '%s: %s' % (reason, waiting.get('message') or status.get('image'))
        if reason in PULLING or not reason:
            pulling = True
    return ('pulling', None) if pulling else ('pulled', None)


def targets(pairs):
    """{node: set(images)} of ``pairs`` (pod, the images a change gives it); pods not on a node, or given no
    image, need nothing."""
    by_node = {}
    for pod, wanted in pairs:
        node = (pod.get('spec') or {}).get('nodeName')
        if node and wanted:
            by_node.setdefault(node, set()).update(wanted)
    return by_node


class Stopped(Exception):
    """A pre-pull pod's wait ends early: the pod is gone, or the run was cancelled."""


class Prepull(object):
    """Pre-pull pods of one run in one namespace. ``watch(label_selector)``: a started watcher of the
    namespace's pods with that label (default: a waiter.PodWatcher)."""

    def __init__(self, kube, namespace, owner, clock=time.monotonic, watch=None):
        self.kube, self.namespace = kube, namespace
        self.label = run_label(owner)
        self.clock = clock
        self.watch = watch or (lambda selector: PodWatcher(kube, namespace, label_selector=selector).start())
        self.left = []   # pods that could not be deleted: (name, why)

    def start(self, by_node, pull_secrets=None):
        """Create the pod of each node (already there: kept). Names of the pods."""
        names = []
        for node, images in sorted(by_node.items()):
            body = pod_body(node, images, self.label, pull_secrets)
            names.append(body['metadata']['name'])
            try:
                self.kube.request('POST', self.kube.pod_path(self.namespace), body=body)
            except ConflictError:
                pass   # created by an earlier step of this run
        return names

    def wait(self, by_node, timeout, cancelled=None):
        """{node: (state, message)} once every node's pod pulled or failed, ``timeout`` passed (those nodes:
        'pulling') or ``cancelled()`` gives a reason. One watch of this run's pre-pull pods, no polling."""
        wanted = dict((pod_name(node, images, self.label), node) for node, images in by_node.items())
        deadline = self.clock() + timeout

        def stop(pod):
            return Stopped() if pod is None or (cancelled is not None and cancelled()) else None

        with self.watch('%s=%s' % (LABEL, self.label)) as watcher:
            for name in sorted(wanted):
                try:
                    watcher.wait_for(name, lambda pod: pull_state(pod)[0] != 'pulling', stop,
                                     max(0.0, deadline - self.clock()))
                except (Stopped, WaitTimeout):
                    pass
            found = dict((name, watcher.get(name)) for name in wanted)
        return dict((node, pull_state(found[name]) if found[name] is not None else
                     ('missing', 'the pre-pull pod is gone')) for name, node in wanted.items())

    def delete(self, by_node=None):
        """Delete this run's pods (of ``by_node``'s nodes only, when given); names deleted."""
        if by_node is None:
            pods, _version = self.kube.list_pods(self.namespace, label_selector='%s=%s' % (LABEL, self.label))
            names = [podstate.meta(p, 'name') for p in pods]
        else:
            names = [pod_name(node, images, self.label) for node, images in by_node.items()]
        for name in names:
            try:
                self.kube.request('DELETE', self.kube.pod_path(self.namespace, name),
                                  body={'gracePeriodSeconds': 0})
            except NotFoundError:
                pass
            except ApiError as exc:
                self.left.append((name, exc.msg))   # harmless (it runs nothing); reported, deleted by a re-run
        return names


class Pass(object):
    """The pre-pull of one engine run: the new images pulled on the nodes of the pods to change (and started on the
    nodes of ``options.prepull_ahead``, the next pods, without waiting) before any pod is drained; a node where the
    pull fails fails its pods before they are touched (``failed``: node -> why). ``report``: the result's prepull."""

    def __init__(self, kube, operation, options, run, warn, clock=time.monotonic, puller=None):
        self.kube, self.op, self.options, self.warn, self.clock = kube, operation, options, warn, clock
        self.run = run
        self.puller = puller
        self.failed = {}
        self.report = None
        self.by_node = self.ahead = None

    def start(self, plans, cancelled=None):
        self.by_node = targets((p.pod, self.op.images(p)) for p in plans if p.action == planning.UPDATE)
        self.ahead = dict((node, set(images)) for node, images in (self.options.prepull_ahead or {}).items())
        namespace = podstate.meta(plans[0].pod, 'namespace') if plans else None
        if self.puller is None:
            self.puller = Prepull(self.kube, namespace, self.run, self.clock)
        since = self.clock()
        secrets = next(((p.pod.get('spec') or {}).get('imagePullSecrets') for p in plans
                        if (p.pod.get('spec') or {}).get('imagePullSecrets')), None)
        started = dict((node, set(images)) for node, images in self.ahead.items())
        for node, images in self.by_node.items():
            started.setdefault(node, set()).update(images)
        self.puller.start(started, secrets)
        states = self.puller.wait(self.by_node, self.options.wait_timeout, cancelled) if self.by_node else {}
        for node, (state, message) in states.items():
            if state in ('failed', 'missing'):
                self.failed[node] = message
            elif state == 'pulling' and not (cancelled is not None and cancelled()):
                self.warn('pre-pull on node %s not finished after %ss: its pods are changed anyway (they wait for the '
                          'pull)' % (node, self.options.wait_timeout))
        self.report = {'nodes': sorted(self.by_node), 'ahead': sorted(set(self.ahead) - set(self.by_node)),
                       'seconds': round(self.clock() - since, 3),
                       'failed': dict((n, m) for n, m in sorted(self.failed.items()))}
        return self

    def done(self):
        """Delete the pre-pull pods of this run's nodes that the next pods do not need."""
        finished = dict((n, i) for n, i in self.by_node.items() if n not in self.ahead)
        if finished:
            self.puller.delete(finished)
        for name, why in self.puller.left:
            self.warn('pre-pull pod %s could not be deleted (%s): it runs nothing; delete it with kubectl delete pod '
                      '-l %s' % (name, why, LABEL))
