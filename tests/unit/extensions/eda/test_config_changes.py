# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The config_changes event source through its entry point main(queue, args), against a fake API server whose
watch plays a script: one event per changed object, none for the initial list, a label edit or a deletion; bursts
coalesced; a watch that expires (410) lists again and still tells an edit made meanwhile; errors are retried after
a bounded backoff; Secret values appear in no event and no log line; arguments refused by name."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import asyncio
import copy
import logging
import threading

import pytest

from ansible_collections.inplace.k8s.extensions.eda.plugins.event_source import config_changes as source
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ForbiddenError, TransientError

NS = 'shop'
SECRET_VALUE = 'c3VwZXItc2VjcmV0LXZhbHVl'   # base64 of the one value that must never be seen


def obj(kind, name, data, version, labels=None):
    return {'kind': kind, 'metadata': {'name': name, 'namespace': NS, 'uid': 'uid-' + name,
                                       'resourceVersion': str(version), 'labels': labels or {}},
            'data': dict(data)}


def deployment(name, containers, volumes=(), init=()):
    return {'metadata': {'name': name, 'namespace': NS}, 'spec': {'template': {'spec': {
        'containers': list(containers), 'initContainers': list(init), 'volumes': list(volumes)}}}}


APP = deployment('web', [
    {'name': 'app', 'envFrom': [{'configMapRef': {'name': 'app-config'}}]},
    {'name': 'db-client', 'env': [{'name': 'PW', 'valueFrom': {'secretKeyRef': {'name': 'db', 'key': 'password'}}}]},
    {'name': 'sidecar', 'image': 'proxy'},
])
FILES = deployment('files', [
    {'name': 'reader', 'volumeMounts': [{'name': 'conf', 'mountPath': '/etc/app', 'subPath': 'a.conf'}]},
    {'name': 'other', 'volumeMounts': [{'name': 'scratch', 'mountPath': '/tmp'}]},
], volumes=[{'name': 'conf', 'projected': {'sources': [{'configMap': {'name': 'app-config'}}]}},
            {'name': 'scratch', 'emptyDir': {}}])


class FakeKube:
    """list_collection / watch_collection of ConfigMaps, Secrets and apps workloads; each watch request plays the
    next script of its path (a list of watch events, or an exception to raise), then ends or blocks until
    ``stop``."""

    def __init__(self, objects, scripts, workloads=None):
        self.objects = objects          # path -> [objects] (what a list returns)
        self.scripts = scripts          # path -> [script, ...]
        self.workloads = workloads or {'deployments': [APP, FILES]}
        self.lists = []
        self.watches = []
        self.stop = threading.Event()

    def list_collection(self, path, label_selector=None):
        self.lists.append((path, label_selector))
        if path.startswith('/apis/apps/v1/'):
            return copy.deepcopy(self.workloads.get(path.rsplit('/', 1)[1], [])), '1'
        return copy.deepcopy(self.objects.get(path, [])), '100'

    def watch_collection(self, path, resource_version, label_selector=None, timeout_seconds=60):
        self.watches.append((path, resource_version, label_selector))
        scripts = self.scripts.get(path) or []
        if not scripts:
            self.stop.wait(5)
            return
        script = scripts.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield copy.deepcopy(event)


CM = '/api/v1/namespaces/shop/configmaps'
SECRETS = '/api/v1/namespaces/shop/secrets'


def run(kube, args, seconds, monkeypatch):
    """main() for ``seconds``; the events it put on the queue."""
    monkeypatch.setattr(source, 'connect', lambda params: kube)
    monkeypatch.setattr(source, 'backoff_delay', lambda attempt: 0.01)

    async def go():
        queue = asyncio.Queue()
        task = asyncio.ensure_future(source.main(queue, dict({'namespace': NS, 'debounce_seconds': 0.2}, **args)))
        await asyncio.sleep(seconds)
        kube.stop.set()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        events = []
        while not queue.empty():
            events.append(queue.get_nowait()['config_change'])
        return events
    return asyncio.run(go())


def modified(o):
    return {'type': 'MODIFIED', 'object': o}


