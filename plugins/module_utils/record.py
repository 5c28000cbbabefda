# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The state annotation each pod carries: what an operation changed, from what, and how far it got.

The annotation ``inplace.k8s/state`` holds JSON ``{operation: record}`` so that operations
(image, resize, recreate) keep their own record. A record::

    {"state": "in-progress" | "done" | "failed" | "rolling-back" | "rolled-back",
     "target": {container: desired value},
     "before": {container: {whatever the operation snapshots: image, imageID, containerID, ...}},
     "started": "...Z", "updated": "...Z", "generation": n, "error": "..."}

It makes a re-run idempotent (target reached), resumable (an unfinished record keeps the
before-state of the first attempt) and reversible (rollback restores ``before``).
``build_patch`` is the one place that builds the JSON patch writing it, guarded by a ``test`` on
metadata.resourceVersion so that a concurrent writer is detected instead of overwritten.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

from ansible_collections.inplace.k8s.plugins.module_utils import podstate

ANNOTATION = 'inplace.k8s/state'
IN_PROGRESS, DONE, FAILED, ROLLING_BACK, ROLLED_BACK = (
    'in-progress', 'done', 'failed', 'rolling-back', 'rolled-back')
FINISHED = (DONE, ROLLED_BACK)


def timestamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def records(pod):
    """All records on the pod ({operation: record}); an unreadable annotation counts as none."""
    raw = (podstate.meta(pod, 'annotations') or {}).get(ANNOTATION)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def get(pod, operation):
    """The record of one operation, or None."""
    value = records(pod).get(operation)
    return value if isinstance(value, dict) else None


def begin(pod, operation, target, snapshots, generation=None, now=None):
    """A new in-progress record. ``snapshots``: container -> before-state taken from the pod now.
    An unfinished earlier record keeps its before-state (the last known good one) for its containers."""
    now = now or timestamp()
    before = dict(snapshots)
    previous = get(pod, operation)
    if previous and previous.get('state') not in FINISHED:
        for name, snap in (previous.get('before') or {}).items():
            if name in before:
                before[name] = snap
    return {'state': IN_PROGRESS, 'target': dict(target), 'before': before,
            'started': now, 'updated': now, 'generation': generation}


def transition(record, state, now=None, **fields):
    """A copy of the record in a new state (with extra fields such as error or generation)."""
    result = dict(record)
    result.update(fields)
    result['state'] = state
    result['updated'] = now or timestamp()
    return result


def encode(pod, operation, record):
    """The annotation value with this operation's record replaced and the others kept."""
    value = records(pod)
    value[operation] = record
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def pointer(*tokens):
    """A JSON pointer from raw tokens (escaping ~ and /)."""
    return ''.join('/' + str(t).replace('~', '~0').replace('/', '~1') for t in tokens)


def build_patch(pod, operation, record, changes=()):
    """JSON patch: test resourceVersion, write the record annotation, then the ``changes`` ops."""
    ops = [{'op': 'test', 'path': '/metadata/resourceVersion', 'value': podstate.meta(pod, 'resourceVersion')}]
    value = encode(pod, operation, record)
    if podstate.meta(pod, 'annotations') is None:
        ops.append({'op': 'add', 'path': '/metadata/annotations', 'value': {ANNOTATION: value}})
    else:
        ops.append({'op': 'add', 'path': pointer('metadata', 'annotations', ANNOTATION), 'value': value})
    ops.extend(changes)
    return ops
