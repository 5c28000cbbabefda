# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""config_changes: an ansible-rulebook event source that watches the ConfigMaps and Secrets of a namespace and emits
one event per object whose data changed, naming the workloads whose pod template uses it.

Arguments (validated like a module's; an unknown or ill-typed one stops the source with an error naming it):
  namespace         the namespace to watch (required).
  label_selector    only the objects with these labels (a Kubernetes label selector).
  kinds             ConfigMap, Secret or both (the default).
  debounce_seconds  quiet time after an object's last edit before its one event (default 2; 0 to 3600). A burst
                    of edits of one object gives one event, at most 10 debounce periods after the burst began.
  kubeconfig, context, host, api_key, validate_certs, ca_cert, client_cert, client_key, proxy, impersonate_*, ...:
                    the connection options of the collection's modules, with the same K8S_AUTH_* variables.

An event (a dict):
  {"config_change": {"kind": "ConfigMap", "name": "app-config", "namespace": "shop", "uid": ...,
   "resource_version": ..., "change": "modified" | "created", "keys": [the data keys that changed],
   "workloads": [{"kind": "Deployment", "name": "web", "containers": ["app"]}], "workload_count": 1}}

Not emitted: the objects listed at start, an edit that leaves data and binaryData as they were (labels,
annotations), a deletion. Only names travel: a Secret's values appear in no event and no log line; the source
keeps only a digest of each key's value to tell a changed key from an unchanged one.
"""

import asyncio
import copy
import hashlib
import logging
import os
import sys
import threading
import time

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

try:
    import ansible_collections.inplace.k8s.plugins.module_utils.args  # noqa: F401 pylint: disable=unused-import
except ImportError:
    # ansible-rulebook runs a source plugin by its path (runpy), and nothing puts the collections on sys.path: the
    # directory that holds ansible_collections/inplace/k8s/extensions/eda/plugins/event_source/ goes there.
    sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), *['..'] * 7)))

from ansible_collections.inplace.k8s.plugins.module_utils.args import AUTH_ARG_SPEC
from ansible_collections.inplace.k8s.plugins.module_utils.config import usage
from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import Kube, backoff_delay
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ConfigError, ForbiddenError, InplaceError, ValidationError, relist_or_raise,
)
from ansible_collections.inplace.k8s.plugins.module_utils.options import Connection

LOG = logging.getLogger(__name__)
GONE = 410
WATCH_SECONDS = 240          # timeoutSeconds of one watch request; the watch is then opened again
MAX_DEBOUNCE = 3600
BURST_PERIODS = 10           # a burst's event waits at most this many debounce periods after its first edit
QUICK_END = 1.0             # seconds: a watch that ends sooner without an event is retried after a backoff
MAX_FAILURES_SHIFT = 5       # backoff_delay(5): 16 s at most (before jitter) between attempts after errors
KINDS = {'ConfigMap': 'configmaps', 'Secret': 'secrets'}
WORKLOADS = (('Deployment', 'deployments'), ('StatefulSet', 'statefulsets'), ('DaemonSet', 'daemonsets'))
EVENT_KEY = 'config_change'

ARG_SPEC = dict(copy.deepcopy(AUTH_ARG_SPEC), **{
    'namespace': {'type': 'str', 'required': True},
    'label_selector': {'type': 'str'},
    'kinds': {'type': 'list', 'elements': 'str', 'choices': sorted(KINDS), 'default': sorted(KINDS)},
    'debounce_seconds': {'type': 'float', 'default': 2.0},
})


# --------------------------------------------------------------------------- arguments

def parse_args(args):
    """The validated arguments (a dict), fallbacks (K8S_AUTH_*) and defaults applied; ValueError naming each bad
    argument and the fix. No argument's value is shown (api_key, password and kubeconfig may be secrets)."""
    if not isinstance(args, dict):
        raise ValueError('inplace.k8s.config_changes: its arguments must be a mapping (namespace: NAME, ...)')
    result = ArgumentSpecValidator(ARG_SPEC).validate(args)
    errors = ['%s' % error for error in result.errors]
    params = result.validated_parameters
    if not errors:
        if not paths.is_namespace(params['namespace']):
            errors.append('namespace: %s is not a namespace name (a DNS label: lower-case letters, digits, "-")'
                          % paths.shown(params['namespace']))
        if not 0 <= params['debounce_seconds'] <= MAX_DEBOUNCE:
            errors.append('debounce_seconds: %s is out of range; give 0 to %d seconds'
                          % (params['debounce_seconds'], MAX_DEBOUNCE))
        if not params['kinds']:
            errors.append('kinds: empty; give ConfigMap, Secret or both')
    if errors:
        raise ValueError('inplace.k8s.config_changes: %s; nothing is watched' % '; '.join(errors))
    return params


# --------------------------------------------------------------------------- what changed

def digests(obj):
    """{key: digest of its value} of an object's data and binaryData (the values themselves are not kept)."""
    found = {}
    for field in ('data', 'binaryData'):
        for key, value in ((obj or {}).get(field) or {}).items():
            found['%s:%s' % (field, key)] = hashlib.sha256(str(value).encode('utf-8')).hexdigest()
    return found


def changed_keys(before, after):
    """The data keys whose value differs between two digests() (added, removed or changed), sorted."""
    return sorted({key.split(':', 1)[1] for key in set(before) | set(after) if before.get(key) != after.get(key)})


def _meta(obj, field):
    return ((obj or {}).get('metadata') or {}).get(field)


# --------------------------------------------------------------------------- who uses it

def consumers(template, kind, name):
    """Names of the containers of a pod template that use the object ``kind``/``name``, as the config rollout finds
    them (plugins/module_utils/config/usage.py: env[].valueFrom, envFrom, volumes and projected sources, subPath;
    the app containers and the sidecars, the containers a rollout_config can restart in place)."""
    spec = (template or {}).get('spec') or {}
    return [container for container, uses in usage.consumers(spec).items()
            if any(use.kind == kind and use.name == name for use in uses)]


def workloads_using(kube, namespace, kind, name):
    """[{kind, name, containers}] of the Deployments, StatefulSets and DaemonSets of ``namespace`` whose pod
    template uses the object, sorted by kind and name."""
    found = []
    for workload_kind, resource in WORKLOADS:
        items, _version = kube.list_collection(paths.api_path('apps/v1', resource, namespace))
        for item in items:
            containers = consumers((item.get('spec') or {}).get('template'), kind, name)
            if containers:
                found.append({'kind': workload_kind, 'name': _meta(item, 'name'), 'containers': containers})
    return sorted(found, key=lambda w: (w['kind'], w['name'] or ''))


# --------------------------------------------------------------------------- the watch (a thread per kind)

class Watch:
    """Lists the objects of one kind, then watches them from the list's resourceVersion, calling
    ``changed(kind, obj, change, keys)`` for each object whose data changed. A watch that expires (410) lists again
    and compares with what it knew, so an edit made meanwhile is still told; other errors are retried after a
    bounded backoff (backoff_delay, at most ~16 s); a refusal of the first list (403, bad connection) is fatal."""

    def __init__(self, kube, kind, namespace, label_selector, changed, stop, sleep=None):
        self.kube, self.kind, self.changed, self.stop = kube, kind, changed, stop
        self.path = paths.api_path('v1', KINDS[kind], namespace)
        self.selector = label_selector
        self.known = {}        # name -> digests of its data
        self.version = None
        self.failures = 0
        self.sleep = sleep or stop.wait

    def start(self):
        """The first list (in the caller's thread, so that a refusal stops the source at once)."""
        self._relist(initial=True)

    def _relist(self, initial=False):
        items, self.version = self.kube.list_collection(self.path, label_selector=self.selector)
        fresh = {}
        for obj in items:
            name = _meta(obj, 'name')
            fresh[name] = digests(obj)
            if not initial:
                self._compare(obj, fresh[name])
        self.known = fresh

    def _compare(self, obj, after):
        name = _meta(obj, 'name')
        before = self.known.get(name)
        self.known[name] = after
        keys = changed_keys(before or {}, after)
        if before is None or keys:
            self.changed(self.kind, obj, 'created' if before is None else 'modified', keys)

    def apply(self, event):
        """One watch event; 'relist' when the watch expired."""
        kind, obj = event.get('type'), event.get('object') or {}
        if kind == 'ERROR':
            return relist_or_raise(obj)
        self.version = _meta(obj, 'resourceVersion') or self.version
        if kind in ('ADDED', 'MODIFIED'):
            self._compare(obj, digests(obj))
        elif kind == 'DELETED':
            self.known.pop(_meta(obj, 'name'), None)
        return None

    def run(self):
        """Watch until ``stop`` is set."""
        while not self.stop.is_set():
            try:
                if self.version is None:
                    self._relist()
                opened, events = time.monotonic(), 0
                for event in self.kube.watch_collection(self.path, self.version, label_selector=self.selector,
                                                        timeout_seconds=WATCH_SECONDS):
                    self.failures, events = 0, events + 1
                    if self.stop.is_set():
                        return
                    if self.apply(event) == 'relist':
                        LOG.info('config_changes: the %s watch expired; listing again', self.kind)
                        self.version = None
                        break
                if not events and time.monotonic() - opened < QUICK_END:
                    # A watch that broke off at once, with nothing: the next one waits, as after an error.
                    self.failures += 1
                    self.sleep(backoff_delay(min(self.failures, MAX_FAILURES_SHIFT)))
            except InplaceError as exc:
                self.failures += 1
                if getattr(exc, 'status', None) == GONE:
                    self.version = None
                delay = backoff_delay(min(self.failures, MAX_FAILURES_SHIFT))
                LOG.warning('config_changes: watching %s failed (%s); again in %.1f s', self.kind, exc.msg, delay)
                self.sleep(delay)


# --------------------------------------------------------------------------- debounce and emit

class Debouncer:
    """Holds each object's change until ``seconds`` passed without another edit of it (at most BURST_PERIODS
    periods after the first), then calls ``emit(kind, obj, change, keys)`` once, with the last version, the
    first change (created stays created) and every key changed in the burst. Runs in the event loop."""

    def __init__(self, seconds, emit, loop, clock=time.monotonic):
        self.seconds, self.emit, self.loop, self.clock = seconds, emit, loop, clock
        self.pending = {}      # (kind, name) -> dict(obj, change, keys, first, timer)

    def touch(self, kind, obj, change, keys):
        key = (kind, _meta(obj, 'name'))
        now = self.clock()
        held = self.pending.get(key)
        if held is None:
            held = self.pending[key] = {'change': change, 'keys': set(), 'first': now, 'timer': None}
        else:
            held['timer'].cancel()
        held['obj'] = obj
        held['keys'].update(keys)
        delay = max(0.0, min(self.seconds, held['first'] + BURST_PERIODS * self.seconds - now))
        held['timer'] = self.loop.call_later(delay, self._fire, key)

    def _fire(self, key):
        held = self.pending.pop(key, None)
        if held is not None:
            self.emit(key[0], held['obj'], held['change'], sorted(held['keys']))

    def cancel(self):
        for held in self.pending.values():
            held['timer'].cancel()
        self.pending.clear()


def event_of(kind, obj, change, keys, workloads):
    """The event of one changed object: names only."""
    return {EVENT_KEY: {
        'kind': kind, 'name': _meta(obj, 'name'), 'namespace': _meta(obj, 'namespace'), 'uid': _meta(obj, 'uid'),
        'resource_version': _meta(obj, 'resourceVersion'), 'change': change, 'keys': list(keys),
        'workloads': workloads, 'workload_count': len(workloads)}}


def connect(params):
    """The collection's client, configured from the connection options as a module's is."""
    return Kube.connect(Connection.from_params(params), pool_size=4)


async def main(queue, args):
    """ansible-rulebook's entry point: put one event on ``queue`` per changed object, until cancelled."""
    # Over 50 lines on purpose: ansible-rulebook's entry point; its callbacks share the loop, the queue and
    # the stop event, and its shutdown reads in one place.
    params = parse_args(args)
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    try:
        kube = await asyncio.to_thread(connect, params)
    except (ConfigError, ValidationError) as exc:
        raise ValueError('inplace.k8s.config_changes: %s' % exc.msg) from None
    namespace = params['namespace']
    sending = set()

    async def send(kind, obj, change, keys):
        name = _meta(obj, 'name')
        try:
            workloads = await asyncio.to_thread(workloads_using, kube, namespace, kind, name)
        except InplaceError as exc:
            LOG.warning('config_changes: cannot list the workloads using %s/%s (%s); the event names none',
                        kind, name, exc.msg)
            workloads = []
        LOG.info('config_changes: %s %s/%s (keys %s) used by %s', change, kind, name, ', '.join(keys) or '-',
                 ', '.join('%s/%s' % (w['kind'], w['name']) for w in workloads) or 'no workload')
        await queue.put(event_of(kind, obj, change, keys, workloads))

    def emit(*change):
        task = loop.create_task(send(*change))
        sending.add(task)
        task.add_done_callback(sending.discard)

    debouncer = Debouncer(params['debounce_seconds'], emit, loop)

    def changed(*change):
        loop.call_soon_threadsafe(debouncer.touch, *change)

    watches = [Watch(kube, kind, namespace, params['label_selector'], changed, stop) for kind in params['kinds']]
    try:
        for watch in watches:
            await asyncio.to_thread(watch.start)
    except (ForbiddenError, ConfigError, ValidationError) as exc:
        raise ValueError('inplace.k8s.config_changes: cannot list in namespace %s: %s' % (namespace, exc.msg)) from None
    threads = [threading.Thread(target=watch.run, name='config_changes-%s' % watch.kind, daemon=True)
               for watch in watches]
    for thread in threads:
        thread.start()
    LOG.info('config_changes: watching %s in namespace %s', ', '.join(params['kinds']), namespace)
    try:
        while all(thread.is_alive() for thread in threads):
            await asyncio.sleep(1)
        raise RuntimeError('inplace.k8s.config_changes: a watch thread ended unexpectedly')
    finally:
        stop.set()
        debouncer.cancel()
