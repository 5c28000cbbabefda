# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Issue 46 (records are claims; bounded input; internal is the role's): through the modules' main() and the role's
action. Records are written as anyone who may patch a pod could write them."""

import importlib
import json
import os
import time

import pytest


from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.pods import record
from ansible_collections.inplace.k8s.plugins.module_utils.process import guardian
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.appsfakes import FakeApps, workload
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock, module_args, spec_of, web_pods
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeCluster
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.pods.helpers import Kube, drained_pod, entry
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.rollout.helpers import action, run_action

OLD, NEW = 'registry.example/app:1.0', 'registry.example/app:2.0'
NESTED = '[' * 50000 + ']' * 50000        # 100 KB: over the size bound
DEEP = '{"image":' + '[' * 20000 + ']' * 20000 + '}'   # under the size bound, deeper than any parser's recursion


def call(monkeypatch, capsys, name, args, kube=None):
    """The main() of module ``name`` with ``args``, on ``kube``: its result (exit_json or fail_json). Imported
    here, not at collection: a module's import changes zipimport (module_utils/startup.py; test_startup.py)."""
    module = importlib.import_module('ansible_collections.inplace.k8s.plugins.modules.' + name)
    if kube is not None:
        monkeypatch.setattr(runner, 'connect', lambda task: kube)
        monkeypatch.setattr(runner, 'client', lambda params, pool_size=10: kube)
    with module_args(dict(args, _ansible_remote_tmp='/tmp', _ansible_keep_remote_files=False)):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def forge(pod, value):
    """The state annotation as a pod patcher writes it."""
    pod['metadata'].setdefault('annotations', {})[record.ANNOTATION] = value if isinstance(value, str) else \
        json.dumps(value)


def image_of(cluster, name='web-0'):
    return spec_of(cluster.pods[name], 'app')['image']


def update(monkeypatch, capsys, cluster, image=NEW, **extra):
    args = dict(namespace='shop', name='web-0', containers={'app': image}, wait_timeout=30)
    args.update(extra)
    return call(monkeypatch, capsys, 'inplace_image', args, cluster)


# --------------------------------------------------------------------------- records are claims

@pytest.mark.parametrize('stored', [OLD, 'registry.example/app@sha256:' + 'ab' * 32, 'evil.example/other:2.0'])
def test_a_forged_image_record_does_not_make_a_pod_on_another_image_count_as_done(monkeypatch, capsys, stored):
    cluster = FakeCluster(web_pods(1))
    spec_of(cluster.pods['web-0'], 'app')['image'] = stored
    forge(cluster.pods['web-0'], {'image': {'state': 'done', 'target': {'app': NEW}, 'stored': {'app': stored},
                                            'uid': 'uid-0'}})
    result = update(monkeypatch, capsys, cluster)
    assert result['changed'] is True and result['summary']['updated'] == 1, result
    assert image_of(cluster) == NEW


def on_mirror(uid):
    """web-0 running the requested image from a mirror (as admission stored it), with an image record of ``uid``."""
    mirror = 'mirror.example/cache/app:2.0'
    cluster = FakeCluster(web_pods(1))
    spec_of(cluster.pods['web-0'], 'app')['image'] = mirror
    cluster.pods['web-0']['status']['containerStatuses'][0]['image'] = mirror
    forge(cluster.pods['web-0'], {'image': {'state': 'done', 'target': {'app': NEW}, 'stored': {'app': mirror},
                                            'uid': uid}})
    return cluster


def test_a_bound_and_plausible_admission_record_still_counts(monkeypatch, capsys):
    """What admission really does (a mirror under another registry, the tag kept) is still the target."""
    result = update(monkeypatch, capsys, on_mirror('uid-0'))
    assert result['changed'] is False and result['summary']['unchanged'] == 1, result


def test_a_record_copied_from_another_pod_does_not_count(monkeypatch, capsys):
    cluster = on_mirror('uid-of-another-pod')
    result = update(monkeypatch, capsys, cluster)
    assert result['changed'] is True and image_of(cluster) == NEW, result
    # the copied record is gone from the annotation: the run wrote its own, bound to this pod
    assert record.get(cluster.pods['web-0'], 'image')['uid'] == 'uid-0'


def held(expires):
    return {'state': 'in-progress', 'target': {'app': NEW}, 'uid': 'uid-0', 'expires': expires,
            'owner': {'run': 'forged', 'host': 'elsewhere.example', 'pid': 1, 'started': '2020-01-01T00:00:00Z'}}


def test_a_forged_in_progress_record_expiring_in_9999_does_not_block_the_run(monkeypatch, capsys):
    cluster = FakeCluster(web_pods(1))
    forge(cluster.pods['web-0'], {'image': held('9999-12-31T00:00:00Z')})
    result = update(monkeypatch, capsys, cluster)
    assert result['changed'] is True and image_of(cluster) == NEW, result


