# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: which containers of a pod a config rollout restarts, and why (docs/config-rollouts.md).

A container restarts for an object it uses (config/usage.py) when what it was given is not the object's data now:

- with a record on the pod (config/record.py) for the container and the object, when the recorded fingerprint
  differs from the object's now and the container started no later than the object's last change;
- without one, when the container started no later than the object's last change (config/record.py last_change:
  the newest managedFields time, else the creation; both have seconds resolution, so a container started in the
  same second as the change counts as started before it; so our restarts wait out that second: config/checks.py).

So a container the kubelet started after the change (a pod the controller created later, a crash restart) is
never restarted, and a record that matches the data restarts nothing even when the object was written again
without a change of its data (a label, an identical apply)."""

from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.config import record, usage
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

SECOND = 1.0   # the resolution of both times: a container started in the second of a change counts as started before it

# restarts: container -> why: [str]; given: {ref: fingerprint} of every object in scope it uses (its record once it
# runs them); changed: container -> [ref] of the objects it restarts for (the refs of ``restarts``, in its order).
PodConfig = namedtuple('PodConfig', 'restarts given changed', defaults=(None,))


def _started(pod, name):
    info = podstate.find_container(pod, name)
    status = info.status if info is not None else {}
    running = (status.get('state') or {}).get('running')
    return record.parse_time(running.get('startedAt')) if isinstance(running, dict) else None


def plan_pod(pod, objects, scope=None, cutoff=None):
    """PodConfig of ``pod``: ``objects`` {ref: object as read, or None when missing}; ``scope``: the refs to
    consider (None: every object the pod uses, rollout_config auto). A missing object restarts nothing (the
    kubelet keeps what it had; an optional reference has nothing). ``cutoff`` (a rollback of config_data: when the
    new data was written): a container started before it never ran the new data, so it runs the data written back
    and is given it without a restart."""
    recorded = record.read(pod)
    restarts, given, changed_refs = {}, {}, {}
    for name, uses in usage.consumers(pod.get('spec')).items():
        started = _started(pod, name)
        for kind, obj_name in sorted(set((use.kind, use.name) for use in uses)):
            ref = usage.ref(kind, obj_name)
            obj = objects.get(ref)
            if (scope is not None and ref not in scope) or not obj:
                continue
            now = record.fingerprint(obj, usage.keys_used(uses, kind, obj_name))
            given.setdefault(name, {})[ref] = now
            changed = record.last_change(obj)
            if started is None or changed is None or started > changed:
                continue   # not running (it starts with the data it finds), or started after the change
            if cutoff is not None and started < cutoff:
                continue   # started before the new data was written: it runs the data written back
            if recorded.get(name, {}).get(ref) == now:
                continue   # it was given this data (the record), the object was written since without a change
            how = '; '.join(usage.describe(use) for use in uses if (use.kind, use.name) == (kind, obj_name))
            changed_refs.setdefault(name, []).append(ref)
            restarts.setdefault(name, []).append('%s changed %s, container started %s (%s)' % (
                ref, changed.strftime('%Y-%m-%dT%H:%M:%SZ'), started.strftime('%Y-%m-%dT%H:%M:%SZ'), how))
    return PodConfig(restarts, given, changed_refs)


def to_record(pod, pod_config):
    """The record ``pod`` gets once its restarts are done: what each consumer runs now (None: nothing to write)."""
    return record.updated(pod, pod_config.given)