def test_one_event_per_changed_object_naming_its_consumers(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    objects = {CM: [obj('ConfigMap', 'app-config', {'a': '1'}, 10), obj('ConfigMap', 'unused', {'x': '1'}, 11)],
               SECRETS: [obj('Secret', 'db', {'password': 'b2xk'}, 12)]}
    scripts = {CM: [[
        modified(obj('ConfigMap', 'app-config', {'a': '1'}, 20, labels={'team': 'x'})),   # labels only
        modified(obj('ConfigMap', 'app-config', {'a': '2'}, 21)),
        modified(obj('ConfigMap', 'app-config', {'a': '3', 'b': '1'}, 22)),                # the same burst
        {'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': '23'}}},
        {'type': 'DELETED', 'object': obj('ConfigMap', 'unused', {'x': '1'}, 24)},
    ]], SECRETS: [[modified(obj('Secret', 'db', {'password': SECRET_VALUE}, 30))]]}
    kube = FakeKube(objects, scripts)
    events = run(kube, {}, 1.0, monkeypatch)

    by_kind = {e['kind']: e for e in events}
    assert len(events) == 2 and set(by_kind) == {'ConfigMap', 'Secret'}
    config = by_kind['ConfigMap']
    assert (config['name'], config['namespace'], config['change'], config['keys']) == ('app-config', NS, 'modified',
                                                                                       ['a', 'b'])
    assert config['resource_version'] == '22'
    assert config['workloads'] == [{'kind': 'Deployment', 'name': 'files', 'containers': ['reader']},
                                   {'kind': 'Deployment', 'name': 'web', 'containers': ['app']}]
    assert config['workload_count'] == 2
    secret = by_kind['Secret']
    assert (secret['name'], secret['keys'], secret['workloads']) == (
        'db', ['password'], [{'kind': 'Deployment', 'name': 'web', 'containers': ['db-client']}])
    assert SECRET_VALUE not in repr(events) and SECRET_VALUE not in caplog.text
    assert 'b2xk' not in repr(events) and 'b2xk' not in caplog.text
    # Both kinds listed, then watched from the list's resourceVersion; the watch resumes from the last one seen.
    assert (CM, '100', None) in kube.watches and (SECRETS, '100', None) in kube.watches
    assert (CM, '23', None) in kube.watches or (CM, '24', None) in kube.watches


def test_created_after_start_is_an_event_and_the_selector_is_sent(monkeypatch):
    scripts = {CM: [[{'type': 'ADDED', 'object': obj('ConfigMap', 'app-config', {'a': '1'}, 40)}]]}
    kube = FakeKube({}, scripts)
    events = run(kube, {'kinds': ['ConfigMap'], 'label_selector': 'app=web'}, 0.8, monkeypatch)
    assert [(e['name'], e['change'], e['keys']) for e in events] == [('app-config', 'created', ['a'])]
    assert all(path != SECRETS for path, _selector in kube.lists)
    assert (CM, 'app=web') in kube.lists and kube.watches[0] == (CM, '100', 'app=web')


def test_an_expired_watch_lists_again_and_tells_what_changed_meanwhile(monkeypatch):
    objects = {CM: [obj('ConfigMap', 'app-config', {'a': '1'}, 10), obj('ConfigMap', 'same', {'s': '1'}, 11)]}
    gone = {'type': 'ERROR', 'object': {'kind': 'Status', 'code': 410, 'message': 'too old resource version'}}
    kube = FakeKube(objects, {CM: [[gone]]})
    original = kube.list_collection

    def list_collection(path, label_selector=None):
        if path == CM and any(p == CM for p, _s in kube.lists):   # the relist: edited meanwhile
            kube.objects[CM] = [obj('ConfigMap', 'app-config', {'a': '2'}, 50), obj('ConfigMap', 'same', {'s': '1'}, 11)]
        return original(path, label_selector)
    kube.list_collection = list_collection
    events = run(kube, {'kinds': ['ConfigMap']}, 0.8, monkeypatch)
    assert [(e['name'], e['keys'], e['resource_version']) for e in events] == [('app-config', ['a'], '50')]
    assert [p for p, _s in kube.lists].count(CM) == 2


def test_errors_are_retried_after_a_bounded_backoff():
    stop = threading.Event()
    waits, seen = [], []
    kube = FakeKube({CM: [obj('ConfigMap', 'app-config', {'a': '1'}, 10)]},
                    {CM: [TransientError('HTTP 503'), [], TransientError('HTTP 503'),
                          [modified(obj('ConfigMap', 'app-config', {'a': '2'}, 20))]]})

    def sleep(delay):
        waits.append(delay)

    def changed(*change):
        seen.append(change)
        stop.set()
    watch = source.Watch(kube, 'ConfigMap', NS, None, changed, stop, sleep=sleep)
    watch.start()
    watch.run()
    # two errors and a watch that broke off at once with nothing: each waited for, at most ~16 s (jitter aside)
    assert len(waits) == 3 and all(0 < w <= 16 for w in waits)
    assert [(kind, o['metadata']['name'], change, keys) for kind, o, change, keys in seen] == [
        ('ConfigMap', 'app-config', 'modified', ['a'])]


