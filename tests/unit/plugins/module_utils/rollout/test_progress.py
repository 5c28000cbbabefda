# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live progress (rollout/progress.py): the lines the rollout loop writes while its one call runs, and the
action plugin's reader that shows them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inplace.k8s.plugins.action.rollout_workload import ProgressReader
from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.process import cancel, proc
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import context as rollout_context
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import progress
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.steps import Rollout
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakePodWatcher
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import action, run_action


@pytest.fixture(autouse=True)
def fake_watchers(monkeypatch):
    monkeypatch.setattr(runner, 'PodWatcher', FakePodWatcher)
    monkeypatch.setattr(rollout_context, 'PodWatcher', FakePodWatcher)


def lines(path):
    with open(str(path)) as source:
        return [json.loads(raw) for raw in source]


def test_the_counts_estimate_the_time_left_from_the_pods_done_in_this_call(tmp_path):
    clock = ManualClock(1000.0)
    report = progress.Progress(str(tmp_path / 'p'), total=10, done=2, started=1000.0, clock=clock)
    report.label = 'step 1 of 1'
    report.waiting = 8
    for name in ('a', 'b', 'c'):
        report.start(name)
    clock.sleep(30)
    report.end('a', True)
    report.end('b', False)
    counts = report.counts()
    assert counts == {'label': 'step 1 of 1', 'done': 3, 'failed': 1, 'gone': 0, 'in_flight': 1, 'waiting': 5, 'total': 10,
                      'elapsed': 30.0, 'eta': 180.0}
    assert progress.line(counts) == ('step 1 of 1: 3/10 pods done, 1 failed, 1 in flight, 5 waiting for a slot; '
                                     'elapsed 30s, about 3m00s left')


def test_a_line_is_written_when_the_counts_change_or_a_heartbeat_is_due(tmp_path):
    clock = ManualClock(0.0)
    path = tmp_path / 'p'
    report = progress.Progress(str(path), total=4, started=0.0, clock=clock)
    report.label = 'step 1 of 2'
    report._write('progress')
    report._write('progress')                 # nothing changed: no line
    clock.sleep(progress.HEARTBEAT)
    report._write('progress')                 # the heartbeat repeats the counts
    report.start('a')
    report._write('progress')                 # changed
    assert [entry['in_flight'] for entry in lines(path)] == [0, 0, 1]
    report.note('plan: 4 pod(s)')
    assert lines(path)[-1] == {'kind': 'note', 'line': 'plan: 4 pod(s)'}


def test_a_file_that_cannot_be_written_ends_the_reporting_not_the_rollout(tmp_path):
    report = progress.Progress(str(tmp_path / 'missing' / 'p'), total=1)
    report.note('plan')
    report.step('step 1 of 1', ['a'])
    report.close()
    assert report.path is None


def test_without_a_file_nothing_is_reported():
    silent = progress.Progress.to(None, total=3)
    silent.step('step', ['a'])
    silent.end('a', True)
    assert isinstance(silent, progress.Silent)


def test_durations_read_as_people_write_them():
    assert [progress.duration(s) for s in (0, 59.4, 61, 3599, 3725)] == ['0s', '59s', '1m01s', '59m59s', '1h02m']


@pytest.fixture
def progress_file():
    """A progress file as the action makes it (the only kind the module writes to)."""
    import tempfile
    handle, path = tempfile.mkstemp(prefix='inplace-progress-', suffix='.jsonl')
    os.close(handle)
    yield path
    if os.path.exists(path):   # a run may remove it (test_a_run_whose_starter_ended_removes_its_progress_file)
        os.unlink(path)


