# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout: the one rollout loop. A call plans (or resumes where the previous call of this run stopped), runs
the steps (canary, batches or the sliding window) with the pauses between them, then rolls back or finishes;
it returns early only where Ansible must act: the user's verification tasks after a step, or an analysis after
the canary, a batch or the last batch. The role calls it again with ``internal.resume`` (what the previous call
returned as ``run.resume``) and the analysis' outcome, and the loop goes on from there."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import points, report
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import unique
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import Step
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.progress import Progress
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.runstate import Run

IN_PLACE = ('in_place', 'restart', 'unchanged')
SWEEPS = 2   # steps added after the last one for pods the plan did not have (_swept)
TOTALS = ('failed_pods', 'not_started', 'recreated', 'gone')
KEPT = ('progress', 'failed_pods', 'not_started', 'recreated', 'gone', 'window', 'updated', 'total')


class OneCall:
    """The rollout loop (state rollout) of Rollout (rollout/steps.py), the one sequencer of the steps: the plan
    (``plan_step``), each step (``batch_step``), the pauses (``health``), the sync a step left
    (``sync_step.last``), the finish (``finish_step``) or rollback (``rollback_step``), each an object Rollout made."""

    def rollout(self):
        """Plan on the first call, then the steps from where the run stands, until a point where Ansible must
        act (``run.point``: after which step, verify and/or analysis; ``run.resume``: what the next call passes
        back) or the end (``run.finished``, or ``run.stopped``; ``run.rollback`` after a rollback). ``run``
        holds the whole run so far: every step's report, the failed, not started and recreated pods, the
        timings; ``progress``: the lines of what this call did. A plan that is not an in-place change
        (recreate) is returned without ``run``."""
        resume = Run.load(self.options.resume) if self.options.resume else None
        if resume:
            self.config_data_step.apply_config_data()   # written by the first call: its kept copies found again
        plan = self._resumed(resume) if resume else self.plan_step.prepare()
        if not resume:
            plan['plan_lines'] = report.plan_lines(plan, self.options, self.check_mode)
        if plan['mode'] == 'rollback':   # a rollback that did not finish: finished now, nothing applied again
            return self._returned(plan, self._roll_back_run(Run(stopped=True, watch={})))
        if plan['mode'] not in IN_PLACE:
            plan['report'] = report.summary(report.plan_facts(plan), check_mode=self.check_mode)
            return plan
        run = resume or Run(batches=[list(names) for names in plan['batches']], canary=self._canary_first(plan),
                            watch={}, mode=plan['mode'], counts=_counts(plan), plan=report.plan_facts(plan),
                            gone=list(plan.get('gone') or []))
        run.progress = []
        self.watch_from(run.watch)
        if resume:
            self._judge_analysis(run, self.options.analysis)
        self.show_progress(Progress.to(None if self.check_mode else self.options.progress_file,
                                       started=self.options.started, **run.counts))
        if not resume:
            self.progress.note(_plan_line(plan, run))
        try:
            return self._loop(plan, run)
        finally:
            # A cancel that killed the action's worker (ansible-core's SIGTERM handler exits at once) leaves the
            # progress file with nobody to remove it but this run.
            self.progress.close(remove=self.cancel.abandoned())

    def _loop(self, plan, run):
        while not run.stopped and (run.next < len(run.batches) or self._swept(run)):
            index = run.next
            if index > 0:
                self._pause(run, self.options.pause_seconds, 'the pause before step %d' % (index + 1))
                if run.stopped:
                    break
            self._step(run, index)
            run.next = index + 1
            if index == 0 and run.canary and not run.stopped:
                self._pause(run, self.options.canary_pause_seconds, 'the canary pause')
            point = None if run.stopped else self._point(run, index)
            if point:
                run.point = point
                return self._returned(plan, run)
        analyse_end = 'end' in self._analysis_after() and plan['mode'] != 'unchanged' and not self.check_mode
        if analyse_end and not run.stopped and not run.analysed_end:
            run.analysed_end = True
            run.point = {'after': 'the last batch', 'verify': False, 'analysis': True}
            return self._returned(plan, run)
        run = self._end(run)
        run.watch = None   # the pods verified so far: for the next call only (about 180 bytes a pod)
        return self._returned(plan, run)

    # ---- the parts

    def _swept(self, run):
        """After the last step: pods of the workload that still need the change and no step had (a controller's
        replacement from an old template, a scale-up, a pod Pending at plan time), as the last step's sync listed
        them, become one more step (at most SWEEPS); True when one was added."""
        if self.check_mode or self.restart or not self.sync_step.last or (run.sweeps or 0) >= SWEEPS:
            return False
        planned = set(name for names in run.batches for name in names)
        kept = set((run.plan or {}).get('kept') or [])
        known = set((run.plan or {}).get('uids') or [])

        def wanted(pod):
            """A pod no step had: another uid than the plan's (a replacement), or a name no batch named."""
            name = podstate.meta(pod, 'name')
            return name not in kept and self.pending(pod) and (
                podstate.meta(pod, 'uid') not in known or name not in planned)
        names = sorted(podstate.meta(p, 'name') for p in self.sync_step.last[1] if wanted(p))
        if not names:
            return False
        run.sweeps = (run.sweeps or 0) + 1
        run.batches.append(names)
        run.counts['total'] += len(names)
        run.progress.append('%d pod(s) the plan did not have (replaced by their controller, scaled up, or '
                            'Pending at plan time) still need the change: one more step: %s' % (
                                len(names), ', '.join(names[:10]) + (' ...' if len(names) > 10 else '')))
        return True

    def _step(self, run, index):
        """Step ``index`` of the run, its report added to the run's totals."""
        batches, limit = run.batches, self.options.max_failed_pods or 0
        label = '%s %d of %d' % ('step' if self.options.window else 'batch', index + 1, len(batches))
        if index == 0 and run.canary:
            label = 'canary (%s)' % label
        batch = Step(names=tuple(batches[index]), max_failed_pods=max(limit - len(run.failed_pods), 0),
                     prepull_next=tuple(batches[index + 1]) if index + 1 < len(batches) and self.options.prepull
                     else (), label=label, started=self.options.started)
        self.progress.step(label, batch.names)
        step = self.batch_step.run_step(batch).out
        counts = run.counts
        counts['done'] = step['updated'] if isinstance(step.get('updated'), int) else counts['done']
        counts['failed'] = len(run.failed_pods) + len(step.get('failed_pods') or [])
        self.progress.step_done(counts['done'], counts['failed'])
        run.watch = self.count_done(step.get('verified'))
        run.changed = bool(run.changed or step.get('changed'))
        run.diff = (run.diff or []) + list(step.get('diff') or [])
        run.steps.append(dict({key: step.get(key) for key in KEPT}, pods=len(batch.names)))
        for key in TOTALS:
            getattr(run, key).extend(step.get(key) or [])
        run.timings.update(step.get('timings') or {})
        if step.get('config_checks'):
            run.config_checks = dict(run.config_checks or {}, **step['config_checks'])
        run.progress.extend(step.get('progress') or [])
        run.steps_run += 1
        stop_after = self.options.stop_after_batches or 0
        if step['halt'] or self.cancel.cancelled() or (stop_after and run.steps_run >= stop_after):
            run.stopped = True
            if self.cancel.cancelled():
                self.cancel.skipped([name for later in batches[index + 1:] for name in later])

    def _pause(self, run, seconds, what):
        """Watch the pods counted done for ``seconds`` (the canary pause, the pause between steps): the first
        that crashes, restarts or turns unready is a failed pod; beyond max_failed_pods the run stops."""
        if not seconds or self.check_mode or not self.watched:
            return
        self.progress.note('%s: watching %d pod(s) for %ss' % (what, len(self.watched), seconds))
        watched = self.health.watch(seconds)
        failed = watched.get('failed_pods') or []
        run.failed_pods.extend(failed)
        run.progress.append('%s: %s' % (what, watched.get('message')))
        run.progress.extend('failed while watched: %s: %s' % (item.get('name'), item.get('reason'))
                            for item in failed)
        if len(run.failed_pods) > (self.options.max_failed_pods or 0) or self.cancel.cancelled():
            run.stopped = True

    def _point(self, run, index):
        """Where Ansible acts after step ``index``: the user's verification tasks, an analysis, or None."""
        return points.after(index, len(run.batches), index == 0 and run.canary, self._analysis_after(),
                            bool(self.options.verify) and not run.recreated, self.check_mode)

    def _judge_analysis(self, run, outcome):
        """The outcome of the analysis at the point the previous call returned: a failure is a failed step
        (on_failure applies), inconclusive halts with the workload held (never a rollback)."""
        point, run.point = run.point or {}, None
        if not point.get('analysis') or outcome in (None, 'success'):
            return
        run.analysis_failed = outcome == 'failure'
        run.stopped = True
        run.progress.append('analysis after %s: %s' % (point.get('after'), outcome))

    def _end(self, run):
        """The end of the loop: a rollback (failed pods or a failed analysis, on_failure rollback), the
        finish (every step ran), or a stop that leaves the workload held (its pre-pull pods deleted)."""
        failed = run.failed_pods or run.analysis_failed
        if failed and self.options.on_failure == 'rollback':
            return self._roll_back_run(run)
        self.config_data_step.end_config_data(run)
        if run.stopped:
            if self.options.prepull and not self.check_mode:
                self.delete_prepulled()
            return run
        finished = self.finish_step.run_finish(synced=self.sync_step.last if run.batches else None,
                                               known=(run.plan or {}).get('uids'),
                                               failed=[item.get('name') for item in run.failed_pods])
        run.finished = finished.out
        run.stopped = finished.error is not None   # another writer's change found: the workload stays held
        run.finished.pop('warnings', None)
        run.progress.extend(run.finished.get('progress') or [])
        seen = set((item.get('name'), item.get('uid')) for item in run.gone)
        found = [item for item in run.finished.pop('gone', None) or []
                 if (item.get('name'), item.get('uid')) not in seen]
        run.gone.extend(found)
        run.replaced = run.finished.pop('replaced', None) or []
        run.verified_at = run.finished.pop('verified_at', None)
        run.progress.extend(report.gone_line(item) for item in found)
        if run.replaced:
            run.progress.append('replaced by their controller during the run, on the target: %s' % ', '.join(
                item['name'] for item in run.replaced))
        return run

    def _roll_back_run(self, run):
        """The template and the pods back to the values from before (rollback.py), then the controller
        released (finish)."""
        run.rollback = back = self.config_data_step.roll_back_config(run) if self.config is not None else \
            self.rollback_step.restore_before()
        names = [name for group in back.get('groups') or [] for name in group['names']]
        run.progress.append('%s %d pod(s) back to the values from before' % (
            'would roll' if self.check_mode else 'rolled', len(names)))
        run.finished = self.finish_step.finish()
        run.finished.pop('warnings', None)
        run.rolled_back = True
        return run

    def _canary_first(self, plan):
        """Is the first step the canary: a canary was asked for and no pod runs the target yet."""
        return (self.options.canary or '0').strip() not in ('', '0', '0%') and not any(
            pod.get('updated') for pod in plan.get('pods') or [])

    def _analysis_after(self):
        return self.options.analysis_after or ()

    def _resumed(self, run):
        """What a resumed call reports of the plan (the first call returned it whole)."""
        return self.result([], changed=bool(run.changed), mode=run.mode or 'in_place', batches=run.batches,
                           resumed=True)

    def _returned(self, plan, run):
        """The module's result: the plan, the run serialised (the role passes it back as internal.resume)."""
        if run.diff:
            plan['diff'] = run.diff
        if self.config_data is not None:   # the config change itself: what it wrote (and would, in check mode)
            plan['config_data'] = self.config_data.report()
            if self.diff and self.config_data.written:
                plan['diff'] = [self.config_data.shown_diff()] + list(plan.get('diff') or [])
        plan['changed'] = bool(plan.get('changed') or run.changed or run.rollback)
        plan['run'] = run.to_dict()
        plan['report'] = report.summary(run.plan or report.plan_facts(plan), plan['run'], check_mode=self.check_mode)
        if self.config_data is not None:
            plan['report']['config_data'] = plan['config_data']
        plan['progress'] = run.progress
        # How many turns the role's loop of points takes (the first call's): rollout/points.py.
        plan['points_left'] = points.left(
            run, self._analysis_after(), bool(self.options.verify), self.check_mode,
            sweeps=0 if self.check_mode or self.restart else SWEEPS - (run.sweeps or 0),
            end=(run.mode or plan.get('mode')) != 'unchanged')
        plan['warnings'] = unique(self.warnings)
        return plan


def _plan_line(plan, run):
    """The plan in a line, shown before the first step runs."""
    counts, batches = run.counts, run.batches
    return 'plan: %d pod(s), %d already on the target, %d to update in %d step(s)%s' % (
        counts['total'], counts['done'], counts['total'] - counts['done'], len(batches),
        ' (a sliding window of %s)' % plan['window'] if plan.get('window') else '')


def _counts(plan):
    """The pods of the run for its progress: all it covers, those on the target already, those failed."""
    done = len([pod for pod in plan.get('pods') or [] if pod.get('updated')])
    return {'total': done + sum(len(names) for names in plan['batches']), 'done': done, 'failed': 0}
