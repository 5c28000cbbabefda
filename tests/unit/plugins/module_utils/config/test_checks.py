# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A config rollout's checks in the pod (config/checks.py, config/projection.py): the projection of the new data
read before a volume consumer restarts, and the check command after it - through rollout_workload state=batch on the
fake cluster, with the kubernetes package's exec stream answered here."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import copy
import datetime
import json

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.config import checks, projection
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context, inputs
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.config.test_config import ConfigKube, configmap
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import batch


@pytest.fixture(autouse=True)
def fake_watch(monkeypatch):
    """The batches watch the fake cluster."""
    for module in (runner, rollout_context):
        monkeypatch.setattr(module, 'PodWatcher', FakePodWatcher)


OLD, NEW = {'mode': 'old', 'app.conf': 'a=1'}, {'mode': 'new', 'app.conf': 'a=2'}


def secret(password='hunter2'):
    return {'kind': 'Secret', 'metadata': {'name': 'db', 'uid': 's-uid', 'resourceVersion': '9',
                                           'creationTimestamp': '2025-01-01T00:00:00Z',
                                           'managedFields': [{'time': '2026-01-02T00:00:00Z'}]},
            'data': {'password': base64.b64encode(password.encode()).decode()}}


class Session(object):
    def __init__(self, stdout, status):
        self.stdout, self.status = stdout, status

    def run_forever(self, timeout):
        pass

    def read_stdout(self):
        return self.stdout

    def read_stderr(self):
        return ''

    def read_channel(self, channel):
        return json.dumps(self.status)

    def close(self):
        pass


class ExecKube(ConfigKube):
    """ConfigKube whose pods mount app-config: ``mounts`` {container: volumeMount}; the exec stream reads the files
    the kubelet projected (``projected``: the data it shows, switched to the ConfigMap's after ``stale`` reads)."""

    impersonating = False

    def __init__(self, mounts, stale=0, data=None, exec_status=None, secrets=None):
        super(ExecKube, self).__init__({'app-config': configmap(data=dict(data or NEW))})
        self.secrets = secrets or {}
        self.stale, self.exec_status, self.execs = stale, exec_status, []
        for pod in self.pods.values():
            pod['spec']['containers'][0].pop('env', None)
            pod['spec']['volumes'] = [{'name': 'conf', 'configMap': {'name': 'app-config'}}]
            for container in pod['spec']['containers']:
                if container['name'] in mounts:
                    container['volumeMounts'] = [mounts[container['name']]]

    def api_client(self):
        return 'client'

    def request(self, method, path, query=None, body=None, content_type=None):
        if method == 'GET' and '/secrets/' in path:
            return copy.deepcopy(self.secrets[path.rsplit('/', 1)[-1]])
        return super(ExecKube, self).request(method, path, query, body, content_type)

    def run(self, name, container, command):
        """What the exec of ``command`` in the container prints, and its status."""
        status = self.pods[name]['status']['containerStatuses']
        self.execs.append((name, container, list(command), [s['containerID'] for s in status if s['name'] == 'app']))
        if self.exec_status is not None:
            return '', self.exec_status
        if command[0] == 'cat':
            shown = OLD if len([e for e in self.execs if e[2][0] == 'cat']) <= self.stale else \
                self.configmaps['app-config']['data']
            return ''.join(shown.get(path.rsplit('/', 1)[-1], '') for path in command[1:]), {'status': 'Success'}
        return ' '.join(command[1:]) + '\n', {'status': 'Success'}


@pytest.fixture
def stream(monkeypatch):
    """The kubernetes package's exec stream, answered by the cluster the test sets as ``state['kube']``."""
    import kubernetes.client
    import kubernetes.stream
    state = {}

    def fake_stream(method, name, namespace, **kwargs):
        return Session(*state['kube'].run(name, kwargs['container'], kwargs['command']))
    monkeypatch.setattr(kubernetes.stream, 'stream', fake_stream)
    monkeypatch.setattr(kubernetes.client, 'CoreV1Api', lambda client: type('Api', (), {
        'connect_get_namespaced_pod_exec': None})())
    return state


WHOLE = {'name': 'conf', 'mountPath': '/etc/app'}
SUBPATH = {'name': 'conf', 'mountPath': '/etc/mode', 'subPath': 'mode'}


def run(state, kube, **options):
    state['kube'] = kube
    return batch(kube, config=['auto'], restart_strategy='image_reference', names=['web-0'], **options)


