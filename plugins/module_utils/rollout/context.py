# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every step of a rollout shares (rollout/steps.py composes the steps): the options, the client, the workload,
the pods of the rollout and whether each still needs the change (memoised per pod version), the result shape, the
run's hold on the workload record, and the values pods should have now."""

import time

from ansible_collections.inplace.k8s.plugins.module_utils.config.checks import ConfigChecks
from ansible_collections.inplace.k8s.plugins.module_utils.config.data import ConfigData
from ansible_collections.inplace.k8s.plugins.module_utils.config.rollout import ConfigRollout
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.operations import events, prepull
from ansible_collections.inplace.k8s.plugins.module_utils.pods import drain, podstate, record
from ansible_collections.inplace.k8s.plugins.module_utils.pods.images import satisfies
from ansible_collections.inplace.k8s.plugins.module_utils.pods.waiter import PodWatcher
from ansible_collections.inplace.k8s.plugins.module_utils.process import lineage
from ansible_collections.inplace.k8s.plugins.module_utils.process.cancel import Cancel
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, budgets, progress
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rolloutrecord import RolloutRecord
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.status import Teller
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.convergence import pod_converged, pod_matches
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.window import watch_failures
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.workload import Workload, write_record

RESTART_ANNOTATION = 'inplace.k8s/restart-id'
OWNER_MARGIN = 120   # seconds beyond two wait_timeouts that a workload record stays owned between steps
PENDING_MEMO = 20000   # pod versions whose pending() answer is kept
WAY_OUT = ('resume it by running the same change again, or end it - roll it back (role: rollout_action=rollback, '
           'module: state=rollback) to restore the template and pods from before, or release it '
           '(rollout_action=release, state=release) to restore the controller and leave every pod as it is')


