# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure: the record of the restarts a run plans, so that they can be told from crashes (docs/events.md).

Every write of a change that restarts a container (an image change, a resize with RestartContainer, a restart of
container_recreate, rollout_restart or rollout_config) adds, in the same guarded patch:

- ``inplace.k8s/restarts``: ``{"uid": <pod uid>, "containers": {<container>: {"count": n, "reason": ..., "run":
  ..., "at": ...}}}`` - per container how many restarts runs planned, and the last one's reason, run and time;
- ``inplace.k8s/planned-restarts``: the pod's total count as a plain number, the one value kube-state-metrics can
  expose for an alert rule (docs/events.md).

A record whose uid is not the pod's (copied from a template, or by hand) counts as none: the counts start again."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record

ANNOTATION = 'inplace.k8s/restarts'
TOTAL_ANNOTATION = 'inplace.k8s/planned-restarts'
MAX_REASON = 200
MAX_CONTAINERS = 64


def read(pod):
    """{container: {count, reason, run, at}} of ``pod`` ({} when none, unreadable, or of another pod)."""
    rec = record.decode(pod, ANNOTATION) or {}
    if rec.get('uid') != podstate.meta(pod, 'uid') or not isinstance(rec.get('containers'), dict):
        return {}
    return dict((name, entry) for name, entry in rec['containers'].items() if isinstance(entry, dict))


def count(entry):
    value = (entry or {}).get('count')
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def planned(pod, reasons, run, now=None):
    """The restart record of ``pod`` after the restarts ``reasons`` ({container: why}) of run ``run``, and the
    pod's total: (record, total)."""
    containers = read(pod)
    now = now or record.timestamp()
    for name, why in reasons.items():
        containers[name] = {'count': count(containers.get(name)) + 1, 'reason': str(why or 'restart')[:MAX_REASON],
                            'run': run, 'at': now}
    kept = dict((name, containers[name]) for name in sorted(containers)[:MAX_CONTAINERS])
    return {'uid': podstate.meta(pod, 'uid'), 'containers': kept}, sum(count(e) for e in kept.values())


def patch_ops(pod, reasons, run, now=None):
    """JSON patch operations writing the record (after the guarded record write of pods/record.build_patch,
    which creates the annotations map): [] when nothing restarts."""
    if not reasons:
        return []
    rec, total = planned(pod, reasons, run, now)
    return [{'op': 'add', 'path': record.pointer('metadata', 'annotations', ANNOTATION), 'value': record.dump(rec)},
            {'op': 'add', 'path': record.pointer('metadata', 'annotations', TOTAL_ANNOTATION), 'value': str(total)}]
