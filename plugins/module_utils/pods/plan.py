# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure planning: a desired change + a pod -> per-container plan (unchanged / pending / update / refused,
with the reason). Generic over what changes: the operation passes a ``judge`` that compares one
container with its desired value; the rules that hold for every in-place change live here."""

from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate, record

UNCHANGED = 'unchanged'   # spec and status already at the desired value: nothing to do
PENDING = 'pending'       # spec already at the desired value, status not yet: no write, wait (resume)
UPDATE = 'update'         # a write is needed
REFUSED = 'refused'       # cannot be done in place; ``reason`` says why

Verdict = namedtuple('Verdict', 'action current restart reason')
"""What a judge says about one existing container: action, its current value, whether the change
restarts it, and a reason (for refusals, or a note)."""

ContainerPlan = namedtuple('ContainerPlan', 'name kind action reason current desired restart')


def verdict(action, current, restart=False, reason=None):
    return Verdict(action, current, restart, reason)


class PodPlan:
    """The plan for one pod: its container plans and, when refused as a whole, the reason."""

    def __init__(self, pod, containers, reason=None, transient=False):
        self.pod = pod
        self.containers = containers
        self.reason = reason
        # Refused only for now: the pod is Pending on its way to running (pods/departure.waits); a run with a watch
        # waits for it to run and plans it again.
        self.transient = transient

    @property
    def name(self):
        return podstate.meta(self.pod, 'name')

    @property
    def generation(self):
        return podstate.meta(self.pod, 'generation')

    @property
    def action(self):
        actions = set(c.action for c in self.containers)
        if self.reason or REFUSED in actions:
            return REFUSED
        for action in (UPDATE, PENDING):
            if action in actions:
                return action
        return UNCHANGED

    @property
    def refusal(self):
        """Why the pod is refused (pod-level reason or the container reasons), or None."""
        if self.reason:
            return self.reason
        reasons = ['%s: %s' % (c.name, c.reason) for c in self.containers if c.action == REFUSED]
        return '; '.join(reasons) or None

    def updates(self):
        return [c for c in self.containers if c.action == UPDATE]

    def to_wait(self):
        return [c for c in self.containers if c.action in (UPDATE, PENDING)]

    def desired(self):
        return {c.name: c.desired for c in self.containers}

    def retarget(self, values):
        """A copy whose containers named in ``values`` ({container: value}) have that desired value (the
        server stored something other than what was written: it is the target now)."""
        return PodPlan(self.pod, [c._replace(desired=values[c.name]) if c.name in values else c
                                  for c in self.containers], self.reason, self.transient)

    def same_targets(self, other):
        """Both plans would move the same containers from the same values: a re-read plan
        that differs means someone else changed what this plan was about."""
        def key(plan):
            return sorted((c.name, repr(c.current)) for c in plan.updates())
        return key(self) == key(other)


def pod_refusal(pod, updates=()):
    """Why no pod-level in-place change can be made now, or None.

    Pods broken by their image are fixed forward, not refused: a running pod whose containers crash
    (CrashLoopBackOff), and a scheduled pod still Pending because a container it changes cannot pull
    its image (ErrImagePull, ImagePullBackOff, InvalidImageName). Terminating, unscheduled and
    finished pods cannot change: the reason says which. A pod whose state record cannot be read (too large,
    too deep, not JSON: record.unreadable) is refused until it is removed: a write would overwrite it."""
    unreadable = record.unreadable(pod)
    if unreadable:
        return unreadable
    phase = podstate.phase(pod) or 'unknown'
    if podstate.is_terminating(pod):
        return 'pod is terminating (it is being deleted; its replacement, if any, is another pod)'
    if phase in ('Succeeded', 'Failed'):
        return 'pod has finished (phase %s): its containers do not run again' % phase
    if not (pod.get('spec') or {}).get('nodeName'):
        return 'pod is not scheduled yet (phase %s, no node): nothing runs to update; retry once it is scheduled' % phase
    if phase == 'Running':
        return None
    if phase == 'Pending' and any(pending_on_image(podstate.find_container(pod, name)) for name in updates):
        return None
    return 'pod is not running (phase %s)%s' % (phase, _waiting(pod))


def pending_on_image(info):
    """The container has not started because its image cannot be pulled (a change can fix that)."""
    waiting = ((info.status.get('state') or {}).get('waiting') or {}) if info is not None else {}
    return waiting.get('reason') in podstate.IMAGE_REASONS


def _waiting(pod):
    reasons = sorted(set('%s %s' % (i.name, ((i.status.get('state') or {}).get('waiting') or {}).get('reason'))
                         for i in podstate.containers(pod)
                         if ((i.status.get('state') or {}).get('waiting') or {}).get('reason')))
    return ': %s' % ', '.join(reasons) if reasons else ''


def plan_pod(pod, desired, judge):
    """Plan one pod. ``desired``: container name -> desired value; ``judge(info, value)`` -> Verdict.

    Rules for every change: a container missing from the pod is refused (naming the ones it has);
    a plain init container has already run, so changing it is refused; a pod that is terminating
    or not running is refused as a whole when anything would change.
    """
    plans = []
    for name, value in desired.items():
        info = podstate.find_container(pod, name)
        if info is None:
            plans.append(ContainerPlan(name, None, REFUSED, 'container missing (the pod has: %s)'
                                       % ', '.join(podstate.container_names(pod)), None, value, False))
            continue
        said = judge(info, value)
        action, reason = said.action, said.reason
        if action in (UPDATE, PENDING) and info.kind == podstate.INIT:
            action, reason = REFUSED, ('plain init container has already run; a change would only apply '
                                       'to a new pod')
        plans.append(ContainerPlan(name, info.kind, action, reason, said.current, value,
                                   said.restart and action == UPDATE))
    plan = PodPlan(pod, plans)
    if plan.action == PENDING and waits(pod):
        return plan   # already on the target in its spec, on its way to running: waited for, never refused
    if plan.action in (UPDATE, PENDING):
        plan.reason = pod_refusal(pod, [c.name for c in plans if c.action in (UPDATE, PENDING)])
        plan.transient = bool(plan.reason) and waits(pod)
    return plan


def waits(pod):
    """Is ``pod`` Pending on its way to running (scheduled or not), not finished or going away."""
    return podstate.phase(pod) in (None, 'Pending') and not podstate.is_terminating(pod) and \
        not podstate.condition_is(pod, 'DisruptionTarget', 'True')


def unknown_containers(pods, names):
    """Names that match no container in any of the pods (typos): {name: sorted names the pods have}."""
    seen = set()
    for pod in pods:
        seen.update(podstate.container_names(pod))
    return {name: sorted(seen) for name in names if name not in seen}
