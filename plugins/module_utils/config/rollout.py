# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The config rollout of one call of rollout_workload (option ``config``; the role's ``rollout_config``): the
objects read once, each pod's plan (config/plan.py, memoised per pod version), the containers a pod's restart
takes (the recreate operation's ``select``), and the pods' records written after their restart.

The rollout runs it as a restart rollout (rollout/context.py): the same window, drain, canary, pauses, analysis,
budgets, progress and Events; only the containers each pod's plan names restart."""

from ansible_collections.inplace.k8s.plugins.module_utils.config import plan, record, usage
from ansible_collections.inplace.k8s.plugins.module_utils.connection import paths
from ansible_collections.inplace.k8s.plugins.module_utils.connection.client import MERGE_PATCH, retry_conflict
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, NotFoundError, ValidationError,
)
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

RESOURCES = {usage.CONFIGMAP: 'configmaps', usage.SECRET: 'secrets'}
MEMO = 20000


class Consumers(list):
    """The containers a config rollout restarts, over all its pods (the union, filled as pods are planned): true
    from the start, so that the rollout's steps take the run for a restart rollout before any pod is read."""

    def __bool__(self):
        return True

    def add(self, names):
        self.extend(name for name in names if name not in self)


class ConfigRollout:
    """See the module docstring. ``entries``: the config option (``auto`` or refs); ValidationError naming it."""

    def __init__(self, kube, namespace, entries, field='config'):
        errors = usage.scope_errors(entries, field)
        if errors:
            raise ValidationError('%s; nothing was changed' % '; '.join(errors))
        self.kube, self.namespace = kube, namespace
        self.scope = usage.scope(entries)
        self.objects = {}   # ref -> object (None: not found)
        self.containers = Consumers()
        self.cutoff = None   # a rollback of config_data: when the new data was written (config/plan.py plan_pod)
        self._memo = {}
        if self.scope is not None:
            missing = [ref for ref in sorted(self.scope) if self._object(ref) is None]
            if missing:
                raise ValidationError('%s: %s not found in namespace %s; fix the name or create the object first; '
                                      'nothing was changed' % (field, ', '.join(missing), namespace))

    def _object(self, ref):
        if ref not in self.objects:
            kind, _sep, name = ref.partition('/')
            try:
                self.objects[ref] = self.kube.get_managed(paths.api_path('v1', RESOURCES[kind], self.namespace, name))
            except NotFoundError:
                self.objects[ref] = None
            if self.objects[ref] is not None:
                self.objects[ref].setdefault('kind', kind)
        return self.objects[ref]

    def plan(self, pod):
        """The pod's PodConfig (memoised per uid and resourceVersion)."""
        key = (podstate.meta(pod, 'uid'), podstate.meta(pod, 'resourceVersion'))
        if None not in key and key in self._memo:
            return self._memo[key]
        for kind, name in usage.objects(pod.get('spec')):
            ref = usage.ref(kind, name)
            if self.scope is None or ref in self.scope:
                self._object(ref)
        found = plan.plan_pod(pod, self.objects, self.scope, self.cutoff)
        self.containers.add(found.restarts)
        if None not in key:
            if len(self._memo) >= MEMO:
                self._memo.clear()
            self._memo[key] = found
        return found

    def refresh(self, objects, cutoff=None):
        """After config_data was written (or would be, in check mode): ``objects`` {ref: object now} replace those
        read, every pod is planned again; ``cutoff``: see plan_pod (a rollback)."""
        self.objects.update(objects)
        self.cutoff = cutoff if cutoff is not None else self.cutoff
        self._memo.clear()

    def last_change(self, pod, names=None):
        """The latest change (config/record.py last_change) of the objects that the containers ``names`` (None:
        all) of ``pod`` restart for, or None."""
        changed = self.plan(pod).changed or {}
        times = [record.last_change(self.objects.get(ref)) for name, refs in changed.items()
                 if names is None or name in names for ref in refs]
        times = [value for value in times if value is not None]
        return max(times) if times else None

    def pending(self, pod):
        """Does a container of the pod still run data from before the change?"""
        return bool(self.plan(pod).restarts)

    def select(self, pod):
        """{container: why} of the pod's containers to restart now (the recreate operation's choice)."""
        return dict((name, '; '.join(why)) for name, why in self.plan(pod).restarts.items())

    def report(self, pods):
        """The result's ``config``: {scope: auto or the refs, restarts: {pod: {container: why}}} of the pods
        with containers still to restart."""
        restarts = dict((podstate.meta(pod, 'name'), self.select(pod)) for pod in pods if self.pending(pod))
        return {'scope': usage.AUTO if self.scope is None else sorted(self.scope), 'restarts': restarts}

    def mark(self, pods, names, check_mode=False, warn=None):
        """After a step: the pods ``names`` (their restarts done) get the record of what their consumers run now.
        The names of those written (or that would be, in check mode)."""
        written = []
        for pod in pods:
            name = podstate.meta(pod, 'name')
            if name not in names or self.pending(pod):
                continue
            if self.write(pod, check_mode, warn):
                written.append(name)
        return written

    def write(self, pod, check_mode=False, warn=None):
        """Write the pod's record (guarded, read again on a conflict); False when it already says so."""
        state = {'pod': pod}

        def reread(_exc):
            state['pod'] = self.kube.get_pod(self.namespace, podstate.meta(pod, 'name'))

        @retry_conflict(on_retry=reread)
        def attempt():
            current = state['pod']
            rec = plan.to_record(current, self.plan(current))
            if rec is None:
                return False
            if not check_mode:
                self.kube.patch_pod(self.namespace, podstate.meta(current, 'name'), record.patch(current, rec), MERGE_PATCH)
            return True
        try:
            return attempt()
        except ApiError as exc:
            if warn:
                warn('pod %s: could not record its config (%s); a re-run restarts nothing that started after the '
                     'change' % (podstate.meta(pod, 'name'), exc))
            return False


def lines(report):
    """The plan's lines of a config rollout (its result's ``config``): per pod, which containers restart and why."""
    if not report:
        return []
    found = ['config (%s): %d pod(s) with containers to restart' % (
        report['scope'] if isinstance(report['scope'], str) else ', '.join(report['scope']), len(report['restarts']))]
    for pod, containers in sorted(report['restarts'].items()):
        found.extend('pod %s: restart %s: %s' % (pod, name, why) for name, why in sorted(containers.items()))
    return found