class RolloutContext:
    """State shared by the steps of one call of the rollout_workload module: ``params`` are the module's,
    ``kube`` a client, ``cancel`` the run's token (process/cancel.Cancel; default: one never cancelled)."""

    def __init__(self, kube, options, check_mode=False, clock=time.monotonic, sleep=time.sleep, diff=False,
                 run_command=None, cancel=None):
        self.kube, self.options, self.check_mode, self.diff = kube, options, check_mode, diff
        self.cancel = cancel or Cancel()
        self.clock, self.sleep = clock, sleep
        self.run_command = run_command   # AnsibleModule.run_command, for restart_strategy cri (batch)
        self.images = options.images or {}
        self.resources = options.resources or {}
        self.restart = list(options.restart)
        # A config rollout (config/rollout.py) runs as a restart rollout of the containers each pod's plan names.
        self.config = ConfigRollout(kube, options.namespace, options.config) if options.config else None
        if self.config is not None:
            self.restart = self.config.containers
        self._watched = options.watch or {}   # the pods counted done so far (watched; count_done, watch_from)
        self.warnings = []
        self.workload = None
        self._labels = None   # revision_labels()
        self._pending = {}    # pending(): (uid, resourceVersion) -> its answer
        self._listing = None  # prepare's list of the workload's pods (keep_listing), for the first window
        # The role calls one module per step: the run is its run_id and the ansible-playbook process.
        pid = lineage.playbook_pid()
        self.owner = record.new_owner(options.run_id or ('playbook-%s' % pid if pid else None), pid=pid)
        # The config change itself (config/data.py): written by prepare, its kept copies found again by a resumed call.
        self.config_data = ConfigData(kube, options.namespace, options.changed_data(), self.config._object,
                                      run=self.owner['run']) if options.changed_data() and self.config else None
        if options.kind:
            self.workload = Workload(kube, options.kind, options.namespace, options.name, clock, sleep)
        self.drainer = drain.drainer(options.readiness_gate, options.drain_label)
        self._progress = progress.Silent()   # the live progress of state rollout (show_progress: rollout/loop.py)
        # Kubernetes Events of the run (pods' and the workload's) and the workload's status line. The successes told
        # are the rollout's first pods: the role's later steps (with pods counted done) tell fewer, or none.
        self.events = events.Recorder(kube, options.events and not check_mode, self.owner['run'], self.warnings.append,
                                      successes=max(0, events.POD_SUCCESSES - len(self.watched)))
        self.tell = Teller(self.events, self.workload)

    # ---- shared

    @property
    def watched(self):
        """The pods counted done so far: name -> watch entry (rollout/window.py watch_entry)."""
        return self._watched

    def watch_from(self, entries):
        """The pods counted done are ``entries`` (a resumed run's)."""
        self._watched = dict(entries or {})

    def count_done(self, entries):
        """The pods ``entries`` (a step's ``verified``) are counted done too; the pods counted done now."""
        self._watched = dict(self._watched, **(entries or {}))
        return self._watched

    @property
    def progress(self):
        """The live progress of state rollout (rollout/progress.py; Silent outside it)."""
        return self._progress

    def show_progress(self, shown):
        """The live progress of this call from now on (rollout/loop.py)."""
        self._progress = shown
        return shown

    def keep_listing(self, listing):
        """Keep prepare's list of the workload's pods ((items, resourceVersion)) for the first watch_pods."""
        self._listing = listing
        return listing

    def forget_reads(self):
        """The template changed (a rollback wrote the values from before): what was read of it is read again
        (the revision labels, the kept list of pods)."""
        self._labels, self._listing = None, None

    @property
    def target(self):
        return {'images': self.images, 'resources': self.resources}

    def pods(self, items=None):
        """The pods of the rollout (the workload's, or those of label_selectors), not terminating: of ``items``
        (listed by the same selector), or of a list made here."""
        if self.workload is not None:
            if self.workload.obj is None:
                self.workload.read()
            return self.workload.pods(items)
        selectors = self.options.label_selectors or []
        if not selectors:
            raise ValidationError('give kind and name of a workload, or label_selectors')
        if items is None:
            items, _version = self.kube.list_pods(self.options.namespace, ','.join(selectors))
        pods = [p for p in items if not podstate.is_terminating(p)]
        owned = sorted(podstate.meta(p, 'name') for p in pods if podstate.meta(p, 'ownerReferences'))
        if owned and self.images or owned and self.resources:
            self.warnings.append('pods are updated directly; the template of their owner was not changed, so a '
                                 'pod it recreates gets the old values: %s' % ', '.join(owned))
        return pods

    def watch_pods(self):
        """A watch of the rollout's pods (PodWatcher, started) and its pods as listed for it.

        One list: the watch starts from it, and the pods are taken from it. The first watch of a state rollout
        call takes prepare's list, a second older: the watch replays what changed since (prepare's own writes
        included), and a pod's write is guarded by what it read, as after any list (a list less:
        docs/performance.md)."""
        selector = self.workload.selector() if self.workload is not None else \
            ','.join(self.options.label_selectors or [])
        listing, self._listing = self._listing, None
        items, version = listing or self.kube.list_pods(self.options.namespace, selector or None)
        pods = self.pods(items)
        return PodWatcher(self.kube, self.options.namespace, selector or None).start(items, version), pods

    def config_hooks(self, check=True):
        """The checks in the pod of a config rollout's restarts (config/checks.py): the projection of the new data
        before each restart, and after it the check command (``check``: not when a rollback writes the old data
        back, which the check's expected value does not describe). None outside a config rollout."""
        if self.config is None:
            return None
        return ConfigChecks(self.kube, self.config, self.options.config_projection,
                            self.options.config_check if check else None, self.options.wait_timeout,
                            self.warnings.append, self.clock, self.sleep)

    def changed_containers(self, pod):
        """The containers of ``pod`` whose image this rollout changes (a pod Pending on such an image is
        fixed forward, not refused)."""
        return [name for name, image in self.images.items()
                if podstate.find_container(pod, name) is not None and not satisfies(pod, name, image)]

    def pending(self, pod):
        """Does this pod still need the change? The answer depends on the pod's content only, which the
        server names by uid and resourceVersion: each version is judged once (a plan and its result ask for
        every pod several times: docs/performance.md)."""
        key = (podstate.meta(pod, 'uid'), podstate.meta(pod, 'resourceVersion'))
        if None not in key and key in self._pending:
            return self._pending[key]
        if self.config is not None:
            answer = self.config.pending(pod)
        elif self.restart:
            annotations = podstate.meta(pod, 'annotations') or {}
            answer = annotations.get(RESTART_ANNOTATION) != self.options.restart_id
        else:
            answer = not pod_converged(pod, self.images, self.resources)
        if None not in key:
            if len(self._pending) >= PENDING_MEMO:
                self._pending.clear()
            self._pending[key] = answer
        return answer

    def forget_pending(self):
        """What the pods are judged against changed (a config rollout's data written or written back): each pod is
        judged again."""
        self._pending = {}

    def result(self, pods, **extra):
        out = {'changed': False, 'warnings': self.warnings,
               'pods': [dict(podstate.pod_summary(p), ordinal=batching.ordinal(p),
                             updated=not self.pending(p)) for p in pods]}
        if self.config is not None:
            out['config'] = self.config.report(pods)
        if self.config_data is not None:
            out['config_data'] = self.config_data.report()
        if self.workload is not None and self.workload.obj is not None:
            out['workload'] = self.workload.status_summary()
            if self.workload.history:
                out['history'] = self.workload.history
            self.warnings.extend(self.workload.warnings)
        out.update(extra)
        return out

    def pdbs(self, pods):
        """PodDisruptionBudgets of the namespace that select any of the pods: (pdb, [pod names])."""
        return budgets.budgets(self.kube, self.options.namespace, pods)

    # ---- ownership

    def stamp(self, current, rec):
        """``rec`` owned by this run, expiring after two wait_timeouts and a margin (renewed at each step);
        raise when another live run holds the record the workload has now (``current``)."""
        if record.holder(current, self.owner, self.options.force_takeover):
            w = self.workload
            raise ValidationError('%s %s/%s: %s' % (w.kind, w.namespace, w.name,
                                                    record.busy_message(current, 'workload')))
        return record.claim(rec, self.owner, 2 * self.options.wait_timeout + OWNER_MARGIN)

    def renew_hold(self):
        """Each step: refuse a workload that another run is rolling out; renew our hold on an unfinished one."""
        w = self.workload
        if w is None:
            return
        rec = w.read() and w.record
        if RolloutRecord(rec).active:
            if self.check_mode:
                self.stamp(rec, rec)
            else:
                write_record(w, rec, stamp=lambda current, _rec: self.stamp(current, current))

    def tell_step(self, batch, out):
        """After a step: its Event; a halt also writes the workload's status (its way out) with the record."""
        if not self.check_mode and self.tell.step(batch, out):
            self.renew_hold()

    def values_now(self):
        """The values pods should have now: the rollout's target, or the before-values while rolling back."""
        if self.workload is not None:
            self.workload.read()
            held = self.workload.held
            if held.rolling_back or held.target:
                return held.values_now
        return self.images, self.resources

    def revision_labels(self):
        """The labels the workload's updated pods carry (its revision), read once per step."""
        if self._labels is None:
            self._labels = self.workload.revision(self.options.wait_timeout)[0]
        return self._labels

    def delete_prepulled(self):
        """Pre-pull pods the batches left for the next pods (none after the last batch, unless stopped)."""
        if not self.options.prepull or self.check_mode:
            return
        puller = prepull.Prepull(self.kube, self.options.namespace, self.owner['run'])
        puller.delete()
        self.warnings.extend('pre-pull pod %s could not be deleted (%s): delete it with kubectl delete pod -l %s'
                             % (name, why, prepull.LABEL) for name, why in puller.left)

    def watched_containers(self):
        """The containers whose health counts: those the change touches."""
        if self.restart:
            return list(self.restart)
        return sorted(set(self.images) | set(self.resources))

    def failures_of_watched(self, pods=None):
        """failed_pods entries for the watched pods (``watch``) that no longer run as verified."""
        if not self.watched or self.check_mode:
            return []
        pods = self.pods() if pods is None else pods
        return watch_failures(pods, self.watched, self.overwritten())

    def overwritten(self, resources=True):
        """overwritten(pod) for watch_failures: what another writer set on a pod counted done (None: nothing).
        Without ``resources``: its images only (the window's check while the resize of its pods is under way)."""
        if self.restart or not self.images:
            return None
        wanted = self.resources if resources else None
        return lambda pod: None if pod_matches(pod, self.images, wanted) else spec_images(pod, self.images)


def spec_images(pod, names):
    """'app=registry/app:3.0' for the containers ``names`` of the pod's spec."""
    found = [podstate.find_container(pod, name) for name in sorted(names)]
    return ', '.join('%s=%s' % (info.spec.get('name'), info.spec.get('image')) for info in found if info is not None)


def unique(items):
    seen = set()
    return [item for item in items if not (item in seen or seen.add(item))]
