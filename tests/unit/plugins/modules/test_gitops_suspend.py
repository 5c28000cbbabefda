# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gitops_suspend through its main(): a GitOps object is suspended only when its own status lists the workload
(docs/gitops.md, "How ownership is established"); one the workload's labels only name is reported and left."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import importlib
import json
import zipimport

import pytest

from ansible.module_utils import basic

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.owners import lookup
from ansible_collections.inplace.k8s.plugins.module_utils.process import keeper
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import module_args


AUTOMATED = {'prune': True, 'selfHeal': True}
TENANT = ('team-a', 'web')


def merge(target, patch):
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


class Kube:
    """The API: objects by path, every request recorded; PATCH is a merge patch guarded by resourceVersion."""

    def __init__(self, *objects):
        self.objects = {}
        self.requests = []
        for kind, obj in objects:
            self.objects[lookup.path(kind, obj['metadata']['namespace'], obj['metadata']['name'])] = obj

    def get_managed(self, path):
        self.requests.append(('GET', path))
        if path not in self.objects:
            raise NotFoundError('not found', status=404)
        return copy.deepcopy(self.objects[path])

    def list_collection(self, path, label_selector=None, field_selector=None):
        self.requests.append(('LIST', path))
        name = (field_selector or '').replace('metadata.name=', '')
        return [copy.deepcopy(o) for p, o in sorted(self.objects.items()) if p.startswith(path.rsplit('/', 1)[0])
                and p.split('/')[-2] == path.rsplit('/', 1)[-1] and o['metadata']['name'] == name], '1'

    def request(self, method, path, query=None, body=None, content_type=None):
        self.requests.append((method, path))
        assert method == 'PATCH'
        current = self.objects[path]
        assert body['metadata'].pop('resourceVersion') == current['metadata']['resourceVersion']
        merge(current, body)
        current['metadata']['resourceVersion'] = str(int(current['metadata']['resourceVersion']) + 1)
        return copy.deepcopy(current)

    def writes(self):
        return [path for method, path in self.requests if method != 'GET' and method != 'LIST']


def deployment(annotations=None, labels=None):
    return 'Deployment', {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {
        'name': TENANT[1], 'namespace': TENANT[0], 'annotations': annotations or {}, 'labels': labels or {}}}


def listing(namespace, name):
    return {'group': 'apps', 'version': 'v1', 'kind': 'Deployment', 'namespace': namespace, 'name': name}


def application(namespace, name, resources):
    return 'Application', {'kind': 'Application', 'metadata': {'name': name, 'namespace': namespace,
                                                               'resourceVersion': '1', 'annotations': {}},
                           'spec': {'project': 'default', 'syncPolicy': {'automated': dict(AUTOMATED)}},
                           'status': {'resources': resources}}


def flux(kind, namespace, name, entries=None, history=None):
    status = {}
    if entries is not None:
        status['inventory'] = {'entries': [{'id': e, 'v': 'v1'} for e in entries]}
    if history is not None:
        status['history'] = history
    return kind, {'kind': kind, 'metadata': {'name': name, 'namespace': namespace, 'resourceVersion': '1'},
                  'spec': {'interval': '10m'}, 'status': status}


def main(monkeypatch, capsys, kube, **args):
    # The module's import patches zipimport (module_utils/startup.py): put back after the test.
    monkeypatch.setattr(zipimport, '_get_module_code', getattr(zipimport, '_get_module_code', None), raising=False)
    gitops_suspend = importlib.import_module('ansible_collections.inplace.k8s.plugins.modules.gitops_suspend')
    monkeypatch.setattr(runner, 'client', lambda params, pool_size=10: kube)
    monkeypatch.setattr(keeper, 'start', lambda connect, items, run, max_seconds: None)
    warnings = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning, **kwargs: warnings.append(warning))
    with module_args(dict({'namespace': TENANT[0], 'kind': 'Deployment', 'name': TENANT[1]}, **args)):
        with pytest.raises(SystemExit):
            gitops_suspend.main()
    return dict(json.loads(capsys.readouterr().out), warnings=warnings)


FOREIGN_MARKERS = {'annotations': {'argocd.argoproj.io/tracking-id':
                                   'argocd_platform-security-policies:apps/Deployment:team-a/web'},
                   'labels': {'kustomize.toolkit.fluxcd.io/name': 'flux-system',
                              'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'}}


def foreign():
    """The platform's objects: they manage other things, never team-a/web."""
    return (application('argocd', 'platform-security-policies', [listing('kyverno', 'kyverno-admission')]),
            flux('Kustomization', 'flux-system', 'flux-system', ['flux-system_flux-system_apps_Deployment',
                                                                 'team-a_web_apps_StatefulSet']))