def test_a_refused_list_stops_the_source_with_the_reason(monkeypatch):
    kube = FakeKube({}, {})

    def refuse(path, label_selector=None):
        raise ForbiddenError('403 Forbidden: configmaps is forbidden', status=403)
    kube.list_collection = refuse
    with pytest.raises(ValueError, match='cannot list in namespace shop: 403 Forbidden'):
        run(kube, {}, 0.5, monkeypatch)


@pytest.mark.parametrize('args, message', [
    ({}, 'missing required arguments: namespace'),
    ({'namespace': 'Shop!'}, "namespace: 'Shop!' is not a namespace name"),
    ({'namespace': NS, 'debounce_seconds': -1}, 'debounce_seconds: -1.0 is out of range; give 0 to 3600'),
    ({'namespace': NS, 'debounce_seconds': 'soon'}, 'debounce_seconds'),
    ({'namespace': NS, 'kinds': ['Pod']}, 'kinds'),
    ({'namespace': NS, 'kinds': []}, 'kinds: empty'),
    ({'namespace': NS, 'colour': 'red'}, 'colour'),
])
def test_bad_arguments_are_refused_by_name(args, message):
    with pytest.raises(ValueError, match='config_changes: .*%s' % message.replace('(', r'\(').replace('?', r'\?')):
        source.parse_args(args)


def test_connection_options_take_the_modules_variables(monkeypatch):
    monkeypatch.setenv('K8S_AUTH_KUBECONFIG', '/etc/kube/config')
    monkeypatch.setenv('K8S_AUTH_CONTEXT', 'prod')
    params = source.parse_args({'namespace': NS})
    assert (params['kubeconfig'], params['context'], params['kinds'], params['debounce_seconds']) == (
        '/etc/kube/config', 'prod', ['ConfigMap', 'Secret'], 2.0)
    assert source.connect.__doc__ and 'module' in source.connect.__doc__


def test_uses_cover_env_envfrom_volumes_projected_and_sidecars_as_the_config_rollout_does():
    template = {'spec': {
        'initContainers': [{'name': 'init', 'envFrom': [{'secretRef': {'name': 's'}}]},
                           {'name': 'sidecar', 'restartPolicy': 'Always', 'envFrom': [{'secretRef': {'name': 's'}}]}],
        'containers': [
            {'name': 'env', 'env': [{'name': 'A', 'valueFrom': {'configMapKeyRef': {'name': 'c', 'key': 'a',
                                                                                    'optional': True}}}]},
            {'name': 'vol', 'volumeMounts': [{'name': 'v'}]},
            {'name': 'proj', 'volumeMounts': [{'name': 'p'}]},
            {'name': 'none', 'env': [{'name': 'B', 'value': 'c'}]}],
        'volumes': [{'name': 'v', 'secret': {'secretName': 's'}},
                    {'name': 'p', 'projected': {'sources': [{'secret': {'name': 'other'}}, {'configMap': {'name': 'c'}}]}}]}}
    assert source.consumers(template, 'ConfigMap', 'c') == ['env', 'proj']
    # a plain init container ran once, before the pod started: nothing to restart in place (as rollout_config)
    assert source.consumers(template, 'Secret', 's') == ['sidecar', 'vol']
    assert source.consumers(template, 'Secret', 'c') == []
    assert source.consumers(None, 'ConfigMap', 'c') == []


def test_a_long_burst_is_told_within_ten_periods():
    class Loop:
        def __init__(self):
            self.delays = []

        def call_later(self, delay, func, *args):
            self.delays.append(delay)
            return type('Timer', (), {'cancel': lambda self: None})()
    now = [0.0]
    loop = Loop()
    debouncer = source.Debouncer(1.0, lambda *a: None, loop, clock=lambda: now[0])
    for step in range(12):
        now[0] = step * 0.9
        debouncer.touch('ConfigMap', obj('ConfigMap', 'c', {'a': str(step)}, step), 'modified', ['a'])
    assert loop.delays[0] == 1.0 and loop.delays[-1] == pytest.approx(0.1)
    assert all(step * 0.9 + delay <= 10.0 + 1e-9 for step, delay in enumerate(loop.delays))
