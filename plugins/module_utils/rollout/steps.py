# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout and its steps (the rollout_workload module's states; gate, sync and watch are parts of the others):

rollout   the rollout loop (loop.py): prepare, every step with the pauses between them, then finish or a
          rollback; it returns early only where the role's own tasks act (verification, analyses) and the
          role's next call resumes the run
prepare   resolve the pods, plan (in place or not, and why), hold the controller, put the target on
          the template(s), and split the pods still to update into batches
batch     gate (PodDisruptionBudgets, max_unavailable), then the in-place change(s) of the batch (the
          operations and engine of inplace_image, inplace_resize or container_recreate, in this process),
          then sync (revision labels, leftover drains undone, restarts marked)
finish    restore the controller's strategy, wait until its status says it is fully updated
rollback  put the template values from before back, then the pods, then finish
release   restore the controller's strategy and end the rollout, leaving every pod as it is
previous  read the revision an in-place undo goes back to (undo.py): the images/resources that differ
watch     (a pause of the loop) watch the pods counted done for some seconds: any that crashed, restarted
          or turned unready since is a failed pod

Health is watched for the whole rollout: each step's ``verified`` pods (pod -> uid and the container IDs it
had when it was counted done) are checked by every later step and pause, which report a pod that left that
state as failed, so that on_failure applies to it.
"""

from ansible_collections.inplace.k8s.plugins.module_utils import runner
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError, ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import report, undo
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import RolloutContext
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.finish import FinishStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.budget_gate import BudgetGate
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.health import HealthWatch
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.configdata import ConfigDataStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.labeldrain import LabelDrainStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.loop import OneCall
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.options import RolloutOptions
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.plan import PlanStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.rollback import RollbackStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.batch_step import BatchStep
from ansible_collections.inplace.k8s.plugins.module_utils.rollout.sync import SyncStep


class Rollout(OneCall, RolloutContext):
    """One call of the rollout_workload module: the steps, each an object of its own file, over the state they
    share (rollout/context.py); ``run()`` runs the one the module's state names, ``rollout()`` (loop.py) orders
    them."""

    def __init__(self, kube, options, check_mode=False, budget_gate=BudgetGate, health_watch=HealthWatch,
                 plan_step=PlanStep, sync_step=SyncStep, batch_step=BatchStep, finish_step=FinishStep,
                 rollback_step=RollbackStep, label_drain_step=LabelDrainStep, config_data_step=ConfigDataStep,
                 **shared):
        """``budget_gate``, ``health_watch``, ``plan_step``, ``sync_step``, ``batch_step``, ``finish_step``,
        ``rollback_step``, ``label_drain_step``, ``config_data_step``: the classes (or factories) of those steps,
        each given what the steps share (rollout/context.py) and the steps it uses: batch the budget gate and the
        sync step; config_data the batch step's run_change; plan the config_data step; finish the sync step;
        rollback the sync and finish steps and the batch step's run_change; label drain the finish step."""
        super().__init__(kube, options, check_mode, **shared)
        self.budget_gate = budget_gate(self)
        self.health = health_watch(self)
        self.sync_step = sync_step(self)
        self.batch_step = batch_step(self, self.budget_gate, self.sync_step)
        self.config_data_step = config_data_step(self, self.batch_step.run_change)
        self.plan_step = plan_step(self, self.config_data_step)
        self.finish_step = finish_step(self, self.sync_step)
        self.rollback_step = rollback_step(self, self.sync_step, self.finish_step, self.batch_step.run_change)
        self.label_drain_step = label_drain_step(self, self.finish_step)

    @classmethod
    def from_module(cls, module, cancel=None):
        """The edge: the module's params parsed once (RolloutOptions), its client, check and diff mode, the run's
        ``cancel`` token (runner.execute)."""
        options = RolloutOptions.from_params(module.params)
        kube = runner.client(module.params, pool_size=max(10, len(options.names)))
        return cls(kube, options, module.check_mode, diff=module._diff, run_command=module.run_command, cancel=cancel)

    def gate(self, names=None):
        """State gate (the module's): the budget gate of the batch the module's names form."""
        return self.budget_gate.gate(self.options.names if names is None else names)

    def watch(self, seconds=None):
        """State watch (the module's): the pods counted done watched for the module's seconds."""
        return self.health.watch(seconds)

    def previous(self):
        """The revision an in-place undo goes back to and the images/resources that differ (undo.py)."""
        if self.workload is None:
            raise ValidationError('state previous needs kind and name of a Deployment, StatefulSet or DaemonSet')
        return dict(undo.previous(self.workload, self.options.to_revision), warnings=self.warnings)

    def run(self):
        if self.cancel.cancelled() and not self.check_mode:   # ansible-playbook was gone before this step began
            raise InplaceError('state %s was not started' % self.options.state)
        steps = {'prepare': self.plan_step.prepare, 'gate': self.gate, 'sync': self.sync_step.sync, 'batch': self.batch_step.batch,
                 'watch': self.watch, 'finish': self.finish_step.finish, 'rollback': self.rollback_step.end_with_rollback,
                 'release': self.finish_step.release, 'drain_label': self.label_drain_step.drain_label,
                 'rollout': self.rollout, 'previous': self.previous}
        result = steps[self.options.state]()
        if self.options.state in ('rollback', 'release'):   # the role's rollout_action rollback / release
            facts = report.plan_facts({'mode': self.options.state})
            result['report'] = report.summary(facts, ended=result, check_mode=self.check_mode)
        return result
