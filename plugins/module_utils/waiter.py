# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Waiting on many pods with one watch.

``PodWatcher`` lists the pods of one namespace + selector once, then keeps a single watch open
in a background thread and caches the latest version of each pod. Any number of threads wait on
it with ``wait_for(name, done, failed, timeout)``: ``done(pod)`` is a pure predicate, ``failed(pod)``
returns a PodFailure (or None) to stop early. No per-pod polling, and an event wakes only the
waiters of its pod (100 waiters and 400 events: 400 checks, not 40,000).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import threading
import time

from ansible_collections.inplace.k8s.plugins.module_utils import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.client import backoff_delay
from ansible_collections.inplace.k8s.plugins.module_utils.errors import ApiError, WaitTimeout

WATCH_SECONDS = 30   # the server ends each watch after this; it is then resumed from the last version
WAKE_SECONDS = 5     # waiters re-check at least this often (deadlines, watch errors)
GONE = 410


class PodWatcher(object):
    """One watch per namespace + selector feeding per-pod predicates."""

    def __init__(self, kube, namespace, label_selector=None, field_selector=None, clock=time.monotonic):
        self._kube = kube
        self._namespace = namespace
        self._selectors = {'label_selector': label_selector, 'field_selector': field_selector}
        self._clock = clock
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)   # guards the cache
        self._waiters = {}                     # pod name -> [Condition on the same lock], one per waiter
        self._pods = {}
        self._version = None
        self._stopped = threading.Event()
        self._thread = None
        self.errors = 0

    # ---- lifecycle

    def start(self, pods=None, resource_version=None):
        """Fill the cache (from ``pods`` listed by the caller at ``resource_version``, or a fresh
        list) and start watching from there."""
        if pods is None or not resource_version:
            pods, resource_version = self._kube.list_pods(self._namespace, **self._selectors)
        self._replace(pods, resource_version)
        self._thread = threading.Thread(target=self._run, name='inplace-k8s-watch-%s' % self._namespace)
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self):
        self._stopped.set()
        with self._cond:
            self._wake()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    # ---- reading

    def get(self, name):
        """The latest version seen of a pod, or None if it is gone."""
        with self._cond:
            return self._pods.get(name)

    def wait_for(self, name, done, failed=None, timeout=300):
        """Block until ``done(pod)``; raise what ``failed(pod)`` returns, or WaitTimeout.

        ``failed`` also sees None when the pod is gone; ``done`` only sees pods.
        """
        deadline = self._clock() + timeout
        with self._cond:
            mine = threading.Condition(self._lock)   # woken by events of this pod, relists and stop()
            self._waiters.setdefault(name, []).append(mine)
            try:
                while True:
                    pod = self._pods.get(name)
                    failure = failed(pod) if failed is not None else None
                    if failure is not None:
                        raise failure
                    if pod is not None and done(pod):
                        return pod
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise WaitTimeout('pod %s: timed out after %ss' % (name, int(round(timeout))))
                    mine.wait(min(remaining, WAKE_SECONDS))
            finally:
                self._waiters[name].remove(mine)
                if not self._waiters[name]:
                    del self._waiters[name]

    def hold(self, name, failed, seconds):
        """Watch a pod for ``seconds``: raise what ``failed(pod)`` returns meanwhile, else return
        the latest version of the pod."""
        try:
            self.wait_for(name, lambda pod: False, failed, seconds)
        except WaitTimeout:
            pass  # the expected outcome: nothing failed in time
        return self.get(name)

    # ---- feeding

    def observe(self, pod):
        """Offer a pod read or written by the caller (kept if newer than the cached one)."""
        name = podstate.meta(pod, 'name')
        with self._cond:
            if podstate.is_newer(pod, self._pods.get(name)):
                self._pods[name] = pod
                self._wake(name)

    def _replace(self, pods, version):
        with self._cond:
            self._pods = dict((podstate.meta(p, 'name'), p) for p in pods)
            self._version = version
            self._wake()

    def _apply(self, event):
        kind, obj = event.get('type'), event.get('object') or {}
        if kind == 'ERROR':
            if obj.get('code') == GONE:
                return 'relist'
            raise ApiError(obj.get('message') or 'watch error', status=obj.get('code') or 0)
        with self._cond:
            self._version = podstate.meta(obj, 'resourceVersion') or self._version
            name = podstate.meta(obj, 'name')
            if kind in ('ADDED', 'MODIFIED'):
                self._pods[name] = obj
            elif kind == 'DELETED':
                self._pods.pop(name, None)
            self._wake(name)
        return None

    def _wake(self, name=None):
        """Wake the waiters of one pod, or all (the lock is held)."""
        for key in [name] if name is not None else list(self._waiters):
            for waiter in self._waiters.get(key, ()):
                waiter.notify_all()

    def _run(self):
        failures = 0
        while not self._stopped.is_set():
            try:
                for event in self._kube.watch_pods(self._namespace, self._version,
                                                   timeout_seconds=WATCH_SECONDS, **self._selectors):
                    failures = 0
                    if self._apply(event) == 'relist' or self._stopped.is_set():
                        break
                else:
                    continue
                if not self._stopped.is_set():
                    self._replace(*self._kube.list_pods(self._namespace, **self._selectors))
            except ApiError as exc:
                self.errors += 1
                failures += 1
                if exc.status == GONE:
                    self._version = None
                self._stopped.wait(backoff_delay(min(failures, 5)))
                if self._version is None and not self._stopped.is_set():
                    try:
                        self._replace(*self._kube.list_pods(self._namespace, **self._selectors))
                    except ApiError:
                        pass
