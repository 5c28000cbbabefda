# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""rollout_workload's action: runs the module and, while it runs, shows its live progress.

A rollout of many pods runs in one module call. The module (rollout/progress.py) writes its progress lines to a
file this action names in ``internal.progress_file``; a thread here reads the file while the module runs and
shows each line (ansible-playbook's output; under ansible-runner and AWX, job events of the kind ``verbose``).
Only where the module runs on this machine (connection local, not async); elsewhere the module runs as it is.

``internal`` is the role's plumbing, not an option for playbooks: every call of the module goes through this action,
which refuses ``internal`` unless the task is one of the role inplace.k8s.rollout's own (its role is that role of this
collection), and never passes on a ``progress_file`` it did not make (the module checks the file's form again:
rollout/progress.py).

The role's tasks name the state and what the run computed; with ``internal.role_variables`` this action adds the
options that come from the role's variables (rollout/role_options.py, the one mapping; what the task names wins;
``internal.undo``, the revision an in-place undo rolls out, instead of rollout_images and rollout_resources),
and to the results of the role's calls the text the role prints (rollout/messages.py): ``lines`` of states
drain_label and rollback, ``analysis_lines`` of state rollout at an analysis (its line for each outcome, the
summary left to fill in), ``failure`` of state rollout (with ``internal.analysis_summary``, the role's, which the
module does not take). State drain_label for pods chosen by label selectors runs no module: there is no workload to
read, only the lines to show."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import tempfile
import threading

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.inplace.k8s.plugins.module_utils.rollout import messages, role_options

display = Display()

POLL_SECONDS = 0.5
ROLE = 'inplace.k8s.rollout'
ROLE_PATH = os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'rollout'))
PROGRESS_PREFIX, PROGRESS_SUFFIX = 'inplace-progress-', '.jsonl'   # the module checks the form (rollout/progress.py)


class ProgressReader(threading.Thread):
    """Shows the lines the module appends to ``path`` until stopped (then the lines left)."""

    def __init__(self, path, show):
        super(ProgressReader, self).__init__(name='inplace-progress-reader')
        self.daemon = True
        self.path, self.show = path, show
        self.offset = 0
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(POLL_SECONDS):
            self.read()
        self.read()

    def read(self):
        try:
            with open(self.path) as source:
                source.seek(self.offset)
                text = source.read()
        except (IOError, OSError):
            return
        complete = text[:text.rfind('\n') + 1]
        self.offset += len(complete)
        for raw in complete.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get('line'):
                self.show(entry['line'])

    def stop(self):
        self.stopped.set()
        self.join(timeout=5)


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if 'internal' in args and not self._from_role():
            result.update(failed=True, changed=False, msg=(
                'internal: it is the plumbing of the role %s, set by the role itself; a playbook may not set it '
                '(nothing was changed). Remove internal from this task: run the rollout through the role, or use '
                "the module's documented options (state, stop_after_batches, ...)" % ROLE))
            return result
        role_call, summary = False, None
        if isinstance(args.get('internal'), dict):
            args['internal'] = dict((k, v) for k, v in args['internal'].items() if k != 'progress_file')
            summary = args['internal'].pop('analysis_summary', None)
            undo = args['internal'].pop('undo', None)
            role_call = bool(args['internal'].pop('role_variables', False))
            if role_call:
                args = self._with_role_variables(args, task_vars or {}, undo)
        if role_call and args.get('state') == 'drain_label' and not args.get('kind'):
            result.update(changed=False, drain_label={}, lines=self._lines(args, result, task_vars or {}))
            return result
        wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
        reader = path = None
        if self._shows_progress(args):
            handle, path = tempfile.mkstemp(prefix=PROGRESS_PREFIX, suffix=PROGRESS_SUFFIX)
            os.close(handle)
            args['internal'] = dict(args.get('internal') or {}, progress_file=path)
            host = (task_vars or {}).get('inventory_hostname', 'localhost')
            reader = ProgressReader(path, lambda line: display.display('[%s] progress: %s' % (host, line)))
            reader.start()
        try:
            result.update(self._execute_module(module_name='inplace.k8s.rollout_workload', module_args=args,
                                               task_vars=task_vars, wrap_async=wrap_async))
        finally:
            if reader is not None:
                reader.stop()
                try:
                    os.unlink(path)
                except OSError:   # removed by the module already: a run whose playbook ended (process/cancel.py)
                    pass
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if role_call and not result.get('failed'):
            result.update(self._messages(args, result, summary, task_vars or {}))
        return result

    def _messages(self, args, result, summary, task_vars):
        """The text the role prints of this call's result (rollout/messages.py)."""
        state = args.get('state')
        if state in ('drain_label', 'rollback'):
            return {'lines': self._lines(args, result, task_vars)}
        run = result.get('run')
        if state != 'rollout' or not isinstance(run, dict):
            return {}
        if run.get('point'):
            if not run['point'].get('analysis'):
                return {}
            on_failure = role_options.templated(self._templar, task_vars, ['rollout_on_failure'])
            return {'analysis_lines': messages.analysis_lines(run['point'].get('after'),
                                                              on_failure.get('rollout_on_failure', 'halt'))}
        internal = args.get('internal') or {}
        point = (internal.get('resume') or {}).get('point') or {}
        analysis = {'after': point.get('after'), 'outcome': internal.get('analysis'), 'summary': summary}
        return {'failure': messages.failure(result.get('report') or {}, run.get('recreated'), analysis)}

    def _lines(self, args, result, task_vars):
        check_mode = bool(self._play_context.check_mode)
        if args.get('state') == 'rollback':
            return messages.rollback_lines(result.get('groups'), check_mode)
        variables = role_options.templated(self._templar, task_vars, ['rollout_enable_drain_label'])
        return messages.drain_label_lines(args.get('drain_label'), result.get('drain_label'),
                                          workload=bool(args.get('kind')), check_mode=check_mode,
                                          enabling=boolean(variables.get('rollout_enable_drain_label', False)))

    def _with_role_variables(self, args, task_vars, undo=None):
        """``args`` with the options of its state that come from the role's variables (the task's own win; the
        images and resources of ``undo``, the revision an in-place undo rolls out, instead of the variables');
        ``internal`` left out when nothing else is in it."""
        variables = role_options.templated(self._templar, task_vars, role_options.variable_names())
        args = dict(role_options.module_args(args.get('state'), variables, undo), **args)
        if not args['internal']:
            del args['internal']
        return args

    def _from_role(self):
        """Is this task one of the rollout role's own (the role of this collection, by name or by path)?"""
        role = getattr(self._task, '_role', None)
        if role is None:
            return False
        try:
            name = role.get_name(include_role_fqcn=True)
        except (AttributeError, TypeError):
            name = None
        path = getattr(role, '_role_path', None)
        return name == ROLE or (isinstance(path, str) and os.path.realpath(path) == ROLE_PATH)

    def _shows_progress(self, args):
        """Progress for the rollout loop's call, when the module runs here and not in the background."""
        if args.get('state') != 'rollout' or self._task.async_val:
            return False
        return getattr(self._connection, 'transport', None) == 'local'
