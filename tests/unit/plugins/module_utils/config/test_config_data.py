# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout_config_data (config/data.py, rollout/configdata.py) through rollout_workload state=rollout on the fake
cluster: the data written first and guarded, the data from before kept and deleted, check mode and diff, Secret
values never in the result, bad input refused before any write, a failed canary rolled back (the data written back,
the containers that ran the new data restarted again), a re-run that resumes."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import copy
import datetime
import itertools
import json
import time

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.config import data as config_data, record
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ConflictError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context, inputs
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.role_options import module_args
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import Kube, batch

PASSWORD = 'hunter2-very-secret'


@pytest.fixture(autouse=True)
def watcher(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


class DataKube(Kube):
    """Kube whose pods read ConfigMap app-config (app: env MODE from key mode, crashing on 'bad'; metrics: env LEVEL
    from key level) and Secret db (metrics: env PASS); ConfigMaps and Secrets are read and written as the API server
    does (a resourceVersion in a merge patch is a precondition). Times move one second a write or a start."""

    def __init__(self):
        super(DataKube, self).__init__()
        self._tick = itertools.count(int(time.time()) + 1)
        self.objects = {
            ('configmaps', 'app-config'): self._new('ConfigMap', 'app-config', {'data': {'mode': 'one', 'level': 'a'}}),
            ('secrets', 'db'): self._new('Secret', 'db', {'type': 'Opaque', 'data': {'password': _b64('first')}}),
        }
        for pod in self.pods.values():
            app, metrics = pod['spec']['containers']
            app['env'] = [{'name': 'MODE', 'valueFrom': {'configMapKeyRef': {'name': 'app-config', 'key': 'mode'}}}]
            metrics['env'] = [{'name': 'LEVEL', 'valueFrom': {'configMapKeyRef': {'name': 'app-config', 'key': 'level'}}},
                              {'name': 'PASS', 'valueFrom': {'secretKeyRef': {'name': 'db', 'key': 'password'}}}]
        self.object_writes = []
        self.before_object_write = None

    def _now(self):
        return datetime.datetime.fromtimestamp(next(self._tick), datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')

    def _new(self, kind, name, body, annotations=None):
        obj = dict(copy.deepcopy(body), kind=kind)
        obj['metadata'] = dict(body.get('metadata') or {}, name=name, uid='uid-%s' % name, resourceVersion='1',
                               creationTimestamp='2025-01-01T00:00:00Z', managedFields=[{'time': '2025-01-01T00:00:00Z'}])
        return obj

    def _touch_object(self, obj):
        obj['metadata']['resourceVersion'] = str(int(obj['metadata']['resourceVersion']) + 1)
        obj['metadata']['managedFields'] = [{'manager': 'test', 'time': self._now()}]

    def request(self, method, path, query=None, body=None, content_type=None):
        parts = path.split('/')
        if '/configmaps' not in path and '/secrets' not in path:
            return super(DataKube, self).request(method, path, query, body, content_type)
        self.calls.append((method, path))
        resource, name = (parts[-2], parts[-1]) if parts[-1] not in ('configmaps', 'secrets') else (parts[-1], None)
        key = (resource, name)
        if method == 'GET':
            if key not in self.objects:
                raise NotFoundError('%s "%s" not found' % (resource, name), status=404)
            return copy.deepcopy(self.objects[key])
        self.object_writes.append((method, resource, name or body['metadata']['name']))
        if self.before_object_write:
            hook, self.before_object_write = self.before_object_write, None
            hook(self)
        kind = 'ConfigMap' if resource == 'configmaps' else 'Secret'
        if method == 'POST':
            obj = self._new(kind, body['metadata']['name'], body)
            self.objects[(resource, body['metadata']['name'])] = obj
            return copy.deepcopy(obj)
        obj = self.objects[key]
        wanted = ((body or {}).get("metadata") or {}).get("resourceVersion")
        if wanted not in (None, obj['metadata']['resourceVersion']):
            raise ConflictError('the object has been modified', status=409)
        if method == 'DELETE':
            return self.objects.pop(key)
        if method == 'PUT':
            self.objects[key] = obj = self._new(kind, name, dict(body, metadata=dict(body['metadata'])))
        else:
            for field, items in body.items():
                if field == 'metadata':
                    obj['metadata'].setdefault('annotations', {}).update(items.get('annotations') or {})
                    continue
                current = obj.setdefault(field, {})
                for item, value in items.items():
                    if value is None:
                        current.pop(item, None)
                    else:
                        current[item] = value
        self._touch_object(obj)
        return copy.deepcopy(obj)

    def get_managed(self, path):
        return self.request('GET', path)

    def run_kubelet(self, name):
        before = dict((i.name, i.status.get('containerID')) for i in podstate.containers(self.pods[name]))
        super(DataKube, self).run_kubelet(name)
        pod = self.pods[name]
        mode = self.objects[('configmaps', 'app-config')]['data'].get('mode')
        for info in podstate.containers(pod):
            if info.status.get('containerID') == before.get(info.name):
                continue
            if info.name == 'app' and mode == 'bad':   # the app exits on the new config
                info.status.update(state={'waiting': {'reason': 'CrashLoopBackOff'}}, ready=False, started=False)
                podstate.condition(pod, 'Ready')['status'] = 'False'
            else:
                info.status['state'] = {'running': {'startedAt': self._now()}}

    def data(self, resource='configmaps', name='app-config'):
        return self.objects[(resource, name)].get('data')


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def rollout(kube, check_mode=False, diff=False, **changes):
    values = dict(state='rollout', names=None, config=['ConfigMap/app-config', 'Secret/db'],
                  restart_strategy='image_reference', batch_size='1', min_ready_seconds=0)
    values.update(changes)
    return batch(kube, check_mode=check_mode, diff=diff, **values)


NEW = {'ConfigMap/app-config': {'data': {'mode': 'two', 'level': 'b'}}}
SECRET = {'Secret/db': {'stringData': {'password': PASSWORD}}}


def test_the_data_is_written_first_the_consumers_restart_and_nothing_of_ours_is_left():
    kube = DataKube()
    uids = dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items())
    result = rollout(kube, config_data=NEW, secret_data=SECRET)
    assert result['changed'] and result['run']['failed_pods'] == []
    assert kube.data() == {'mode': 'two', 'level': 'b'}
    assert kube.data('secrets', 'db') == {'password': _b64(PASSWORD)}
    assert result['config_data'] == {'written': ['ConfigMap/app-config', 'Secret/db'], 'unchanged': [], 'restored': [],
                                     'kept': []}
    # The kept copies were made before the writes and deleted at the end.
    assert [w for w in kube.object_writes if w[0] in ('POST', 'DELETE')] == [
        ('POST', 'configmaps', 'app-config.inplace-previous'), ('POST', 'secrets', 'db.inplace-previous'),
        ('DELETE', 'configmaps', 'app-config.inplace-previous'), ('DELETE', 'secrets', 'db.inplace-previous')]
    assert set(kube.objects) == {('configmaps', 'app-config'), ('secrets', 'db')}
    for pod in kube.pods.values():
        given = json.loads(pod['metadata']['annotations'][record.ANNOTATION])['containers']
        assert sorted(given) == ['app', 'metrics']
        assert [s['restartCount'] for s in pod['status']['containerStatuses']] == [1, 1]
    assert uids == dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items())
    # The Secret's value is nowhere in the result (the module's secret_data is no_log besides).
    shown = json.dumps(result)
    assert PASSWORD not in shown and _b64(PASSWORD) not in shown
    # Again with the same data: nothing written, nothing restarted.
    writes = len(kube.object_writes)
    again = rollout(kube, config_data=NEW, secret_data=SECRET)
    assert not again['changed'] and len(kube.object_writes) == writes
    assert again['config_data']['unchanged'] == ['ConfigMap/app-config', 'Secret/db']