def test_a_record_within_the_cap_still_holds_the_pod(monkeypatch, capsys):
    cluster = FakeCluster(web_pods(1))
    forge(cluster.pods['web-0'], {'image': held(record.timestamp(time.time() + record.MAX_HOLD_SECONDS - 60))})
    result = update(monkeypatch, capsys, cluster)
    assert result['failed'] is True and 'another run (host elsewhere.example' in result['pods'][0]['reason']
    assert image_of(cluster) == OLD
    # what a run writes never claims more than the cap
    claimed = record.claim({}, record.new_owner(), 10 ** 9, now=0)
    assert record.parse_timestamp(claimed['expires']) == record.MAX_HOLD_SECONDS


@pytest.mark.parametrize('annotation, problem', [(NESTED, '100000 bytes, more than 65536'),
                                                 (DEEP, 'nested deeper than 16'),
                                                 ('{"image": ', 'not JSON'), ('[1]', 'not a JSON object')])
def test_an_unreadable_annotation_refuses_the_pod_by_name_without_a_traceback(
        monkeypatch, capsys, annotation, problem):
    cluster = FakeCluster(web_pods(1))
    forge(cluster.pods['web-0'], annotation)
    result = update(monkeypatch, capsys, cluster)
    assert result['failed'] is True and 'exception' not in result and image_of(cluster) == OLD
    reason = result['pods'][0]['reason']
    assert 'annotation inplace.k8s/state is unreadable (' + problem in reason, reason
    assert 'kubectl annotate pod -n shop web-0 inplace.k8s/state-' in reason
    assert cluster.pods['web-0']['metadata']['annotations'][record.ANNOTATION] == annotation   # left as it was


def test_the_guardian_puts_back_a_drained_pod_whatever_its_annotation_holds():
    for annotation in (NESTED, DEEP):
        drained = drained_pod('a')
        drained['metadata']['annotations'] = {record.ANNOTATION: annotation}
        kube = Kube(drained)
        clock = ManualClock()
        assert guardian.restore(kube, [dict(entry('a'), run='killed')], clock, clock.sleep) == ['shop/a']


def test_the_guardian_is_not_held_off_by_a_forged_record_past_the_cap():
    drained = drained_pod('a')
    drained['metadata']['annotations'] = {record.ANNOTATION: record.dump({'image': {
        'state': 'in-progress', 'owner': {'run': 'forged', 'host': 'elsewhere', 'pid': 1},
        'expires': '9999-12-31T00:00:00Z'}})}
    kube = Kube(drained)
    clock = ManualClock()
    assert guardian.restore(kube, [dict(entry('a'), run='killed')], clock, clock.sleep) == ['shop/a']


def test_a_statefulset_pod_with_a_forged_record_is_updated_and_not_relabelled_on_its_old_image(monkeypatch, capsys):
    cluster = FakeApps([workload('StatefulSet')])
    forged = cluster.pods['web-1']
    forge(forged, {'image': {'state': 'done', 'target': {'app': 'reg/app:2'}, 'stored': {'app': 'reg/app:1'},
                             'uid': forged['metadata']['uid']}})
    result = call(monkeypatch, capsys, 'rollout_workload', dict(
        state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': 'reg/app:2'},
        window=True, run_id='forged-test', wait_timeout=30), cluster)
    assert result.get('failed') is not True, result
    assert 'StatefulSet web: in_place, 3 pod(s), 0 already updated' in result['plan_lines'], result['plan_lines']
    pods = cluster.owned(cluster.get('StatefulSet', 'web'))
    assert [spec_of(p, 'app')['image'] for p in pods] == ['reg/app:2'] * 3
    revisions = set(p['metadata']['labels'].get('controller-revision-hash') for p in pods)
    assert len(revisions) == 1


# --------------------------------------------------------------------------- bounded input

def test_a_huge_exponent_is_refused_by_name_at_once(monkeypatch, capsys):
    cluster = FakeCluster(web_pods(1))
    cluster.objects = {'/version': {'gitVersion': 'v1.35.0'}}
    started = time.monotonic()
    result = call(monkeypatch, capsys, 'inplace_resize', dict(namespace='shop', name='web-0', containers={
        'app': {'requests': {'cpu': '1e30000000'}}}), cluster)
    assert time.monotonic() - started < 5
    assert result['failed'] is True and 'containers.app' in result['msg'] and 'out of range' in result['msg'], result
    assert not [c for c in cluster.calls if c[0] == 'patch_pod']


