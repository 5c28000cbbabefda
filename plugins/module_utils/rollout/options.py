# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of rollout_workload as typed objects, parsed and checked once at the edge (the module's main(),
``RolloutOptions.from_params``, the one place that reads its params); nothing of the rollout reads params.

RolloutOptions is what the run is (the target, the change, how to cut and pace it, how to drain); Step is what
one batch is (its pods, what is left of the failure budget, the next batch to pre-pull, its progress label): the
module's own options for state batch, or one per batch made by the one-call loop (rollout/loop.py), which never
writes into the run's options. The role's plumbing between its calls (the pods verified so far, the pause, the
next batch, the progress label, its start) arrives in the one option ``internal``.
Named tuples, as the pod modules' options.py: immutable and cheap to define.
"""

from collections import namedtuple

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    DRAIN_ARG_SPEC, EVENTS_ARG_SPEC, OWNERS_ARG_SPEC, TARGET_ARG_SPEC, WAIT_ARG_SPEC, default,
)
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError
from ansible_collections.inplace.k8s.plugins.module_utils.config import checks, data, usage
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import validate_images
from ansible_collections.inplace.k8s.plugins.module_utils.options import STRATEGIES, check_bounds
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import batching, progress

# The argument spec of the options documented in doc_fragments/rollout_options.py (the module adds its state): the
# one place of their defaults (the shared ones from args.py). RUN_DEFAULTS is derived from it; the role's defaults
# are checked against it (rollout/role_options.py, tests/unit/plugins/module_utils/test_role_options.py).
ROLLOUT_ARG_SPEC = {
    'namespace': {'type': 'str', 'required': True},
    'kind': {'type': 'str', 'choices': ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']},
    'name': {'type': 'str'},
    'label_selectors': {'type': 'list', 'elements': 'str'},
    'images': {'type': 'dict'},
    'resources': {'type': 'dict'},
    'restart': {'type': 'list', 'elements': 'str'},
    'restart_id': {'type': 'str'},
    'config': {'type': 'list', 'elements': 'str'},
    'config_data': {'type': 'dict'},
    'secret_data': {'type': 'dict', 'no_log': True},
    'config_projection': {'type': 'str', 'default': 'best_effort', 'choices': ['best_effort', 'required', 'skip']},
    'config_check': {'type': 'dict'},
    'allow_recreate': {'type': 'bool', 'default': False},
    'batch_size': {'type': 'str', 'default': '1'},
    'max_unavailable': {'type': 'str'},
    'window': {'type': 'bool', 'default': False},
    'max_failed_pods': {'type': 'int', 'default': 0},
    'partition': {'type': 'str'},
    'canary': {'type': 'str'},
    'order': {'type': 'str', 'default': 'ordinal', 'choices': ['ordinal', 'reverse_ordinal', 'node', 'label', 'name']},
    'order_label': {'type': 'str'},
    'names': TARGET_ARG_SPEC['names'],
    'readiness_gate': DRAIN_ARG_SPEC['readiness_gate'],
    'drain_label': DRAIN_ARG_SPEC['drain_label'],
    'require_readiness_gate': DRAIN_ARG_SPEC['require_readiness_gate'],
    'service': {'type': 'str'},
    'prepull': {'type': 'bool', 'default': False},
    'drain_seconds': DRAIN_ARG_SPEC['drain_seconds'],
    'on_failure': {'type': 'str', 'default': 'stop', 'choices': ['stop', 'rollback']},
    'restart_strategy': {'type': 'str', 'default': 'auto', 'choices': list(STRATEGIES)},
    'wait_timeout': WAIT_ARG_SPEC['wait_timeout'],
    'run_id': {'type': 'str'},
    'force_takeover': TARGET_ARG_SPEC['force_takeover'],
    'min_ready_seconds': WAIT_ARG_SPEC['min_ready_seconds'],
    'to_revision': {'type': 'int'},
    'pause_seconds': {'type': 'int', 'default': 0},
    'canary_pause_seconds': {'type': 'int', 'default': 0},
    'stop_after_batches': {'type': 'int', 'default': 0},
    'internal': {'type': 'dict'},
}

# The keys of the internal option (the role's plumbing), with their defaults: where the loop returns to Ansible
# (the user's verification tasks after each step, analyses after the canary, batches, the end), the run a call
# resumes and the outcome of the analysis the role ran there, the rollout's start, the live progress' file.
INTERNAL = {'verify': False, 'analysis_after': None, 'resume': None, 'analysis': None, 'started': None,
            'progress_file': None}
# What the steps of a call use that no option sets (state batch and watch called from Python: the tests).
STEP_FIELDS = (('watch', None), ('seconds', 0), ('prepull_next', ()), ('progress_label', None))


# Every field of RolloutOptions with its default, derived from the argument specs (state: what Python callers get
# without one; the module requires it).
RUN_DEFAULTS = (('state', 'prepare'),) + tuple(
    (name, default(spec, name)) for spec in (ROLLOUT_ARG_SPEC, OWNERS_ARG_SPEC, EVENTS_ARG_SPEC) for name in spec
    if name != 'internal') + tuple(INTERNAL.items()) + STEP_FIELDS


class Step(namedtuple('Step', 'names max_failed_pods prepull_next label started',
                      defaults=((), 0, (), None, None))):
    """One batch: its pods, how many of them may fail before the rollout halts, the pods of the next batch
    (pre-pulled meanwhile), its progress label and the rollout's start (time.time()) for the elapsed time."""

    __slots__ = ()