def test_check_mode_and_diff_show_what_would_be_written_a_secret_masked():
    kube = DataKube()
    result = rollout(kube, check_mode=True, diff=True, config_data=NEW, secret_data=SECRET)
    assert kube.object_writes == [] and kube.writes() == []
    assert result['changed'] and sorted(result['config']['restarts']) == ['web-0', 'web-1', 'web-2']
    diff = result['diff'][0]
    assert diff['before']['ConfigMap/app-config'] == {'data': {'mode': 'one', 'level': 'a'}}
    assert diff['after']['ConfigMap/app-config'] == {'data': {'mode': 'two', 'level': 'b'}}
    assert diff['after']['Secret/db'] == {'data': {'password': '******** (changed)'}}
    assert 'first' not in json.dumps(result) and PASSWORD not in json.dumps(result)


def test_a_failed_canary_writes_the_data_back_and_restarts_what_ran_the_new_data():
    kube = DataKube()
    bad = {'ConfigMap/app-config': {'data': {'mode': 'bad', 'level': 'b'}}}
    result = rollout(kube, config_data=bad, canary='1', on_failure='rollback')
    assert result['run']['rolled_back'] and [p['name'] for p in result['run']['failed_pods']] == ['web-0']
    assert kube.data() == {'mode': 'one', 'level': 'a'}   # the data from before is back
    assert result['config_data']['restored'] == ['ConfigMap/app-config'] and result['config_data']['kept'] == []
    assert ('configmaps', 'app-config.inplace-previous') not in kube.objects
    # web-0's metrics ran the new data: restarted again; its app crash-loops and the kubelet restarts it alone.
    canary = kube.pods['web-0']
    assert podstate.find_container(canary, 'metrics').status['restartCount'] == 2
    assert result['run']['rollback']['groups'] == [{'names': ['web-0']}]
    # The others never restarted: recorded as running the data written back, so a run of it restarts nothing.
    for name in ('web-1', 'web-2'):
        assert [s['restartCount'] for s in kube.pods[name]['status']['containerStatuses']] == [0, 0]
    again = rollout(kube, config_data={'ConfigMap/app-config': {'data': {'mode': 'one', 'level': 'a'}}},
                    config=['ConfigMap/app-config'])
    assert not again['changed'] and again['config']['restarts'] == {} and again['config_data']['written'] == []


