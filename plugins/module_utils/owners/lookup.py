# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the owners of a workload are, read from the API: the workload with its managedFields, the controllers
above a pod, the VerticalPodAutoscalers and HorizontalPodAutoscalers that target a workload, and the Argo CD
Application or Flux Kustomization / HelmRelease its markers name, with whether that object's own status shows
that it manages the workload (owners/manages.py: a name in a label is a hint, never proof).

An API the cluster does not serve (404: no such CRD) is quietly nothing; one the credentials may not read (403)
is nothing too, and is named in ``unchecked`` (the plan says what could not be checked).
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.owners import manages, markers

# (API group/version, resource) of each kind read here.
APIS = {
    'Deployment': ('apps/v1', 'deployments'), 'StatefulSet': ('apps/v1', 'statefulsets'),
    'DaemonSet': ('apps/v1', 'daemonsets'), 'ReplicaSet': ('apps/v1', 'replicasets'),
    'VerticalPodAutoscaler': ('autoscaling.k8s.io/v1', 'verticalpodautoscalers'),
    'HorizontalPodAutoscaler': ('autoscaling/v2', 'horizontalpodautoscalers'),
    'Application': ('argoproj.io/v1alpha1', 'applications'),
    'Kustomization': ('kustomize.toolkit.fluxcd.io/v1', 'kustomizations'),
    'HelmRelease': ('helm.toolkit.fluxcd.io/v2', 'helmreleases'),
}
# The object of each GitOps tool that can be suspended, and where Argo CD keeps its Applications by default.
GITOPS_KINDS = {markers.ARGOCD: 'Application', markers.FLUX_KUSTOMIZATION: 'Kustomization',
                markers.FLUX_HELMRELEASE: 'HelmRelease'}
ARGOCD_NAMESPACE = 'argocd'
CONTROLLERS = ('ReplicaSet', 'Deployment', 'StatefulSet', 'DaemonSet')


def path(kind, namespace=None, name=None):
    """The API path of a kind's collection (all namespaces without ``namespace``) or of one object."""
    version, resource = APIS[kind]
    return paths.api_path(version, resource, namespace or None, name or None)


class Reader:
    """Reads for one check; ``unchecked`` collects what could not be read (403) and why."""

    def __init__(self, kube):
        self.kube = kube
        self.unchecked = []
        self._objects = {}

    def _forbidden(self, what, exc):
        note = '%s: %s' % (what, getattr(exc, 'msg', exc))
        if note not in self.unchecked:
            self.unchecked.append(note)

    def get(self, kind, namespace, name):
        """The object with its managedFields, or None (not found, or not readable: named in unchecked)."""
        key = (kind, namespace, name)
        if key not in self._objects:
            try:
                self._objects[key] = self.kube.get_managed(path(kind, namespace, name))
            except NotFoundError:
                self._objects[key] = None
            except ForbiddenError as exc:
                self._forbidden('%s %s/%s not read' % (kind, namespace, name), exc)
                self._objects[key] = None
        return self._objects[key]

    def items(self, kind, namespace=None, field_selector=None):
        """The objects of a kind (in ``namespace``, else all); [] when its API is not served or not readable."""
        try:
            return self.kube.list_collection(path(kind, namespace), field_selector=field_selector)[0]
        except NotFoundError:
            return []
        except ForbiddenError as exc:
            self._forbidden('%ss %s not listed' % (kind, 'in ' + namespace if namespace else 'cluster-wide'), exc)
            return []

    def controllers(self, obj):
        """The controllers above ``obj`` (a pod): [(kind, object)], nearest first (a ReplicaSet, its Deployment)."""
        chain = []
        for _depth in range(3):
            ref = next((r for r in (obj.get('metadata') or {}).get('ownerReferences') or []
                        if isinstance(r, dict) and r.get('controller') and r.get('kind') in CONTROLLERS), None)
            if ref is None or ref.get('apiVersion') != APIS[ref['kind']][0] or not paths.is_name(ref.get('name')):
                break   # not an allow-listed controller (kind, API version, valid name): not read
            obj = self.get(ref['kind'], (obj.get('metadata') or {}).get('namespace'), ref['name'])
            if obj is None:
                break
            chain.append((ref['kind'], obj))
        return chain

    def autoscalers(self, namespace, targets):
        """The VPAs and HPAs of ``namespace`` whose target is one of ``targets`` ((kind, name) pairs)."""
        found = []
        for kind, field in (('VerticalPodAutoscaler', 'targetRef'), ('HorizontalPodAutoscaler', 'scaleTargetRef')):
            for obj in self.items(kind, namespace):
                ref = (obj.get('spec') or {}).get(field) or {}
                if (ref.get('kind'), ref.get('name')) in targets:
                    found.append((kind, obj))
        return found

    def _candidates(self, kind, owner):
        name, namespace = owner['name'], owner.get('namespace')
        if namespace:
            found = [self.get(kind, namespace, name)]
        else:
            # An Application named without its namespace: looked for in every namespace, else Argo CD's own.
            found = [self.get(kind, (o.get('metadata') or {}).get('namespace'), name)
                     for o in self.items(kind, field_selector='metadata.name=%s' % name)
                     if paths.is_namespace((o.get('metadata') or {}).get('namespace'))]
            found = found or [self.get(kind, ARGOCD_NAMESPACE, name)]
        return [obj for obj in found if obj is not None]

    def gitops(self, owner, kind, workload):
        """(object, manages, why) of the Application, Kustomization or HelmRelease an owner of ``workload`` (of
        ``kind``) names: the first candidate whose own status shows it manages the workload (manages.py), else
        the first candidate with manages False; (None, False, why) when there is none (not named, not a valid
        name, not found, not readable, or its CRD not installed)."""
        gitops_kind = GITOPS_KINDS.get(owner['tool'])
        if gitops_kind is None or not owner.get('name'):
            return None, False, 'no object named'
        namespace_ok = owner.get('namespace') is None or paths.is_namespace(owner['namespace'])
        if not paths.is_name(owner['name']) or not namespace_ok:
            return None, False, 'not a valid object name or namespace: not read'
        candidates = self._candidates(gitops_kind, owner)
        verdicts = [(obj,) + manages.manages(gitops_kind, obj, kind, workload) for obj in candidates]
        for verdict in verdicts:
            if verdict[1]:
                return verdict
        if verdicts:
            return verdicts[0]
        return None, False, '%s not found or not readable' % gitops_kind