def test_the_loop_writes_the_plan_every_step_and_the_end(progress_file):
    path = progress_file
    values = dict(state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': 'reg/app:2'},
                  window=True, batch_size='1', run_id='test-run', wait_timeout=30, canary='1',
                  internal={'progress_file': str(path)})
    clock = ManualClock()
    result = Rollout(FakeApps([workload('StatefulSet')]), RolloutOptions.from_params(values), clock=clock,
                     sleep=clock.sleep).run()
    assert result['run']['finished']['changed'] is True
    entries = lines(path)
    assert entries[0]['line'] == 'plan: 3 pod(s), 0 already on the target, 3 to update in 2 step(s) (a sliding window of 1)'
    ends = [entry for entry in entries if entry['kind'] == 'step-end']
    assert [(entry['label'], entry['done'], entry['total']) for entry in ends] == [
        ('canary (step 1 of 2)', 1, 3), ('step 2 of 2', 3, 3)]
    assert [entry['label'] for entry in entries if entry['kind'] == 'step'] == ['canary (step 1 of 2)', 'step 2 of 2']


def test_the_action_reader_shows_each_complete_line_once(tmp_path):
    path = tmp_path / 'p'
    shown = []
    reader = ProgressReader(str(path), shown.append)
    reader.read()                                         # no file yet
    # a line the module is still writing is shown once it is complete
    path.write_text(json.dumps({'line': 'one'}) + '\n' + 'not json\n' + '{"line": "tw')
    reader.read()
    with open(str(path), 'a') as out:
        out.write('o"}\n' + json.dumps({'kind': 'x'}) + '\n')
    reader.read()
    assert shown == ['one', 'two']


def test_the_action_shows_the_modules_progress_and_removes_its_file(monkeypatch):
    plugin = action({'state': 'rollout', 'internal': {'started': 1.0}})
    result, seen, shown = run_action(monkeypatch, plugin, ['plan: 3 pod(s)', 'step 1 of 1: 3/3 pods done'])
    path = seen['args']['internal']['progress_file']
    assert result == {'changed': True} and seen['module_name'] == 'inplace.k8s.rollout_workload'
    assert seen['args']['internal']['started'] == 1.0 and not os.path.exists(path)
    assert shown == ['[ctl] progress: plan: 3 pod(s)', '[ctl] progress: step 1 of 1: 3/3 pods done']


def test_the_action_does_not_fail_when_the_module_removed_the_file(monkeypatch):
    plugin = action({'state': 'rollout', 'internal': {'started': 1.0}})
    result, seen, _shown = run_action(monkeypatch, plugin, ['plan: 3 pod(s)'], removed=True)
    assert result == {'changed': True} and not os.path.exists(seen['args']['internal']['progress_file'])


@pytest.mark.parametrize('gone', [False, True])
def test_a_run_whose_starter_ended_removes_its_progress_file(progress_file, gone):
    # A cancel that ended the action's worker (ansible-core's SIGTERM handler exits at once, past every finally)
    # leaves the file to the run: removed when a process that started the run is gone, kept for the action else.
    me = (os.getpid(), proc.stat(os.getpid())[2])
    token = cancel.Cancel(ancestors=[me, (2 ** 22 + 12345, 1)] if gone else [me])   # the second: above pid_max
    values = dict(state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': 'reg/app:2'},
                  window=True, batch_size='1', run_id='test-run', wait_timeout=30,
                  internal={'progress_file': str(progress_file)})
    clock = ManualClock()
    Rollout(FakeApps([workload('StatefulSet')]), RolloutOptions.from_params(values), clock=clock, sleep=clock.sleep,
            cancel=token).run()
    assert token.abandoned() is gone and os.path.exists(str(progress_file)) is not gone
    if not gone:
        assert lines(progress_file)[-1]['kind'] == 'step-end'


@pytest.mark.parametrize('args, transport, async_val', [
    ({'state': 'finish'}, 'local', 0),       # not the loop
    ({'state': 'rollout'}, 'ssh', 0),        # the module runs elsewhere: its file is not here
    ({'state': 'rollout'}, 'local', 60),     # async: the task returns at once
])
def test_no_progress_where_it_cannot_be_read(monkeypatch, args, transport, async_val):
    result, seen, shown = run_action(monkeypatch, action(args, transport, async_val), ['x'])
    assert 'internal' not in seen['args'] and shown == [] and seen['wrap_async'] is bool(async_val)
