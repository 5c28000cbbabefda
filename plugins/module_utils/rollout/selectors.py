# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: label selectors (matchLabels / matchExpressions) as the API's string form and as a test of a set
of labels, and controller ownership."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate


def selector_string(selector):
    """A label selector (matchLabels / matchExpressions) as the API's string form."""
    parts = ['%s=%s' % (k, v) for k, v in sorted(((selector or {}).get('matchLabels') or {}).items())]
    for expr in (selector or {}).get('matchExpressions') or []:
        operator, values = expr.get('operator'), ','.join(expr.get('values') or [])
        if operator == 'In':
            parts.append('%s in (%s)' % (expr['key'], values))
        elif operator == 'NotIn':
            parts.append('%s notin (%s)' % (expr['key'], values))
        elif operator == 'Exists':
            parts.append(expr['key'])
        elif operator == 'DoesNotExist':
            parts.append('!' + expr['key'])
    return ','.join(parts)


def selector_matches(selector, labels):
    """Does a label selector (matchLabels / matchExpressions) select these labels? An empty
    selector selects everything (PodDisruptionBudget semantics in policy/v1)."""
    labels = labels or {}
    for key, value in ((selector or {}).get('matchLabels') or {}).items():
        if labels.get(key) != value:
            return False
    for expr in (selector or {}).get('matchExpressions') or []:
        key, operator, values = expr.get('key'), expr.get('operator'), expr.get('values') or []
        if operator == 'In' and labels.get(key) not in values:
            return False
        if operator == 'NotIn' and key in labels and labels[key] in values:
            return False
        if operator == 'Exists' and key not in labels:
            return False
        if operator == 'DoesNotExist' and key in labels:
            return False
    return True


def owned_by(obj, uid):
    return any(ref.get('uid') == uid and ref.get('controller') for ref in podstate.meta(obj, 'ownerReferences') or [])
