# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure resource arithmetic for in-place resize: Kubernetes quantities (parse, compare exactly),
container resources (read, merge partial input, compare with what the kubelet reports, with its
CPU clamps), the pod QoS class as the API server computes it, and the checks made before a write.
No I/O here."""

import copy
import re
from fractions import Fraction

RESIZABLE = ('cpu', 'memory')           # the only resources a resize may change
SECTIONS = ('requests', 'limits')
BEST_EFFORT, BURSTABLE, GUARANTEED = 'BestEffort', 'Burstable', 'Guaranteed'
NOT_REQUIRED, RESTART_CONTAINER = 'NotRequired', 'RestartContainer'

# The kubelet cannot give a container less than 2 CPU shares (2m) or a CFS quota below 1ms per
# 100ms period (10m); older kubelets report the clamped values in containerStatuses[].resources.
MIN_CPU_REQUEST = Fraction(2, 1000)
MIN_CPU_LIMIT = Fraction(10, 1000)

# --------------------------------------------------------------------------- quantities
# <quantity> ::= <signedNumber><suffix>; <number> ::= digits | digits.digits | digits. | .digits
# <suffix> ::= Ki|Mi|Gi|Ti|Pi|Ei | n|u|m|""|k|M|G|T|P|E | (e|E)<signed integer>

_QUANTITY_RE = re.compile(r'^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?\Z')
# Bounds (Kubernetes keeps quantities within int64 nano-units: 9.2e18 at most): no more digits than that, an
# exponent as large as the largest suffix (E: 1e18), so a value such as 1e30000000 is refused, not computed.
MAX_DIGITS = 40
MAX_EXPONENT = 24
_BINARY = {s: 1024 ** (i + 1) for i, s in enumerate(('Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'))}
_DECIMAL = {'n': Fraction(1, 10 ** 9), 'u': Fraction(1, 10 ** 6), 'm': Fraction(1, 1000), '': 1,
            'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15, 'E': 10 ** 18}


def quantity_text(value):
    """A quantity as the string sent to the API (YAML may give 1 or 0.5 as numbers)."""
    if isinstance(value, bool):
        raise ValueError('%r is not a quantity' % value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = ('%.9f' % value).rstrip('0').rstrip('.')
        return text or '0'
    if isinstance(value, str):
        return value.strip()
    raise ValueError('%r is not a quantity' % (value,))


def parse_quantity(value):
    """The exact value of a Kubernetes quantity (Fraction); ValueError naming what is wrong.
    Negative quantities are refused: no resource may be negative."""
    text = quantity_text(value)
    match = _QUANTITY_RE.match(text)
    if not match:
        raise ValueError('%r is not a Kubernetes quantity (for example 500m, 1, 1.5, 128Mi, 1G)' % text)
    sign, number, suffix = match.groups()
    suffix = suffix or ''
    exponent = suffix[1:] if len(suffix) > 1 and suffix[0] in 'eE' else '0'
    if len(number) > MAX_DIGITS or len(exponent) > 6 or abs(int(exponent)) > MAX_EXPONENT:
        raise ValueError('%r is out of range: at most %d digits and an exponent from -%d to %d (for example 500m, '
                         '2, 128Mi)' % (text[:40], MAX_DIGITS, MAX_EXPONENT, MAX_EXPONENT))
    amount = Fraction(number if not number.endswith('.') else number[:-1])
    if suffix in _BINARY:
        amount *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= _DECIMAL[suffix]
    else:
        amount *= Fraction(10) ** int(suffix[1:])
    if sign == '-' and amount != 0:
        raise ValueError('%r is negative' % text)
    return amount


def same_quantity(first, second):
    """1 == 1000m, 128Mi == 134217728. Missing values (None) equal only each other."""
    if first is None or second is None:
        return first is None and second is None
    return parse_quantity(first) == parse_quantity(second)


# --------------------------------------------------------------------------- container resources

def empty():
    return {'requests': {}, 'limits': {}}


def of_spec(container_spec):
    """{requests: {cpu, memory}, limits: {cpu, memory}} of a container spec (cpu/memory only, as written)."""
    resources = (container_spec or {}).get('resources') or {}
    return {section: {name: value for name, value in (resources.get(section) or {}).items()
                      if name in RESIZABLE}
            for section in SECTIONS}


def normalize_input(containers):
    """Validate the module's ``containers`` (name -> {requests, limits} of cpu/memory quantities);
    the same mapping with quantities as strings. Returns (value, errors): every problem is listed,
    each naming its field and the fix."""
    errors, result = [], {}
    if not isinstance(containers, dict) or not containers:
        return {}, ['containers: give at least one container name -> {requests: {cpu, memory}, '
                    'limits: {cpu, memory}}']
    for name, wanted in sorted(containers.items()):
        where = 'containers.%s' % name
        if not isinstance(wanted, dict) or not wanted:
            errors.append('%s: give requests and/or limits, for example {requests: {cpu: 500m}}' % where)
            continue
        extra = sorted(set(wanted) - set(SECTIONS))
        if extra:
            errors.append('%s: unknown key(s) %s; only requests and limits can be given'
                          % (where, ', '.join(extra)))
        value = empty()
        for section in SECTIONS:
            given = wanted.get(section)
            if given is None:
                continue
            if not isinstance(given, dict):
                errors.append('%s.%s: must be a mapping of cpu and/or memory to quantities' % (where, section))
                continue
            for resource, quantity in sorted(given.items()):
                field = '%s.%s.%s' % (where, section, resource)
                if resource not in RESIZABLE:
                    errors.append('%s: only cpu and memory can be resized in place; remove %s (other '
                                  'resources need a new pod)' % (field, resource))
                    continue
                try:
                    parse_quantity(quantity)
                except ValueError as exc:
                    errors.append('%s: %s' % (field, exc))
                    continue
                value[section][resource] = quantity_text(quantity)
        result[name] = value
    return result, errors


def merge(current, partial):
    """The full resources after a resize: ``partial`` over ``current``, then the API's defaulting
    (a limit without a request defaults the request to the limit). Nothing is ever removed."""
    merged = {section: dict(current.get(section) or {}) for section in SECTIONS}
    for section in SECTIONS:
        merged[section].update((partial or {}).get(section) or {})
    for resource, limit in merged['limits'].items():
        merged['requests'].setdefault(resource, limit)
    return merged


def same_resources(first, second):
    """Equal as quantities (same keys per section, same amounts)."""
    for section in SECTIONS:
        one, other = (first or {}).get(section) or {}, (second or {}).get(section) or {}
        if set(one) != set(other) or not all(same_quantity(one[k], other[k]) for k in one):
            return False
    return True


def changed(current, desired):
    """Resource names (cpu, memory) whose request or limit differs."""
    names = set()
    for section in SECTIONS:
        one, other = current.get(section) or {}, desired.get(section) or {}
        for resource in set(one) | set(other):
            if not same_quantity(one.get(resource), other.get(resource)):
                names.add(resource)
    return sorted(names)


def _clamped(section, resource, amount):
    if resource != 'cpu':
        return amount
    return max(amount, MIN_CPU_REQUEST if section == 'requests' else MIN_CPU_LIMIT)


def reported_matches(reported, desired):
    """The kubelet's ``containerStatuses[].resources`` show ``desired``: equal as quantities, with the
    CPU clamps (a request <= 2m may be reported as 2m, a limit < 10m as 10m)."""
    for section in SECTIONS:
        got, want = (reported or {}).get(section) or {}, desired.get(section) or {}
        for resource in RESIZABLE:
            if (resource in want) != (resource in got):
                return False
            if resource in want and _clamped(section, resource, parse_quantity(got[resource])) != _clamped(
                    section, resource, parse_quantity(want[resource])):
                return False
    return True


def describe(resources):
    """Short text for messages: requests cpu=100m memory=64Mi, limits cpu=200m memory=128Mi."""
    parts = []
    for section in SECTIONS:
        values = (resources or {}).get(section) or {}
        parts.append('%s %s' % (section, ' '.join('%s=%s' % (k, values[k]) for k in sorted(values)) or 'none'))
    return ', '.join(parts)


# --------------------------------------------------------------------------- resize policy

def resize_policy(container_spec, resource):
    """NotRequired (the default) or RestartContainer for one resource of a container."""
    for item in (container_spec or {}).get('resizePolicy') or []:
        if item.get('resourceName') == resource:
            return item.get('restartPolicy') or NOT_REQUIRED
    return NOT_REQUIRED


def restarting(container_spec, current, desired):
    """Resources whose change restarts the container (resizePolicy RestartContainer)."""
    return [r for r in changed(current, desired) if resize_policy(container_spec, r) == RESTART_CONTAINER]


# --------------------------------------------------------------------------- QoS class

def _positive(values):
    return {k: parse_quantity(v) for k, v in (values or {}).items()
            if k in RESIZABLE and parse_quantity(v) > 0}


def qos_class(pod_spec, overrides=None):
    """The QoS class the API server computes for a pod spec, with ``overrides`` (container name ->
    resources) applied: init containers count, only cpu and memory count, zero amounts count as
    unset; pod-level resources (spec.resources), when set, decide alone."""
    overrides = overrides or {}
    pod_level = pod_spec.get('resources') or {}
    if _positive(pod_level.get('requests')) or _positive(pod_level.get('limits')):
        units = [pod_level]
    else:
        units = []
        for field in ('containers', 'initContainers'):
            for container in pod_spec.get(field) or []:
                name = container.get('name')
                units.append(merge(overrides[name], {}) if name in overrides else
                             merge(of_spec(container), {}))
    requests, limits, guaranteed = {}, {}, True
    for unit in units:
        for resource, amount in _positive(unit.get('requests')).items():
            requests[resource] = requests.get(resource, 0) + amount
        unit_limits = _positive(unit.get('limits'))
        for resource, amount in unit_limits.items():
            limits[resource] = limits.get(resource, 0) + amount
        if set(unit_limits) != set(RESIZABLE):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and set(requests) == set(limits) and all(limits[r] == requests[r] for r in requests):
        return GUARANTEED
    return BURSTABLE


# --------------------------------------------------------------------------- checks before a write

def container_errors(name, current, desired):
    """Problems of one container's resources after the merge: requests above limits, removals."""
    errors = []
    for resource in RESIZABLE:
        request, limit = desired['requests'].get(resource), desired['limits'].get(resource)
        if request is not None and limit is not None and parse_quantity(request) > parse_quantity(limit):
            errors.append('containers.%s.requests.%s: %s is above the limit %s; requests must be <= limits '
                          '(raise limits.%s or lower requests.%s)'
                          % (name, resource, request, limit, resource, resource))
    for section in SECTIONS:
        for resource in current.get(section) or {}:
            if resource not in desired[section]:
                errors.append('containers.%s.%s.%s: resources cannot be removed by a resize'
                              % (name, section, resource))
    return errors


