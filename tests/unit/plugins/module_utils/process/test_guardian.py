# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The guardian: drained pods put back when the run that drained them is killed."""

import json
import os
import select
import signal
import socket
import time

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, record
from ansible_collections.inplace.k8s.plugins.module_utils.process import guardian
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import ManualClock
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.pods.helpers import GATE, Kube, drained_pod, entry


def talk(lines, kube):
    """serve() over a real pipe that receives ``lines`` and is then closed; what it restored."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, ''.join(line + '\n' for line in lines).encode('utf-8'))
    os.close(write_fd)
    clock = ManualClock()
    return guardian.serve(read_fd, lambda: kube, clock, clock.sleep)


def test_an_orderly_end_touches_nothing():
    kube = Kube(drained_pod('a'))
    assert talk([json.dumps(entry('a')), guardian.DONE], kube) == [] and kube.patches == []


def test_a_killed_run_gets_its_drained_pods_back_but_not_those_it_settled():
    kube = Kube(drained_pod('a'), drained_pod('b'))
    lines = [json.dumps(entry('a')), json.dumps(entry('b')), json.dumps({'settled': 'shop/b'})]
    assert talk(lines, kube) == ['shop/a']
    assert kube.patches == [('a', 'status', 'True')]


def test_a_pod_killed_mid_restart_is_put_back_once_healthy_and_a_crashing_one_stays_drained():
    kube = Kube(drained_pod('a', ready=False), drained_pod('b', waiting='CrashLoopBackOff'),
                a=[drained_pod('a', ready=False), drained_pod('a', ready=False), drained_pod('a')])
    assert talk([json.dumps(entry('a')), json.dumps(entry('b'))], kube) == ['shop/a']
    assert kube.patches == [('a', 'status', 'True')]


def test_policies_restore_and_keep_false():
    kube = Kube(drained_pod('a', waiting='CrashLoopBackOff'), drained_pod('b'))
    assert talk([json.dumps(entry('a', policy='restore')), json.dumps(entry('b', policy='keep_false'))],
                kube) == ['shop/a']


def test_pods_gone_replaced_or_put_back_by_others_are_left_alone_and_the_wait_is_bounded():
    kube = Kube(drained_pod('b', uid='other'), drained_pod('c', gate='True'), drained_pod('d', ready=False))
    clock = ManualClock()
    restored = guardian.restore(kube, [entry('a'), entry('b'), entry('c'), entry('d')], clock, clock.sleep, seconds=5)
    assert restored == [] and kube.patches == [] and 4 < clock.now < 7


def test_a_pod_another_live_run_drained_again_since_is_left_to_it():
    """A re-run started after the kill drains the pod again (its record, owned by a live process on this host): the
    guardian leaves it. The killed run's own record holds nothing against it."""
    def held_by(run, pid):
        held = drained_pod('a')
        held['metadata']['annotations'] = {record.ANNOTATION: record.dump({'image': {
            'state': 'in-progress', 'owner': {'run': run, 'host': socket.gethostname(), 'pid': pid},
            'expires': record.timestamp(time.time() + 600)}})}
        return held
    kube = Kube(held_by('rerun', os.getpid()))
    clock = ManualClock()
    assert guardian.restore(kube, [dict(entry('a'), run='killed')], clock, clock.sleep) == [] and kube.patches == []
    kube = Kube(held_by('killed', os.getpid()))
    assert guardian.restore(kube, [dict(entry('a'), run='killed')], clock, clock.sleep) == ['shop/a']


def test_an_api_error_is_tried_again_until_the_deadline():
    kube = Kube(a=[ApiError('boom', status=500), drained_pod('a')])
    clock = ManualClock()
    assert guardian.restore(kube, [entry('a')], clock, clock.sleep) == ['shop/a']


def test_the_label_drain_is_put_back_too():
    drained = drained_pod('a', gate='True', label=drain.DRAINED_VALUE)
    kube = Kube(drained)
    calls = []
    kube.patch_pod = lambda namespace, name, body, content_type=None, subresource=None, dry_run=False: calls.append(
        (name, body)) or drained
    clock = ManualClock()
    assert guardian.restore(kube, [entry('a', mode='label', name_of_drain='serving=yes')], clock, clock.sleep) == ['shop/a']
    assert calls == [('a', {'metadata': {'labels': {'serving': 'yes'}}})]


class FileKube(Kube):
    """Records its patches in a file: the guardian runs in another process."""

    def __init__(self, path, *pods):
        super(FileKube, self).__init__(*pods)
        self.path = path

    def patch_pod(self, namespace, name, body, content_type=None, subresource=None, dry_run=False):
        with open(self.path, 'a') as out:
            out.write('%s %s\n' % (name, body['status']['conditions'][0]['status']))
        return self.pods[name]


@pytest.mark.parametrize('killed', [True, False])
def test_the_forked_guardian_outlives_a_sigkill_of_the_process_group_of_its_module(tmp_path, killed):
    """A module process (forked here, in a group of its own as ansible-runner's job) starts the guardian,
    drains a pod and is killed with its whole process group; the guardian, in its own session, puts the pod
    back. An orderly end (done) leaves the pod as it is."""
    out = str(tmp_path / 'patches')
    # Every process forked from here holds ``alive``: its end of file is the guardian's exit, after the module's.
    ended, alive = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(ended)
            os.setpgid(0, 0)
            guard = guardian.start(lambda: FileKube(out, drained_pod('a')))
            guard.drained(drained_pod('a'), drain.drainer(GATE), 'restore_if_healthy')
            if killed:
                os.killpg(os.getpgid(0), signal.SIGKILL)
            guardian.stop()
        except BaseException:   # pylint: disable=broad-except
            code = 1
        os._exit(code)
    os.close(alive)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) if killed else os.WEXITSTATUS(status) == 0
    with os.fdopen(ended, 'rb', buffering=0) as pipe:
        assert select.select([pipe], [], [], 10)[0] and pipe.read() == b'', 'the guardian did not exit in 10 s'
    with open(out) if os.path.exists(out) else open(os.devnull) as found:
        assert found.read() == ('a True\n' if killed else '')


def test_without_a_guardian_the_module_side_is_a_no_op():
    assert guardian.current() is None
    guardian.stop()
    lost = guardian.Guardian(None)
    lost.drained(drained_pod('a'), drain.drainer(GATE))
    lost.settled(drained_pod('a'))
    lost.done()
