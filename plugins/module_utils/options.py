# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The options of a pod operation as typed objects, parsed once at the edge: a module's main() (from
its params: ``*.from_params``, the one place that reads them) or the rollout's batch step (which builds
them directly). Nothing below the runner reads Ansible's params, and nothing writes into them: an
operation that needs other values makes a changed copy (``_replace``).

Each object pairs with a shared argument spec of args.py, whose defaults it takes: Connection <-> AUTH_ARG_SPEC,
Target <-> TARGET_ARG_SPEC, Wait <-> WAIT_ARG_SPEC, Drain <-> DRAIN_ARG_SPEC; the change (ImageChange,
ResizeChange, RestartChange with its Strategy) holds each module's own options. Named tuples:
immutable, and cheap to define (a module's start-up time counts; dataclasses cost more: docs/performance.md).
"""

from collections import namedtuple

from ansible_collections.inplace.k8s.plugins.module_utils.args import (
    DRAIN_ARG_SPEC, TARGET_ARG_SPEC, WAIT_ARG_SPEC, WAIT_TIMEOUT, default,
)
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

# Bounds of the numbers a user gives (docs/errors.md): a value past one is refused by name before anything is
# read or written. Seconds: at most a day (a longer wait is a stuck run, and the pods' records hold a pod at most
# a few such waits: pods/record.py MAX_HOLD_SECONDS). Counts: what a run can do at once or in a row.
MAX_SECONDS = 86400
SECONDS_FIELDS = ('wait_timeout', 'min_ready_seconds', 'drain_seconds', 'pause_seconds', 'canary_pause_seconds',
                  'kruise_ttl_seconds_after_finished', 'kruise_termination_grace_period_seconds')
MAX_CONCURRENCY = 256
MAX_COUNT = 1000000
COUNT_FIELDS = (('max_concurrency', MAX_CONCURRENCY), ('max_failed_pods', MAX_COUNT),
                ('stop_after_batches', MAX_COUNT), ('to_revision', 2 ** 62))


def check_bounds(values):
    """Raise ValidationError naming each number of ``values`` (an option name -> value mapping) past its
    bound (SECONDS_FIELDS: MAX_SECONDS; COUNT_FIELDS), with the fix; nothing was changed."""
    limits = [(name, MAX_SECONDS, 'seconds (a day)') for name in SECONDS_FIELDS]
    limits += [(name, bound, '') for name, bound in COUNT_FIELDS]
    errors = []
    for name, bound, unit in limits:
        value = values.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > bound:
            errors.append('%s: %s is more than %d%s; give at most %d' % (
                name, str(value)[:40], bound, ' ' + unit if unit else '', bound))
    if errors:
        raise ValidationError('%s; nothing was changed' % '; '.join(errors))


CONNECTION_FIELDS = ('kubeconfig', 'context', 'host', 'api_key', 'username', 'password', 'validate_certs', 'ca_cert',
                     'client_cert', 'client_key', 'proxy', 'no_proxy', 'proxy_headers', 'persist_config',
                     'impersonate_user', 'impersonate_groups', 'impersonate_uid', 'impersonate_extra')


class Connection(namedtuple('Connection', CONNECTION_FIELDS, defaults=(None,) * len(CONNECTION_FIELDS))):
    """How to reach the API server (kubernetes.core's option names, args.AUTH_ARG_SPEC)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(**{name: params.get(name) for name in cls._fields})

    def settings(self):
        """The auth options as the connection loader reads them (kubeconfig.settings_from_params)."""
        return self._asdict()


_TARGET_OPTIONS = ('name', 'names', 'label_selectors', 'field_selectors', 'fail_on_no_match', 'continue_on_error',
                   'max_concurrency', 'force_takeover')


class Target(namedtuple('Target', ('namespace',) + _TARGET_OPTIONS + ('window', 'owners'),
                        defaults=tuple(default(TARGET_ARG_SPEC, name) for name in _TARGET_OPTIONS) + (None, None))):
    """Which pods, and how many at once (args.TARGET_ARG_SPEC). ``window``: none from a module's params; the
    rollout's sliding window (rollout.window.Window), which admits each pod in its turn. ``owners``: the owners
    policy (args.OWNERS_ARG_SPEC; None: not checked, as in the rollout's batches, whose plan checked them)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(namespace=params['namespace'], name=params.get('name'), names=tuple(params.get('names') or ()),
                   label_selectors=tuple(params.get('label_selectors') or ()),
                   field_selectors=tuple(params.get('field_selectors') or ()),
                   fail_on_no_match=bool(params.get('fail_on_no_match')),
                   continue_on_error=bool(params.get('continue_on_error')),
                   max_concurrency=params.get('max_concurrency', cls._field_defaults['max_concurrency']), force_takeover=bool(params.get('force_takeover')),
                   owners=params.get('owners'))

    def pod_names(self):
        """The names asked for ([] with selectors only)."""
        return [self.name] if self.name else list(self.names)

    def selectors(self):
        """(label_selector, field_selector) strings for the API: the same for the list and the watch."""
        labels = ','.join(self.label_selectors) or None
        found = list(self.field_selectors)
        names = self.pod_names()
        if len(names) == 1:
            found.append('metadata.name=%s' % names[0])
        return labels, ','.join(found) or None


class Wait(namedtuple('Wait', 'enabled timeout min_ready_seconds',
                      defaults=tuple(default(WAIT_ARG_SPEC, name) for name in ('wait', 'wait_timeout',
                                                                               'min_ready_seconds')))):
    """Whether and how long to wait for the change (args.WAIT_ARG_SPEC)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(enabled=params.get('wait', True), timeout=params.get('wait_timeout', WAIT_TIMEOUT),
                   min_ready_seconds=params.get('min_ready_seconds') or 0)


class Drain(namedtuple('Drain', 'readiness_gate seconds required on_failure drain_label',
                       defaults=tuple(default(DRAIN_ARG_SPEC, name) for name in (
                           'readiness_gate', 'drain_seconds', 'require_readiness_gate', 'readiness_gate_on_failure',
                           'drain_label')))):
    """How pods are drained before the change: a readiness gate, or a label that Services select by
    (args.DRAIN_ARG_SPEC; drain.drainer)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(readiness_gate=params.get('readiness_gate'), seconds=params.get('drain_seconds') or 0,
                   required=bool(params.get('require_readiness_gate')),
                   on_failure=params.get('readiness_gate_on_failure') or cls._field_defaults['on_failure'],
                   drain_label=params.get('drain_label'))


class ImageChange(namedtuple('ImageChange', 'containers on_failure prepull prepull_run prepull_ahead labels',
                             defaults=('stop', False, None, None, None))):
    """inplace_image: container -> image; ``prepull``: pull the images on the pods' nodes first (operations.prepull;
    the rollout also names its run, ``prepull_run``, and the nodes of the next pods, ``prepull_ahead``, and the
    revision ``labels`` its pods get in the same write as the image: one write per pod)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(containers=params['containers'], on_failure=params.get('on_failure') or 'stop',
                   prepull=bool(params.get('prepull')))


class ResizeChange(namedtuple('ResizeChange', 'containers allow_restart on_failure', defaults=(True, 'stop'))):
    """inplace_resize: container -> {requests, limits} (partial)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(containers=params['containers'], allow_restart=params.get('allow_restart', True),
                   on_failure=params.get('on_failure') or 'stop')


STRATEGIES = ('auto', 'kruise', 'image_reference', 'exec', 'cri')   # container_recreate's, rollout_workload's restart


class Strategy(namedtuple('Strategy', 'name exec_signal exec_command cri_client cri_command cri_endpoint '
                                      'kruise_ttl_seconds_after_finished kruise_termination_grace_period_seconds',
                          defaults=('auto',) + (None,) * 7)):
    """container_recreate: how containers are restarted, and each strategy's settings (None: its default)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(params.get('strategy') or 'auto', *(params.get(name) for name in cls._fields[1:]))


class RestartChange(namedtuple('RestartChange', 'containers ordered restarted_after strategy on_failure select hooks',
                               defaults=(None, False, None, Strategy(), 'stop', None, None))):
    """container_recreate: which containers restart (None: the app containers), in order or not, since when.
    ``select``: none from a module's params; a config rollout's choice per pod (pod -> {container: why}).
    ``hooks``: none from a module's params; a config rollout's checks before and after each restart
    (config/checks.py)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params):
        return cls(containers=params.get('containers') or None, ordered=bool(params.get('ordered')),
                   restarted_after=params.get('restarted_after'), strategy=Strategy.from_params(params))


class Task(namedtuple('Task', 'target change wait drain connection events', defaults=(Wait(), Drain(), None, True))):
    """One run of one pod operation: which pods, what change, how to wait and drain, how to connect
    (None: the caller passes its client), whether it writes Kubernetes Events (operations/events.py)."""

    __slots__ = ()

    @classmethod
    def from_params(cls, params, change):
        """The task of a pod module: its params parsed once (numbers within their bounds: check_bounds);
        ``change`` parses the module's own options (ImageChange, ResizeChange, RestartChange)."""
        check_bounds(params)
        return cls(target=Target.from_params(params), change=change.from_params(params),
                   wait=Wait.from_params(params), drain=Drain.from_params(params),
                   connection=Connection.from_params(params), events=params.get('events') is not False)
