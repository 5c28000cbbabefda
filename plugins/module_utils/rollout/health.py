# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""watch: the pods this rollout verified, watched for some seconds (the canary pause and the pause between
batches): any that crashed, restarted or turned unready since is a failed pod."""

from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import unique

WATCH_POLL_SECONDS = 0.2   # how often the watch's pods are looked at (a local cache: no request)
RENEW_SECONDS = 10.0       # how often the run's hold on the workload is renewed during a pause


class HealthWatch:
    """The watch step of Rollout (rollout/steps.py)."""

    def watch(self, seconds=None):
        """Watch the pods verified so far for ``seconds`` (default: the option); return at the first failure
        (failed_pods). The pods
        come from a watch (rollout/context.py watch_pods), judged again whenever it delivered a change; the
        run's hold on the workload is renewed every RENEW_SECONDS."""
        seconds = (self.options.seconds if seconds is None else seconds) or 0
        if self.check_mode:
            return self.result([], failed_pods=[], watched=0, message='would watch %d pod(s) for %ss' % (
                len(self.watched), seconds))
        self.tell.paused(seconds, len(self.watched))
        self._renew()
        deadline = renewed = self.clock()
        deadline += seconds
        watcher, pods = self.watch_pods()
        try:
            serial, _names = watcher.changes(None)
            failed = self._watch_failures(pods)
            while not failed and deadline > self.clock():
                if self.cancel.cancelled():   # the pause of a cancelled run ends now (process/cancel.py)
                    return self.result([], failed_pods=[], watched=len(self.watched), message=self.cancel.cancelled())
                self.sleep(min(WATCH_POLL_SECONDS, deadline - self.clock()))
                if self.clock() - renewed >= RENEW_SECONDS:
                    self._renew()
                    renewed = self.clock()
                serial, names = watcher.changes(serial)
                if names is None or names:
                    failed = self._watch_failures(self.pods(watcher.items()))
        finally:
            watcher.stop()
        out = self.result([], failed_pods=failed, watched=len(self.watched),
                          message='%d of %d watched pod(s) failed' % (len(failed), len(self.watched))
                          if failed else '%d pod(s) stayed healthy for %ss' % (len(self.watched), seconds))
        out['warnings'] = unique(out['warnings'])
        return out
