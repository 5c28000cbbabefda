# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: who else manages an object, from what it carries: the server-side-apply field managers of the fields a
change would write (metadata.managedFields), and the labels and annotations Helm, Argo CD and Flux leave.

Each finding is an owner dict: ``tool`` (HELM, ARGOCD, FLUX_KUSTOMIZATION, FLUX_HELMRELEASE, APPLY), ``name``
(the release, Application, Kustomization or HelmRelease when the object names it, else None), ``namespace``
(where that object lives, when known), ``evidence`` (what was seen). owners/policy.py says what each does to
the change.
"""

import json

HELM = 'Helm'
ARGOCD = 'Argo CD'
FLUX_KUSTOMIZATION = 'Flux Kustomization'
FLUX_HELMRELEASE = 'Flux HelmRelease'
APPLY = 'server-side apply'

# Field managers of the controllers that apply server-side (Helm 4 applies as "helm").
MANAGERS = {'argocd-controller': ARGOCD, 'kustomize-controller': FLUX_KUSTOMIZATION,
            'helm-controller': FLUX_HELMRELEASE, 'helm': HELM}
ARGOCD_TRACKING = 'argocd.argoproj.io/tracking-id'
INSTANCE_LABEL = 'app.kubernetes.io/instance'
HELM_RELEASE = 'meta.helm.sh/release-name'
HELM_NAMESPACE = 'meta.helm.sh/release-namespace'
MANAGED_BY = 'app.kubernetes.io/managed-by'
FLUX_LABELS = {FLUX_KUSTOMIZATION: 'kustomize.toolkit.fluxcd.io', FLUX_HELMRELEASE: 'helm.toolkit.fluxcd.io'}


def container_paths(template, names, field):
    """The managedFields paths of ``field`` ('image' or 'resources') of the containers ``names``: under the pod
    template's spec (``template``: True, a workload) or the pod's spec."""
    prefix = ('f:spec', 'f:template', 'f:spec') if template else ('f:spec',)
    paths = []
    for name in names:
        key = 'k:' + json.dumps({'name': name}, separators=(',', ':'))
        for kind in ('f:containers', 'f:initContainers'):
            paths.append(prefix + (kind, key, 'f:' + field))
    return paths


def _owns(fields, path):
    node = fields or {}
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def managers(obj, paths):
    """[(manager, operation)] of the managedFields entries of ``obj`` that own one of ``paths``."""
    found = []
    for entry in (obj.get('metadata') or {}).get('managedFields') or []:
        fields = entry.get('fieldsV1') or {}
        if any(_owns(fields, path) for path in paths):
            found.append((entry.get('manager') or '', entry.get('operation') or ''))
    return found


def _owner(tool, name=None, namespace=None, evidence=''):
    return {'tool': tool, 'name': name, 'namespace': namespace, 'evidence': [evidence]}


def _argocd_app(tracking):
    """(name, namespace or None) of the Application a tracking id names: ``app:group/kind:ns/name``, the app
    ``ns_app`` when Applications live in any namespace."""
    app = (tracking or '').split(':', 1)[0]
    if '_' in app:
        namespace, app = app.split('_', 1)
        return app, namespace
    return app or None, None


def found(obj, paths):
    """The owners ``obj`` shows (owner dicts, one per tool and name, evidence merged), ``paths``: the fields the
    change writes (container_paths)."""
    meta = obj.get('metadata') or {}
    labels, annotations = meta.get('labels') or {}, meta.get('annotations') or {}
    where = '%s %s' % (obj.get('kind') or 'object', meta.get('name'))
    owners = []
    helm_release = annotations.get(HELM_RELEASE)
    if helm_release or labels.get(MANAGED_BY) == 'Helm':
        owners.append(_owner(HELM, helm_release, annotations.get(HELM_NAMESPACE) or meta.get('namespace'),
                             '%s: %s' % (where, 'annotation %s=%s' % (HELM_RELEASE, helm_release) if helm_release
                                         else 'label %s=Helm' % MANAGED_BY)))
    tracking = annotations.get(ARGOCD_TRACKING)
    if tracking:
        name, namespace = _argocd_app(tracking)
        owners.append(_owner(ARGOCD, name, namespace, '%s: annotation %s=%s' % (where, ARGOCD_TRACKING, tracking)))
    elif labels.get(INSTANCE_LABEL) and not helm_release and labels.get(MANAGED_BY) != 'Helm' and \
            any(m == 'argocd-controller' for m, _op in managers(obj, [('f:metadata',)])):
        # The instance label is Argo CD's only with its controller as a manager (Helm charts set it too).
        owners.append(_owner(ARGOCD, labels[INSTANCE_LABEL], None,
                             '%s: label %s=%s' % (where, INSTANCE_LABEL, labels[INSTANCE_LABEL])))
    for tool, prefix in sorted(FLUX_LABELS.items()):
        name = labels.get(prefix + '/name')
        if name:
            owners.append(_owner(tool, name, labels.get(prefix + '/namespace'),
                                 '%s: label %s/name=%s' % (where, prefix, name)))
    for manager, operation in managers(obj, paths):
        tool = MANAGERS.get(manager)
        if tool is None and operation != 'Apply':
            continue   # an update (kubectl edit, a controller's write) claims nothing a next write respects
        evidence = '%s: field manager %s (%s) of the fields this change writes' % (where, manager, operation)
        owners.append(_owner(tool or APPLY, None if tool else manager, None, evidence))
    return merge(owners)


def merge(owners):
    """One owner per tool (and name where known): a finding without a name joins the named one of its tool."""
    merged = []
    for owner in owners:
        same = next((m for m in merged if m['tool'] == owner['tool'] and (
            m['name'] == owner['name'] or None in (m['name'], owner['name'])) and owner['tool'] != APPLY), None)
        if owner['tool'] == APPLY:
            same = next((m for m in merged if m['tool'] == APPLY and m['name'] == owner['name']), None)
        if same is None:
            merged.append(dict(owner, evidence=list(owner['evidence'])))
            continue
        same['name'] = same['name'] or owner['name']
        same['namespace'] = same['namespace'] or owner['namespace']
        same['evidence'].extend(e for e in owner['evidence'] if e not in same['evidence'])
    return merged
