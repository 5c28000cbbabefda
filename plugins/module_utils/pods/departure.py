# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: has a pod gone away, or is it going, and why, as the cluster says it (docs/rollouts.md "When pods go
away"). A pod that went away did not fail: it was deleted, evicted (the Eviction API: kubectl drain, an autoscaler,
a node upgrade), preempted, lost with its node, evicted by its kubelet under pressure, or removed by its
controller's scale-down. The API server or the kubelet first sets the condition DisruptionTarget with the reason
(1.26+); a deletion sets deletionTimestamp; the kubelet's pressure eviction ends the pod in phase Failed, reason
Evicted. Its containers then exit as SIGTERM makes them (code 0 is normal): that is not a failure of a change."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

EVICTED, DELETED, PREEMPTED, NODE_LOST, SCALED_DOWN, FAILED_EVICTED = (
    'evicted', 'deleted', 'preempted', 'node-lost', 'scaled-down', 'failed-evicted')
CAUSES = (EVICTED, DELETED, PREEMPTED, NODE_LOST, SCALED_DOWN, FAILED_EVICTED)
# When the pod went away, seen from the run: before its turn, while its change was in flight, after it was done.
BEFORE, IN_FLIGHT, AFTER = 'before', 'in_flight', 'after'

# DisruptionTarget reasons (k8s.io/api core/v1 constants) -> our cause.
_BY_REASON = {
    'EvictionByEvictionAPI': EVICTED,
    'PreemptionByScheduler': PREEMPTED,
    'PreemptionByKubeScheduler': PREEMPTED,
    'DeletionByTaintManager': NODE_LOST,
    'DeletionByPodGC': NODE_LOST,
    'TerminationByKubelet': FAILED_EVICTED,
}


def departure(pod, uid=None):
    """(cause, detail) when ``pod`` (None: not found any more) went away or is going, else None. ``uid``: the
    pod the run knew; another pod of the same name (a StatefulSet's replacement) means that one went away."""
    if pod is None:
        return DELETED, 'the pod was deleted'
    if uid and podstate.meta(pod, 'uid') != uid:
        return DELETED, 'the pod was deleted and replaced by its controller (uid %s -> %s)' % (
            uid, podstate.meta(pod, 'uid'))
    target = podstate.condition(pod, 'DisruptionTarget')
    status = pod.get('status') or {}
    if target is not None and target.get('status') == 'True':
        reason = target.get('reason') or 'DisruptionTarget'
        return _BY_REASON.get(reason, DELETED), _detail(reason, target.get('message'), pod)
    if podstate.phase(pod) == 'Failed' and status.get('reason') == 'Evicted':
        return FAILED_EVICTED, _detail('Evicted', status.get('message'), pod)
    if podstate.is_terminating(pod):
        return DELETED, 'deleted at %s' % podstate.meta(pod, 'deletionTimestamp')
    return None


def _detail(reason, message, pod):
    node = (pod.get('spec') or {}).get('nodeName')
    return '%s%s%s' % (reason, ': %s' % message.strip() if message and message.strip() else '',
                       ' (node %s)' % node if node else '')


def _last(watcher, name, uid=None):
    """The version of pod ``name`` (of ``uid``, when given) the watch saw deleted, or None."""
    last = getattr(watcher, 'departed', lambda _name: None)(name) if watcher is not None else None
    return last if last is not None and (not uid or podstate.meta(last, 'uid') == uid) else None


def of(watcher, name, uid=None, pod=None):
    """departure() of pod ``name`` as a watch has it (``pod``: its latest version, None when the watch saw it go):
    the version of ``uid`` the watch saw deleted tells why (its DisruptionTarget), else departure() of ``pod``."""
    if pod is None or (uid and podstate.meta(pod, 'uid') != uid):   # gone (or replaced under the same name)
        last = _last(watcher, name, uid)
        if last is not None:
            return departure(last) or (DELETED, 'the pod was deleted')
    return departure(pod, uid)


def gone_entry(watcher, name, when, uid=None, pod=None):
    """The ``gone`` entry of pod ``name`` (``uid``: the pod the run knew; ``pod``: its latest version, None when the
    watch saw it go) when it went away, else None: its node and cause from the last version the watch has."""
    left = of(watcher, name, uid, pod)
    if left is None:
        return None
    known = pod if pod is not None and (not uid or podstate.meta(pod, 'uid') == uid) else _last(watcher, name, uid)
    found = entry(known or {'metadata': {'name': name}}, left[0], left[1], when)
    found['uid'] = uid or found['uid']
    return found


def missing(watcher, name):
    """A ``gone`` entry for pod ``name`` that a run was to change and did not find any more (before its turn)."""
    return gone_entry(watcher, name, BEFORE)


def entry(pod, cause, detail, when):
    """A ``gone`` entry of a result: {name, uid, node, cause, detail, when}."""
    return {'name': podstate.meta(pod, 'name'), 'uid': podstate.meta(pod, 'uid'),
            'node': (pod.get('spec') or {}).get('nodeName'), 'cause': cause, 'detail': detail, 'when': when}
