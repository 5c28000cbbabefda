# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import socket

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.owners import gitops, lookup, suspend
from ansible_collections.inplace.k8s.plugins.module_utils.process import keeper
from ansible_collections.inplace.k8s.plugins.module_utils.owners.policy import SUSPENDED

AUTOMATED = {'prune': True, 'selfHeal': True}


def merge(target, patch):
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            merge(target.setdefault(key, {}), value)
        else:
            target[key] = value
    return target


class Kube:
    """Objects by path; PATCH is a merge patch guarded by metadata.resourceVersion."""

    def __init__(self, *objects):
        self.objects = {}
        for kind, obj in objects:
            self.objects[lookup.path(kind, obj['metadata']['namespace'], obj['metadata']['name'])] = obj
        self.patches = []

    def get_managed(self, path):
        if path not in self.objects:
            raise NotFoundError('not found', status=404)
        return copy.deepcopy(self.objects[path])

    def list_collection(self, path, label_selector=None, field_selector=None):
        raise NotFoundError('not found', status=404)

    def request(self, method, path, body=None, content_type=None, query=None):
        assert method == 'PATCH' and content_type == suspend.MERGE_PATCH
        current = self.objects[path]
        assert body['metadata'].pop('resourceVersion') == current['metadata']['resourceVersion']
        merge(current, body)
        current['metadata']['resourceVersion'] = str(int(current['metadata']['resourceVersion']) + 1)
        self.patches.append((path, body))
        return current


def application(automated='as-published', mark=None):
    automated = AUTOMATED if automated == 'as-published' else automated
    meta = {'name': 'web', 'namespace': 'argocd', 'resourceVersion': '1', 'annotations': {}}
    if mark:
        meta['annotations'][SUSPENDED] = json.dumps(mark)
    spec = {'project': 'default', 'syncPolicy': {'automated': dict(automated)} if automated else {}}
    status = {'resources': [{'group': 'apps', 'version': 'v1', 'kind': 'Deployment', 'namespace': 'shop', 'name': 'web'}]}
    return 'Application', {'kind': 'Application', 'metadata': meta, 'spec': spec, 'status': status}


def kustomization(suspended=None):
    spec = {'interval': '5m'}
    if suspended is not None:
        spec['suspend'] = suspended
    return 'Kustomization', {'kind': 'Kustomization', 'metadata': {'name': 'apps', 'namespace': 'flux-system',
                                                                   'resourceVersion': '1'}, 'spec': spec}


def test_suspend_then_resume_puts_back_exactly_what_was_there():
    kube = Kube(application(), kustomization())
    found = [(kind, kube.get_managed(lookup.path(kind, o['metadata']['namespace'], o['metadata']['name'])))
             for kind, o in (application(), kustomization())]
    done = suspend.suspend(kube, found, 'run-1')
    assert [d['action'] for d in done] == ['suspended', 'suspended']
    app = kube.objects[lookup.path('Application', 'argocd', 'web')]
    ks = kube.objects[lookup.path('Kustomization', 'flux-system', 'apps')]
    assert 'automated' not in app['spec']['syncPolicy'] and ks['spec']['suspend'] is True
    assert suspend.mark(app)['before'] == AUTOMATED and suspend.mark(app)['run'] == 'run-1'
    # Another run's resume leaves it alone; this run's puts it back and drops the record.
    again = suspend.reread(kube, done)
    assert [d['action'] for d in suspend.resume(kube, again, 'run-2')] == ['unchanged', 'unchanged']
    assert [d['action'] for d in suspend.resume(kube, again, 'run-1')] == ['resumed', 'resumed']
    assert app['spec']['syncPolicy']['automated'] == AUTOMATED and SUSPENDED not in app['metadata']['annotations']
    assert 'suspend' not in ks['spec'] and SUSPENDED not in ks['metadata'].get('annotations', {})


