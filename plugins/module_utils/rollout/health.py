# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""watch: the pods this rollout verified, watched for some seconds (the canary pause and the pause between
batches): any that crashed, restarted or turned unready since is a failed pod."""

from ansible_collections.inplace.k8s.plugins.module_utils.rollout.context import unique

WATCH_POLL_SECONDS = 0.2   # how often the watch's pods are looked at (a local cache: no request)
RENEW_SECONDS = 10.0       # how often the run's hold on the workload is renewed during a pause


class HealthWatch:
    """The health watch of a rollout, an object of its own: ``watch(seconds)`` is its interface. Its dependencies
    are passed in: ``shared``, what the steps share (rollout/context.py RolloutContext: the options, the pods
    counted done and their failures, a watch of the pods, the hold on the workload record, the Events, the
    clock); it writes none of their state."""

    def __init__(self, shared):
        self.shared = shared

    def watch(self, seconds=None):
        """Watch the pods verified so far for ``seconds`` (default: the option); return at the first failure
        (failed_pods). The pods come from a watch (rollout/context.py watch_pods), judged again whenever it
        delivered a change; the run's hold on the workload is renewed every RENEW_SECONDS."""
        shared = self.shared
        seconds = (shared.options.seconds if seconds is None else seconds) or 0
        watched = len(shared.watched)
        if shared.check_mode:
            return shared.result([], failed_pods=[], watched=0, message='would watch %d pod(s) for %ss' % (
                watched, seconds))
        shared.tell.paused(seconds, watched)
        shared.renew_hold()
        deadline = renewed = shared.clock()
        deadline += seconds
        watcher, pods = shared.watch_pods()
        try:
            serial, _names = watcher.changes(None)
            failed = shared.failures_of_watched(pods)
            while not failed and deadline > shared.clock():
                if shared.cancel.cancelled():   # the pause of a cancelled run ends now (process/cancel.py)
                    return shared.result([], failed_pods=[], watched=watched, message=shared.cancel.cancelled())
                shared.sleep(min(WATCH_POLL_SECONDS, deadline - shared.clock()))
                if shared.clock() - renewed >= RENEW_SECONDS:
                    shared.renew_hold()
                    renewed = shared.clock()
                serial, names = watcher.changes(serial)
                if names is None or names:
                    failed = shared.failures_of_watched(shared.pods(watcher.items()))
        finally:
            watcher.stop()
        out = shared.result([], failed_pods=failed, watched=watched,
                            message='%d of %d watched pod(s) failed' % (len(failed), watched)
                            if failed else '%d pod(s) stayed healthy for %ss' % (watched, seconds))
        out['warnings'] = unique(out['warnings'])
        return out