def test_a_volume_consumer_restarts_only_once_its_files_show_the_new_data(stream):
    kube = ExecKube({'app': WHOLE}, stale=2)
    result = run(stream, kube)
    assert result['failed_pods'] == [] and result['restart']['summary']['updated'] == 1
    reads = [e for e in kube.execs if e[2][0] == 'cat']
    assert [e[1] for e in reads] == ['app'] * 3 and reads[0][2] == ['cat', '/etc/app/app.conf', '/etc/app/mode']
    # Every read ran in the container from before: it restarted after the third read showed the new data.
    assert len(set(tuple(e[3]) for e in reads)) == 1
    after = [s['containerID'] for s in kube.pods['web-0']['status']['containerStatuses'] if s['name'] == 'app']
    assert after != reads[0][3]
    note = result['config_checks']['web-0']['app']['projection']
    assert len(note) == 1 and note[0].startswith('confirmed: ConfigMap/app-config in volume conf') and '3 read(s)' in note[0]
    assert not any('not confirmed' in w for w in result['warnings'])


def test_a_subpath_consumer_is_read_where_another_container_mounts_the_volume_whole(stream):
    kube = ExecKube({'app': SUBPATH, 'metrics': WHOLE})
    result = run(stream, kube)
    # Both restart (metrics reads every key): one read, in the whole mount, of the keys either reads.
    assert [(e[1], e[2]) for e in kube.execs] == [('metrics', ['cat', '/etc/app/app.conf', '/etc/app/mode'])]
    assert 'exec in container metrics' in result['config_checks']['web-0']['app']['projection'][0]
    # The subPath consumer alone: its one file, read where metrics mounts the volume whole.
    found = projection.probes(kube.pods['web-1'], ['app'], {'app': ['ConfigMap/app-config']},
                              {'ConfigMap/app-config': configmap(data=NEW)})
    assert [(p.container, p.mount, p.files, p.consumers) for p in found] == [
        ('metrics', '/etc/app', (('/etc/app/mode', 'new'),), ('app',))]


@pytest.mark.parametrize('mounts, status, why', [
    ({'app': SUBPATH}, None, 'no running container of the pod mounts volume conf whole'),
    ({'app': WHOLE}, {'status': 'Failure', 'message': 'exec: "cat": executable file not found in $PATH'},
     'the image has no cat program'),
])
def test_an_unconfirmed_projection_warns_or_fails_the_pod_when_required(stream, mounts, status, why):
    kube = ExecKube(mounts, exec_status=status)
    result = run(stream, kube)
    assert result['failed_pods'] == [] and result['restart']['summary']['updated'] == 1
    warning = [w for w in result['warnings'] if 'not confirmed in the volume' in w]
    assert len(warning) == 1 and why in warning[0] and 'pod web-0: ConfigMap/app-config in volume conf' in warning[0]
    kube = ExecKube(mounts, exec_status=status)
    result = run(stream, kube, config_projection='required')
    assert [p['name'] for p in result['failed_pods']] == ['web-0']
    reason = result['failed_pods'][0]['reason']
    assert 'ProjectionUnconfirmed' in reason and 'volume conf' in reason and why in reason
    assert [s['restartCount'] for s in kube.pods['web-0']['status']['containerStatuses']] == [0, 0]


def test_files_that_stay_old_are_read_until_wait_timeout(stream):
    kube = ExecKube({'app': WHOLE}, stale=1000)
    result = run(stream, kube, config_projection='required', wait_timeout=20)
    assert 'still shows other data after' in result['failed_pods'][0]['reason']
    assert 5 <= len(kube.execs) <= 10   # 1, 2, 4, 5, 5 s apart: bounded by the timeout
    kube = ExecKube({'app': WHOLE}, stale=1000)
    assert run(stream, kube, config_projection='skip')['failed_pods'] == [] and kube.execs == []


def test_the_check_command_runs_after_the_restart_and_fails_the_pod_on_a_wrong_value(stream):
    kube = ExecKube({'app': WHOLE})
    result = run(stream, kube, config_check={'command': ['echo', 'new'], 'expect': 'new'})
    assert result['failed_pods'] == []
    check = [e for e in kube.execs if e[2][0] == 'echo']
    assert len(check) == 1 and check[0][3] != kube.execs[0][3]   # in the restarted container
    assert result['config_checks']['web-0']['app']['config_check'] == 'passed: echo new (in container app)'
    kube = ExecKube({'app': WHOLE})
    result = run(stream, kube, config_check={'command': ['echo', 'new'], 'contains': 'two'})
    reason = result['failed_pods'][0]['reason']
    assert "ConfigCheckFailed: config_check echo new: expected output containing 'two', printed 'new'" in reason


