# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The config change of a config rollout in the rollout's steps (config/data.py writes it): applied first by
prepare, its kept copy of the data from before found again by each later call of the run, deleted by the finish,
named when the run stops, and written back by a rollback, after which the containers that run the new data
restart again (docs/config-rollouts.md)."""

from ansible_collections.inplace.k8s.plugins.module_utils.options import RestartChange, Strategy
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate

SECOND = 1.0   # a container started in the second of a write counts as started before it (config/plan.py)


class ConfigDataStep:
    """The config_data parts of Rollout (rollout/steps.py)."""

    def apply_config_data(self):
        """Prepare (and each later call of the run, which writes nothing then): write the new data, or find what
        an earlier call or run wrote. True when the data was (or would be) written, or a rollback of it is to be
        finished."""
        data = self.config_data
        if data is None:
            return False
        written = data.apply(self.check_mode)
        if data.rolling_back:
            self.warnings.append('config_data: a rollback of this change did not finish; it is finished now (the '
                                 'containers that run the new data restart) and the change is not applied again')
            self.config.refresh({}, cutoff=data.cutoff())
            return True
        if written:
            self.config.refresh(written)
            self._pending = {}
            if not self.check_mode:
                self.sleep(SECOND)
        return bool(written)

    def end_config_data(self, run):
        """The run's end: its kept copies deleted when it finished, else named (a rollback or a run again needs
        them)."""
        data = self.config_data
        if data is None or self.check_mode or not data.kept:
            return
        if data.rolling_back:   # a rollback finished by this run: the containers left as they were are recorded
            pods = self.pods()
            self.config.mark(pods, [podstate.meta(p, 'name') for p in pods], warn=self.warnings.append)
        if run.stopped and not run.rolled_back:
            self.warnings.append('config_data: the data from before stays kept in %s for a rollback: run the same '
                                 'rollout again to go on, or set rollout_on_failure: rollback; delete it once the '
                                 'change is done' % ', '.join(data.report()['kept']))
            return
        data.discard()

    def roll_back_config(self, run):
        """A config rollout's rollback: the data from before written back, then each container started after the
        new data was written (it runs the new data) restarted again, at once as an image rollback updates its pods;
        the containers started before it are given the data written back (recorded, not restarted)."""
        data = self.config_data
        if data is None or not data.kept:
            self.warnings.append('rollback of a config rollout: no data of this run to write back (no '
                                 'rollout_config_data, or it wrote nothing); the containers keep what they run')
            return {'groups': [], 'restored': []}
        if self.check_mode:
            return {'groups': [], 'restored': [], 'config_data': data.report()}
        cutoff = data.cutoff()
        self.config.refresh(data.restore(), cutoff=cutoff)
        self._pending = {}
        self.sleep(SECOND)
        pods = self.pods()
        names = sorted(podstate.meta(p, 'name') for p in pods if self.pending(p))
        restored = []
        if names:
            change = RestartChange(strategy=Strategy(name=self.options.restart_strategy or 'auto'),
                                   select=self.config.select)
            restored.append({'names': names, 'restart': self._run_change(names, change, min_ready_seconds=0)})
        pods = self.pods()
        self.config.mark(pods, [podstate.meta(p, 'name') for p in pods], warn=self.warnings.append)
        data.discard()
        run.progress.append('config_data: %s written back' % ', '.join(data.restored))
        return {'groups': [{'names': names}] if names else [], 'restored': restored, 'config_data': data.report()}
