# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The state annotation each pod carries: what an operation changed, from what, and how far it got.

The annotation ``inplace.k8s/state`` holds JSON ``{operation: record}`` so that operations
(image, resize, recreate) keep their own record. A record::

    {"state": "in-progress" | "done" | "failed" | "rolling-back" | "rolled-back",
     "target": {container: desired value},
     "before": {container: {whatever the operation snapshots: image, imageID, containerID, ...}},
     "started": "...Z", "updated": "...Z", "generation": n, "error": "...",
     "owner": {"run": id, "host": ..., "pid": n, "started": "...Z"}, "expires": "...Z"}

It makes a re-run idempotent (target reached), resumable (an unfinished record keeps the
before-state of the first attempt) and reversible (rollback restores ``before``).

A successful change is not always marked ``done`` by a write of its own: that would cost one
more write per pod. An in-progress record whose pod shows its target reached in spec and status
is *settled* (the operation tells, Operation.settled) and counts as done: it holds nothing and
its before-state is no longer kept. With a readiness gate the ``done`` state rides on the write
that sets the gate True again, so it costs nothing either.
``build_patch`` is the one place that builds the JSON patch writing it, guarded by a ``test`` on
metadata.resourceVersion so that a concurrent writer is detected instead of overwritten.

The rollout record on a workload (annotation ``inplace.k8s/rollout``, ``workload_record`` and
``workload_patch``) is one record, not one per operation, with the same states (and ``released``: a
rollout ended where it stood), encoded the same way.

Ownership (one implementation, used for pod records and for the rollout record on a workload):
an unfinished record names the run that writes it (``owner``) and until when it counts
(``expires``, renewed at each stage). ``holder`` tells whether another live run holds a record:
a record is free once finished, expired, or when its owner ran on this host and its pid is gone.