def test_an_interrupted_run_resumes_with_the_data_from_before_kept():
    kube = DataKube()
    first = rollout(kube, config_data=NEW, config=['ConfigMap/app-config'], stop_after_batches=1)
    assert first['run']['stopped'] and first['config_data']['kept'] == ['ConfigMap/app-config.inplace-previous']
    assert any('stays kept in ConfigMap/app-config.inplace-previous' in w for w in first['warnings'])
    kept = kube.objects[('configmaps', 'app-config.inplace-previous')]
    assert kept['data'] == {'mode': 'one', 'level': 'a'}
    # A run again with the same data: nothing written again, the kept copy still the data from before, and a
    # failure now writes it back.
    writes = len(kube.object_writes)
    second = rollout(kube, config_data=NEW, config=['ConfigMap/app-config'])
    assert second['config_data']['unchanged'] == ['ConfigMap/app-config']
    assert kube.object_writes[writes:] == [('DELETE', 'configmaps', 'app-config.inplace-previous')]
    assert ('configmaps', 'app-config.inplace-previous') not in kube.objects   # finished: deleted


def test_a_write_is_guarded_by_the_version_read():
    kube = DataKube()

    def another_writer(cluster):
        cluster._touch_object(cluster.objects[('configmaps', 'app-config')])
    kube.before_object_write = lambda cluster: setattr(cluster, 'before_object_write', another_writer)
    with pytest.raises(ConflictError) as raised:
        rollout(kube, config_data=NEW, config=['ConfigMap/app-config'])
    assert 'ConfigMap/app-config changed since it was read' in raised.value.msg
    assert kube.data() == {'mode': 'one', 'level': 'a'} and kube.writes() == []


