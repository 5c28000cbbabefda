# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    NotFoundError, RbacForbidden, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.owners import check, lookup, markers, policy

IMAGE = check.image_change({'app': 'nginx:1.27'})
RESIZE = check.resources_change({'app': {'requests': {'cpu': '200m'}}})


def managed(manager, operation='Apply', containers=('app',), field='image'):
    spec = dict(('k:{"name":"%s"}' % name, {'f:' + field: {}}) for name in containers)
    return {'manager': manager, 'operation': operation,
            'fieldsV1': {'f:metadata': {'f:labels': {}}, 'f:spec': {'f:template': {'f:spec': {'f:containers': spec}}}}}


def deployment(labels=None, annotations=None, fields=(), name='web', uid='d1'):
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment',
            'metadata': {'name': name, 'namespace': 'shop', 'uid': uid, 'labels': labels or {},
                         'annotations': annotations or {}, 'managedFields': list(fields)}}


class Kube:
    """GETs and lists by path; a missing path is a 404, a path in ``forbidden`` a 403."""

    def __init__(self, objects=None, forbidden=()):
        self.objects = dict(objects or {})
        self.forbidden = forbidden
        self.calls = []

    def _check(self, path):
        self.calls.append(path)
        if any(path.startswith(f) for f in self.forbidden):
            raise RbacForbidden('forbidden: %s' % path, status=403)

    def get_managed(self, path):
        self._check(path)
        if path not in self.objects:
            raise NotFoundError('not found', status=404)
        return self.objects[path]

    def list_collection(self, path, label_selector=None, field_selector=None):
        self._check(path)
        if path not in self.objects:
            raise NotFoundError('not found', status=404)
        items = self.objects[path]
        if field_selector:
            name = field_selector.split('=', 1)[1]
            items = [i for i in items if i['metadata']['name'] == name]
        return items, '1'


def test_field_managers_of_the_fields_written_only():
    obj = deployment(fields=[managed('argocd-controller'), managed('kubectl-client-side-apply', 'Update'),
                             managed('team-ci', containers=('sidecar',))])
    paths = markers.container_paths(True, ['app'], 'image')
    found = markers.found(obj, paths)
    assert [o['tool'] for o in found] == [markers.ARGOCD]
    assert 'field manager argocd-controller (Apply)' in found[0]['evidence'][0]
    assert markers.found(obj, markers.container_paths(True, ['app'], 'resources')) == []


def test_helm3_labels_and_tracking_id_and_flux_labels():
    obj = deployment(labels={'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': 'web',
                             'kustomize.toolkit.fluxcd.io/name': 'apps',
                             'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'},
                     annotations={'meta.helm.sh/release-name': 'web', 'meta.helm.sh/release-namespace': 'shop',
                                  'argocd.argoproj.io/tracking-id': 'team_web:apps/Deployment:shop/web'})
    found = dict((o['tool'], o) for o in markers.found(obj, []))
    assert found[markers.HELM]['name'] == 'web'
    assert (found[markers.ARGOCD]['name'], found[markers.ARGOCD]['namespace']) == ('web', 'team')
    assert (found[markers.FLUX_KUSTOMIZATION]['name'], found[markers.FLUX_KUSTOMIZATION]['namespace']) == (
        'apps', 'flux-system')


def test_instance_label_alone_is_not_argocd():
    # Helm charts and plain manifests set app.kubernetes.io/instance too.
    assert markers.found(deployment(labels={'app.kubernetes.io/instance': 'web'}), []) == []


def test_unknown_apply_manager_warns_and_helm4_manager_is_helm():
    obj = deployment(annotations={'meta.helm.sh/release-name': 'web'}, fields=[managed('helm'), managed('team-ci')])
    found = markers.found(obj, markers.container_paths(True, ['app'], 'image'))
    assert [(o['tool'], o['name']) for o in found] == [(markers.HELM, 'web'), (markers.APPLY, 'team-ci')]
    assert len(found[0]['evidence']) == 2


