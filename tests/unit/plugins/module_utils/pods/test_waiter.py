# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import threading
import time

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import PodFailure, WaitTimeout
from ansible_collections.inplace.k8s.plugins.module_utils.pods import departure, waiter
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import wait_until


def version(pod, rv):
    pod = copy.deepcopy(pod)
    pod['metadata']['resourceVersion'] = str(rv)
    return pod


class StreamingKube(object):
    """list_collection returns the initial pods; watch_collection yields events pushed by the test."""

    def __init__(self, pods):
        self.pods = pods
        self.events = []
        self.ready = threading.Condition()
        self.watches = []
        self.lists = 0

    def list_collection(self, path, label_selector=None, field_selector=None):
        assert path == '/api/v1/namespaces/shop/pods'
        self.lists += 1
        return copy.deepcopy(self.pods), '100'

    def push(self, kind, obj):
        with self.ready:
            self.events.append({'type': kind, 'object': obj})
            self.ready.notify_all()

    def watch_collection(self, path, resource_version, label_selector=None, field_selector=None,
                         timeout_seconds=60):
        self.watches.append(resource_version)
        while True:
            with self.ready:
                if not self.events:
                    self.ready.wait(0.05)
                if not self.events:
                    return
                event = self.events.pop(0)
            yield event


def test_one_watch_feeds_many_waiters(web_pod):
    kube = StreamingKube([web_pod])
    watcher = waiter.PodWatcher(kube, 'shop', 'app=web').start()
    results = []

    def wait(label):
        results.append((label, watcher.wait_for(
            'web-0', lambda p: p['metadata'].get('labels', {}).get('phase') == 'two', timeout=5)['metadata']['resourceVersion']))
    threads = [threading.Thread(target=wait, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    changed = version(web_pod, 101)
    changed['metadata']['labels']['phase'] = 'two'
    kube.push('MODIFIED', changed)
    for thread in threads:
        thread.join(5)
    watcher.stop()
    assert sorted(results) == [(0, '101'), (1, '101'), (2, '101')]
    assert kube.lists == 1 and kube.watches[0] == '100'


def test_failure_stops_early_and_deleted_pod_is_none(web_pod):
    kube = StreamingKube([web_pod])
    watcher = waiter.PodWatcher(kube, 'shop').start()
    kube.push('DELETED', version(web_pod, 102))

    def failed(pod):
        reason = departure.departure(pod, web_pod['metadata']['uid'])
        return PodFailure('web-0', *reason) if reason else None
    with pytest.raises(PodFailure) as caught:
        watcher.wait_for('web-0', lambda p: False, failed, timeout=5)
    watcher.stop()
    assert caught.value.reason == 'deleted'


def test_timeout(web_pod):
    times = iter([0, 10])
    watcher = waiter.PodWatcher(StreamingKube([web_pod]), 'shop', clock=lambda: next(times))
    watcher._replace([web_pod], '100')
    with pytest.raises(WaitTimeout):
        watcher.wait_for('web-0', lambda p: False, timeout=5)


def test_gone_watch_relists(web_pod):
    kube = StreamingKube([web_pod])
    watcher = waiter.PodWatcher(kube, 'shop')
    watcher._replace([web_pod], '100')
    assert watcher._apply({'type': 'ERROR', 'object': {'code': 410, 'message': 'too old'}}) == 'relist'
    assert watcher._apply({'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': '150'}}}) is None
    assert watcher._version == '150'


def test_versions_are_ordered_by_the_watch_never_as_numbers(web_pod):
    # opaque versions whose numeric or lexical order would mislead: only the watch's order counts
    watcher = waiter.PodWatcher(StreamingKube([]), 'shop')

    def rv(name):
        return watcher.get(name)['metadata']['resourceVersion']
    watcher._replace([version(web_pod, 'x9')], 'x9')
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, 'x10')})
    watcher.observe(version(web_pod, 'x9'))          # the caller's copy from the list: older
    assert rv('web-0') == 'x10'
    watcher.observe(version(web_pod, 'a1'))          # the answer of our write: ahead of the watch
    assert rv('web-0') == 'a1'
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, 'zz')})   # another writer's, before ours
    assert rv('web-0') == 'a1'
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, 'a1')})   # the watch reaches ours
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, 'b')})
    assert rv('web-0') == 'b'
    assert watcher.freshest(version(web_pod, 'zz'))['metadata']['resourceVersion'] == 'b'
    watcher.observe(version(web_pod, 'q'))
    watcher._replace([version(web_pod, 'r')], 'r')    # a relist is at least as new as any write
    assert rv('web-0') == 'r'


def test_a_pod_of_another_uid_is_not_taken_from_the_caller(web_pod):
    watcher = waiter.PodWatcher(StreamingKube([]), 'shop')
    watcher._replace([version(web_pod, '1')], '1')
    other = version(web_pod, '7')
    other['metadata']['uid'] = 'another'
    assert watcher.freshest(other) is other and watcher.get('web-0')['metadata']['uid'] == web_pod['metadata']['uid']


def test_a_bookmark_moves_the_version_and_wakes_nobody(web_pod):
    watcher = waiter.PodWatcher(StreamingKube([]), 'shop')
    watcher._replace([web_pod], '100')
    woken = []
    watcher._wake = lambda name=None: woken.append(name)
    watcher._apply({'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': 'bm'}}})
    assert watcher._version == 'bm' and woken == []


