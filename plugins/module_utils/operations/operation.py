# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What an engine does to each pod: the ``Operation`` base class. Everything an operation does
differently (what it compares, writes and waits for) is one of its methods; image.py, resize.py and
recreate.py are its subclasses."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import plan as planning, podstate, record, restarts


class Operation:
    """What an engine does to each pod. Subclasses set ``name`` and implement ``judge`` and ``done``;
    the other methods have defaults that suit a change written to the pod spec."""

    name = None            # key of the state record and label in messages ('image', 'resize', ...)
    can_rollback = False   # rollback_target() is implemented
    target = None          # {container: desired value}, unless desired() is overridden
    # What the writes need besides reading pods: (verb, 'resource[/subresource]', API group),
    # checked before anything is written (access.require).
    permissions = (('patch', 'pods', ''),)

    def desired(self, pod):
        """{container: desired value} for this pod."""
        return self.target

    def judge(self, info, value):
        """plan.Verdict for one existing container (podstate.ContainerInfo) and its desired value."""
        raise NotImplementedError

    def snapshot(self, info):
        """The before-state of one container kept in the record (rollback and resume use it)."""
        status = info.status
        last = (status.get('lastState') or {}).get('terminated') or {}
        return {'containerID': status.get('containerID'), 'restartCount': status.get('restartCount'),
                'lastContainerID': last.get('containerID')}

    def changes(self, pod, pod_plan):
        """JSON patch operations written together with the record (default: none)."""
        return []

    def write(self, kube, pod, pod_plan, rec):
        """Write the change and the record (one guarded JSON patch); the pod after the write."""
        return kube.patch_pod(podstate.meta(pod, 'namespace'), podstate.meta(pod, 'name'), record.build_patch(
            pod, self.name, rec, self.planned_restarts(pod, pod_plan, rec) + list(self.changes(pod, pod_plan))))

    def planned_restarts(self, pod, pod_plan, rec):
        """Patch operations counting the restarts this write plans on the pod (pods/restarts.py), after the record."""
        reasons = dict((c.name, c.reason or self.name) for c in pod_plan.updates() if c.restart)
        return restarts.patch_ops(pod, reasons, ((rec or {}).get('owner') or {}).get('run'))

    def restarted(self, pod, cplan, before):
        """Wait stage 'restart': the container now runs as a new container (when a restart is expected)."""
        if not cplan.restart:
            return True
        status = podstate.container_status(pod, cplan.name)
        if before.get('containerID'):
            return podstate.restarted(status, before['containerID'])
        return 'running' in (status.get('state') or {})

    def done(self, pod, cplan, before):
        """Wait stage 'ready': the container reached the desired value."""
        raise NotImplementedError

    def failure(self, pod, cplan, before, generation):
        """(reason, message) if the container failed after the change, else None."""
        seen = podstate.kubelet_saw_generation(pod, generation)
        if seen is False or (seen is None and not self.applied(pod, cplan, before)):
            return None  # the kubelet has not acted on this change yet: older states do not count
        info = podstate.find_container(pod, cplan.name)
        policy = 'Always' if info is None or info.kind == podstate.SIDECAR else (pod.get('spec') or {}).get(
            'restartPolicy', 'Always')
        status = info.status if info else {}
        if podstate.backing_off_before(status, (before.get('containerID'), before.get('lastContainerID'))):
            return None  # the kubelet's restart back-off of a container from before the change: wait it out
        return podstate.container_failure(status, policy)

    def overwritten(self, pod, cplan):
        """While waiting: why another writer has changed what this run set on the container (its spec
        no longer holds ``cplan.desired``), or None. Default: cannot tell."""
        return None

    def applied(self, pod, cplan, before):
        """Without status.observedGeneration: does the status show the kubelet acted on the change?"""
        status = podstate.container_status(pod, cplan.name)
        return bool(status.get('containerID')) and status.get('containerID') != before.get('containerID')

    def unstable(self, pod, cplan, verified):
        """After verification (``verified``: its container status then): (reason, message) if the
        container stopped running since, else None."""
        return podstate.left_running(podstate.container_status(pod, cplan.name), verified.get('containerID'))

    @staticmethod
    def rollback_target(rec):
        """{container: value} that undoes the change, from the record's before-state."""
        raise NotImplementedError

    def settled(self, pod, rec):
        """Does the pod show ``rec``'s change complete, spec and status at its target? A settled record
        counts as done (record module docstring), so success needs no final record write. None: the pod
        cannot tell (the engine then writes the final state). Default: re-plan the record's target."""
        target = rec.get('target') if isinstance(rec, dict) else None
        if not isinstance(target, dict) or not target:
            return None
        return planning.plan_pod(pod, target, self.judge).action == planning.UNCHANGED

    def steps(self, pod_plan):
        """None (the default): write() makes the whole change. Otherwise groups (lists of ContainerPlan)
        that act() handles after write() has written the record: one group after another, each waited
        for before the next (an operation whose change is not a spec write, or must be ordered)."""
        return None

    def act(self, kube, pod, pod_plan, group):
        """Make the change for one group of steps(); the pod after it."""
        raise NotImplementedError

    def verify(self, kube, pod, pod_plan, group):
        """After a group of steps() was acted on and waited for (restarted, ready, stable): raise PodFailure when the
        pod does not pass what the operation checks then (default: nothing)."""

    def images(self, pod_plan):
        """The images this change makes the pod run (pre-pull pulls them first; default: none)."""
        return set()

    def describe(self, cplan, before_info, after_info):
        """Extra per-container result fields (for example old_image / new_image)."""
        return {}

    def report(self, failed=False):
        """Extra fields of the whole result (``failed``: of the details of OperationFailed)."""
        return {}

    def close(self):
        """Release what the operation holds (watches) once the run is over."""

    def admitted(self, kube, written, pod_plan, rec):
        """After write(): ``written`` is the pod as the server stored it, which admission may have made
        differ from what was sent. (pod, plan, record) to wait for: the default keeps what was written."""
        return written, pod_plan, rec

    def check(self, plans):
        """Raise ValidationError to stop the whole run before anything is written (default: accept)."""

    def preview(self, kube, pod_plan):
        """Check mode: have the server validate the change without writing it (default: nothing).
        Raise ApiError or PodFailure when the real run would fail; a string returned is a note for
        the pod's reason (for example what admission would store instead)."""

    def stalled(self, pod, cplans):
        """Why a wait that timed out has not finished (added to the timeout message), or None.
        Default: where each container was left (image, state, ready) as the pod's status last said."""
        states = []
        for cplan in cplans:
            status = podstate.container_status(pod, cplan.name)
            state = status.get('state') or {}
            kind = next(iter(state), 'unknown')
            reason = (state.get(kind) or {}).get('reason')
            probe = ''
            if kind == 'running' and not status.get('ready'):
                probe = podstate.readiness_probe_text(pod, cplan.name)
            states.append('%s %s%s (image %s, ready %s%s), wanted %s' % (
                cplan.name, kind, ' ' + reason if reason else '', status.get('image'), bool(status.get('ready')),
                ': ' + probe if probe else '', cplan.desired))
        return 'pod left with %s' % '; '.join(states) if states else None
