# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure rollout arithmetic: counts given as a number or a percentage, pod ordering, and the split of
the pods still to update into batches (canary first, a partition of pods left on the old version)."""

import math
import re

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

ORDERS = ('ordinal', 'reverse_ordinal', 'node', 'label', 'name')
POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index'
# A percentage (group 1) or a whole number (group 2), blanks around either.
_COUNT_RE = re.compile(r'^[ \t]*(?:([0-9]{1,3}(?:\.[0-9]{1,6})?)[ \t]*%|([0-9]{1,7}))[ \t]*\Z')
_ORDINAL_RE = re.compile(r'-([0-9]{1,9})\Z')


def parse_count(value, name='count'):
    """The one grammar of a count: ``(number, True)`` for a percentage from 0% to 100% ('25%', '12.5 %'),
    ``(number, False)`` for a whole number (3, '3'), None for no value (None, '', blanks: the default).
    Spaces and tabs around the value are allowed; anything else ('+3', '-1', '3.5', '1_000', '10%%', True, a
    line break, digits other than ASCII 0-9, more than 7 digits) raises a ValidationError that names ``name``.
    The role's preflight and the module read counts through this alone."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, bool):
        raise ValidationError('%s must be a number or a percentage, not %r' % (name, value))
    text = str(value)
    match = _COUNT_RE.match(text)
    if not match:
        if text.strip().startswith('-'):
            raise ValidationError('%s must not be negative (%s)' % (name, text.strip()))
        if text.strip(' \t').isdigit() and text.strip(' \t').isascii() and len(text.strip(' \t')) > 7:
            raise ValidationError('%s must be at most 9999999, not %s' % (name, text.strip(' \t')[:40]))
        raise ValidationError('%s must be a number or a percentage, not %r' % (name, value))
    if match.group(1) is None:
        return int(match.group(2)), False
    if float(match.group(1)) > 100:
        raise ValidationError('%s must be at most 100%%, not %s' % (name, text.strip()))
    return float(match.group(1)), True


def resolve_count(value, total, name='count', round_up=True):
    """An absolute count from ``value`` (parse_count's grammar: 3, '3' or '25%') over ``total`` pods.

    Percentages round up (at least 1 when the value is not zero) unless ``round_up`` is False;
    no value stays None (no limit).
    """
    parsed = parse_count(value, name)
    if parsed is None:
        return None
    number, percent = parsed
    if not percent:
        return number
    exact = number * total / 100.0
    count = int(math.ceil(exact)) if round_up else int(math.floor(exact))
    return max(count, 1) if round_up and number > 0 and total > 0 else count


GENERATED_NAMES = ('ReplicaSet', 'DaemonSet')   # owners whose pods get a random name suffix


def ordinal(pod):
    """The pod's ordinal (StatefulSet index label, else a trailing -N of its name), or None. A ReplicaSet's or a
    DaemonSet's pod has none: its name ends in a random suffix, which may be all digits (web-64b57b4bcd-54895)."""
    labels = podstate.meta(pod, 'labels') or {}
    value = labels.get(POD_INDEX_LABEL)
    if value is not None and str(value).isdigit():
        return int(value)
    if any(owner.get('kind') in GENERATED_NAMES for owner in podstate.meta(pod, 'ownerReferences') or []):
        return None
    match = _ORDINAL_RE.search(podstate.meta(pod, 'name') or '')
    return int(match.group(1)) if match else None


def _natural(value):
    """Sort key: numbers compare as numbers, before text."""
    text = '' if value is None else str(value)
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def order_pods(pods, order='ordinal', label=None):
    """The pods in update order.

    ordinal / reverse_ordinal: by ordinal (pods without one after, by name); node: grouped by node
    name, then by ordinal; label: by the value of ``label`` (numbers numerically, pods without the
    label last), then by ordinal; name: by name.
    """
    if order not in ORDERS:
        raise ValidationError('order must be one of %s, not %s' % (', '.join(ORDERS), order))
    if order == 'label' and not label:
        raise ValidationError('order=label needs the label key to order by')

    def by_ordinal(pod):
        number = ordinal(pod)
        return (number is None, number if number is not None else 0, podstate.meta(pod, 'name'))

    if order == 'name':
        return sorted(pods, key=lambda p: podstate.meta(p, 'name'))
    if order == 'reverse_ordinal':
        with_number = sorted([p for p in pods if ordinal(p) is not None], key=by_ordinal, reverse=True)
        return with_number + sorted([p for p in pods if ordinal(p) is None], key=by_ordinal)
    if order == 'node':
        return sorted(pods, key=lambda p: ((p.get('spec') or {}).get('nodeName') or '',) + by_ordinal(p))
    if order == 'label':
        def by_label(pod):
            value = (podstate.meta(pod, 'labels') or {}).get(label)
            return (value is None, _natural(value)) + by_ordinal(pod)
        return sorted(pods, key=by_label)
    return sorted(pods, key=by_ordinal)


def batch_size(total, size, max_unavailable=None, disruptions_allowed=None):
    """Pods per batch: ``size`` (count or %) capped by max_unavailable (count or %) and by the
    disruptions the PodDisruptionBudgets allow now; at least 1 when there is anything to do."""
    count = resolve_count(size, total, 'batch_size') or 1
    limits = [count]
    cap = resolve_count(max_unavailable, total, 'max_unavailable', round_up=False)
    if cap is not None:
        limits.append(max(cap, 1))
    if disruptions_allowed is not None:
        limits.append(max(disruptions_allowed, 1))
    return max(1, min(limits))


def plan_batches(ordered, pending, size, canary=None, partition=None, done=0, window=False):
    """Split the pods still to update into batches.

    ``ordered``: every pod name of the target in update order; ``pending``: the names that still
    need the change; ``size``: pods per batch; ``canary``: size of a first batch (count or %, over
    all pods), skipped when ``done`` pods are already updated (a resumed rollout); ``partition``:
    how many pods (count or %) at the end of the order stay on the old version; ``window``: the pods
    after the canary are one step (a sliding window of ``size`` pods runs through it), not batches.

    Returns {'batches': [[name, ...], ...], 'kept': [names left on the old version]}.
    """
    total = len(ordered)
    keep = min(resolve_count(partition, total, 'partition', round_up=False) or 0, total)
    kept = ordered[total - keep:] if keep else []
    todo = [name for name in ordered[:total - keep] if name in set(pending)]
    batches = []
    first = resolve_count(canary, total, 'canary') or 0
    if first and done < first and todo:
        first = first - done
        batches.append(todo[:first])
        todo = todo[first:]
    size = max(1, len(todo) if window else size)
    batches.extend(todo[i:i + size] for i in range(0, len(todo), size))
    return {'batches': batches, 'kept': kept}
