# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Know the owners before any write: the one check the rollout's plan (rollout/plan.py) and the pod modules'
runner (runner.py) call, check mode included.

``change``: {'field': 'image' or 'resources', 'containers': {name: new value}}. The report (the result's
``owners``): the policy, every owner found (policy.judge: who, the evidence, when it reverts the change, what it
does and the fix) and what could not be checked. A refusal raises ValidationError before anything is written.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.owners import lookup, markers, policy


def image_change(containers):
    return {'field': 'image', 'containers': dict(containers or {})}


def resources_change(containers):
    return {'field': 'resources', 'containers': dict(containers or {})}


def _report(reader, entries, owners_policy, warn):
    refusal, warnings = policy.decide(entries, owners_policy)
    report = {'policy': owners_policy, 'found': entries, 'unchecked': reader.unchecked}
    if refusal:
        raise ValidationError(refusal, owners=report)
    for message in warnings:
        warn(message)
    return report


def _entries(reader, kind, obj, change, template, above=None):
    paths = markers.container_paths(template, sorted(change['containers']), change['field'])
    return [policy.judge(owner, change, reader.gitops(owner, kind, obj), above) for owner in markers.found(obj, paths)]


def workload(kube, kind, namespace, name, changes, owners_policy, warn):
    """The owners of a workload whose template the rollout writes (``changes``: one change per field)."""
    reader = lookup.Reader(kube)
    obj = reader.get(kind, namespace, name)
    entries = []
    if obj is not None:
        for change in changes:
            entries.extend(e for e in _entries(reader, kind, obj, change, True) if e not in entries)
    for autoscaler, found in reader.autoscalers(namespace, [(kind, name)]):
        for change in changes:
            entries.append(policy.judge_autoscaler(autoscaler, found, change))
    return _report(reader, _unique(entries), owners_policy, warn)


def pods(kube, found, change, owners_policy, warn):
    """The owners of the pods a pod module writes: markers on the pods themselves (a bare pod applied by a GitOps
    tool is reverted by it), and on the controllers above them (which keep their template), and the autoscalers
    that target those controllers."""
    reader = lookup.Reader(kube)
    entries, seen, targets = [], set(), set()
    namespace = None
    for pod in found:
        meta = pod.get('metadata') or {}
        namespace = meta.get('namespace')
        chain = reader.controllers(pod)
        if not chain:
            entries.extend(_entries(reader, 'Pod', pod, change, False))
            continue
        for kind, obj in chain:
            uid = (obj.get('metadata') or {}).get('uid')
            if uid in seen:
                continue
            seen.add(uid)
            targets.add((kind, obj['metadata']['name']))
            entries.extend(_entries(reader, kind, obj, change, True, above='%s %s' % (kind, obj['metadata']['name'])))
    if targets:
        entries.extend(policy.judge_autoscaler(kind, obj, change) for kind, obj in reader.autoscalers(namespace, targets))
    return _report(reader, _unique(entries), owners_policy, warn)


SEVERITY = (policy.NEVER, policy.WHEN_RUN, policy.CONTINUOUSLY)


def _unique(entries):
    """One entry per owner (a Helm release seen on a ReplicaSet and its Deployment is one release; a VPA judged
    for images and for resources is one VPA): the most severe judgement, the evidence of all."""
    unique = []
    for entry in entries:
        same = next((u for u in unique if u['owner'] == entry['owner']), None)
        if same is None:
            unique.append(entry)
            continue
        evidence = same['evidence'] + [e for e in entry['evidence'] if e not in same['evidence']]
        if SEVERITY.index(entry['reverts']) > SEVERITY.index(same['reverts']):
            same.update(entry)
        same['evidence'] = evidence
    return unique
