# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The config change of a config rollout in the rollout's steps (config/data.py writes it): applied first by
prepare, its kept copy of the data from before found again by each later call of the run, deleted by the finish,
named when the run stops, and written back by a rollback, after which the containers that run the new data
restart again (docs/config-rollouts.md)."""

from ansible_collections.inplace.k8s.plugins.module_utils.config.plan import SECOND
from ansible_collections.inplace.k8s.plugins.module_utils.options import RestartChange, Strategy
from ansible_collections.inplace.k8s.plugins.module_utils.pods import podstate


class ConfigDataStep:
    """The config_data step of a rollout, an object of its own: ``apply_config_data()``, ``end_config_data(run)``
    and ``roll_back_config(run)`` are its interface. Its dependencies are passed in: ``shared``, what the steps
    share (rollout/context.py RolloutContext: the options, the config rollout and its config_data, the pods and
    whether each still needs the change, the clock), and ``run_change``, how one change of pods is made (the batch
    step's, rollout/batch_step.py)."""

    def __init__(self, shared, run_change):
        self.shared, self.run_change = shared, run_change

    def apply_config_data(self):
        """Prepare (and each later call of the run, which writes nothing then): write the new data, or find what
        an earlier call or run wrote. True when the data was (or would be) written, or a rollback of it is to be
        finished."""
        shared = self.shared
        data = shared.config_data
        if data is None:
            return False
        written = data.apply(shared.check_mode)
        if data.rolling_back:
            shared.warnings.append('config_data: a rollback of this change did not finish; it is finished now (the '
                                   'containers that run the new data restart) and the change is not applied again')
            shared.config.refresh({}, cutoff=data.cutoff())
            return True
        if written:
            shared.config.refresh(written)
            shared.forget_pending()
            if not shared.check_mode:   # a full second after our own write, whatever the clocks say (the restart
                shared.sleep(SECOND)        # hook's wait, config/checks.py, reads our clock against the server's)
        return bool(written)

    def end_config_data(self, run):
        """The run's end: its kept copies deleted when it finished, else named (a rollback or a run again needs
        them)."""
        shared = self.shared
        data = shared.config_data
        if data is None or shared.check_mode or not data.kept:
            return
        if data.rolling_back:   # a rollback finished by this run: the containers left as they were are recorded
            pods = shared.pods()
            shared.config.mark(pods, [podstate.meta(p, 'name') for p in pods], warn=shared.warnings.append)
        if run.stopped and not run.rolled_back:
            shared.warnings.append('config_data: the data from before stays kept in %s for a rollback: run the same '
                                   'rollout again to go on, or set rollout_on_failure: rollback; delete it once the '
                                   'change is done' % ', '.join(data.report()['kept']))
            return
        data.discard()

    def roll_back_config(self, run):
        """A config rollout's rollback: the data from before written back, then each container started after the
        new data was written (it runs the new data) restarted again, at once as an image rollback updates its pods;
        the containers started before it are given the data written back (recorded, not restarted)."""
        shared = self.shared
        data = shared.config_data
        if data is None or not data.kept:
            shared.warnings.append('rollback of a config rollout: no data of this run to write back (no '
                                   'rollout_config_data, or it wrote nothing); the containers keep what they run')
            return {'groups': [], 'restored': []}
        if shared.check_mode:
            return {'groups': [], 'restored': [], 'config_data': data.report()}
        cutoff = data.cutoff()
        shared.config.refresh(data.restore(), cutoff=cutoff)
        shared.forget_pending()
        shared.sleep(SECOND)   # as after the forward write (apply_config_data)
        pods = shared.pods()
        names = sorted(podstate.meta(p, 'name') for p in pods if shared.pending(p))
        restored = []
        if names:
            change = RestartChange(strategy=Strategy(name=shared.options.restart_strategy or 'auto'),
                                   select=shared.config.select, hooks=shared.config_hooks(check=False))
            restored.append({'names': names, 'restart': self.run_change(names, change, min_ready_seconds=0)})
        pods = shared.pods()
        shared.config.mark(pods, [podstate.meta(p, 'name') for p in pods], warn=shared.warnings.append)
        data.discard()
        run.progress.append('config_data: %s written back' % ', '.join(data.restored))
        return {'groups': [{'names': names}] if names else [], 'restored': restored, 'config_data': data.report()}