class RolloutOptions(namedtuple('RolloutOptions', [name for name, _default in RUN_DEFAULTS],
                                defaults=[default for _name, default in RUN_DEFAULTS])):
    """The module's options (a field per option; the internal option's keys are fields too)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        """Parse and check the module's params (ValidationError naming the option and the fix)."""
        internal = dict(params.get('internal') or {})
        unknown = sorted(set(internal) - set(INTERNAL))
        if unknown:
            raise ValidationError('internal: unknown key(s) %s (it is the role\'s, with %s); nothing was changed'
                                  % (', '.join(unknown), ', '.join(sorted(INTERNAL))))
        internal = dict((key, _internal_value(key, value)) for key, value in internal.items())
        values = {}
        for name, fallback in RUN_DEFAULTS:
            value = internal.get(name) if name in INTERNAL else params.get(name)
            values[name] = fallback if value is None else value
        for name in ('label_selectors', 'restart', 'names', 'prepull_next', 'analysis_after', 'config'):
            values[name] = tuple(values[name] or ())
        return cls(**values).checked()

    def checked(self):
        """self, or ValidationError for options that do not go together."""
        if not (self.images or self.resources or self.restart or self.config) and \
                self.state in ('prepare', 'batch', 'rollout'):
            raise ValidationError('give images, resources or restart, or config alone')
        if self.config and (self.images or self.resources or self.restart):
            raise ValidationError('config cannot be combined with images, resources or restart in one rollout')
        config_errors = usage.scope_errors(self.config, 'config') or checks.check_errors(
            self.config_check, config=self.config) or data.split_errors(
            self.config_data, self.secret_data) or data.errors(self.config, self.changed_data())
        if config_errors:
            raise ValidationError('%s; nothing was changed' % '; '.join(config_errors))
        if self.images:
            validate_images(self.images, 'images (rollout_images)')
        negative = [name for name in ('min_ready_seconds', 'seconds', 'pause_seconds', 'canary_pause_seconds',
                                      'stop_after_batches') if (getattr(self, name) or 0) < 0]
        if negative:
            raise ValidationError('%s must not be negative' % ' and '.join(negative))
        check_bounds(self._asdict())
        for name in ('batch_size', 'canary', 'partition', 'max_unavailable'):
            batching.parse_count(getattr(self, name), name)   # its grammar and bounds, before anything is read
        if self.progress_file is not None and progress.file_error(self.progress_file):
            raise ValidationError('%s; nothing was changed' % progress.file_error(self.progress_file))
        if self.analysis not in (None, 'success', 'failure', 'inconclusive'):
            raise ValidationError('internal.analysis: success, failure or inconclusive, got %r' % self.analysis)
        if (self.max_failed_pods or 0) < 0:
            raise ValidationError('max_failed_pods must not be negative: 0 halts the window at the first failure')
        if self.state == 'release' and not self.kind:
            raise ValidationError('state release needs kind and name: pods chosen by label_selectors hold nothing')
        if self.restart and (self.images or self.resources):
            raise ValidationError('restart cannot be combined with images or resources in one rollout')
        return self

    def changed_data(self):
        """The config change itself: config_data (ConfigMaps) and secret_data (Secrets) as one mapping."""
        return dict(self.config_data or {}, **(self.secret_data or {})) or None

    def step(self):
        """The batch the module's own options name (state batch, gate, sync)."""
        return Step(names=tuple(self.names), max_failed_pods=self.max_failed_pods or 0,
                    prepull_next=tuple(self.prepull_next), label=self.progress_label, started=self.started)


def _internal_value(key, value):
    """A value of the internal option in its type (the role's templating may hand numbers over as strings)."""
    if value in (None, ''):
        return None
    kind = {'verify': boolean, 'started': float, 'resume': dict, 'analysis': str, 'progress_file': str}.get(key, list)
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValidationError('internal.%s: expected a %s, got %r; nothing was changed' % (
            key, getattr(kind, '__name__', 'value'), value))
