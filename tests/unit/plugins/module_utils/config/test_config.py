# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Config rollouts: which containers use which ConfigMaps and Secrets (config/usage.py), which of them restart and
why (config/plan.py, the pod's record), and rollout_workload's option config through a batch on the fake cluster."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.config import plan, record, usage
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import restarts
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context, inputs
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import BATCH, Kube, batch

SPEC = {
    'volumes': [
        {'name': 'conf', 'configMap': {'name': 'app-config'}},
        {'name': 'one', 'configMap': {'name': 'app-config', 'items': [{'key': 'app.conf', 'path': 'a.conf'}]}},
        {'name': 'creds', 'secret': {'secretName': 'db', 'optional': True}},
        {'name': 'all', 'projected': {'sources': [{'configMap': {'name': 'extra'}}, {'secret': {'name': 'tls'}},
                                                  {'downwardAPI': {'items': []}}]}},
        {'name': 'scratch', 'emptyDir': {}},
    ],
    'initContainers': [
        {'name': 'setup', 'envFrom': [{'configMapRef': {'name': 'app-config'}}]},   # plain init: never restarted
        {'name': 'proxy', 'restartPolicy': 'Always', 'volumeMounts': [{'name': 'creds', 'mountPath': '/creds'}]},
    ],
    'containers': [
        {'name': 'app',
         'env': [{'name': 'MODE', 'valueFrom': {'configMapKeyRef': {'name': 'app-config', 'key': 'mode'}}},
                 {'name': 'PASS', 'valueFrom': {'secretKeyRef': {'name': 'db', 'key': 'password', 'optional': True}}},
                 {'name': 'PLAIN', 'value': 'x'}],
         'envFrom': [{'prefix': 'X_', 'secretRef': {'name': 'db'}}],
         'volumeMounts': [{'name': 'conf', 'mountPath': '/etc/app'}, {'name': 'scratch', 'mountPath': '/tmp'}]},
        {'name': 'files', 'volumeMounts': [{'name': 'conf', 'mountPath': '/etc/app.conf', 'subPath': 'app.conf'},
                                           {'name': 'one', 'mountPath': '/etc/one', 'subPath': 'a.conf'},
                                           {'name': 'all', 'mountPath': '/etc/all'}]},
        {'name': 'sidecar', 'volumeMounts': [{'name': 'scratch', 'mountPath': '/tmp'}]},
    ],
}


def test_uses_of_every_kind_of_consumer():
    found = usage.consumers(SPEC)
    assert sorted(found) == ['app', 'files', 'proxy']   # no plain init container, no container that uses nothing
    assert [(u.kind, u.name, u.how, u.keys, u.where, u.optional) for u in found['app']] == [
        ('ConfigMap', 'app-config', 'env', ('mode',), 'MODE', False),
        ('Secret', 'db', 'env', ('password',), 'PASS', True),
        ('Secret', 'db', 'envFrom', None, 'X_', False),
        ('ConfigMap', 'app-config', 'volume', None, '/etc/app', False)]
    assert [(u.kind, u.name, u.how, u.keys, u.where) for u in found['files']] == [
        ('ConfigMap', 'app-config', 'subPath', ('app.conf',), '/etc/app.conf'),
        ('ConfigMap', 'app-config', 'subPath', ('app.conf',), '/etc/one'),   # items: the keys they project
        ('ConfigMap', 'extra', 'volume', None, '/etc/all'),
        ('Secret', 'tls', 'volume', None, '/etc/all')]
    assert [(u.kind, u.name, u.how, u.optional) for u in found['proxy']] == [('Secret', 'db', 'volume', True)]
    assert usage.objects(SPEC) == [('ConfigMap', 'app-config'), ('ConfigMap', 'extra'), ('Secret', 'db'),
                                   ('Secret', 'tls')]
    assert usage.keys_used(found['app'], 'ConfigMap', 'app-config') is None   # the whole volume
    assert usage.keys_used(found['files'], 'ConfigMap', 'app-config') == ('app.conf',)
    assert [usage.describe(u) for u in found['app']] == [
        'env MODE (key mode)', 'env PASS (key password)', 'envFrom prefix X_', 'mount /etc/app']


@pytest.mark.parametrize('entries, wanted', [
    (['auto'], []),
    ('auto', []),
    (['ConfigMap/app-config', 'Secret/db'], []),
    (['Configmap/app-config'], ["rollout_config[0] 'Configmap/app-config': write ConfigMap/app-config"]),
    (['app-config'], ["rollout_config[0] 'app-config': give ConfigMap/NAME or Secret/NAME"]),
    (['ConfigMap/App_Config'], ["rollout_config[0] 'ConfigMap/App_Config': 'App_Config' is not an object name"]),
    (['auto', 'Secret/db'], ['rollout_config: auto stands alone']),
])
def test_the_role_names_each_bad_entry_and_its_fix(entries, wanted):
    role = {'target': {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web'}, 'config': entries}
    found = inputs.input_errors(role)
    assert len(found) == len(wanted) and all(text in error for text, error in zip(wanted, found)), found
    if entries != ['auto']:
        assert any('rollout_config cannot be combined' in e for e in inputs.input_errors(dict(role, restart=['app'])))


def configmap(name='app-config', data=None, changed='2026-01-02T00:00:00Z', version='7', created='2025-01-01T00:00:00Z'):
    return {'kind': 'ConfigMap', 'metadata': {
        'name': name, 'uid': 'cm-uid', 'resourceVersion': version, 'creationTimestamp': created,
        'managedFields': [{'manager': 'kubectl', 'time': changed}]}, 'data': data or {'mode': 'new', 'app.conf': 'a'}}


def pod_of(spec, started='2026-01-01T12:00:00Z', annotations=None):
    names = [c['name'] for c in spec['containers']] + [c['name'] for c in spec.get('initContainers', [])]
    return {'metadata': {'name': 'web-0', 'namespace': 'shop', 'uid': 'pod-uid', 'resourceVersion': '1',
                         'annotations': annotations or {}},
            'spec': spec, 'status': {'phase': 'Running', 'containerStatuses': [
                {'name': n, 'ready': True, 'state': {'running': {'startedAt': started}}} for n in names]}}


def test_a_container_restarts_for_a_change_after_it_started_and_says_why():
    objects = {'ConfigMap/app-config': configmap(), 'ConfigMap/extra': None}
    found = plan.plan_pod(pod_of(SPEC), objects, scope=None)
    assert sorted(found.restarts) == ['app', 'files']
    assert found.restarts['app'] == ['ConfigMap/app-config changed 2026-01-02T00:00:00Z, container started '
                                     '2026-01-01T12:00:00Z (env MODE (key mode); mount /etc/app)']
    # Started after the change (a pod the controller made later, a crash restart): nothing restarts.
    assert plan.plan_pod(pod_of(SPEC, started='2026-01-02T00:00:01Z'), objects).restarts == {}
    # Only the objects named: a list that names another object restarts nothing for this one.
    assert plan.plan_pod(pod_of(SPEC), objects, scope=frozenset(['Secret/db'])).restarts == {}


def test_the_last_change_a_restart_waits_out_is_of_the_objects_its_containers_restart_for():
    from ansible_collections.inplace.k8s.plugins.module_utils.config.rollout import ConfigRollout
    config = ConfigRollout(None, 'shop', ['auto'])
    config.objects.update({'ConfigMap/app-config': configmap(changed='2026-01-02T00:00:00Z'), 'ConfigMap/extra': None,
                           'Secret/db': None, 'Secret/tls': None})
    pod = pod_of(SPEC)
    assert config.last_change(pod).strftime('%Y-%m-%dT%H:%M:%SZ') == '2026-01-02T00:00:00Z'
    assert config.last_change(pod, ['files']) == config.last_change(pod)
    assert config.last_change(pod, ['proxy']) is None   # restarts for nothing
    # Started after the change (another version of the pod): nothing to restart, nothing to wait for.
    later = pod_of(SPEC, started='2026-01-02T00:00:01Z')
    later['metadata']['resourceVersion'] = '2'
    assert config.last_change(later) is None


def test_the_record_on_the_pod_makes_a_rewrite_without_a_data_change_restart_nothing():
    objects = {'ConfigMap/app-config': configmap()}
    pod = pod_of(SPEC)
    given = plan.plan_pod(pod, objects).given
    rec = record.updated(pod, given)
    assert rec['uid'] == 'pod-uid' and sorted(rec['containers']) == ['app', 'files']
    marked = pod_of(SPEC, annotations={record.ANNOTATION: json.dumps(rec)})
    rewritten = {'ConfigMap/app-config': configmap(changed='2026-01-03T00:00:00Z', version='8')}
    assert plan.plan_pod(marked, rewritten).restarts == {}
    assert record.updated(marked, given) is None   # nothing new to write: idempotent
    # A key the subPath consumer does not read changed: only the container reading all keys restarts.
    other = {'ConfigMap/app-config': configmap(data={'mode': 'newer', 'app.conf': 'a'}, changed='2026-01-03T00:00:00Z')}
    assert sorted(plan.plan_pod(marked, other).restarts) == ['app']
    # A record copied from another pod (its uid is not this pod's) is no proof.
    copied = pod_of(SPEC, annotations={record.ANNOTATION: json.dumps(dict(rec, uid='another'))})
    assert sorted(plan.plan_pod(copied, rewritten).restarts) == ['app', 'files']


def test_a_secret_is_fingerprinted_by_uid_and_version_never_by_its_data():
    secret = {'kind': 'Secret', 'metadata': {'uid': 's-uid', 'resourceVersion': '42'}, 'data': {'password': 'aHVudGVyMg=='}}
    assert record.fingerprint(secret, ('password',)) == 'rv:s-uid/42'
    assert 'aHVudGVyMg' not in record.fingerprint(secret)


def test_planned_restarts_are_counted_per_container_and_bound_to_the_pod():
    pod = pod_of(SPEC)
    rec, total = restarts.planned(pod, {'app': 'config', 'files': 'config'}, 'run-1', now='T1')
    pod['metadata']['annotations'][restarts.ANNOTATION] = json.dumps(rec)
    rec, total = restarts.planned(pod, {'app': 'image'}, 'run-2', now='T2')
    assert rec['containers']['app'] == {'count': 2, 'reason': 'image', 'run': 'run-2', 'at': 'T2'} and total == 3
    pod['metadata']['uid'] = 'recreated'
    assert restarts.planned(pod, {'app': 'image'}, 'run-3')[1] == 1


# --------------------------------------------------------------------------- through rollout_workload state=batch

@pytest.fixture(autouse=True)
def watcher(monkeypatch):
    """The batches watch the fake cluster (fakes.FakePodWatcher)."""
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


class ConfigKube(Kube):
    """Kube (test_rollout.py) whose pods read ConfigMap app-config: app by env, metrics not at all."""

    def __init__(self, configmaps=None):
        super(ConfigKube, self).__init__()
        self.configmaps = configmaps if configmaps is not None else {'app-config': configmap()}
        for pod in self.pods.values():
            pod['spec']['containers'][0]['env'] = [
                {'name': 'MODE', 'valueFrom': {'configMapKeyRef': {'name': 'app-config', 'key': 'mode'}}}]
            pod['metadata']['resourceVersion'] = '1'

    def request(self, method, path, query=None, body=None, content_type=None):
        if method == 'GET' and '/configmaps/' in path:
            self.calls.append((method, path))
            name = path.rsplit('/', 1)[-1]
            if name not in self.configmaps:
                raise NotFoundError('configmaps "%s" not found' % name, status=404)
            return copy.deepcopy(self.configmaps[name])
        return super(ConfigKube, self).request(method, path, query, body, content_type)

    def get_managed(self, path):
        return self.request('GET', path)


def test_a_config_batch_restarts_only_the_consumers_and_records_what_they_run():
    kube = ConfigKube()
    before = dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items())
    result = batch(kube, config=['ConfigMap/app-config'], restart_strategy='image_reference')
    assert not result['restart'].get('failed') and result['failed_pods'] == []
    assert [sorted(p['containers']) for p in result['restart']['pods']] == [['app'], ['app']]
    for name in BATCH:
        annotations = kube.pods[name]['metadata']['annotations']
        assert json.loads(annotations[record.ANNOTATION])['containers'] == {'app': {
            'ConfigMap/app-config': record.fingerprint(configmap(), ('mode',))}}
        assert json.loads(annotations[restarts.ANNOTATION])['containers']['app']['count'] == 1
        assert annotations[restarts.TOTAL_ANNOTATION] == '1'
    assert record.ANNOTATION not in (kube.pods['web-2']['metadata'].get('annotations') or {})
    assert dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items()) == before
    # The pods left to do, and why: web-2 only.
    assert sorted(result['config']['restarts']) == ['web-2'] and 'env MODE (key mode)' in \
        result['config']['restarts']['web-2']['app']


def test_config_names_a_missing_object_and_changes_nothing():
    kube = ConfigKube()
    with pytest.raises(ValidationError) as raised:
        batch(kube, config=['ConfigMap/app-config', 'ConfigMap/nope'], restart_strategy='image_reference')
    assert 'config: ConfigMap/nope not found in namespace shop' in raised.value.msg and 'nothing was changed' in \
        raised.value.msg
    with pytest.raises(ValidationError) as raised:
        batch(kube, config=['Configmap/app-config'])
    assert "write ConfigMap/app-config" in raised.value.msg
    assert kube.writes() == []


def test_check_mode_shows_the_plan_and_writes_nothing():
    kube = ConfigKube()
    result = batch(kube, check_mode=True, diff=True, config=['auto'], restart_strategy='image_reference')
    assert kube.writes() == []
    assert sorted(result['config']['restarts']) == ['web-0', 'web-1', 'web-2'] and result['config']['scope'] == 'auto'
    assert result['restart']['summary']['would_update'] == 2


def test_a_configmap_that_did_not_change_since_the_pods_started_restarts_nothing():
    kube = ConfigKube({'app-config': configmap(changed='2025-01-01T00:00:00Z')})
    result = batch(kube, config=['ConfigMap/app-config'], restart_strategy='image_reference')
    assert result['config']['restarts'] == {} and result['restart']['summary']['updated'] == 0
    assert restarts.ANNOTATION not in kube.pods['web-0']['metadata']['annotations']
    # The pods of the batch get the record of what their consumers run (a later rewrite without a data change is
    # then proven harmless); once there, it is not written again.
    assert [call[1] for call in kube.writes()] == BATCH
    batch(kube, config=['ConfigMap/app-config'], restart_strategy='image_reference')
    assert [call[1] for call in kube.writes()] == BATCH
    # Created after the containers started (an optional reference that had nothing): they restart.
    kube = ConfigKube({'app-config': configmap(changed='2025-01-01T00:00:00Z', created='2026-01-01T00:00:00Z')})
    assert sorted(batch(kube, check_mode=True, config=['auto'])['config']['restarts']) == ['web-0', 'web-1', 'web-2']