def memory_limit_decreased(current, desired):
    """The memory limit goes down."""
    before, after = current['limits'].get('memory'), desired['limits'].get('memory')
    return before is not None and after is not None and parse_quantity(after) < parse_quantity(before)


def qos_error(pod_spec, overrides):
    """Why the resize would change the pod's QoS class (the API refuses that), or None."""
    before, after = qos_class(pod_spec), qos_class(pod_spec, overrides)
    if before == after:
        return None
    hint = {
        GUARANTEED: 'a Guaranteed pod needs requests == limits for cpu and memory in every container: '
                    'keep them equal',
        BURSTABLE: 'keep at least one request below its limit, or a limit unset',
        BEST_EFFORT: 'a BestEffort pod cannot get requests or limits',
    }[before]
    return ('the QoS class would change from %s to %s, which the API refuses for a resize; %s '
            '(a different QoS class needs a new pod)' % (before, after, hint))


# --------------------------------------------------------------------------- a container spec after a change

def desired_resources(container_spec, wanted):
    """cpu/memory requests and limits of a container after the change (merge rules)."""
    return merge(of_spec(container_spec), wanted)


def resources_differ(container_spec, wanted):
    current = of_spec(container_spec)
    return bool(changed(current, merge(current, wanted)))


def full_resources(container_spec, wanted):
    """The container's whole resources field after the change: other resources (ephemeral-storage,
    extended resources) and claims kept."""
    result = copy.deepcopy((container_spec or {}).get('resources') or {})
    for section, values in desired_resources(container_spec, wanted).items():
        if values:
            result.setdefault(section, {}).update(values)
    return result
