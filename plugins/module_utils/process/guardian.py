# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Drained pods put back when the run that drained them is killed.

A module that drains pods (readiness gate or drain label) forks a guardian at its start, before any thread
or connection exists. The guardian leaves the module's process group and session (detach.py), so the
SIGKILL that ansible-runner sends to the whole process group of a canceled job (AWX's cancel) does not
reach it, and lets go of the module's stdout and stderr, so Ansible never waits for it. The module tells
it over a pipe which pods it drained and which it settled (put back, or left drained on purpose and
reported); an orderly end of the module (success, failure, an exception) says ``done`` last.

When the pipe closes without ``done`` (the module was killed: SIGKILL, SIGTERM, an out-of-memory kill),
the guardian puts back every pod still drained with this run's drain: at once under
``readiness_gate_on_failure`` ``restore``, else (``restore_if_healthy``) as soon as its containers run and
are ready again, waiting for a pod in the middle of its restart at most ``RESTORE_SECONDS``; a pod whose
container crashes, or that is still not healthy then, stays drained (as after a failure), and so does every
pod under ``keep_false``; a pod that another run holds by then (a re-run that drained it again) is left to
that run. It changes nothing else: the pod's record still says the killed run's change is in progress, and
the next run resumes it (the rollout's sync puts back what is left). Then the guardian
exits; nothing of it outlives the restore. A kill of every process at once (a container torn down with
SIGKILL) stops the guardian too: the next run's sync is then the only way back.
"""

import json
import os
import time

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, podstate, poll, record
from ansible_collections.inplace.k8s.plugins.module_utils.process import detach

RESTORE_SECONDS = 60   # how long a pod killed mid-restart may take to be healthy again before it is put back
DONE = 'done'
# Container states after which a pod is not waited for: it will not get healthy by itself.
BROKEN = ('CrashLoopBackOff', 'ImagePullBackOff', 'ErrImagePull', 'InvalidImageName', 'CreateContainerError',
          'CreateContainerConfigError', 'RunContainerError')

_current = None


class Guardian:
    """The module's side: ``drained(pod, drainer, policy)`` before the drain write, ``settled(pod)`` after
    the pod was put back or left drained on purpose, ``done()`` at an orderly end."""

    def __init__(self, fd):
        self._fd = fd

    def _send(self, line):
        if self._fd is None:
            return
        try:
            os.write(self._fd, (line + '\n').encode('utf-8'))
        except OSError:
            self._fd = None   # the guardian is gone: the run goes on without it

    def drained(self, pod, drainer, policy='restore_if_healthy', run=None):
        """``run``: the id of the run that drains (record owner); a pod another run holds later is left to it."""
        self._send(json.dumps({'namespace': podstate.meta(pod, 'namespace'), 'name': podstate.meta(pod, 'name'),
                               'uid': podstate.meta(pod, 'uid'), 'mode': drainer.mode, 'drain': drainer.name,
                               'policy': policy, 'run': run}, sort_keys=True))

    def settled(self, pod):
        self._send(json.dumps({'settled': '%s/%s' % (podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'))}))

    def done(self):
        self._send(DONE)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def current():
    """The guardian of this process, or None (no drain asked, check mode, or it could not start)."""
    return _current


def start(connect):
    """Fork the guardian (``connect()``: the Kubernetes client it uses, made only when it has pods to put
    back). Call it before any thread starts. Returns once the guardian is out of the module's process group
    (a kill of the group right after cannot take it along): the module's Guardian, also returned by
    current(); None when it could not start (the run goes on without it)."""
    global _current
    read_fd, write_fd = os.pipe()
    if detach.fork(lambda: serve(read_fd, connect), child_closes=(write_fd,), parent_closes=(read_fd,)) is None:
        os.close(write_fd)
        return None
    _current = Guardian(write_fd)
    return _current


def stop():
    """An orderly end of the module: the guardian exits without touching any pod."""
    global _current
    if _current is not None:
        _current.done()
        _current = None


def serve(read_fd, connect, clock=time.monotonic, sleep=time.sleep):
    """Read what the module says until the pipe closes; without ``done``, put back the pods still drained.
    The pods it put back (namespace/name)."""
    drained = {}
    buffered = b''
    with os.fdopen(read_fd, 'rb', buffering=0) as pipe:
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            buffered += chunk
            *lines, buffered = buffered.split(b'\n')
            for line in lines:
                text = line.decode('utf-8')
                if text == DONE:
                    return []
                entry = json.loads(text)
                if 'settled' in entry:
                    drained.pop(entry['settled'], None)
                else:
                    drained['%s/%s' % (entry['namespace'], entry['name'])] = entry
    if not drained:
        return []
    return restore(connect(), list(drained.values()), clock, sleep)


def restore(kube, entries, clock=time.monotonic, sleep=time.sleep, seconds=RESTORE_SECONDS):
    """Put back the pods of ``entries`` (what drained() sent) that are still drained by this run's drain,
    each as its policy says (module docstring). The pods put back (namespace/name)."""
    pending = dict(('%s/%s' % (e['namespace'], e['name']), e) for e in entries if e.get('policy') != 'keep_false')
    restored = []

    def attempt():
        """One pass over the pods still pending; are they all settled?"""
        for key, entry in sorted(pending.items()):
            try:
                pod = kube.get_pod(entry['namespace'], entry['name'])
            except NotFoundError:
                pending.pop(key)
                continue
            except ApiError:
                continue   # tried again until the deadline
            drainer = drain.drainer_for(entry['mode'], entry['drain'])
            if podstate.meta(pod, 'uid') != entry['uid'] or not drainer.left_drained(pod) or \
                    taken_over(pod, entry.get('run')):
                pending.pop(key)   # replaced, put back by someone else, or drained again by a run started since
                continue
            if entry.get('policy') != 'restore' and broken(pod):
                pending.pop(key)   # it fails: left drained, as after a failure
                continue
            if entry.get('policy') == 'restore' or podstate.containers_healthy(pod):
                try:
                    drainer.set(kube, pod, True)
                except ApiError:
                    continue
                pending.pop(key)
                restored.append(key)
        return not pending

    if pending:
        poll.until(attempt, seconds, clock=clock, sleep=sleep)
    return restored


def taken_over(pod, run):
    """Another live run than ``run`` holds one of the pod's records (a re-run started after the kill drains it
    now): record.holder from the side of the killed run, whose own records hold nothing against it."""
    killed = record.new_owner(run_id=run or 'unknown')
    return any(record.holder(rec, killed) is not None for rec in record.records(pod).values())


def broken(pod):
    """A container of the pod waits in a state it does not leave by itself (crash loop, image not pulled)."""
    return any(((i.status.get('state') or {}).get('waiting') or {}).get('reason') in BROKEN
               for i in podstate.containers(pod) if i.kind != podstate.INIT)
