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

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ConflictError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

LABEL = 'inplace.k8s/prepull'
NOOP_COMMAND = ['/nonexistent/inplace-k8s-prepull']
PULLING = ('ContainerCreating', 'PodInitializing')
PULL_FAILED = ('ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'RegistryUnavailable',
               'SignatureValidationFailed')
PERMISSIONS = (('create', 'pods', ''), ('delete', 'pods', ''), ('list', 'pods', ''))
POLL_SECONDS = 0.5


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


class Prepull(object):
    """Pre-pull pods of one run in one namespace."""

    def __init__(self, kube, namespace, owner, clock=time.monotonic, sleep=time.sleep):
        self.kube, self.namespace = kube, namespace
        self.label = run_label(owner)
        self.clock, self.sleep = clock, sleep
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

    def wait(self, by_node, timeout):
        """{node: (state, message)} once every node's pod pulled or failed, or ``timeout`` passed
        (those nodes: 'pulling')."""
        wanted = dict((pod_name(node, images, self.label), node) for node, images in by_node.items())
        deadline = self.clock() + timeout
        while True:
            pods, _version = self.kube.list_pods(self.namespace, label_selector='%s=%s' % (LABEL, self.label))
            found = dict((podstate.meta(p, 'name'), p) for p in pods)
            states = dict((node, pull_state(found[name]) if name in found else ('missing', 'the pre-pull pod is gone'))
                          for name, node in wanted.items())
            if all(state != 'pulling' for state, _message in states.values()) or self.clock() >= deadline:
                return states
            self.sleep(POLL_SECONDS)

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
