# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: what a container was given of a ConfigMap or Secret, and the pod's record of it.

The record is the annotation ``inplace.k8s/config`` on the pod: ``{"uid": <pod uid>, "containers": {<container>:
{"ConfigMap/app-config": <fingerprint>, ...}}}``, written after a config rollout restarted the container (or found
it started after the object's change). It is a claim to check (DESIGN.md section 9): a record whose ``uid`` is not
the pod's (copied from a template, or by hand) counts as none, an unreadable or oversized one too (pods/record.py
reads it, bounded).

A fingerprint names the data a container reads without holding it: for a ConfigMap, ``sha256:`` and a hash of the
keys it reads (a change to another key restarts nothing); for a Secret, ``rv:`` and the Secret's uid and
resourceVersion - no hash of secret data is ever written where anyone who reads pods can see it (a short secret
could be guessed from its hash offline)."""

import datetime
import hashlib
import json

from ansible_collections.inplace.k8s.plugins.module_utils.config import usage
from ansible_collections.inplace.k8s.plugins.module_utils.pods import record

ANNOTATION = 'inplace.k8s/config'
MAX_CONTAINERS = 64   # containers kept in one record (a pod has far fewer)
MAX_OBJECTS = 32      # objects kept per container


def _meta(obj, key):
    return ((obj or {}).get('metadata') or {}).get(key)


def fingerprint(obj, keys=None):
    """The fingerprint of what a container reading ``keys`` (None: all) of ``obj`` is given."""
    if obj.get('kind') == usage.SECRET:
        return 'rv:%s/%s' % (_meta(obj, 'uid'), _meta(obj, 'resourceVersion'))
    data = dict(obj.get('data') or {})
    data.update(('binary:' + key, value) for key, value in (obj.get('binaryData') or {}).items())
    if keys is not None:
        wanted = set(keys) | set('binary:' + key for key in keys)
        data = dict((key, value) for key, value in data.items() if key in wanted)
    return digest(data)


def digest(value):
    """``sha256:`` and a hash of ``value``'s canonical JSON: a name for data that does not hold it."""
    raw = json.dumps(value, sort_keys=True, separators=(',', ':')).encode('utf-8')
    return 'sha256:' + hashlib.sha256(raw).hexdigest()[:32]


def parse_time(text):
    """An API timestamp (2026-01-31T12:00:00Z) -> aware UTC datetime, or None."""
    if not isinstance(text, str):
        return None
    try:
        value = datetime.datetime.strptime(text.strip()[:19], '%Y-%m-%dT%H:%M:%S')
    except ValueError:
        return None
    return value.replace(tzinfo=datetime.timezone.utc)


def last_change(obj):
    """When the object was last written: the latest ``metadata.managedFields[].time`` (every write through the
    API records one, for its manager), else its creation. Seconds resolution; None when neither is there."""
    times = [parse_time((entry or {}).get('time')) for entry in _meta(obj, 'managedFields') or []]
    times.append(parse_time(_meta(obj, 'creationTimestamp')))
    times = [t for t in times if t is not None]
    return max(times) if times else None


def read(pod):
    """{container: {ref: fingerprint}} recorded on ``pod``; {} when there is none, it is unreadable, or it was
    written on another pod (its uid is not this pod's)."""
    rec = record.decode(pod, ANNOTATION) or {}
    if rec.get('uid') != _meta(pod, 'uid'):
        return {}
    containers = rec.get('containers')
    if not isinstance(containers, dict):
        return {}
    return dict((name, dict((k, v) for k, v in given.items() if isinstance(v, str)))
                for name, given in containers.items() if isinstance(given, dict))


def updated(pod, given):
    """The record of ``pod`` with ``given`` ({container: {ref: fingerprint}}) merged in, bounded; None when it
    would not change."""
    current = read(pod)
    merged = dict((name, dict(values)) for name, values in current.items())
    for name, values in given.items():
        merged.setdefault(name, {}).update(values)
    if merged == current:
        return None
    names = sorted(merged)[:MAX_CONTAINERS]
    return {'uid': _meta(pod, 'uid'),
            'containers': dict((name, dict(sorted(merged[name].items())[:MAX_OBJECTS])) for name in names)}


def patch(pod, rec):
    """Merge patch writing the record, guarded by the pod's resourceVersion (409 when it changed since read)."""
    return {'metadata': {'resourceVersion': _meta(pod, 'resourceVersion'),
                         'annotations': {ANNOTATION: record.dump(rec)}}}