@pytest.mark.parametrize('extra, field', [
    ({'wait_timeout': 300000000000}, 'wait_timeout: 300000000000 is more than 86400 seconds (a day)'),
    ({'min_ready_seconds': 86401}, 'min_ready_seconds'),
    ({'drain_seconds': 10 ** 9}, 'drain_seconds'),
    ({'max_concurrency': 100000}, 'max_concurrency: 100000 is more than 256'),
])
def test_seconds_and_counts_past_their_bound_are_refused_by_name(monkeypatch, capsys, extra, field):
    cluster = FakeCluster(web_pods(1))
    result = update(monkeypatch, capsys, cluster, **extra)
    assert result['failed'] is True and field in result['msg'] and 'nothing was changed' in result['msg'], result
    assert image_of(cluster) == OLD


@pytest.mark.parametrize('image', [NEW + '\n', 'registry.example/app:２.0', 'registry.example/app:2.0\u0663'])
def test_a_trailing_newline_or_unicode_digits_in_an_image_are_refused(monkeypatch, capsys, image):
    cluster = FakeCluster(web_pods(1))
    result = update(monkeypatch, capsys, cluster, image=image)
    assert result['failed'] is True and 'containers.app' in result['msg'] and image_of(cluster) == OLD, result


@pytest.mark.parametrize('args, field', [
    ({'batch_size': '\u0663'}, 'batch_size'),                  # ARABIC-INDIC DIGIT THREE
    ({'batch_size': '3\n'}, 'batch_size'),
    ({'batch_size': '12345678901234567890'}, 'batch_size must be at most 9999999'),
    ({'canary': '１'}, 'canary'),                              # FULLWIDTH DIGIT ONE
    ({'wait_timeout': 300000000000}, 'wait_timeout'),
    ({'pause_seconds': 90000}, 'pause_seconds'),
    ({'resources': {'app': {'requests': {'memory': '1e99999Mi'}}}}, 'resources'),
])
def test_rollout_inputs_past_their_bounds_are_refused_by_name(monkeypatch, capsys, args, field):
    cluster = FakeApps([workload('StatefulSet')])
    base = dict(state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': 'reg/app:2'})
    if 'resources' in args:
        base.pop('images')
    result = call(monkeypatch, capsys, 'rollout_workload', dict(base, **args), cluster)
    assert result['failed'] is True and field in result['msg'] and 'Traceback' not in result['msg'], result
    assert cluster.apps_writes() == [] and all(spec_of(p, 'app')['image'] == 'reg/app:1' for p in cluster.pods.values())


# --------------------------------------------------------------------------- internal is the role's

def test_internal_from_a_playbook_is_refused_by_the_action(monkeypatch):
    plugin = action({'state': 'rollout', 'internal': {'progress_file': '/etc/passwd'}}, role=None)
    result, seen, _shown = run_action(monkeypatch, plugin, [])
    assert result['failed'] is True and seen == {}
    assert 'internal: it is the plumbing of the role inplace.k8s.rollout' in result['msg']
    other = action({'state': 'finish', 'internal': {'started': 1.0}}, role='someone.else.rollout')
    assert run_action(monkeypatch, other, [])[0]['failed'] is True


def test_the_role_never_passes_a_progress_file_it_did_not_make(monkeypatch):
    plugin = action({'state': 'finish', 'internal': {'started': 1.0, 'progress_file': '/etc/passwd'}})
    result, seen, _shown = run_action(monkeypatch, plugin, [])
    assert result.get('failed') is not True and seen['args']['internal'] == {'started': 1.0}


@pytest.mark.parametrize('path', ['/etc/passwd', '/tmp/inplace-progress-x.jsonl/../../etc/passwd', 'relative'])
def test_the_module_writes_progress_only_to_a_file_the_action_made(monkeypatch, capsys, path):
    cluster = FakeApps([workload('StatefulSet')])
    before = os.stat('/etc/passwd').st_mtime
    result = call(monkeypatch, capsys, 'rollout_workload', dict(
        state='rollout', namespace='shop', kind='StatefulSet', name='web', images={'app': 'reg/app:2'},
        internal={'progress_file': path}), cluster)
    assert result['failed'] is True and 'internal.progress_file' in result['msg'], result
    assert os.stat('/etc/passwd').st_mtime == before and cluster.apps_writes() == []


def test_a_progress_file_that_is_a_link_is_refused():
    import tempfile
    from ansible_collections.inplace.k8s.plugins.module_utils.rollout import progress
    link = os.path.join(tempfile.gettempdir(), 'inplace-progress-link%d.jsonl' % os.getpid())
    os.symlink('/etc/passwd', link)
    try:
        assert 'not the empty regular file' in progress.file_error(link)
    finally:
        os.unlink(link)
