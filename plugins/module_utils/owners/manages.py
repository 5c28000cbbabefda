# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: does an Argo CD Application or a Flux Kustomization / HelmRelease manage a workload, by what it says of
itself (docs/gitops.md, "How ownership is established")?

The workload's labels and annotations only name a candidate: anyone who may patch the workload writes them. The
candidate's own status, written by its controller, decides:

- Application: ``status.resources`` lists the workload (group, kind, namespace, name).
- Kustomization: ``status.inventory.entries`` holds its id ``<namespace>_<name>_<group>_<kind>``.
- HelmRelease with ``status.inventory`` (helm-controller with inventory): the same.
- HelmRelease without one (older helm-controller): the release of its latest ``status.history`` snapshot (name
  and namespace, written by helm-controller) is the one the workload's ``meta.helm.sh/release-name`` and
  ``meta.helm.sh/release-namespace`` annotations name, and the workload lives in that release namespace. The
  release's own record (a Secret) is never read.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.owners import markers

# API group of each workload kind whose GitOps owners are checked (core: '').
GROUPS = {'Deployment': 'apps', 'StatefulSet': 'apps', 'DaemonSet': 'apps', 'ReplicaSet': 'apps', 'Pod': ''}
NOT_MANAGED = "named by the workload's labels but does not manage it: left alone"


def identity(kind, obj):
    """(group, kind, namespace, name) of ``obj`` as the GitOps tools list it."""
    meta = obj.get('metadata') or {}
    api_version = obj.get('apiVersion') or ''
    group = GROUPS.get(kind, api_version.split('/')[0] if '/' in api_version else '')
    return group, kind, meta.get('namespace') or '', meta.get('name') or ''


def _status(obj):
    status = obj.get('status')
    return status if isinstance(status, dict) else {}


def _listed(entries, wanted):
    return isinstance(entries, list) and any(isinstance(e, dict) and e.get('id') == wanted for e in entries)


def _application(obj, ident):
    group, kind, namespace, name = ident
    for entry in _status(obj).get('resources') or []:
        if isinstance(entry, dict) and (entry.get('group') or '', entry.get('kind'), entry.get('namespace') or '',
                                        entry.get('name')) == ident:
            return True, 'its status.resources lists %s %s/%s' % (kind, namespace, name)
    return False, 'its status.resources does not list %s %s/%s' % (kind, namespace, name)


def _inventory_id(ident):
    group, kind, namespace, name = ident
    return '%s_%s_%s_%s' % (namespace, name, group, kind)


def _inventory(obj, ident):
    wanted = _inventory_id(ident)
    if _listed((_status(obj).get('inventory') or {}).get('entries'), wanted):
        return True, 'its status.inventory holds %s' % wanted
    return False, 'its status.inventory does not hold %s' % wanted


def _helm_release(obj, ident, workload):
    inventory = _status(obj).get('inventory')
    if isinstance(inventory, dict):
        return _inventory(obj, ident)
    history = [s for s in _status(obj).get('history') or [] if isinstance(s, dict)]
    if not history:
        return False, 'it has neither status.inventory nor status.history: it has released nothing'
    latest = max(history, key=lambda s: s.get('version') if isinstance(s.get('version'), int) else -1)
    release = (latest.get('name'), latest.get('namespace'))
    annotations = (workload.get('metadata') or {}).get('annotations') or {}
    claimed = (annotations.get(markers.HELM_RELEASE), annotations.get(markers.HELM_NAMESPACE))
    if None not in release and claimed == release and ident[2] == release[1]:
        return True, ('no status.inventory; its latest release %s/%s (status.history) is the one the workload\'s '
                      'Helm annotations name, in the workload\'s namespace' % (release[1], release[0]))
    return False, ('no status.inventory; its latest release %s/%s (status.history) is not the release %s/%s the '
                   'workload\'s Helm annotations name in namespace %s' % (release[1], release[0], claimed[1],
                                                                          claimed[0], ident[2]))


def manages(gitops_kind, gitops_obj, kind, workload):
    """(True, why) when ``gitops_obj`` (an Application, Kustomization or HelmRelease) shows by its own status that
    it manages ``workload`` (of ``kind``), else (False, why not)."""
    ident = identity(kind, workload)
    if gitops_kind == 'Application':
        return _application(gitops_obj, ident)
    if gitops_kind == 'Kustomization':
        return _inventory(gitops_obj, ident)
    return _helm_release(gitops_obj, ident, workload)
