# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The nodes of the pods in flight, looked at while their changes are waited for: a pod whose node stops (its
kubelet stops posting status: Ready turns Unknown after the node-monitor grace period, 40 s by default) sends no
event of its own until the taint manager evicts it (300 s by default), so a wait learns of it here and fails
naming the node's condition instead of waiting out wait_timeout (docs/rollouts.md "When pods go away").

One thread GETs each followed node every ``interval`` seconds (nodes are cluster-scoped: the optional grant
``get nodes``; without it the run warns once and a lost node is seen when its pod's wait times out). A node not
found is left to the pod GC, which deletes its pods (a departure, pods/departure.py)."""

import threading
import time
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ApiError, ForbiddenError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.connection.paths import api_path

INTERVAL = 10   # seconds between two looks at the followed nodes


class NodeHealth:
    """``follow(node)`` while a pod on it is waited for, ``unfollow(node)`` after; ``trouble(node)``: why the node
    is not Ready (its Ready condition), or None. No I/O in trouble(): waits call it under their watch's lock."""

    def __init__(self, kube, interval=INTERVAL, warn=None, clock=time.monotonic):
        self.kube, self.interval, self.clock = kube, interval, clock
        self.warn = warn or (lambda message: None)
        self._followed = {}   # node -> number of pods waited for on it
        self._trouble = {}    # node -> why it is not Ready
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = None
        self._denied = False

    def follow(self, node):
        if not node or self._denied:
            return
        with self._lock:
            self._followed[node] = self._followed.get(node, 0) + 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='inplace-nodes', daemon=True)
                self._thread.start()

    def unfollow(self, node):
        with self._lock:
            if node in self._followed:
                self._followed[node] -= 1
                if self._followed[node] <= 0:
                    del self._followed[node]

    def trouble(self, node):
        with self._lock:
            return self._trouble.get(node)

    def stop(self):
        self._stopped.set()

    def _run(self):
        while not self._stopped.wait(self.interval):
            with self._lock:
                nodes = sorted(self._followed)
            for node in nodes:
                if self._stopped.is_set() or not self.look(node):
                    return

    def look(self, node):
        """Read ``node`` once and file its trouble; False when nodes may not be read (stop looking)."""
        try:
            obj = self.kube.request('GET', api_path('v1', 'nodes', name=node))
        except ValidationError:
            return True   # not a node name the API would have: nothing to read
        except ForbiddenError:
            self._denied = True
            self.warn('nodes cannot be read (get nodes is not granted): a pod whose node stops during its change is '
                      'seen only when its wait times out; grant it with the optional role in rbac/ to have it named '
                      'within about a minute')
            return False
        except ApiError:
            return True   # not found (the pod GC deletes its pods) or unreachable: nothing to say now
        why = not_ready(obj)
        with self._lock:
            if why:
                self._trouble[node] = why
            else:
                self._trouble.pop(node, None)
        return True


def not_ready(node):
    """Why a node object is not Ready (its Ready condition), or None."""
    for item in (node.get('status') or {}).get('conditions') or []:
        if item.get('type') == 'Ready':
            if item.get('status') == 'True':
                return None
            return 'node %s is not ready: Ready=%s%s since %s' % (
                (node.get('metadata') or {}).get('name'), item.get('status'),
                ' (%s%s)' % (item.get('reason') or '', ': %s' % item['message'] if item.get('message') else '')
                if item.get('reason') or item.get('message') else '', item.get('lastTransitionTime') or '?')
    return None