def test_the_check_output_never_shows_a_secret_value(stream):
    kube = ExecKube({'app': WHOLE}, secrets={'db': secret()})
    for pod in kube.pods.values():
        pod['spec']['containers'][0]['env'] = [
            {'name': 'PASS', 'valueFrom': {'secretKeyRef': {'name': 'db', 'key': 'password'}}}]
    result = run(stream, kube, config_check={'command': ['echo', 'pw=hunter2'], 'expect': 'other'})
    reason = result['failed_pods'][0]['reason']
    assert 'hunter2' not in reason and "printed 'pw=********'" in reason
    assert projection.masked('x', None).startswith('********')
    assert projection.masked('a' * 500, []).endswith('...')


def test_check_mode_reads_nothing(stream):
    kube = ExecKube({'app': WHOLE})
    stream['kube'] = kube
    batch(kube, check_mode=True, config=['auto'], config_check={'command': ['true']}, config_projection='required')
    assert kube.execs == []


@pytest.mark.parametrize('value, wanted', [
    ({'command': []}, 'config_check.command: a non-empty list'),
    ({'command': 'cat /etc/app/mode'}, 'config_check.command: a non-empty list'),
    ({'command': ['true'], 'expected': 'x'}, 'config_check: unknown key(s) expected'),
    ({'command': ['true'], 'expect': ['x']}, 'config_check.expect: a string'),
    ('true', 'config_check: a mapping with command'),
])
def test_a_bad_check_is_named_and_changes_nothing(value, wanted):
    kube = ExecKube({'app': WHOLE})
    with pytest.raises(ValidationError) as raised:
        batch(kube, config=['auto'], config_check=value)
    assert wanted in raised.value.msg and 'nothing was changed' in raised.value.msg
    assert kube.writes() == []
    role = {'target': {'namespace': 'shop', 'kind': 'Deployment', 'name': 'web'}, 'config': ['auto'],
            'config_check': value}
    assert any(('rollout_' + wanted) in error for error in inputs.input_errors(role))
    assert any('rollout_config_check: runs after the restarts of a config rollout' in error for error in
               inputs.input_errors(dict(role, config=[], images={'app': 'x:2'})))


def test_probes_follow_items_and_projected_sources():
    pod = ExecKube({'app': {'name': 'all', 'mountPath': '/etc/all'}}).pods['web-0']
    pod['spec']['volumes'] = [{'name': 'all', 'projected': {'sources': [
        {'configMap': {'name': 'app-config', 'items': [{'key': 'mode', 'path': 'conf/mode.txt'}]}},
        {'secret': {'name': 'db'}}]}}]
    objects = {'ConfigMap/app-config': configmap(data=NEW), 'Secret/db': secret()}
    found = projection.probes(pod, ['app'], {'app': ['ConfigMap/app-config', 'Secret/db']}, objects)
    assert [(p.ref, p.container, p.files) for p in found] == [
        ('ConfigMap/app-config', 'app', (('/etc/all/conf/mode.txt', 'new'),)),
        ('Secret/db', 'app', (('/etc/all/password', 'hunter2'),))]
    assert checks.check_errors(None) == [] and checks.check_errors({'command': ['true']}, config=['auto']) == []


class Changed(object):
    """A config rollout whose objects last changed ``when`` (an aware datetime, or None)."""

    def __init__(self, when):
        self.when, self.asked = when, []

    def last_change(self, pod, names):
        self.asked.append(list(names))
        return self.when


@pytest.mark.parametrize('changed_at, now, slept', [
    (100.0, 100.4, [0.6]),     # in the second of the change: wait for the next one
    (100.0, 101.2, []),        # after it: at once
    (100.0, 40.0, [1.0]),      # a clock far behind the API server's: a second at most
    (None, 100.0, []),         # nothing to restart for
])
def test_a_restart_waits_out_the_second_of_the_change(changed_at, now, slept):
    sleeps = []
    when = None if changed_at is None else datetime.datetime.fromtimestamp(changed_at, tz=datetime.timezone.utc)
    config = Changed(when)
    hooks = checks.ConfigChecks(None, config, checks.SKIP, None, 30, [].append, sleep=sleeps.append, wall=lambda: now)
    hooks.before({}, ['app'], {})
    assert sleeps == pytest.approx(slept) and config.asked == [['app']]
