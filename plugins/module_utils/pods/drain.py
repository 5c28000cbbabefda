# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Draining: taking a pod out of its Services while it is changed, and putting it back after.

Two modes. Readiness gate: a pod whose spec.readinessGates lists a condition type is taken out by
setting that condition False through pods/status and put back by setting it True; the kubelet folds the
condition into Ready, conditions merge by ``type`` (strategic merge patch). Label: the Services select a
serving label (``key=value``) that the pod's controller does not select by; draining sets the label to
DRAINED_VALUE, so the EndpointSlice controller drops the pod while its controller keeps it, and
restoring sets the value back. Each mode is a ``Drainer``; the engine calls only its methods."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record
import re

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH, STRATEGIC_MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ValidationError

DRAIN_REASON = 'InplaceUpdate'
READY_REASON = 'InplaceUpdateDone'
DRAINED_VALUE = 'drained'   # the drain label's value while a pod is out of its Services
SERVICE_LABEL = 'kubernetes.io/service-name'
# Label keys and values as the API server validates them (qualified name, optional DNS prefix).
_NAME = r'[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'
_KEY_RE = re.compile(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?%s\Z' % _NAME)
_VALUE_RE = re.compile(r'^(%s)?\Z' % _NAME)


def has_gate(pod, gate):
    """The pod was created with this readiness gate."""
    return any(g.get('conditionType') == gate for g in (pod.get('spec') or {}).get('readinessGates') or [])


def gate_status(pod, gate):
    """'True', 'False' or None (condition not set)."""
    item = podstate.condition(pod, gate)
    return item.get('status') if item else None


def left_drained(pod, gate):
    """The gate condition is False with our drain reason: a run was stopped before it set it True again."""
    item = podstate.condition(pod, gate) if gate and has_gate(pod, gate) else None
    return bool(item) and item.get('status') == 'False' and item.get('reason') == DRAIN_REASON


def gate_patch(gate, ready, reason=None, message=None, now=None):
    """Strategic merge patch for pods/status setting the gate condition."""
    item = {
        'type': gate,
        'status': 'True' if ready else 'False',
        'reason': reason or (READY_REASON if ready else DRAIN_REASON),
        'lastTransitionTime': now or record.timestamp(),
    }
    if message:
        item['message'] = message
    return {'status': {'conditions': [item]}}


def set_gate(kube, pod, gate, ready, reason=None, message=None, metadata=None):
    """Set the gate condition on the pod; the pod after the write. ``metadata`` (record.metadata_patch)
    goes in the same write: pods/status accepts annotations, so a state record costs no write of its own."""
    body = gate_patch(gate, ready, reason, message)
    if metadata:
        body['metadata'] = metadata
    return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), body,
                          content_type=STRATEGIC_MERGE_PATCH, subresource='status')


def parse_label(text, field='drain_label'):
    """(key, serving value) from ``key`` or ``key=value`` (value ``true`` when omitted); ValidationError
    naming ``field`` when it is not a valid label or uses the reserved drained value."""
    key, sep, value = (text or '').partition('=')
    key, value = key.strip(), value.strip() if sep else 'true'
    if not _KEY_RE.match(key) or len(key.split('/')[0]) > 253 and '/' in key:
        raise ValidationError('%s: %r is not a label key (prefix/name, for example inplace.k8s/serving); '
                              'write it as key or key=value' % (field, key))
    if not value or not _VALUE_RE.match(value) or len(value) > 63:
        raise ValidationError('%s: %r is not a label value for the serving pods (1-63 letters, digits, -_. '
                              'starting and ending alphanumeric)' % (field, value))
    if value == DRAINED_VALUE:
        raise ValidationError('%s: the serving value cannot be %r, the value a drained pod carries; choose '
                              'another (for example %s=true)' % (field, DRAINED_VALUE, key))
    return key, value


def selector_keys(selector):
    """The label keys a LabelSelector (matchLabels, matchExpressions) or a plain map selects by."""
    selector = selector or {}
    if 'matchLabels' not in selector and 'matchExpressions' not in selector:
        return set(selector)
    keys = set(selector.get('matchLabels') or {})
    keys.update(item.get('key') for item in selector.get('matchExpressions') or [])
    return keys


def slice_endpoints(slices, uid):
    """[(EndpointSlice name, Service, ready)] of every endpoint of the pod ``uid``."""
    found = []
    for item in slices:
        service = ((item.get('metadata') or {}).get('labels') or {}).get(SERVICE_LABEL)
        for endpoint in item.get('endpoints') or []:
            if ((endpoint.get('targetRef') or {}).get('uid')) == uid:
                ready = (endpoint.get('conditions') or {}).get('ready')
                found.append(((item.get('metadata') or {}).get('name'), service, ready is not False))
    return found


class Drainer(object):
    """One drain mode. ``name`` labels it in messages; ``report()`` starts the per-pod result entry."""

    mode = None
    name = None
    report_restored = None   # the entry's status once put back
    permissions = ()    # what its writes and checks need besides patching pods

    def applies(self, pod):
        """The pod can be drained this way (has the gate, or carries the serving label)."""
        raise NotImplementedError

    def missing(self, pod):
        """Why ``applies`` is False, for the warning or the require_readiness_gate error."""
        raise NotImplementedError

    def left_drained(self, pod):
        """A run was stopped before it put the pod back."""
        raise NotImplementedError

    def set(self, kube, pod, serving, metadata=None):
        """Take the pod out (``serving`` False) or put it back; ``metadata`` (record.metadata_patch) goes in
        the same write. The pod after the write."""
        raise NotImplementedError

    def report(self):
        return {'mode': self.mode, 'status': 'drained', 'restored': False}

    def check(self, kube, namespace, pods):
        """Before anything is written: raise ValidationError when draining these pods would do harm; what could
        not be checked, as warnings ([] when all was)."""
        return []

    def serving(self, kube, pod):
        """The Services that list the pod as a ready endpoint, or None when this mode does not look at
        EndpointSlices (its drain shows on the pod itself)."""
        return None

    def out_of_service(self, kube, pod):
        """(done, what still serves) once the pod was taken out: it receives no new requests."""
        raise NotImplementedError

    def in_service(self, kube, pod, services):
        """(done, what is still missing) once it was put back: listed ready again by ``services`` (what
        serving() said before the drain)."""
        return True, None


