# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""State rollout (rollout/loop.py): how the one call goes on after a step or the finish failed with failed pods,
and what it returns in diff mode."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.test_rollout import Clock, Watcher

NEW = 'reg/app:2'


@pytest.fixture(autouse=True)
def fake_watchers(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', Watcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', Watcher)


def rollout(kube, diff=False, **params):
    values = dict(state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': NEW},
                  window=False, batch_size='1', run_id='test-run', wait_timeout=30)
    values.update(params)
    clock = Clock()
    return Rollout(kube, RolloutOptions.from_params(values), clock=clock, sleep=clock.sleep, diff=diff).run()


def test_a_step_the_gate_blocks_is_counted_and_stops_the_run_without_finishing(monkeypatch):
    def blocked(self, names=None, whole=True):
        raise WaitTimeout('batch %s blocked for 30s: no' % ','.join(names), blocked=['no'])
    monkeypatch.setattr(Rollout, 'gate', blocked)
    kube = FakeApps([workload('StatefulSet')])
    result = rollout(kube)
    run = result['run']
    assert run['stopped'] is True and 'finished' not in run and len(run['steps']) == 1
    assert run['failed_pods'] == [{'name': 'web-0', 'status': 'blocked', 'reason': 'batch web-0 blocked for 30s: no'}]
    assert run['steps'][0]['progress'][0].startswith('step 1 of 3 (web-0): 0 done, 1 failed')


def test_an_error_without_failed_pods_fails_the_call(monkeypatch):
    def broken(self, names=None):
        raise ApiError('the server is gone')
    monkeypatch.setattr(Rollout, '_sync', broken)
    with pytest.raises(ApiError):
        rollout(FakeApps([workload('StatefulSet')]))


def test_a_finish_that_finds_pods_another_writer_changed_is_reported_in_finished(monkeypatch):
    def conflict(self, final=None, synced=None):
        raise engine.ConcurrentChange('changed by another writer', failed_pods=[
            {'name': 'web-1', 'status': engine.CONFLICT, 'reason': 'changed by another writer'}])
    monkeypatch.setattr(Rollout, 'finish', conflict)
    result = rollout(FakeApps([workload('StatefulSet')]))
    finished = result['run']['finished']
    assert result['run']['stopped'] is False and finished['failed'] is True
    assert finished['msg'] == 'changed by another writer' and finished['failed_pods'][0]['name'] == 'web-1'


def test_a_finish_error_without_failed_pods_fails_the_call(monkeypatch):
    def broken(self, final=None, synced=None):
        raise ApiError('the server is gone')
    monkeypatch.setattr(Rollout, 'finish', broken)
    with pytest.raises(ApiError):
        rollout(FakeApps([workload('StatefulSet')]))


def test_diff_mode_returns_each_steps_diff():
    result = rollout(FakeApps([workload('StatefulSet')]), diff=True)
    assert result['run']['stopped'] is False and len(result['diff']) == 3
