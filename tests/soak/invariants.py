# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The soak's invariants, checked on the cluster's own state after each scenario (tests/soak/soak.py's
docstring lists them)."""

from __future__ import absolute_import, division, print_function

import collections
import json

import judge
from cluster import GATE, MANAGER, ACTIVE_RECORD, meta, condition, container, container_status


def rollout_record(obj):
    raw = (meta(obj, 'annotations') or {}).get('inplace.k8s/rollout')
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {'unreadable': raw}


def pod_records(pod):
    raw = (meta(pod, 'annotations') or {}).get('inplace.k8s/state')
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {'unreadable': {'state': 'unreadable'}}
    return value if isinstance(value, dict) else {}


def normal_image(image):
    """The runtime's report of an image (tests/cluster: a registry host stays, no tag means latest)."""
    image = (image or '').split('@', 1)[0]
    if '/' not in image.split(':', 1)[0] or '.' not in image.split('/', 1)[0]:
        image = 'docker.io/' + (image if '/' in image else 'library/' + image)
    return image if ':' in image.rsplit('/', 1)[-1] else image + ':latest'


def on_target(pod, target):
    spec_image = container(pod).get('image') or ''
    status = container_status(pod)
    return (spec_image.split('@', 1)[0] == target and normal_image(status.get('image')) == normal_image(target)
            and 'running' in (status.get('state') or {}) and status.get('ready') is True)


# --------------------------------------------------------------------------- invariants

def check_invariants(w, target, moved=None):
    """{invariant: [what, ...]} for workload ``w`` after its rollout to ``target``. ``moved``: what judge.py needs
    to tell a legitimate recreation ({tracked, gone, created}); without it every recreation is one of ours."""
    found = collections.defaultdict(list)
    obj = w.read()
    pods = w.pods()
    uids = dict((meta(p, 'name'), meta(p, 'uid')) for p in pods)
    moved = moved or {}
    flagged, explained = judge.judge_recreations(w.baseline, uids, moved.get('tracked') or {}, moved.get('gone') or {},
                                                 moved.get('created') or {})
    found['pod-recreated'].extend(flagged)
    if explained:
        found['explained'] = explained     # not an invariant: the legitimate recreations, for the record
    if w.kind == 'Deployment':
        sets = w.running_replicasets()
        if sorted(meta(rs, 'uid') for rs in sets) != w.replicaset:
            found['pod-recreated'].append('ReplicaSets now %s (created with %s)' % (
                ', '.join('%s(%s replicas)' % (meta(rs, 'name'), (rs.get('spec') or {}).get('replicas')) for rs in sets),
                w.replicaset))
    for pod in pods:
        name = meta(pod, 'name')
        gate = condition(pod, GATE)
        if not gate or gate.get('status') != 'True':
            found['pod-drained'].append('%s: %s %s' % (name, GATE, json.dumps(gate)))
        records = pod_records(pod)
        if not on_target(pod, target):
            status = container_status(pod)
            what = '%s: spec %s, status %s ready %s' % (name, container(pod).get('image'), status.get('image'),
                                                        status.get('ready'))
            reasons = ['%s %s: %s' % (op, rec.get('state'), rec.get('error') or rec.get('reason'))
                       for op, rec in sorted(records.items()) if isinstance(rec, dict)
                       and (rec.get('error') or rec.get('reason') or rec.get('state') == 'failed')]
            if reasons:
                found['not-converged'].append('%s; record: %s' % (what, '; '.join(reasons)))
            else:
                found['off-target-no-reason'].append(what)
        for op, rec in sorted(records.items()):
            if isinstance(rec, dict) and rec.get('state') in ACTIVE_RECORD and not on_target(pod, target):
                found['controller-held'].append('%s: %s record still %s' % (name, op, rec.get('state')))
    template_image = container(obj['spec']['template']).get('image')
    if template_image != target:
        found['template-pods-differ'].append('template image %s, target %s' % (template_image, target))
    status = obj.get('status') or {}
    if (status.get('observedGeneration') or 0) < (meta(obj, 'generation') or 0):
        found['template-pods-differ'].append('status.observedGeneration %s < generation %s' % (
            status.get('observedGeneration'), meta(obj, 'generation')))
    if status.get('updatedReplicas') != w.replicas:
        found['template-pods-differ'].append('status.updatedReplicas %s of %s' % (status.get('updatedReplicas'), w.replicas))
    if w.kind == 'Deployment':
        live = [rs for rs in w.replicasets() if (rs.get('spec') or {}).get('replicas')]
        for rs in live:
            rs_image = container(rs['spec']['template']).get('image')
            rs_hash = (meta(rs, 'labels') or {}).get('pod-template-hash')
            if rs_image != target:
                found['template-pods-differ'].append('ReplicaSet %s image %s' % (meta(rs, 'name'), rs_image))
            off = [meta(p, 'name') for p in pods if (meta(p, 'labels') or {}).get('pod-template-hash') != rs_hash]
            if off:
                found['template-pods-differ'].append('pods %s not of ReplicaSet %s' % (off, meta(rs, 'name')))
        if len(live) != 1:
            found['template-pods-differ'].append('%d ReplicaSets with replicas' % len(live))
    else:
        revision = status.get('updateRevision')
        if status.get('currentRevision') != revision:
            found['template-pods-differ'].append('currentRevision %s, updateRevision %s' % (
                status.get('currentRevision'), revision))
        off = [meta(p, 'name') for p in pods if (meta(p, 'labels') or {}).get('controller-revision-hash') != revision]
        if off:
            found['template-pods-differ'].append('pods %s not of revision %s' % (off, revision))
    if w.released_spec(obj) != w.strategy:
        found['controller-held'].append('spec %s, released it is %s' % (
            json.dumps(w.released_spec(obj)), json.dumps(w.strategy)))
    rec = rollout_record(obj)
    if rec.get('state') != 'done':
        found['controller-held'].append('rollout record state %s' % rec.get('state'))
    return found


def bystander_state(api, namespace):
    """What must not change in the bystander namespace: per object, its uid, generation, spec (pods: images),
    labels, annotations, and whether our field manager ever wrote it."""
    state = {}
    for path in ('/apis/apps/v1/namespaces/%s/deployments', '/apis/apps/v1/namespaces/%s/statefulsets',
                 '/apis/apps/v1/namespaces/%s/replicasets', '/api/v1/namespaces/%s/pods',
                 '/apis/apps/v1/namespaces/%s/controllerrevisions'):
        for obj in api.items(path % namespace):
            key = '%s/%s' % (path.rsplit('/', 1)[1], meta(obj, 'name'))
            spec = obj.get('spec') or {}
            if key.startswith('pods/'):
                spec = [(c.get('name'), c.get('image')) for c in spec.get('containers') or []]
                gate = (condition(obj, GATE) or {}).get('status')
            else:
                gate = None
            state[key] = {'uid': meta(obj, 'uid'), 'generation': meta(obj, 'generation'), 'spec': spec,
                          'labels': meta(obj, 'labels'), 'annotations': meta(obj, 'annotations'), 'gate': gate,
                          'ours': any(m.get('manager') == MANAGER for m in meta(obj, 'managedFields') or [])}
    return state


def bystander_diff(before, after):
    changes = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changes.append('%s deleted' % key)
        elif key not in before:
            changes.append('%s created' % key)
        else:
            fields = [f for f in before[key] if before[key][f] != after[key][f]]
            if fields or after[key]['ours']:
                changes.append('%s: %s changed%s' % (key, ', '.join(fields) or 'nothing',
                                                     ' (written by %s)' % MANAGER if after[key]['ours'] else ''))
    return changes