Records are claims, never proof (docs/safety.md): anyone who may patch a pod can write them. Whether a pod is
done is judged from its live spec and status; a record can only narrow that (hold a pod, keep a before-state),
and widens what counts as the requested image only where it is bound to the pod (``bound``: a record carries the
uid of the pod it was written on; one copied from another pod is dropped when read) and plausible
(pods/images.py). Expiries are capped: no run writes one more than MAX_HOLD_SECONDS ahead (claim), and a record
read with one further ahead holds nothing, so a forged "in progress until 9999" does not stop later runs. An annotation that is not a JSON object, larger than
MAX_ANNOTATION_BYTES or nested deeper than MAX_DEPTH is unreadable (``unreadable`` says why): it counts as no
record, and the pod operations refuse to change the pod until it is removed (pods/plan.py).
"""

import calendar
import datetime
import json
import socket
import time
import uuid

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.process import proc

ANNOTATION = 'inplace.k8s/state'
WORKLOAD_ANNOTATION = 'inplace.k8s/rollout'   # the rollout record on a workload
IN_PROGRESS, DONE, FAILED, ROLLING_BACK, ROLLED_BACK, RELEASED = (
    'in-progress', 'done', 'failed', 'rolling-back', 'rolled-back', 'released')
FINISHED = (DONE, ROLLED_BACK)
ACTIVE = (IN_PROGRESS, ROLLING_BACK)   # states in which a record is held by its owner
TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
TAKEOVER_HINT = 'wait, or set force_takeover'
# Bounds of what is read from an annotation (records are a few hundred bytes, nested about four deep).
MAX_ANNOTATION_BYTES = 65536
MAX_DEPTH = 16
# The longest a record can hold a pod or workload, counted from now: one wait of a run at its bounds
# (wait_timeout, min_ready_seconds and drain_seconds at most a day each: options.MAX_SECONDS) and a margin.
# Written expiries never exceed it (claim); a record read with an expiry further ahead holds nothing (holder).
MAX_HOLD_SECONDS = 4 * 86400


def timestamp(seconds=None, precise=False):
    """UTC time as the records write it; now, or ``seconds`` since the epoch. ``precise``: with milliseconds
    (2026-11-28T20:51:07.123Z), for a result that says when it read the cluster."""
    seconds = time.time() if seconds is None else seconds
    if not precise:
        return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime(TIME_FORMAT)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def parse_timestamp(text):
    """Seconds since the epoch of a record timestamp, or None."""
    try:
        return calendar.timegm(time.strptime(text, TIME_FORMAT))
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- ownership

def new_owner(run_id=None, pid=None, host=None):
    """Who writes: a run id (a fresh uuid unless given), the host and the process whose life counts
    (None: unknown, only the expiry frees its records)."""
    return {'run': run_id or uuid.uuid4().hex, 'host': host or socket.gethostname(),
            'pid': pid, 'started': timestamp()}


def claim(rec, owner, ttl, now=None):
    """A copy of ``rec`` owned by ``owner`` and expiring ``ttl`` seconds from now (the heartbeat)."""
    now = time.time() if now is None else now
    result = dict(rec)
    result['owner'] = dict(owner)
    result['expires'] = timestamp(now + min(ttl, MAX_HOLD_SECONDS))
    return result


def holder(rec, owner, force=False, now=None, alive=proc.alive, settled=False):
    """The owner (dict) of another run that holds ``rec``, or None when ``owner`` may write it:
    the record is finished or ``settled`` (its pod shows the target reached), ours, without owner,
    expired, taken over with ``force``, or its owner ran on this host and its process is gone or is ours."""
    if force or settled or not isinstance(rec, dict) or rec.get('state') not in ACTIVE:
        return None
    other = rec.get('owner')
    if not isinstance(other, dict) or (other.get('run'), other.get('host')) == (owner.get('run'), owner.get('host')):
        return None
    expires, now = parse_timestamp(rec.get('expires')), time.time() if now is None else now
    if expires is None or expires <= now or expires > now + MAX_HOLD_SECONDS:
        return None   # expired, or past the cap: no run writes that (claim), so it holds nothing
    if other.get('host') == owner.get('host') and isinstance(other.get('pid'), int) and (
            other['pid'] == owner.get('pid') or not alive(other['pid'])):
        # Gone, or our own process: an earlier run in the same ansible-playbook has ended (its tasks run
        # one after the other), for example a rollout that halted and is being resumed or rolled back.
        return None
    return other


def cancelled_owner(pod, owner, alive=proc.alive):
    """The pid of a cancelled run on this host that still holds one of the pod's records (its ansible process,
    ``playbook`` in its owner, is gone, its module still finishes the pods it had in flight), or None."""
    for rec in records(pod).values():
        other = holder(rec, owner, alive=alive)
        if other and other.get('host') == owner.get('host') and isinstance(other.get('pid'), int) and \
                isinstance(other.get('playbook'), int) and not alive(other['playbook']):
            return other['pid']
    return None


def busy_message(rec, what):
    """Why a record held by another run is refused."""
    other = rec.get('owner') or {}
    return 'another run (host %s, pid %s, started %s) is updating this %s; it expires at %s; %s' % (
        other.get('host'), other.get('pid'), other.get('started'), what, rec.get('expires'), TAKEOVER_HINT)


def pod_holder(pod, owner, force=False, now=None, alive=proc.alive, settled=None):
    """Why another run holds this pod (any of its operation records), or None. ``settled(operation,
    record)``: the pod shows that record's change complete (it then holds nothing)."""
    for operation, rec in records(pod).items():
        if holder(rec, owner, force, now, alive, settled=bool(settled and settled(operation, rec))):
            return busy_message(rec, 'pod')
    return None


def nesting(text):
    """How deep ``text`` (JSON) nests arrays and objects, counted without recursion (strings skipped)."""
    depth = deepest = 0
    inside = escaped = False
    for char in text:
        if inside:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                inside = False
        elif char == '"':
            inside = True
        elif char in '[{':
            depth += 1
            deepest = max(deepest, depth)
        elif char in ']}':
            depth -= 1
    return deepest