def application(automated):
    spec = {'syncPolicy': {'automated': automated}} if automated is not None else {}
    return {'kind': 'Application', 'metadata': {'name': 'web', 'namespace': 'argocd', 'annotations': {}}, 'spec': spec,
            'status': {'resources': [{'group': 'apps', 'version': 'v1', 'kind': 'Deployment', 'namespace': 'shop',
                                      'name': 'web'}]}}


@pytest.mark.parametrize('automated,reverts', [
    ({'selfHeal': True}, policy.CONTINUOUSLY),
    ({'selfHeal': False}, policy.WHEN_RUN),
    ({'selfHeal': True, 'enabled': False}, policy.WHEN_RUN),
    (None, policy.WHEN_RUN),
])
def test_argocd_reverts_continuously_only_with_self_heal(automated, reverts):
    owner = {'tool': markers.ARGOCD, 'name': 'web', 'namespace': 'argocd', 'evidence': ['x']}
    assert policy.judge(owner, IMAGE, (application(automated), True, 'listed'))['reverts'] == reverts


def test_gitops_object_not_found_is_assumed_to_sync():
    owner = {'tool': markers.FLUX_KUSTOMIZATION, 'name': None, 'namespace': None, 'evidence': ['x']}
    entry = policy.judge(owner, IMAGE, (None, False, 'not found'))
    assert entry['reverts'] == policy.CONTINUOUSLY and 'not found' in entry['state']


def test_controller_above_pods_is_warned_not_refused():
    owner = {'tool': markers.ARGOCD, 'name': 'web', 'namespace': 'argocd', 'evidence': ['x']}
    entry = policy.judge(owner, IMAGE, (application({'selfHeal': True}), True, 'listed'), above='Deployment web')
    assert entry['reverts'] == policy.WHEN_RUN and 'Deployment web' in entry['effect']


def vpa(mode, policies=None):
    spec = {'targetRef': {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'web'},
            'updatePolicy': {'updateMode': mode} if mode else {}}
    if policies:
        spec['resourcePolicy'] = {'containerPolicies': policies}
    return {'kind': 'VerticalPodAutoscaler', 'metadata': {'name': 'web-vpa', 'namespace': 'shop'}, 'spec': spec}


@pytest.mark.parametrize('mode,change,reverts', [
    ('InPlaceOrRecreate', RESIZE, policy.CONTINUOUSLY),
    (None, RESIZE, policy.CONTINUOUSLY),            # the default updateMode is Auto
    ('Initial', RESIZE, policy.WHEN_RUN),
    ('Off', RESIZE, policy.NEVER),
    ('InPlaceOrRecreate', IMAGE, policy.NEVER),     # a VPA does not touch images
])
def test_vpa(mode, change, reverts):
    assert policy.judge_autoscaler('VerticalPodAutoscaler', vpa(mode), change)['reverts'] == reverts


def test_vpa_leaving_the_container_alone():
    entry = policy.judge_autoscaler('VerticalPodAutoscaler', vpa('Auto', [{'containerName': '*', 'mode': 'Off'}]),
                                    RESIZE)
    assert entry['reverts'] == policy.NEVER


def test_hpa_on_utilization_warns_on_resize():
    hpa = {'metadata': {'name': 'web'}, 'spec': {'metrics': [
        {'type': 'Resource', 'resource': {'name': 'cpu', 'target': {'type': 'Utilization', 'averageUtilization': 60}}}]}}
    assert policy.judge_autoscaler('HorizontalPodAutoscaler', hpa, RESIZE)['reverts'] == policy.WHEN_RUN
    assert policy.judge_autoscaler('HorizontalPodAutoscaler', hpa, IMAGE)['reverts'] == policy.NEVER


def argo_cluster(self_heal=True, forbidden=()):
    obj = deployment(annotations={'argocd.argoproj.io/tracking-id': 'web:apps/Deployment:shop/web'},
                     fields=[managed('argocd-controller')])
    app = application({'selfHeal': self_heal})
    return Kube({lookup.path('Deployment', 'shop', 'web'): obj,
                 lookup.path('Application'): [app],
                 lookup.path('Application', 'argocd', 'web'): app}, forbidden)


