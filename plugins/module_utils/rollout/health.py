# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""watch: the pods this rollout verified, watched for some seconds (the canary pause and the pause between
batches): any that crashed, restarted or turned unready since is a failed pod."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods import cancel

WATCH_POLL_SECONDS = 1.0


class HealthWatch:
    """The watch step of Rollout (rollout/steps.py)."""

    def watch(self):
        """Watch the pods verified so far for ``seconds``; return at the first failure (failed_pods)."""
        seconds = self.params.get('seconds') or 0
        if self.check_mode:
            return self.result([], failed_pods=[], watched=0, message='would watch %d pod(s) for %ss' % (
                len(self.watched), seconds))
        deadline = self.clock() + seconds
        while True:
            if cancel.cancelled():   # the pause of a cancelled run ends now (pods.cancel)
                return self.result([], failed_pods=[], watched=len(self.watched), message=cancel.cancelled())
            self._renew()
            failed = self._watch_failures()
            remaining = deadline - self.clock()
            if failed or remaining <= 0:
                return self.result([], failed_pods=failed, watched=len(self.watched),
                                   message='%d of %d watched pod(s) failed' % (len(failed), len(self.watched))
                                   if failed else '%d pod(s) stayed healthy for %ss' % (len(self.watched), seconds))
            self.sleep(min(WATCH_POLL_SECONDS, remaining))