def test_what_does_not_sync_on_its_own_is_left_alone():
    kube = Kube(application(automated=None), kustomization(suspended=True))
    found = [application(automated=None), kustomization(suspended=True)]
    assert [d['action'] for d in suspend.suspend(kube, found, 'run-1')] == ['unchanged', 'unchanged']
    assert kube.patches == []


def test_another_live_run_keeps_its_suspension_and_a_gone_one_is_taken_over():
    other_host = {'run': 'run-0', 'host': 'elsewhere', 'before': AUTOMATED}
    kube = Kube(application(automated=None, mark=other_host))
    assert suspend.suspend(kube, [application(automated=None, mark=other_host)], 'run-1')[0]['action'] == 'left'
    gone = {'run': 'run-0', 'host': socket.gethostname(), 'playbook': 2 ** 22 + 7, 'playbook_start': 1,
            'before': AUTOMATED}
    kube = Kube(application(automated=None, mark=gone))
    done = suspend.suspend(kube, [application(automated=None, mark=gone)], 'run-1')
    assert done[0]['action'] == 'suspended' and done[0]['reason'].startswith('taken over')
    app = kube.objects[lookup.path('Application', 'argocd', 'web')]
    assert suspend.mark(app)['before'] == AUTOMATED and suspend.mark(app)['run'] == 'run-1'


def test_check_mode_writes_nothing():
    kube = Kube(application())
    assert suspend.suspend(kube, [application()], 'run-1', check_mode=True)[0]['action'] == 'suspended'
    assert kube.patches == []


def test_named_objects_must_exist():
    with pytest.raises(ValidationError, match='HelmRelease shop/cache not found'):
        suspend.find(Kube(), namespace='shop', objects=[{'kind': 'HelmRelease', 'name': 'cache'}])


def test_the_workload_names_its_objects_and_missing_ones_are_named():
    deploy = {'kind': 'Deployment', 'metadata': {'name': 'web', 'namespace': 'shop', 'annotations': {
        'argocd.argoproj.io/tracking-id': 'argocd_web:apps/Deployment:shop/web'}, 'labels': {
        'kustomize.toolkit.fluxcd.io/name': 'gone', 'kustomize.toolkit.fluxcd.io/namespace': 'flux-system'}}}
    kube = Kube(application(), ('Deployment', deploy))
    found, skipped, ignored = suspend.find(kube, 'Deployment', 'shop', 'web')
    assert [(k, o['metadata']['name']) for k, o in found] == [('Application', 'web')]
    assert len(skipped) == 1 and 'Flux Kustomization gone' in skipped[0] and ignored == []


def test_options_need_a_workload_or_objects():
    with pytest.raises(ValidationError, match='give the workload'):
        gitops.SuspendOptions.from_params({'state': 'suspended', 'namespace': 'shop'})


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_keeper_resumes_when_the_playbook_is_gone():
    kube = Kube(application())
    items = suspend.suspend(kube, [application()], 'run-1')
    clock = Clock()
    alive = iter([True, True, False])
    assert keeper.keep(lambda: kube, items, 'run-1', (1, 1), 600, clock, clock.sleep, lambda p: next(alive)) == 'resumed'
    assert kube.objects[lookup.path('Application', 'argocd', 'web')]['spec']['syncPolicy']['automated'] == AUTOMATED
    assert clock.now == 2 * keeper.CHECK_SECONDS


def test_keeper_exits_once_the_run_resumed_and_resumes_at_its_limit():
    kube = Kube(application())
    items = suspend.suspend(kube, [application()], 'run-1')
    suspend.resume(kube, suspend.reread(kube, items), 'run-1')
    clock = Clock()
    assert keeper.keep(lambda: kube, items, 'run-1', (1, 1), 600, clock, clock.sleep, lambda p: True) == 'released'
    assert clock.now == keeper.LOOK_SECONDS
    kube = Kube(application())
    items = suspend.suspend(kube, [application()], 'run-1')
    clock = Clock()
    assert keeper.keep(lambda: kube, items, 'run-1', (1, 1), 5, clock, clock.sleep, lambda p: True) == 'resumed'
    assert clock.now == 5