def test_workload_refused_by_argocd_self_heal_names_the_reason_and_the_way_out():
    with pytest.raises(ValidationError) as err:
        check.workload(argo_cluster(), 'Deployment', 'shop', 'web', [IMAGE], 'refuse', lambda m: None)
    assert 'Argo CD web' in err.value.msg and 'selfHeal' in err.value.msg
    assert 'nothing was changed' in err.value.msg and 'owners: proceed' in err.value.msg
    assert err.value.details['owners']['found'][0]['object'] == 'Application argocd/web'


def test_an_application_that_does_not_list_the_workload_is_warned_about_never_refuses():
    """A tenant's tracking id naming the platform's Application (self-heal on) does not make it the owner."""
    kube = argo_cluster()
    kube.objects[lookup.path('Application', 'argocd', 'web')]['status']['resources'] = [
        {'group': 'apps', 'kind': 'Deployment', 'namespace': 'kyverno', 'name': 'web'}]
    warnings = []
    report = check.workload(kube, 'Deployment', 'shop', 'web', [IMAGE], 'refuse', warnings.append)
    assert report['found'][0]['reverts'] == policy.WHEN_RUN
    assert len(warnings) == 1 and "named by the workload's labels but does not manage it" in warnings[0]
    assert 'status.resources does not list Deployment shop/web' in warnings[0]


@pytest.mark.parametrize('owners_policy,warned', [('warn', 1), ('proceed', 0)])
def test_workload_warn_and_proceed_go_on(owners_policy, warned):
    warnings = []
    report = check.workload(argo_cluster(), 'Deployment', 'shop', 'web', [IMAGE], owners_policy, warnings.append)
    assert len(warnings) == warned and report['found'][0]['reverts'] == policy.CONTINUOUSLY


def test_missing_apis_are_quiet_and_forbidden_ones_named():
    kube = Kube({lookup.path('Deployment', 'shop', 'web'): deployment()},
                forbidden=(lookup.path('HorizontalPodAutoscaler', 'shop'),))
    report = check.workload(kube, 'Deployment', 'shop', 'web', [RESIZE], 'refuse', lambda m: None)
    assert report['found'] == []
    assert len(report['unchecked']) == 1 and 'HorizontalPodAutoscalers in shop not listed' in report['unchecked'][0]


def test_vpa_refuses_a_resize_of_the_workload():
    kube = Kube({lookup.path('Deployment', 'shop', 'web'): deployment(),
                 lookup.path('VerticalPodAutoscaler', 'shop'): [vpa('InPlaceOrRecreate')]})
    with pytest.raises(ValidationError) as err:
        check.workload(kube, 'Deployment', 'shop', 'web', [RESIZE], 'refuse', lambda m: None)
    assert 'VerticalPodAutoscaler web-vpa' in err.value.msg
    # An image change of the same workload goes on: the VPA is listed, not warned about.
    warnings = []
    report = check.workload(kube, 'Deployment', 'shop', 'web', [IMAGE], 'refuse', warnings.append)
    assert warnings == [] and report['found'][0]['reverts'] == policy.NEVER


def test_pods_of_a_helm_deployment_warn_with_release_and_values():
    rs = dict(deployment(name='web-abc', uid='r1'), kind='ReplicaSet')
    rs['metadata']['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': 'Deployment', 'name': 'web', 'controller': True}]
    dep = deployment(labels={'app.kubernetes.io/managed-by': 'Helm'}, annotations={'meta.helm.sh/release-name': 'web'})
    kube = Kube({lookup.path('ReplicaSet', 'shop', 'web-abc'): rs, lookup.path('Deployment', 'shop', 'web'): dep})
    pods = [{'metadata': {'name': 'web-abc-%d' % i, 'namespace': 'shop', 'ownerReferences': [
        {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'name': 'web-abc', 'controller': True}]}} for i in range(3)]
    warnings = []
    report = check.pods(kube, pods, IMAGE, 'refuse', warnings.append)
    assert [e['owner'] for e in report['found']] == ['Helm web']
    assert len(warnings) == 1 and 'release web' in warnings[0] and 'app=nginx:1.27' in warnings[0]
    # The ReplicaSet and the Deployment are read once for all three pods.
    assert len([c for c in kube.calls if c.endswith('/replicasets/web-abc')]) == 1