def test_a_tenant_naming_a_foreign_application_and_kustomization_changes_neither(monkeypatch, capsys):
    kube = Kube(deployment(**FOREIGN_MARKERS), *foreign())
    before = copy.deepcopy(kube.objects)
    result = main(monkeypatch, capsys, kube, state='suspended', run='run-1')
    assert result['changed'] is False and kube.writes() == [] and kube.objects == before
    left = dict(((o['kind'], o['namespace'], o['name']), o) for o in result['objects'])
    assert sorted(left) == [('Application', 'argocd', 'platform-security-policies'),
                            ('Kustomization', 'flux-system', 'flux-system')]
    for entry in left.values():
        assert entry['action'] == 'left'
        assert "named by the workload's labels but does not manage it: left alone" in entry['reason']
    assert 'status.resources does not list Deployment team-a/web' in \
        left[('Application', 'argocd', 'platform-security-policies')]['reason']
    assert 'status.inventory does not hold team-a_web_apps_Deployment' in \
        left[('Kustomization', 'flux-system', 'flux-system')]['reason']
    assert len([w for w in result['warnings'] if 'does not manage it' in w]) == 2
    # The resume of the run leaves them alone too.
    result = main(monkeypatch, capsys, kube, state='resumed', run='run-1')
    assert result['changed'] is False and kube.writes() == [] and kube.objects == before


def test_the_genuine_owners_are_suspended_and_resumed_as_before(monkeypatch, capsys):
    kube = Kube(deployment(annotations={'argocd.argoproj.io/tracking-id': 'argocd_web:apps/Deployment:team-a/web'},
                           labels={'kustomize.toolkit.fluxcd.io/name': 'apps',
                                   'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'}),
                application('argocd', 'web', [listing('team-a', 'web')]),
                flux('Kustomization', 'flux-system', 'apps', ['team-a_web_apps_Deployment']))
    result = main(monkeypatch, capsys, kube, state='suspended', run='run-1')
    assert result['changed'] is True
    actions = sorted((o['kind'], o['action']) for o in result['objects'])
    assert actions == [('Application', 'suspended'), ('Kustomization', 'suspended')]
    app = kube.objects[lookup.path('Application', 'argocd', 'web')]
    ks = kube.objects[lookup.path('Kustomization', 'flux-system', 'apps')]
    assert 'automated' not in app['spec']['syncPolicy'] and ks['spec']['suspend'] is True
    result = main(monkeypatch, capsys, kube, state='resumed', run='run-1')
    assert sorted(o['action'] for o in result['objects']) == ['resumed', 'resumed']
    assert app['spec']['syncPolicy']['automated'] == AUTOMATED and 'suspend' not in ks['spec']


def helm_deployment(release='web', namespace='team-a'):
    return deployment(annotations={'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': namespace},
                      labels={'helm.toolkit.fluxcd.io/name': 'web', 'helm.toolkit.fluxcd.io/namespace': 'flux-system',
                              'app.kubernetes.io/managed-by': 'Helm'})


@pytest.mark.parametrize('workload, release, suspended', [
    # With an inventory (recent helm-controller), it decides alone.
    (helm_deployment(), flux('HelmRelease', 'flux-system', 'web', ['team-a_web_apps_Deployment']), True),
    (helm_deployment(), flux('HelmRelease', 'flux-system', 'web', ['other_web_apps_Deployment'],
                             [{'name': 'web', 'namespace': 'team-a', 'version': 1}]), False),
    # Without one: its latest release (status.history) is the one the Helm annotations name, in that namespace.
    (helm_deployment(), flux('HelmRelease', 'flux-system', 'web', None, [
        {'name': 'old', 'namespace': 'x', 'version': 1}, {'name': 'web', 'namespace': 'team-a', 'version': 2}]), True),
    (helm_deployment(), flux('HelmRelease', 'flux-system', 'web', None,
                             [{'name': 'platform', 'namespace': 'flux-system', 'version': 3}]), False),
    (helm_deployment('platform', 'flux-system'), flux('HelmRelease', 'flux-system', 'web', None,
                                                      [{'name': 'platform', 'namespace': 'flux-system', 'version': 3}]),
     False),   # annotations that copy a foreign release, but the workload is not in that release's namespace
    (helm_deployment(), flux('HelmRelease', 'flux-system', 'web', None, None), False),
])
def test_a_helm_release_is_suspended_only_when_it_released_the_workload(monkeypatch, capsys, workload, release,
                                                                        suspended):
    kube = Kube(workload, release)
    result = main(monkeypatch, capsys, kube, state='suspended', run='run-1')
    [entry] = result['objects']
    assert entry['action'] == ('suspended' if suspended else 'left')
    assert bool(kube.writes()) is suspended


def test_names_the_api_would_refuse_are_never_requested(monkeypatch, capsys):
    kube = Kube(deployment(annotations={'argocd.argoproj.io/tracking-id': '../../secrets/x:apps/Deployment:team-a/web'},
                           labels={'kustomize.toolkit.fluxcd.io/name': 'a?watch=true',
                                   'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'}))
    result = main(monkeypatch, capsys, kube, state='suspended', run='run-1')
    assert result['objects'] == [] and len(result['unchecked']) == 2 and not result.get('skipped')
    assert all('not a valid object name' in note for note in result['unchecked'])
    assert [p for _m, p in kube.requests] == [lookup.path('Deployment', 'team-a', 'web')]