@pytest.mark.parametrize('changes, wanted', [
    (dict(config_data={'ConfigMap/nope': {'data': {'a': 'b'}}}, config=['auto']), "ConfigMap/nope not found"),
    (dict(config_data={'ConfigMap/other': {'data': {'a': 'b'}}}),
     "config_data['ConfigMap/other']: not in config; add ConfigMap/other to config"),
    (dict(config_data={'Configmap/app-config': {'data': {}}}), "write ConfigMap/app-config"),
    (dict(config_data={'ConfigMap/app-config': ['mode=two']}), 'give the new data as a mapping'),
    (dict(config_data={'ConfigMap/app-config': {'data': {'mode': 2}}}), 'the value must be a string'),
    (dict(config_data={'ConfigMap/app-config': {'stringData': {'mode': 'x'}}}), "'stringData' is not a field"),
    (dict(config_data={'Secret/db': {'stringData': {'password': 'x'}}}), "give a Secret's data in secret_data"),
    (dict(secret_data={'Secret/db': {'data': {'password': 'not base64!'}}}),
     "secret_data['Secret/db'].data.password: not base64"),
    (dict(config_data=NEW, config=None, restart=['app']), 'config_data needs config'),
])
def test_bad_input_names_the_field_and_writes_nothing(changes, wanted):
    kube = DataKube()
    with pytest.raises(ValidationError) as raised:
        rollout(kube, **changes)
    assert wanted in raised.value.msg, raised.value.msg
    assert kube.object_writes == [] and kube.writes() == []


def test_an_object_of_the_kept_name_that_is_not_ours_is_refused():
    kube = DataKube()
    kube.objects[('configmaps', 'app-config.inplace-previous')] = kube._new('ConfigMap', 'app-config.inplace-previous',
                                                                            {'data': {'mine': 'yes'}})
    with pytest.raises(ValidationError) as raised:
        rollout(kube, config_data=NEW, config=['ConfigMap/app-config'])
    assert 'exists and is not the copy' in raised.value.msg and kube.object_writes == []


def test_the_role_splits_rollout_config_data_and_names_its_variable():
    args = module_args('rollout', {'rollout_target': {'namespace': 'shop'}, 'rollout_config': ['auto'],
                                   'rollout_config_data': dict(NEW, **SECRET)})
    assert args['config_data'] == NEW and args['secret_data'] == SECRET
    errors = inputs.input_errors({'target': {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web'},
                                  'config': ['ConfigMap/app-config'], 'config_data': {'Secret/db': 'x'}})
    assert errors == ["rollout_config_data['Secret/db']: not in rollout_config; add Secret/db to rollout_config, "
                      "or leave it out of rollout_config_data"]
    assert config_data.errors(['auto'], {'ConfigMap/' + 'a' * 240: {'data': {}}})[0].endswith('rename the object')


def test_a_run_again_finishes_an_interrupted_rollback_and_does_not_apply_the_change_again():
    kube = DataKube()
    rollout(kube, config_data=NEW, config=['ConfigMap/app-config'], stop_after_batches=1)   # web-0 runs the new data
    assert [s['restartCount'] for s in kube.pods['web-0']['status']['containerStatuses']] == [1, 1]
    # A rollback interrupted after it wrote the data from before back (its kept copy marked), before its restarts.
    path = '/api/v1/namespaces/shop/configmaps/'
    kube.request('PATCH', path + 'app-config.inplace-previous', content_type='merge',
                 body={'metadata': {'annotations': {config_data.ROLLING_BACK: 'then'}}})
    kube.request('PATCH', path + 'app-config', content_type='merge', body={'data': {'mode': 'one', 'level': 'a'}})
    result = rollout(kube, config_data=NEW, config=['ConfigMap/app-config'])
    assert kube.data() == {'mode': 'one', 'level': 'a'}   # not applied again
    assert any('a rollback of this change did not finish' in w for w in result['warnings'])
    assert [s['restartCount'] for s in kube.pods['web-0']['status']['containerStatuses']] == [2, 2]
    for name in ('web-1', 'web-2'):   # they never ran the new data: recorded, not restarted
        assert [s['restartCount'] for s in kube.pods[name]['status']['containerStatuses']] == [0, 0]
        assert record.ANNOTATION in kube.pods[name]['metadata']['annotations']
    assert ('configmaps', 'app-config.inplace-previous') not in kube.objects
    assert not rollout(kube, config=['ConfigMap/app-config'])['changed']
