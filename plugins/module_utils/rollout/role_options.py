# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The role inplace.k8s.rollout's variables as rollout_workload's options: the one mapping between them.

The role's tasks name only the state and what the run itself computed (its id, the window, the restart id, the
plumbing of ``internal``); the action of rollout_workload (plugins/action/rollout_workload.py) adds the options that
come from the role's variables, ``module_args(state, variables, undo)``, and the action rollout_preflight reads the
same variables (``role_variables``). ``undo``, the one input that is not a variable of the user: the revision an
in-place undo goes back to (state previous's ``undo``, passed by the role's call as ``internal.undo``), whose images
and resources take the place of rollout_images and rollout_resources (which an undo does not take). The options a
state takes are those its task passed before this mapping.

PRESETS is the one table of the role's defaults that deliberately differ from the module's (a safer preset):
tests/unit/plugins/module_utils/test_role_options.py fails when any other default of the role differs from the
module's, and hack/role-readme.py writes the table, with both defaults, into the role's README.

Nothing is imported here: hack/role-readme.py loads this file by its path."""

PREFIX = 'rollout_'


def _as_is(value):
    return value


def _or_omit(value):
    """The value, or omitted (the module's default) when empty."""
    return value or None


def _string(value):
    return '%s' % (value,)


def _string_or_omit(value):
    return _string(value) if len(_string(value)) else None


def _on_failure(value):
    return 'rollback' if value == 'rollback' else 'stop'


def _positive_or_omit(value):
    try:
        return int(value) if int(value) > 0 else None
    except (TypeError, ValueError):
        return None


def _config(value):
    """rollout_config: ``auto`` alone may be a string; a list as it is; omitted when empty."""
    return ([value] if isinstance(value, str) else list(value)) if value else None


def _data_of(secrets):
    """rollout_config_data split for the module: a ConfigMap's data as config_data, a Secret's as secret_data (an
    option whose values Ansible never shows nor logs); omitted when there is none."""
    def convert(value):
        if not isinstance(value, dict):
            return value or None
        return dict((ref, data) for ref, data in value.items() if str(ref).startswith('Secret/') == secrets) or None
    return convert


def _target(field):
    return lambda target: (target or {}).get(field)


# module option -> (the role's variable without its prefix, the option's value from the variable's; None: omitted,
# the module's default applies).
OPTIONS = {
    'namespace': ('target', _target('namespace')),
    'kind': ('target', _target('kind')),
    'name': ('target', _target('name')),
    'label_selectors': ('target', _target('label_selectors')),
    'images': ('images', _or_omit),
    'resources': ('resources', _or_omit),
    'restart': ('restart', _or_omit),
    'config': ('config', _config),
    'config_data': ('config_data', _data_of(False)),
    'secret_data': ('config_data', _data_of(True)),
    'config_projection': ('config_projection', _or_omit),
    'config_check': ('config_check', _or_omit),
    'allow_recreate': ('allow_recreate', _as_is),
    'batch_size': ('batch_size', _string),
    'max_unavailable': ('max_unavailable', _string_or_omit),
    'partition': ('partition', _string),
    'canary': ('canary', _string),
    'canary_pause_seconds': ('canary_pause_seconds', _as_is),
    'pause_seconds': ('pause_seconds', _as_is),
    'stop_after_batches': ('stop_after_batches', _as_is),
    'order': ('order', _as_is),
    'order_label': ('order_label', _or_omit),
    'readiness_gate': ('readiness_gate', _or_omit),
    'drain_label': ('drain_label', _or_omit),
    'service': ('drain_label_service', _or_omit),
    'prepull': ('prepull', _as_is),
    'wait_timeout': ('wait_timeout', _as_is),
    'restart_strategy': ('restart_strategy', _or_omit),
    'max_failed_pods': ('max_failed_pods', _as_is),
    'require_readiness_gate': ('require_drain', _as_is),
    'drain_seconds': ('drain_seconds', _as_is),
    'min_ready_seconds': ('min_ready_seconds', _as_is),
    'on_failure': ('on_failure', _on_failure),
    'owners': ('owners', _as_is),
    'force_takeover': ('force_takeover', _as_is),
    'events': ('events', _as_is),
    'to_revision': ('undo_revision', _positive_or_omit),
}

_WORKLOAD = ('namespace', 'kind', 'name')
_ENDS = _WORKLOAD + ('label_selectors', 'images', 'resources', 'order', 'order_label', 'readiness_gate', 'drain_label',
                     'drain_seconds', 'prepull', 'wait_timeout', 'force_takeover', 'events')

# The options each state the role calls takes from the role's variables.
STATE_OPTIONS = {
    'rollout': tuple(name for name in OPTIONS if name not in ('service', 'to_revision')),
    'rollback': _ENDS,
    'release': _ENDS,
    'drain_label': _WORKLOAD + ('drain_label', 'service', 'wait_timeout'),
    'previous': _WORKLOAD + ('to_revision',),
}

# The role's variables whose default deliberately differs from the module option's (the option is OPTIONS'), and
# why. The defaults themselves are written once each: the role's in meta/argument_specs.yml, the module's in its
# argument spec (rollout/options.py ROLLOUT_ARG_SPEC).
PRESETS = (
    ('min_ready_seconds', 'a container that crashes within 10 seconds of its start fails its pod (and '
                          'rollout_on_failure applies) instead of counting as done once it is Ready'),
    ('window', 'the pods roll through a sliding window whenever nothing of the user runs between the steps (the '
               'module, called by itself, runs the batches it is asked for)'),
)


def variable_names():
    """The role's variables (with their prefix) that become module options."""
    return sorted(set(PREFIX + variable for variable, _convert in OPTIONS.values()))


def templated(templar, task_vars, names):
    """The variables ``names`` that are set in ``task_vars``, templated (an action's templar)."""
    return templar.template(dict((name, task_vars[name]) for name in names if name in task_vars))


def module_args(state, variables, undo=None):
    """rollout_workload's options for ``state`` from the role's ``variables`` (name with its prefix -> value,
    templated): the options it takes (STATE_OPTIONS), those that are empty left out. ``undo``: the revision of an
    in-place undo ({images, resources}, state previous's), rolled out instead of rollout_images and
    rollout_resources."""
    if undo:
        variables = dict(variables, **{PREFIX + 'images': undo.get('images'),
                                       PREFIX + 'resources': undo.get('resources')})
    args = {}
    for option in STATE_OPTIONS.get(state, ()):
        variable, convert = OPTIONS[option]
        value = convert(variables.get(PREFIX + variable))
        if value is not None:
            args[option] = value
    return args
