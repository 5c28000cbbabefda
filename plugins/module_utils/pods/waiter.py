# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Waiting on many pods (or other objects) with one watch.

``Watcher`` lists one collection (``path``: the pods of a namespace, its ContainerRecreateRequests,
anything with list and watch) + selector once, then keeps a single watch open in a background thread
and caches the latest version of each object, by name; ``PodWatcher`` is the watcher of a namespace's
pods. Any number of threads wait on it with ``wait_for(name, done, failed, timeout)``: ``done(pod)`` is a pure predicate, ``failed(pod)``
returns a PodFailure (or None) to stop early. No per-pod polling, and an event wakes only the
waiters of its pod (100 waiters and 400 events: 400 checks, not 40,000).

resourceVersion is opaque (API conventions): it is never compared as a number. What is newer is
told by the order of one watch's events. A version the caller offers (``observe``: the answer of a
write) that the watch has not delivered yet is *ahead*: it is kept until the watch delivers that
version (older events of the pod are then not shown), and a relist (after 410 Gone) replaces it.
A version the watch already delivered is older than (or the same as) the cached one.

A half-open watch (no bytes, no FIN, as after a NAT or load-balancer timeout) cannot hang: each watch
asks the server to end it after WATCH_SECONDS (``timeoutSeconds``; bookmarks are asked for too), and
the client's read timeout is tied to that (client.Kube.stream: a silence longer than timeoutSeconds +
client.WATCH_READ_MARGIN ends the stream), after which the watch is resumed from the last version.

