# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Suspend and resume the GitOps objects that keep a workload (gitops_suspend): an Argo CD Application's
automated sync (``spec.syncPolicy.automated`` taken away), a Flux Kustomization or HelmRelease
(``spec.suspend: true``).

What was there before is kept on the object itself, in the annotation ``inplace.k8s/suspended`` (the run, its
host and ansible-playbook, the value before, since when), written in the same guarded merge patch as the
suspension; the resume puts that value back and drops the annotation in one write. A run resumes only what it
suspended itself (its run id); an object suspended by someone else (no annotation of ours) is left alone, and so
is one another live run suspended. A suspension whose run is gone (killed with its keeper) is taken over by the
next run, which keeps the value from before the first. process/keeper.py resumes on a cancel or kill.
"""

import json
import socket

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ConflictError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.owners import lookup, markers
from ansible_collections.inplace.k8s.plugins.module_utils.owners.manages import NOT_MANAGED
from ansible_collections.inplace.k8s.plugins.module_utils.owners.policy import SUSPENDED
from ansible_collections.inplace.k8s.plugins.module_utils.pods import record
from ansible_collections.inplace.k8s.plugins.module_utils.process import lineage, proc

KINDS = ('Application', 'Kustomization', 'HelmRelease')
MERGE_PATCH = 'application/merge-patch+json'


def find(kube, kind=None, namespace=None, name=None, objects=()):
    """([(kind, object)] to suspend or resume, skipped, ignored): the GitOps objects the workload's markers name
    that manage it by their own status (owners/manages.py), and ``objects`` ({kind, namespace, name}, which must
    exist). Skipped (notes): named objects not found, not readable, or whose CRD is not installed. Ignored
    (summaries, action 'left'): named objects that do not manage the workload, never touched."""
    reader = lookup.Reader(kube)
    found, skipped, ignored = [], [], []
    if kind and name:
        workload = reader.get(kind, namespace, name)
        if workload is None:
            raise ValidationError('%s %s/%s not found; nothing was changed' % (kind, namespace, name))
        for owner in markers.found(workload, []):
            gitops_kind = lookup.GITOPS_KINDS.get(owner['tool'])
            if gitops_kind is None:
                continue
            obj, managed, why = reader.gitops(owner, kind, workload)
            if obj is None:
                shown = owner['name'] if paths.is_name(owner['name']) else paths.shown(owner['name'])
                skipped.append('%s %s: %s (%s)' % (owner['tool'], shown, why, ', '.join(owner['evidence'])))
            elif managed:
                found.append((gitops_kind, obj))
            else:
                ignored.append(summary(gitops_kind, obj, 'left', '%s (%s; %s)' % (
                    NOT_MANAGED, why, ', '.join(owner['evidence']))))
    for entry in objects or ():
        if entry.get('kind') not in KINDS:
            raise ValidationError('objects: kind %r of %s is not one of %s; nothing was changed' % (
                entry.get('kind'), entry.get('name'), ', '.join(KINDS)))
        obj = reader.get(entry['kind'], entry.get('namespace') or namespace, entry['name'])
        if obj is None:
            raise ValidationError('objects: %s %s/%s not found (or its CRD is not installed); nothing was changed'
                                  % (entry['kind'], entry.get('namespace') or namespace, entry['name']))
        found.append((entry['kind'], obj))
    unique = []
    for item in found:
        if all(_key(item) != _key(other) for other in unique):
            unique.append(item)
    return unique, skipped + reader.unchecked, [i for i in ignored if all(
        (i['kind'], i['namespace'], i['name']) != _key(item) for item in unique)]


def _key(item):
    kind, obj = item
    return kind, obj['metadata'].get('namespace'), obj['metadata']['name']


def mark(obj):
    """The suspension record on ``obj`` (dict), or None."""
    text = ((obj.get('metadata') or {}).get('annotations') or {}).get(SUSPENDED)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def running(kind, obj):
    """Does the object sync on its own now (automated sync, not suspended)?"""
    spec = obj.get('spec') or {}
    if kind == 'Application':
        automated = (spec.get('syncPolicy') or {}).get('automated')
        return automated is not None and automated.get('enabled') is not False
    return not spec.get('suspend')


def _before(kind, obj):
    spec = obj.get('spec') or {}
    return (spec.get('syncPolicy') or {}).get('automated') if kind == 'Application' else spec.get('suspend')


def _spec(kind, value):
    return {'syncPolicy': {'automated': value}} if kind == 'Application' else {'suspend': value}


def _live(rec):
    """Is the run of a suspension record still there (its ansible-playbook on this host, same start)?"""
    if not rec or rec.get('host') != socket.gethostname() or not isinstance(rec.get('playbook'), int):
        return bool(rec) and rec.get('host') != socket.gethostname()   # another host's: cannot tell, assume live
    return proc.running(rec['playbook'], rec.get('playbook_start'))


def summary(kind, obj, action, reason):
    meta = obj['metadata']
    return {'kind': kind, 'namespace': meta.get('namespace'), 'name': meta['name'], 'action': action,
            'reason': reason}


def suspend(kube, found, run, check_mode=False):
    """Suspend each object of ``found`` for run ``run``; one summary per object (action suspended, unchanged or
    left)."""
    playbook, started = lineage.run_process() or (None, None)
    results = []
    for kind, obj in found:
        rec = mark(obj)
        if rec and rec.get('run') == run:
            results.append(summary(kind, obj, 'unchanged', 'suspended by this run already'))
            continue
        if rec and _live(rec):
            results.append(summary(kind, obj, 'left', 'suspended by another run (host %s, started %s): that run '
                                   'resumes it' % (rec.get('host'), rec.get('since'))))
            continue
        if not rec and not running(kind, obj):
            results.append(summary(kind, obj, 'unchanged', 'not syncing on its own: nothing to suspend, and '
                                   'nothing this run resumes'))
            continue
        before = rec['before'] if rec else _before(kind, obj)
        new = {'run': run, 'host': socket.gethostname(), 'playbook': playbook, 'playbook_start': started,
               'before': before, 'since': record.timestamp()}
        body = {'metadata': {'resourceVersion': obj['metadata']['resourceVersion'],
                             'annotations': {SUSPENDED: json.dumps(new, sort_keys=True)}},
                'spec': _spec(kind, True if kind != 'Application' else None)}
        if not check_mode:
            _patch(kube, kind, obj, body)
        results.append(summary(kind, obj, 'suspended', 'taken over from a run that is gone' if rec else
                               'was syncing on its own'))
    return results


def resume(kube, found, run=None, check_mode=False):
    """Put back what run ``run`` suspended (None: any run's suspension, for a manual clean-up); one summary per
    object (action resumed, or unchanged)."""
    results = []
    for kind, obj in found:
        rec = mark(obj)
        if not rec:
            results.append(summary(kind, obj, 'unchanged', 'not suspended by a run'))
            continue
        if run and rec.get('run') != run:
            results.append(summary(kind, obj, 'unchanged', 'suspended by another run (host %s, since %s)' % (
                rec.get('host'), rec.get('since'))))
            continue
        body = {'metadata': {'resourceVersion': obj['metadata']['resourceVersion'], 'annotations': {SUSPENDED: None}},
                'spec': _spec(kind, rec.get('before'))}
        if not check_mode:
            _patch(kube, kind, obj, body)
        results.append(summary(kind, obj, 'resumed', 'put back as it was before %s' % rec.get('since')))
    return results


def _patch(kube, kind, obj, body):
    meta = obj['metadata']
    try:
        kube.request('PATCH', lookup.path(kind, meta.get('namespace'), meta['name']), body=body,
                     content_type=MERGE_PATCH)
    except (ConflictError, NotFoundError) as exc:
        raise ValidationError('%s %s/%s changed while it was being %s (%s); run again' % (
            kind, meta.get('namespace'), meta['name'], 'resumed' if body['metadata']['annotations'][SUSPENDED] is None
            else 'suspended', exc.msg))


def reread(kube, items):
    """The objects of ``items`` (summaries) as they are now: [(kind, object)], those gone left out."""
    reader = lookup.Reader(kube)
    found = []
    for item in items:
        obj = reader.get(item['kind'], item['namespace'], item['name'])
        if obj is not None:
            found.append((item['kind'], obj))
    return found