def test_after_410_gone_a_relist_shows_waiters_what_changed_meanwhile(web_pod):
    kube = StreamingKube([web_pod])
    watcher = waiter.PodWatcher(kube, 'shop').start()
    changed = version(web_pod, 'later')
    changed['metadata']['labels']['phase'] = 'two'
    kube.pods = [changed]                      # the change happens while the watch is too old
    kube.push('ERROR', {'code': 410, 'message': 'too old resource version'})
    pod = watcher.wait_for('web-0', lambda p: p['metadata']['labels'].get('phase') == 'two', timeout=5)
    watcher.stop()
    assert pod['metadata']['resourceVersion'] == 'later' and kube.lists == 2


def test_a_watch_that_ends_silently_is_resumed_from_the_last_version(web_pod):
    kube = StreamingKube([web_pod])
    watcher = waiter.PodWatcher(kube, 'shop').start()
    kube.push('MODIFIED', version(web_pod, 'v1'))
    watcher.wait_for('web-0', lambda p: p['metadata']['resourceVersion'] == 'v1', timeout=5)
    # the stream ends (a stalled connection given up by the read timeout): a new watch from v1
    resumed = wait_until(lambda: 'v1' in kube.watches)
    watcher.stop()
    assert resumed and kube.lists == 1


def test_an_event_wakes_only_the_waiters_of_its_pod(web_pod):
    other = version(web_pod, 50)
    other['metadata']['name'] = 'web-1'
    kube = StreamingKube([web_pod, other])
    watcher = waiter.PodWatcher(kube, 'shop', 'app=web').start()
    checks = {'web-0': 0, 'web-1': 0}
    done = threading.Event()

    def waiting(name):
        def check(pod):
            checks[name] += 1
            return pod['metadata'].get('labels', {}).get('phase') == 'two'
        try:
            watcher.wait_for(name, check, timeout=1)
        except WaitTimeout:
            pass
        if name == 'web-0':
            done.set()
    threads = [threading.Thread(target=waiting, args=(n,)) for n in ('web-0', 'web-1')]
    for thread in threads:
        thread.start()
    for rv in range(101, 111):   # ten events of web-0 only
        changed = version(web_pod, rv)
        changed['metadata']['labels']['phase'] = 'one'
        kube.push('MODIFIED', changed)
    final = version(web_pod, 111)
    final['metadata']['labels']['phase'] = 'two'
    kube.push('MODIFIED', final)
    done.wait(5)
    watcher.stop()
    for thread in threads:
        thread.join(5)
    assert checks['web-0'] >= 2
    assert checks['web-1'] <= 3   # first check, stop(), its timeout: never woken by web-0's 11 events


def test_changes_names_what_changed_since_and_says_when_it_cannot_tell(web_pod, monkeypatch):
    other = version(web_pod, 50)
    other['metadata']['name'] = 'web-1'
    watcher = waiter.PodWatcher(StreamingKube([]), 'shop')
    watcher._replace([version(web_pod, '1'), other], '50')
    serial, names = watcher.changes(None)
    assert names is None                                   # a first reader reads everything
    assert watcher.changes(serial) == (serial, [])
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, '2')})
    watcher._apply({'type': 'BOOKMARK', 'object': {'metadata': {'resourceVersion': '3'}}})   # not a change
    watcher.observe(version(web_pod, '4'))                 # our write's answer
    watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, 'zz')})   # the watch is behind it: kept out
    watcher._apply({'type': 'DELETED', 'object': version(other, '5')})
    later, names = watcher.changes(serial)
    assert names == ['web-0', 'web-0', 'web-1'] and later == serial + 3
    watcher._replace([version(web_pod, '6')], '6')         # a new list: every pod may have changed
    assert watcher.changes(later)[1] is None
    serial = watcher.changes(None)[0]
    monkeypatch.setattr(waiter, 'LOG_LENGTH', 2)
    for rv in ('7', '8', '9'):
        watcher._apply({'type': 'MODIFIED', 'object': version(web_pod, rv)})
    assert watcher.changes(serial)[1] is None               # the log was cut after 2: read everything again
    assert watcher.changes(watcher.changes(None)[0])[1] == []


class BrokenStreamKube(StreamingKube):
    """A watch whose stream raises something other than an API error (a bug, an answer that cannot be read)."""

    def watch_collection(self, path, resource_version, label_selector=None, field_selector=None,
                         timeout_seconds=60):
        self.watches.append(resource_version)
        raise KeyError('object')


@pytest.mark.filterwarnings('ignore::pytest.PytestUnhandledThreadExceptionWarning')   # tests/unit/plugins/conftest.py
def test_a_watch_that_dies_on_another_exception_fails_its_waiters_at_once(web_pod):
    watcher = waiter.PodWatcher(BrokenStreamKube([web_pod]), 'shop').start()
    began = time.monotonic()
    with pytest.raises(waiter.WatchFailed) as failed:
        watcher.wait_for('web-0', lambda p: False, timeout=60)
    assert time.monotonic() - began < waiter.WAKE_SECONDS   # woken by the failure, not by a re-check or the timeout
    watcher._thread.join(5)   # its end (raised again there by tests/unit/plugins/conftest.py) belongs to this test
    assert "the watch of /api/v1/namespaces/shop/pods ended: KeyError: 'object'" in str(failed.value)
    assert isinstance(failed.value.__cause__, KeyError)
    with pytest.raises(waiter.WatchFailed):   # and so does every later wait
        watcher.hold('web-0', lambda p: None, 60)
    assert watcher.wait_for('web-0', lambda p: True)['metadata']['name'] == 'web-0'   # what is cached still counts