A watch fails loudly: an API error is retried (with backoff; a 410 Gone relists), and any other exception
(a bug, an answer that cannot be read) ends the watch and reaches every waiter at once as a WatchFailed that
names the watch and the cause, instead of leaving them to time out.
"""

import threading
import time
from collections import deque

from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import Kube, backoff_delay
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, WaitTimeout, relist_or_raise
from ansible_collections.inplace.k8s.plugins.module_utils.args import WAIT_TIMEOUT
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

WATCH_SECONDS = 30   # the server ends each watch after this; it is then resumed from the last version
WAKE_SECONDS = 5     # waiters re-check at least this often (deadlines, watch errors)
GONE = 410
LOG_LENGTH = 100000  # changes kept for changes(); a reader further behind reads the whole cache again
HISTORY = 64         # versions of each pod the watch delivered that are remembered (to recognise old ones)


class WatchFailed(ApiError):
    """The watch thread of a Watcher ended on an exception other than an API error: its waiters cannot be fed."""


class Watcher:
    """One watch per collection + selector feeding per-object predicates."""

    noun = 'object'   # in messages

    def __init__(self, kube, path, label_selector=None, field_selector=None, clock=time.monotonic):
        self._kube = kube
        self._path = path
        self._selectors = {'label_selector': label_selector, 'field_selector': field_selector}
        self._clock = clock
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)   # guards the cache
        self._waiters = {}                     # pod name -> [Condition on the same lock], one per waiter
        self._pods = {}
        self._seen = {}                        # pod name -> deque of resourceVersions the watch delivered
        self._ahead = {}                       # pod name -> resourceVersion offered and not yet delivered
        self._departed = {}                    # pod name -> its last version, when the watch saw it deleted
        self._version = None
        self._log, self._logged = [], 0          # names of the cached pods changed, and how many changes in all
        self._stopped = threading.Event()
        self._thread = None
        self._fault = None                     # the WatchFailed that ended the watch thread, or None
        self.errors = 0

    # ---- lifecycle

    def start(self, pods=None, resource_version=None):
        """Fill the cache (from ``pods`` listed by the caller at ``resource_version``, or a fresh
        list) and start watching from there."""
        if pods is None or not resource_version:
            pods, resource_version = self._kube.list_collection(self._path, **self._selectors)
        self._replace(pods, resource_version)
        self._thread = threading.Thread(target=self._main, name='inplace-k8s-watch-%s' % self._path)
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

    def departed(self, name):
        """The last version of an object the watch saw deleted (why it went), or None."""
        with self._cond:
            return self._departed.get(name)

    def items(self):
        """The latest version seen of every object the watch has (a list, a copy)."""
        with self._cond:
            return list(self._pods.values())

    def changes(self, since):
        """(serial, names): the names of the objects whose cached version changed (or went) since serial
        ``since`` of an earlier call, in order, with the serial to ask from next; names is None when the cache
        cannot tell (``since`` None, a new list since, or the log was cut)."""
        with self._cond:
            first = self._logged - len(self._log)
            if since is None or since < first:
                return self._logged, None
            return self._logged, self._log[since - first:]

    def wait_for(self, name, done, failed=None, timeout=WAIT_TIMEOUT):
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
                    if self._fault is not None:
                        raise self._fault
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise WaitTimeout('%s %s: timed out after %ss' % (self.noun, name, int(round(timeout))))
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
        """Offer a pod read or written by the caller: kept unless the watch already delivered that
        version (then the cached one is the same or newer) or the cache holds another pod of that name."""
        name, version = podstate.meta(pod, 'name'), podstate.meta(pod, 'resourceVersion')
        with self._cond:
            cached = self._pods.get(name)
            if cached is not None and podstate.meta(cached, 'uid') != podstate.meta(pod, 'uid'):
                return
            if not version or version in self._seen.get(name, ()) or (
                    cached is not None and podstate.meta(cached, 'resourceVersion') == version):
                return
            self._pods[name] = pod
            self._ahead[name] = version
            self._changed(name)
            self._wake(name)

    def freshest(self, pod):
        """The latest version known of ``pod`` (offered with observe first); ``pod`` itself when the
        cache has none or holds another pod (other uid) of that name."""
        self.observe(pod)
        latest = self.get(podstate.meta(pod, 'name'))
        if latest is None or podstate.meta(latest, 'uid') != podstate.meta(pod, 'uid'):
            return pod
        return latest

    def _changed(self, name=None):
        """Log a change of the cached ``name``, or of all (a new list: the log starts again; so it does when
        it is long, cut at LOG_LENGTH). The lock is held."""
        self._logged += 1
        if name is None or len(self._log) >= LOG_LENGTH:
            self._log = []
        else:
            self._log.append(name)

    def _remember(self, name, version):
        if version:
            self._seen.setdefault(name, deque(maxlen=HISTORY)).append(version)

    def _replace(self, pods, version):
        with self._cond:
            self._pods = {podstate.meta(p, 'name'): p for p in pods}
            self._ahead = {}   # a list is at least as new as anything written before it
            for name, pod in self._pods.items():
                self._remember(name, podstate.meta(pod, 'resourceVersion'))
            self._version = version
            self._changed()
            self._wake()

    def _apply(self, event):
        kind, obj = event.get('type'), event.get('object') or {}
        if kind == 'ERROR':
            return relist_or_raise(obj)
        with self._cond:
            version = podstate.meta(obj, 'resourceVersion')
            self._version = version or self._version
            if kind == 'BOOKMARK':
                return None   # only a newer version to resume from
            name = podstate.meta(obj, 'name')
            self._remember(name, version)
            if kind in ('ADDED', 'MODIFIED'):
                ahead = self._ahead.get(name)
                if ahead is not None and ahead != version:
                    return None   # the watch has not reached the version offered by observe() yet
                self._ahead.pop(name, None)
                self._pods[name] = obj
            elif kind == 'DELETED':
                self._ahead.pop(name, None)
                self._pods.pop(name, None)
                # Its last version says why it went (DisruptionTarget: pods/departure.py); one per name.
                self._departed[name] = obj
            self._changed(name)
            self._wake(name)
        return None

    def _wake(self, name=None):
        """Wake the waiters of one pod, or all (the lock is held)."""
        for key in [name] if name is not None else list(self._waiters):
            for waiter in self._waiters.get(key, ()):
                waiter.notify_all()

    def _main(self):
        try:
            self._run()
        except Exception as exc:   # noqa: BLE001 - any failure ends the watch and is raised in every waiter
            fault = WatchFailed('the watch of %s ended: %s: %s' % (self._path, type(exc).__name__, exc))
            fault.__cause__ = exc
            with self._cond:
                self._fault = fault
                self._wake()

    def _run(self):
        failures = 0
        while not self._stopped.is_set():
            try:
                for event in self._kube.watch_collection(self._path, self._version,
                                                         timeout_seconds=WATCH_SECONDS, **self._selectors):
                    failures = 0
                    if self._apply(event) == 'relist' or self._stopped.is_set():
                        break
                else:
                    continue
                if not self._stopped.is_set():
                    self._replace(*self._kube.list_collection(self._path, **self._selectors))
            except ApiError as exc:
                self.errors += 1
                failures += 1
                if exc.status == GONE:
                    self._version = None
                self._stopped.wait(backoff_delay(min(failures, 5)))
                if self._version is None and not self._stopped.is_set():
                    try:
                        self._replace(*self._kube.list_collection(self._path, **self._selectors))
                    except ApiError:
                        pass


class PodWatcher(Watcher):
    """The watcher of the pods of one namespace (+ selector)."""

    noun = 'pod'

    def __init__(self, kube, namespace, label_selector=None, field_selector=None, clock=time.monotonic):
        super().__init__(kube, Kube.pod_path(namespace), label_selector, field_selector, clock)