class GateDrain(Drainer):
    """The readiness-gate mode (the kubelet folds the condition into Ready; the watch shows NotReady)."""

    mode = 'readiness_gate'
    report_restored = 'True'
    permissions = (('patch', 'pods/status', ''),)

    def __init__(self, gate):
        self.gate = self.name = gate

    def applies(self, pod):
        return has_gate(pod, self.gate)

    def missing(self, pod):
        return 'has no readiness gate %s' % self.gate

    def left_drained(self, pod):
        return left_drained(pod, self.gate)

    def set(self, kube, pod, serving, metadata=None):
        return set_gate(kube, pod, self.gate, serving, message=None if serving else 'in-place update by inplace.k8s',
                        metadata=metadata)

    def report(self):
        return {'mode': self.mode, 'type': self.gate, 'status': 'False', 'restored': False}

    def out_of_service(self, kube, pod):
        return not podstate.is_ready(pod), 'the pod still reports Ready'


class LabelDrain(Drainer):
    """The label mode: checked against the EndpointSlices of the pod's namespace (targetRef.uid)."""

    mode = 'label'
    permissions = (('list', 'endpointslices', 'discovery.k8s.io'),)

    def __init__(self, text):
        self.key, self.value = parse_label(text)
        self.name = self.report_restored = '%s=%s' % (self.key, self.value)

    def _label(self, pod):
        return (podstate.meta(pod, 'labels') or {}).get(self.key)

    def applies(self, pod):
        return self._label(pod) in (self.value, DRAINED_VALUE)

    def missing(self, pod):
        value = self._label(pod)
        return 'has no serving label %s (%s)' % (self.name, 'label absent' if value is None else 'it is %s=%s' % (
            self.key, value))

    def left_drained(self, pod):
        return self._label(pod) == DRAINED_VALUE

    def set(self, kube, pod, serving, metadata=None):
        body = {'metadata': dict(metadata or {}, labels={self.key: self.value if serving else DRAINED_VALUE})}
        return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), body,
                              content_type=MERGE_PATCH)

    def report(self):
        return {'mode': self.mode, 'label': self.name, 'status': DRAINED_VALUE, 'restored': False}

    def check(self, kube, namespace, pods):
        """The controller of each pod must not select by the label: flipping it would orphan the pod and
        the controller would create another one. An owner the pod names is read only when it is an allow-listed
        controller (paths.OWNER_KINDS, a fixed path); any other is not read and comes back as a warning."""
        owners, unknown = {}, {}
        for pod in pods:
            for ref in podstate.meta(pod, 'ownerReferences') or []:
                if isinstance(ref, dict) and ref.get('controller'):
                    path, why = paths.owner_path(ref, namespace)
                    key = (path, ref.get('kind'), ref.get('name')) if path else why
                    (owners if path else unknown).setdefault(key, []).append(podstate.meta(pod, 'name'))
        for (path, kind, name), names in sorted(owners.items()):
            try:
                owner = kube.request('GET', path)
            except ApiError as exc:
                if exc.status == 404:
                    continue
                raise ValidationError('drain_label: cannot read %s %s, the controller of pod(s) %s, to check that '
                                      'it does not select pods by %s: %s; nothing was changed'
                                      % (kind, name, ', '.join(names), self.key, exc.msg))
            if self.key in selector_keys((owner.get('spec') or {}).get('selector')):
                raise ValidationError('drain_label: %s %s selects its pods by %s, so draining would orphan pod(s) '
                                      '%s and the controller would create others; use a label that only the '
                                      'Service selects; nothing was changed' % (kind, name, self.key, ', '.join(names)))
        return ['drain_label: %s of pod(s) %s: not read, so not checked that it does not select pods by %s' % (
            why, ', '.join(names), self.key) for why, names in sorted(unknown.items())]

    def serving(self, kube, pod):
        items = kube.request('GET', paths.api_path('discovery.k8s.io/v1', 'endpointslices', podstate.meta(pod, 'namespace'))).get('items') or []
        return set(service for _name, service, ready in slice_endpoints(items, podstate.meta(pod, 'uid')) if ready)

    def out_of_service(self, kube, pod):
        left = self.serving(kube, pod)
        return not left, 'still a ready endpoint of Service(s) %s' % ', '.join(sorted(left))

    def in_service(self, kube, pod, services):
        missing = set(services or ()) - self.serving(kube, pod)
        return not missing, 'not yet a ready endpoint of Service(s) %s' % ', '.join(sorted(missing))


def drainer(readiness_gate=None, drain_label=None):
    """The drain mode the options ask for, or None."""
    if readiness_gate and drain_label:
        raise ValidationError('readiness_gate and drain_label are two ways to drain: give one of them')
    if drain_label:
        return LabelDrain(drain_label)
    return GateDrain(readiness_gate) if readiness_gate else None


def drainer_for(mode, name):
    """The drainer a record names by its ``mode`` and ``name`` (Drainer.mode and Drainer.name)."""
    return {GateDrain.mode: GateDrain, LabelDrain.mode: LabelDrain}[mode](name)
