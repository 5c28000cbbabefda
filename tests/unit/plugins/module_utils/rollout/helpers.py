# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the rollout's tests share: the module's params (batch_params for pods chosen by selectors on Kube,
workload_params for the steps on the apps/v1 fake), the steps run as the role runs them (step, run_all), what a test
reads back (uids, images, rec), and the action plugin rollout_workload run without Ansible (action, run_action)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os

from ansible_collections.inplace.k8s.plugins.module_utils.connection import access
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import workload_record
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import INTERNAL, RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.batch_step import BatchStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock, load
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster

NEW = 'reg/app:2'   # the steps on workloads
OLD = 'reg/app:1'
BATCH = ['web-0', 'web-1']


# ---- pods chosen by selectors (state=batch)

class Kube(FakeCluster):
    """FakeCluster plus the other requests of a batch: PodDisruptionBudgets, access reviews, the server
    version (resize), OpenKruise discovery (absent), merge patches of annotations."""

    def __init__(self, count=3, pdbs=()):
        pods = []
        for index in range(count):
            pod = load('pod_web.json')
            pod['metadata'].update(name='web-%d' % index, uid='uid-%d' % index)
            pods.append(pod)
        super(Kube, self).__init__(pods)
        self.pdbs = list(pdbs)

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append((method, path))
        if path.endswith('/poddisruptionbudgets'):
            return {'items': copy.deepcopy(self.pdbs)}
        if path == access.REVIEW_PATH:
            return {'status': {'allowed': True}}
        if path == '/version':
            return {'major': '1', 'minor': '36', 'gitVersion': 'v1.36.0'}
        if path.startswith('/apis/apps.kruise.io'):
            raise NotFoundError('the server could not find the requested resource', status=404)
        raise AssertionError('unexpected request %s %s' % (method, path))

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None, dry_run=False):
        if content_type != MERGE_PATCH:
            return super(Kube, self).patch_pod(namespace, name, body, content_type, subresource, dry_run)
        self.calls.append(('patch', name, 'merge'))
        pod = self.pods[name]
        pod['metadata'].setdefault('annotations', {}).update(body['metadata']['annotations'])
        self._touch(pod)
        return copy.deepcopy(pod)

    def writes(self):
        return [call for call in self.calls if call[0] == 'patch']

    def image(self, name):
        return self.pods[name]['spec']['containers'][0]['image']


def batch_params(**changes):
    values = dict(state='batch', namespace='shop', kind=None, name=None, label_selectors=['app=web'], images=None,
                  resources=None, restart=None, restart_id=None, names=list(BATCH), max_unavailable=None,
                  readiness_gate=None, drain_seconds=0, on_failure='stop', restart_strategy='auto', wait_timeout=30,
                  run_id='test-run', force_takeover=False)
    values.update(changes)
    return module_params(values)


def module_params(values):
    """The module's params for ``values``: the role's plumbing (rollout/options.py INTERNAL) under internal."""
    internal = {key: values.pop(key) for key in list(values) if key in INTERNAL}
    return dict(values, internal=internal or None)


def options(**changes):
    """RolloutOptions as the module parses them from batch_params(**changes)."""
    return RolloutOptions.from_params(batch_params(**changes))


def batch(kube, check_mode=False, diff=False, batch_step=BatchStep, **changes):
    """State batch; ``batch_step``: the batch step's class (or factory) Rollout makes it from."""
    clock = ManualClock()
    return Rollout(kube, options(**changes), check_mode, clock=clock, sleep=clock.sleep, diff=diff,
                   batch_step=batch_step).run()


# ---- the steps on workloads (FakeApps)

def workload_params(**changes):
    values = dict(state='prepare', namespace='shop', kind='StatefulSet', name='web', label_selectors=None, images=None,
                  resources=None, restart=None, restart_id=None, names=None, max_unavailable=None, readiness_gate=None,
                  drain_seconds=0, on_failure='stop', restart_strategy='auto', wait_timeout=30, run_id='test-run',
                  force_takeover=False, min_ready_seconds=0, allow_recreate=False, batch_size=1)
    values.update(changes)
    return module_params(values)


def step(kube, state, check_mode=False, clock=None, **changes):
    clock = clock or ManualClock()
    options = RolloutOptions.from_params(workload_params(state=state, **changes))
    return Rollout(kube, options, check_mode, clock=clock, sleep=clock.sleep).run()


def uids(kube):
    return dict((name, pod['metadata']['uid']) for name, pod in kube.pods.items())


def images(kube):
    return dict((name, pod['spec']['containers'][0]['image']) for name, pod in sorted(kube.pods.items()))


def rec(kube, kind='StatefulSet', name='web'):
    return workload_record(kube.get(kind, name))


def run_all(kube, kind, **change):
    """prepare, every batch, finish: the role's happy path."""
    prepared = step(kube, 'prepare', kind=kind, **change)
    for names in prepared['batches']:
        result = step(kube, 'batch', kind=kind, names=names, **change)
        assert result['failed_pods'] == [], result
    return prepared, step(kube, 'finish', kind=kind, **change)


# ---- the action plugin

def action(args, transport='local', async_val=0, role='inplace.k8s.rollout'):
    """The action of a task of ``role`` (None: a playbook's own task)."""
    from unittest import mock
    from ansible_collections.inplace.k8s.plugins.action.rollout_workload import ActionModule
    task = mock.MagicMock(args=args, async_val=async_val, check_mode=False, diff=False)
    task._role = None
    if role:
        task._role = mock.MagicMock(_role_path='/elsewhere/roles/%s' % role.rpartition('.')[2])
        task._role.get_name.return_value = role
    connection = mock.MagicMock(transport=transport, has_native_async=False)
    connection._shell.tmpdir = None
    plugin = ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), mock.MagicMock())
    plugin._remove_tmp_path = lambda path: None
    return plugin


def run_action(monkeypatch, plugin, lines_written, removed=False):
    from ansible.plugins.action import ActionBase
    from ansible_collections.inplace.k8s.plugins.action import rollout_workload as plugin_module
    seen, shown = {}, []
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(plugin_module.display, 'display', shown.append)

    def execute(module_name, module_args, task_vars, wrap_async):
        seen.update(module_name=module_name, args=module_args, wrap_async=wrap_async)
        path = (module_args.get('internal') or {}).get('progress_file')
        if path:
            with open(path, 'a') as out:
                for text in lines_written:
                    out.write(json.dumps({'line': text}) + '\n')
            if removed:   # by the module: its playbook ended (process/cancel.py Cancel.abandoned)
                os.unlink(path)
        return {'changed': True}
    plugin._execute_module = execute
    result = plugin.run(task_vars={'inventory_hostname': 'ctl'})
    return result, seen, shown
