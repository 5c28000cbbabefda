# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A stdout callback for `make demo` (hack/demo.sh): the story of a rollout, none of Ansible's raw output.

It prints what the rollout role shows a person (its plan, the progress of each step, what was rolled back) as
plain lines, the rollout's result as one summary line, warnings and failures as one line each, and nothing else
(no TASK banners, no ok/changed lines, no JSON). Progress lines a module returns while it runs (``progress`` in an
asynchronous poll's result, or in any task's result) are printed as they come: `progress()` is the one place.

Use: ANSIBLE_CALLBACK_PLUGINS=hack/callbacks ANSIBLE_STDOUT_CALLBACK=story ansible-playbook ...
"""

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
name: story
type: stdout
short_description: the demo's story of a rollout (hack/demo.sh)
description: Prints the rollout role's plan, progress and result as plain lines, without Ansible's own output.
'''

# The role's debug tasks whose message is the story (their lines are printed as they are).
TOLD = ('Report the drain mode', 'Report the drain mode (label)', 'Show the plan', 'Show the progress',
        'Show what was rolled back', 'Show the undo', 'Show the analysis')
SUMMARY = 'Show the result'
INDENT = '  '


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'story'

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._seen_progress = set()

    def _print(self, line):
        self._display.display(INDENT + line)

    def lines(self, msg):
        """A debug message as lines: a list's items, a string's lines."""
        if isinstance(msg, (list, tuple)):
            for item in msg:
                self.lines(item)
        elif msg not in (None, ''):
            for line in ('%s' % msg).splitlines():
                # A plan's empty list says nothing in a story; a progress line printed as it came is not repeated.
                if not line.endswith(': []') and line not in self._seen_progress:
                    self._print(line)

    def progress(self, result):
        """The progress lines a module returns while it runs (or with its result), each printed once."""
        for line in result.get('progress_lines') or result.get('progress') or []:
            if isinstance(line, str) and line not in self._seen_progress:
                self._seen_progress.add(line)
                self._print(line)

    def summary(self, rollout):
        """One line of the role's rollout_result."""
        if not isinstance(rollout, dict):
            return self.lines(rollout)
        failed = rollout.get('failed_pods') or []
        parts = ['%s: %s pod(s), %s step(s) run of %s' % (rollout.get('mode'), rollout.get('pods'),
                                                          rollout.get('batches_run'), rollout.get('batches_planned')),
                 '%d failed' % len(failed), '%s recreated' % rollout.get('recreated_pods')]
        if rollout.get('rolled_back') in (True, 'True', 'true'):
            parts.append('rolled back')
        if rollout.get('left_on_old_version'):
            parts.append('%d left on the old version' % len(rollout['left_on_old_version']))
        parts.append('%ss' % rollout.get('elapsed_seconds'))
        self._print('result: ' + ', '.join(parts))
        for item in failed:
            self._print('failed: %s: %s' % (item.get('name'), item.get('reason')))

    # ---- Ansible's events

    def v2_runner_on_ok(self, result):
        res = result._result
        self.progress(res)
        name = result._task.name
        if name in TOLD:
            self.lines(res.get('msg'))
        elif name == SUMMARY:
            self.summary(res.get('msg'))
        for warning in res.get('warnings') or []:
            self._print('warning: %s' % warning)

    def v2_runner_on_async_poll(self, result):
        self.progress(result._result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        res = result._result
        self._print('FAILED (%s): %s' % (result._task.get_name(), res.get('msg') or res.get('message') or 'see the log'))

    def v2_runner_on_unreachable(self, result):
        self._print('UNREACHABLE: %s' % result._result.get('msg'))

    def v2_playbook_on_stats(self, stats):
        failures = sum(stats.summarize(host)['failures'] for host in stats.processed)
        if failures:
            self._print('the playbook failed (%d task(s))' % failures)
