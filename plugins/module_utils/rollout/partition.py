# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a partition means for each kind (docs/rollouts.md, "Partitions"), and the template values a rollout
starts from when an earlier run's partition left pods behind.

StatefulSet under RollingUpdate: as ``spec.updateStrategy.rollingUpdate.partition`` - the ordinals below N keep
their revision, the others are updated highest ordinal first (the controller's order), and a run that
finishes leaves the native partition N (the user's setting from then on). Not given, N is the StatefulSet's
own partition as the run found it, so that an in-place rollout keeps the pods a native update would keep.
A percentage rounds down and stays below the total (99% of 4 keeps 3 and moves 1, as OpenKruise's CloneSet).

StatefulSet under OnDelete: the controller ignores a partition; the ordinals below N are kept by this run, the
strategy stays OnDelete and no partition is written.

DaemonSet, Deployment, ReplicaSet, pods by label: no native partition - the last N pods of rollout_order stay on
the old version (batching.plan_batches), and are named in the result; a DaemonSet stays OnDelete while any
pod is left, a Deployment's pods left stay in its current ReplicaSet until something recreates them.
"""

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import NotFoundError
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.templates import change_ops, snapshot

NATIVE_ORDERS = ('ordinal', 'reverse_ordinal')   # orders a StatefulSet partition replaces by the controller's


def given(value):
    """Was a partition given (None and '' are 'not given'; 0 is a partition of 0)."""
    return value is not None and str(value).strip() != ''


def rolling(strategy):
    """Is this updateStrategy a RollingUpdate (the default)?"""
    return (strategy or {}).get('type', 'RollingUpdate') == 'RollingUpdate'


def native_partition(strategy):
    """The partition of a StatefulSet's updateStrategy (0 when none or OnDelete)."""
    if not rolling(strategy):
        return 0
    return ((strategy or {}).get('rollingUpdate') or {}).get('partition') or 0


def sts_count(value, saved, total):
    """StatefulSet: the number of lowest ordinals this run keeps - ``value`` (count or %, rounded down, a
    percentage below 100% always moves a pod) or, when not given, the partition of the user's strategy
    ``saved`` (what the controller would keep)."""
    if given(value):
        return min(batching.resolve_count(value, total, 'partition', round_up=False) or 0, total)
    return min(native_partition((saved or {}).get('updateStrategy')), total)


def split(ordered, count, order):
    """StatefulSet partition ``count``: (the pods to update, in the controller's order - highest ordinal first -
    unless ``order`` is node, label or name; the names of the pods kept: ordinals below ``count``)."""
    kept = [p for p in ordered if batching.ordinal(p) is not None and batching.ordinal(p) < count]
    names = set(podstate.meta(p, 'name') for p in kept)
    rest = [p for p in ordered if podstate.meta(p, 'name') not in names]
    if order in NATIVE_ORDERS:
        rest = batching.order_pods(rest, 'reverse_ordinal')
    return rest, sorted((podstate.meta(p, 'name') for p in kept), key=lambda n: batching.ordinal({'metadata': {'name': n}}))


def sts_partition_for(old_ordinals, replicas):
    """The RollingUpdate partition that keeps the controller away from pods left on the old
    revision: their count when they are exactly the lowest ordinals, else replicas (held)."""
    old = sorted(old_ordinals)
    if old == list(range(len(old))):
        return len(old)
    return replicas


def final_partition(saved, asked, old_ordinals, replicas):
    """The StatefulSet partition to leave: the one this run was asked for (``asked``; None: the user's ``saved``
    one), raised to protect pods left on the old revision (``old_ordinals``) when they are above it; and the
    warning to give when it had to be raised to replicas (those pods are not the lowest ordinals)."""
    base = saved if asked is None else asked
    old = list(old_ordinals or [])
    needed = 0
    if old:
        needed = replicas if None in old else sts_partition_for(old, replicas)
    if needed <= base:
        return base, None
    if needed >= replicas and (None in old or sorted(old) != list(range(replicas))):
        return replicas, ('pods left on the old revision are not the lowest ordinals: the partition stays at %d so '
                          'that the controller does not replace them' % replicas)
    return needed, None


def partition_note(kind, namespace, name, saved, final):
    """The message saying that the StatefulSet's partition is the user's setting now (None when unchanged)."""
    if final == saved:
        return None
    if not final:
        return ('%s %s/%s: spec.updateStrategy.rollingUpdate.partition is now 0 (rollout_partition; it was %d): the '
                'controller updates every ordinal again, as the partition is your setting' % (kind, namespace, name, saved))
    return ('%s %s/%s: spec.updateStrategy.rollingUpdate.partition is now %d (rollout_partition; it was %d): the '
            'controller keeps ordinals below %d on their revision, as after a native update; it is your setting '
            'from now on - a rollout with rollout_partition 0 (or kubectl patch) lowers it'
            % (kind, namespace, name, final, saved, final))


def before_values(workload, rec, images, resources):
    """The template values this rollout starts from (its record's ``before``: what a rollback restores and what
    pods a partition left run). The template's own, unless it already has the target: then an earlier run to
    the same target left pods behind (its record's ``before``), or, for a StatefulSet, the revision its
    controller still calls current (status.currentRevision's ControllerRevision)."""
    template = workload.template
    if change_ops(template, '', images, resources):
        return snapshot(template, images, resources)
    target = {'images': images, 'resources': resources}
    if rec.target == target and rec.before:
        return rec.before
    if workload.kind == 'StatefulSet':
        status = workload.obj.get('status') or {}
        current = status.get('currentRevision')
        if current and current != status.get('updateRevision'):
            try:
                revision = workload.kube.request('GET', workload.path('controllerrevisions', current))
            except NotFoundError:
                revision = None
            stored = (((revision or {}).get('data') or {}).get('spec') or {}).get('template')
            if stored:
                try:
                    return snapshot(stored, images, resources)
                except AttributeError:   # a container of the change is not in that revision
                    pass
    return snapshot(template, images, resources)


def outside(count, pods):
    """The pods a StatefulSet rollout is about: those its partition (``count``: the record's, None: none) does not
    keep. The kept pods run whatever revision they had; they are neither checked for another writer nor rolled
    back."""
    count = count or 0
    return [p for p in pods if batching.ordinal(p) is None or batching.ordinal(p) >= count]


def strategy_key(strategy):
    """What of an updateStrategy our releases set: its type and, under RollingUpdate, the partition."""
    strategy = strategy or {}
    return [strategy.get('type', 'RollingUpdate'), native_partition(strategy) if rolling(strategy) else None]


def protection(left, user):
    """The record's note of a release that left a strategy protecting pods on the old version (a StatefulSet's
    partition above the user's, a DaemonSet kept OnDelete): the key of what it left and the user's strategy.
    None when what it left is the user's own."""
    if strategy_key(left) == strategy_key(user):
        return None
    return {'left': strategy_key(left), 'user': {'updateStrategy': user}}


def user_strategy(workload, rec):
    """The strategy a new run saves as the user's: the workload's, unless it is exactly the protection that the
    last run of ours left (its record ``rec`` names it): then the user's strategy under it. So a protection never
    becomes the user's setting, and a run that leaves no pod behind ends it."""
    now = workload.saved_strategy()
    note = rec.protection
    if note and 'updateStrategy' in now and strategy_key(now['updateStrategy']) == note.get('left'):
        return note['user']
    return now
