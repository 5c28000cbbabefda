# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Who opens a readiness gate nobody drained: an admission policy for new pods, healing for old ones.

A pod that lists a readiness gate in ``spec.readinessGates`` stays NotReady (out of its Services) until
someone sets that condition True. Our drains set it False and back True, but the pods a controller
creates later (scale-up, replacement, ``kubectl rollout restart``) start without the condition.

- ``policy_objects()`` builds a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA and on by
  default from Kubernetes 1.36) and its binding: on every ``pods/status`` UPDATE (the kubelet's status
  patches included) of a pod that has the gate in its spec and whose status lacks the condition, the
  API server adds the condition with status True. A write whose result already carries the condition
  (our drain setting it False, or any later write of a drained pod) does not match: the policy never
  opens a gate that someone closed. ``ensure_policy()`` makes the pair present or absent.
- ``gate_heal.heal()`` finds gated pods without the condition (created before the policy, or on a server
  without it) and sets it True through ``pods/status`` (operations/gate_heal.py).

rbac/inplace-k8s-rbac.yml: ClusterRole ``inplace-k8s-readiness-gate-policy`` for the policy pair;
healing uses the ``inplace-k8s`` role's ``list pods`` and ``patch pods/status``.
"""

import copy
import re
from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access, paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.operations import gate_heal
from ansible_collections.inplace.k8s.plugins.module_utils.operations.gate_names import DEFAULT_GATE, default_policy_name

GROUP = 'admissionregistration.k8s.io'
API_VERSION = GROUP + '/v1'
POLICIES = 'mutatingadmissionpolicies'
BINDINGS = 'mutatingadmissionpolicybindings'
MANAGED_BY = {'app.kubernetes.io/managed-by': 'inplace.k8s'}
GATE_ANNOTATION = 'inplace.k8s/readiness-gate'
OPEN_REASON = 'AdmissionPolicy'
NOT_FOUND = 404
# The actions of converge() that write, and how check mode reports them (the others: unchanged, absent).
CHECK_MODE_ACTIONS = {'created': 'would_create', 'updated': 'would_update', 'deleted': 'would_delete'}

# A condition type is a qualified name: an optional DNS subdomain prefix and '/', then a name of at most
# 63 characters (alphanumerics, '-', '_', '.', starting and ending alphanumeric). This also keeps it
# safe inside a CEL string literal.
_NAME = r'[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'
_PREFIX = r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'
GATE_RE = re.compile(r'^(%s/)?%s\Z' % (_PREFIX, _NAME))
OBJECT_NAME_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z')


# --------------------------------------------------------------------------- input

def check_gate(gate, field='gate'):
    if not gate or not GATE_RE.match(gate) or len(gate.partition('/')[0]) > 253:
        raise ValidationError('%s %r is not a condition type: give a qualified name such as inplace.k8s/ready '
                              '(optional DNS prefix and "/", then up to 63 letters, digits, "-", "_" or ".")'
                              % (field, gate))
    return gate


def check_object_name(name, field):
    if not OBJECT_NAME_RE.match(name or ''):
        raise ValidationError('%s %r is not a valid object name: lowercase letters, digits, "-" and ".", '
                              'starting and ending with a letter or digit' % (field, name))
    return name


def scope_selectors(namespaces=None, namespace_selector=None, object_selector=None):
    """The binding's matchResources: namespaces (a list of names) or a namespace selector, and an
    optional object (pod label) selector. Without any, the binding matches every namespace."""
    if namespaces and namespace_selector:
        raise ValidationError('namespaces and namespace_selector are mutually exclusive: give one')
    for field, sel in (('namespace_selector', namespace_selector), ('object_selector', object_selector)):
        if sel is not None and (not isinstance(sel, dict) or set(sel) - set(['matchLabels', 'matchExpressions'])):
            raise ValidationError('%s must be a label selector: a dict with matchLabels and/or matchExpressions'
                                  % field)
    match = {}
    if namespaces:
        match['namespaceSelector'] = {'matchExpressions': [
            {'key': 'kubernetes.io/metadata.name', 'operator': 'In', 'values': sorted(set(namespaces))}]}
    elif namespace_selector:
        match['namespaceSelector'] = copy.deepcopy(namespace_selector)
    if object_selector:
        match['objectSelector'] = copy.deepcopy(object_selector)
    return match


# --------------------------------------------------------------------------- the policy

def cel_string(value):
    return "'%s'" % value  # check_gate() allows no quote or backslash


def policy_objects(gate, policy_name=None, binding_name=None, match=None, failure_policy='Ignore'):
    """(MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding) that open ``gate`` on pods that lack it."""
    check_gate(gate)
    policy_name = check_object_name(policy_name or default_policy_name(gate), 'policy_name')
    binding_name = check_object_name(binding_name or policy_name, 'binding_name')
    g = cel_string(gate)
    condition = 'Object.status.conditions{type: %s, status: "True", reason: "%s", message: %s}' % (
        g, OPEN_REASON, cel_string('opened by the MutatingAdmissionPolicy %s' % policy_name))
    metadata = {'labels': dict(MANAGED_BY), 'annotations': {GATE_ANNOTATION: gate}}
    policy = {
        'apiVersion': API_VERSION, 'kind': 'MutatingAdmissionPolicy',
        'metadata': dict(name=policy_name, **copy.deepcopy(metadata)),
        'spec': {
            'failurePolicy': failure_policy,
            'reinvocationPolicy': 'Never',
            'matchConstraints': {'resourceRules': [{
                'apiGroups': [''], 'apiVersions': ['v1'], 'operations': ['UPDATE'], 'resources': ['pods/status']}]},
            'matchConditions': [
                {'name': 'pod-has-the-gate',
                 'expression': "has(object.spec.readinessGates) && "
                               "object.spec.readinessGates.exists(g, g.conditionType == %s)" % g},
                # Only objects that have conditions: a JSONPatch value that is a list of typed objects (to create
                # status.conditions) makes the 1.36.3 API server panic in cel-go's ConvertToNative. The kubelet's
                # status writes always carry conditions, so the first of them opens the gate.
                {'name': 'has-conditions-but-not-the-gate',
                 'expression': "has(object.status) && has(object.status.conditions) && "
                               "!object.status.conditions.exists(c, c.type == %s)" % g},
            ],
            'mutations': [{'patchType': 'JSONPatch', 'jsonPatch': {
                'expression': '[JSONPatch{op: "add", path: "/status/conditions/-", value: %s}]' % condition}}],
        },
    }
    binding = {
        'apiVersion': API_VERSION, 'kind': 'MutatingAdmissionPolicyBinding',
        'metadata': dict(name=binding_name, **copy.deepcopy(metadata)),
        'spec': {'policyName': policy_name},
    }
    if match:
        binding['spec']['matchResources'] = copy.deepcopy(match)
    return policy, binding


def object_path(resource, name=None):
    return paths.api_path(API_VERSION, resource, name=name or None)


def contains(stored, wanted):
    """Everything ``wanted`` sets is in ``stored`` (fields the server defaults are ignored); lists must have
    the same length and match item by item."""
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(contains(stored.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        if not isinstance(stored, list) or len(stored) != len(wanted):
            return False
        return all(contains(s, w) for s, w in zip(stored, wanted))
    return stored == wanted


def _comparable(obj):
    """The part of an object we manage: labels/annotations we set, and the spec."""
    if obj is None:
        return None
    meta = obj.get('metadata') or {}
    return {'metadata': {'labels': meta.get('labels') or {}, 'annotations': meta.get('annotations') or {}},
            'spec': obj.get('spec') or {}}


def _read(kube, resource, name):
    """The stored object, or None when there is none (404: the object, or its API, is not there)."""
    try:
        return kube.request('GET', object_path(resource, name))
    except ApiError as exc:
        if exc.status == NOT_FOUND:
            return None
        raise


def _updated(stored, wanted):
    """``wanted`` as a replacement of ``stored``: guarded by its resourceVersion, and keeping the labels and
    annotations others set on it (ours are set over them)."""
    after = copy.deepcopy(wanted)
    after['metadata']['resourceVersion'] = stored['metadata'].get('resourceVersion')
    for field in ('labels', 'annotations'):
        merged = dict(stored['metadata'].get(field) or {})
        merged.update(after['metadata'][field])
        after['metadata'][field] = merged
    return after


def converge(kube, resource, wanted, present=True, check_mode=False):
    """Make one cluster-scoped object of ``resource`` present as ``wanted`` (created, or replaced where the part
    we manage differs) or absent (deleted). Returns (action, stored, after): the action (created, updated,
    deleted, unchanged or absent), the object before and after (None when there is none; in check mode, what
    would be written)."""
    name = wanted['metadata']['name']
    stored = _read(kube, resource, name)
    if not present:
        if stored is None:
            return 'absent', None, None
        if not check_mode:
            try:
                kube.request('DELETE', object_path(resource, name))
            except NotFoundError:
                return 'absent', stored, None   # deleted by someone else meanwhile
        return 'deleted', stored, None
    if stored is None:
        after = wanted if check_mode else kube.request('POST', object_path(resource), body=wanted)
        return 'created', None, after
    if contains(_comparable(stored), _comparable(wanted)):
        return 'unchanged', stored, stored
    after = _updated(stored, wanted)
    if not check_mode:
        after = kube.request('PUT', object_path(resource, name), body=after)
    return 'updated', stored, after


def served(kube):
    """The API server serves MutatingAdmissionPolicy in admissionregistration.k8s.io/v1."""
    try:
        resources = kube.request('GET', '/apis/' + API_VERSION).get('resources') or []
    except NotFoundError:
        return False
    return any(r.get('name') == POLICIES for r in resources)


def _not_served_error():
    return ValidationError('this API server does not serve %s %s (Kubernetes 1.36+, where MutatingAdmissionPolicy '
                           'is GA and on by default; on 1.34/1.35 it is beta and needs the feature gate and '
                           '--runtime-config). Nothing was changed. Without it, open stranded gates with '
                           'state=healed after each scale-up or replacement' % (API_VERSION, POLICIES))


def ensure_policy(kube, state, gate, policy_name=None, binding_name=None, match=None, failure_policy='Ignore',
                  check_mode=False):
    """Make the policy pair present (created or replaced where it differs) or absent.

    Returns {'changed', 'policy', 'binding', 'objects': [{kind, name, action}], 'diff'}; actions are
    created / updated / deleted / unchanged / absent, prefixed with ``would_`` in check mode."""
    policy, binding = policy_objects(gate, policy_name, binding_name, match, failure_policy)
    if not served(kube):
        if state == 'absent':
            return {'changed': False, 'policy': None, 'binding': None, 'diff': {'before': {}, 'after': {}},
                    'objects': [{'kind': o['kind'], 'name': o['metadata']['name'], 'action': 'absent'}
                                for o in (binding, policy)]}
        raise _not_served_error()
    verbs = ['get', 'delete'] if state == 'absent' else ['get', 'create', 'update']
    if not check_mode:
        access.require(kube, None, [(verb, res, GROUP) for res in (POLICIES, BINDINGS) for verb in verbs])
    # Present: the policy first, then the binding that names it. Absent: the binding first.
    order = [(POLICIES, policy), (BINDINGS, binding)]
    if state == 'absent':
        order.reverse()
    result = {'changed': False, 'objects': [], 'diff': {'before': {}, 'after': {}}}
    for resource, wanted in order:
        action, stored, after = converge(kube, resource, wanted, state != 'absent', check_mode)
        name, kind = wanted['metadata']['name'], wanted['kind']
        key = '%s/%s' % (kind, name)
        result['diff']['before'][key] = _comparable(stored)
        result['diff']['after'][key] = _comparable(after)
        changed = action in CHECK_MODE_ACTIONS
        result['changed'] = result['changed'] or changed
        result['objects'].append({'kind': kind, 'name': name,
                                  'action': CHECK_MODE_ACTIONS[action] if check_mode and changed else action})
        result['policy' if resource == POLICIES else 'binding'] = after
    return result


def installed_for(kube, gate):
    """Names of MutatingAdmissionPolicies (ours: labelled managed-by inplace.k8s) that open ``gate``, with their
    bindings: [{'policy', 'bindings': [{'name', 'match'}]}]; None when the server does not serve them or the
    credentials may not list them."""
    try:
        if not served(kube):
            return None
        policies = kube.request('GET', object_path(POLICIES)).get('items') or []
        bindings = kube.request('GET', object_path(BINDINGS)).get('items') or []
    except ApiError:
        return None
    found = []
    for pol in policies:
        if (pol.get('metadata', {}).get('annotations') or {}).get(GATE_ANNOTATION) != gate:
            continue
        name = pol['metadata']['name']
        found.append({'policy': name, 'bindings': [
            {'name': b['metadata']['name'], 'match': (b.get('spec') or {}).get('matchResources') or {}}
            for b in bindings if (b.get('spec') or {}).get('policyName') == name]})
    return found


# --------------------------------------------------------------------------- the module's work

GATE_FIELDS = ('state gate policy_name binding_name namespaces namespace_selector object_selector failure_policy '
               'namespace label_selectors kind name')


class GateOptions(namedtuple('GateOptions', GATE_FIELDS,
                             defaults=('present', DEFAULT_GATE, None, None, None, None, None, 'Ignore', None, None,
                                       None, None))):
    """readiness_gate's options, parsed once at the edge (its main()); nothing below reads params."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(**dict((name, params[name]) for name in cls._fields if params.get(name) is not None))


def run(kube, options, check_mode=False, diff=False, workload_pods=None):
    """inplace.k8s.readiness_gate: the policy pair present / absent, or the target's stranded pods healed
    (``workload_pods``: see gate_heal.select())."""
    gate = check_gate(options.gate or DEFAULT_GATE)
    if options.state == 'healed':
        result = gate_heal.heal(kube, options.namespace, gate, options.label_selectors, options.kind, options.name,
                                check_mode, workload_pods)
        result['policies'] = installed_for(kube, gate)
        return result
    match = scope_selectors(options.namespaces, options.namespace_selector, options.object_selector)
    result = ensure_policy(kube, options.state, gate, options.policy_name, options.binding_name, match,
                           options.failure_policy or 'Ignore', check_mode)
    if not diff:
        result.pop('diff')
    return result