def read(obj, annotation):
    """(the JSON object in one annotation of ``obj`` or None, why it is unreadable or None). Bounded: the
    size is checked before parsing, and the nesting without recursion (a deep one would raise RecursionError
    in the parser: caught too)."""
    raw = (podstate.meta(obj, 'annotations') or {}).get(annotation)
    if not raw:
        return None, None
    if not isinstance(raw, str):
        return None, 'not a string'
    size = len(raw.encode('utf-8', 'replace'))
    if size > MAX_ANNOTATION_BYTES:
        return None, '%d bytes, more than %d' % (size, MAX_ANNOTATION_BYTES)
    if raw.count('[') + raw.count('{') > MAX_DEPTH and nesting(raw) > MAX_DEPTH:
        return None, 'nested deeper than %d levels' % MAX_DEPTH
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, 'not JSON (%s)' % str(exc)[:80]
    if not isinstance(value, dict):
        return None, 'not a JSON object'
    return value, None


def decode(obj, annotation):
    """The JSON object in one annotation of ``obj``, or None (absent or unreadable)."""
    return read(obj, annotation)[0]


def unreadable(pod, annotation=ANNOTATION):
    """Why the pod's record annotation cannot be read, naming it and the fix, or None (absent or readable)."""
    problem = read(pod, annotation)[1]
    if problem is None:
        return None
    return ('annotation %s is unreadable (%s); nothing is changed on this pod while it is there: remove it '
            '(kubectl annotate pod -n %s %s %s-) once no run is updating the pod' % (
                annotation, problem, podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), annotation))


def dump(value):
    """An annotation value: compact JSON with sorted keys."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def records(pod):
    """All records on the pod ({operation: record}); an unreadable annotation counts as none, and a record
    written on another pod (its ``uid`` is not this pod's: copied) is dropped."""
    uid = podstate.meta(pod, 'uid')
    return {operation: rec for operation, rec in (decode(pod, ANNOTATION) or {}).items()
            if not (isinstance(rec, dict) and rec.get('uid') not in (None, uid))}


def get(pod, operation):
    """The record of one operation, or None."""
    value = records(pod).get(operation)
    return value if isinstance(value, dict) else None


def bound(pod, rec):
    """``rec`` was written on this pod: it carries the pod's uid (a record without one, written before records
    carried it or by hand, can hold a pod but never widens what counts as done)."""
    return isinstance(rec, dict) and rec.get('uid') == podstate.meta(pod, 'uid')


def get_bound(pod, operation):
    """The record of one operation when it is bound to the pod (``bound``), or None."""
    rec = get(pod, operation)
    return rec if bound(pod, rec) else None


def begin(pod, operation, target, snapshots, generation=None, now=None, settled=False):
    """A new in-progress record. ``snapshots``: container -> before-state taken from the pod now.
    An unfinished earlier record keeps its before-state (the last known good one) for its containers,
    unless it is ``settled`` (its pod shows its target reached: it is done)."""
    now = now or timestamp()
    before = dict(snapshots)
    previous = get(pod, operation)
    if previous and previous.get('state') not in FINISHED and not settled:
        for name, snap in (previous.get('before') or {}).items():
            if name in before:
                before[name] = snap
    rec = {'state': IN_PROGRESS, 'target': dict(target), 'before': before,
           'started': now, 'updated': now, 'generation': generation}
    if podstate.meta(pod, 'uid'):
        rec['uid'] = podstate.meta(pod, 'uid')
    return rec


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
    return dump(value)


def metadata_patch(pod, operation, record):
    """The ``metadata`` of a merge patch writing the record, guarded by resourceVersion (the server
    answers 409 when the pod changed since ``pod`` was read): for writes that are merge patches
    anyway, such as the readiness gate through pods/status, which may change annotations too."""
    return {'resourceVersion': podstate.meta(pod, 'resourceVersion'),
            'annotations': {ANNOTATION: encode(pod, operation, record)}}


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


# --------------------------------------------------------------------------- the rollout record of a workload

def workload_record(obj):
    """The rollout record on a workload, or None."""
    return decode(obj, WORKLOAD_ANNOTATION)


def workload_patch(obj, rec, spec=None):
    """Merge patch writing the rollout record (None: removing it) and spec fields, guarded by resourceVersion."""
    body = {'metadata': {'resourceVersion': podstate.meta(obj, 'resourceVersion'), 'annotations': {
        WORKLOAD_ANNOTATION: dump(rec) if rec is not None else None}}}
    if spec:
        body['spec'] = spec
    return body
