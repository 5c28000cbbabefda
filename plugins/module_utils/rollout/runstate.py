# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The run state of state rollout (rollout/loop.py): one typed schema with a version. It crosses the role boundary
as a dict: returned as ``run`` (the role reads ``point``, ``next``, ``batches``, ``recreated`` of it), passed back as
``internal.resume``. What comes back went through job variables, so it is a claim: load() checks its version, its
keys and their types before the loop trusts any of it, and refuses with the field and the fix."""

from dataclasses import dataclass, field, fields

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

VERSION = 1   # the schema of the serialised run; another version is refused on resume, never reinterpreted
RESUME = 'internal.resume'


@dataclass
class Run:
    """One rollout run from its plan to its end (carried from call to call). Fields that are None are not
    serialised (a point only while the role acts, the finish only once the run ended)."""

    batches: list = field(default_factory=list)       # the pod names of each step (sweeps append to it)
    next: int = 0                                     # the index of the step the next loop turn runs
    canary: bool = False                              # the first step is the canary
    watch: dict = None                                # the pods counted done: name -> watch entry (None at the end)
    steps: list = field(default_factory=list)         # each step's report (loop.KEPT and pods)
    failed_pods: list = field(default_factory=list)
    not_started: list = field(default_factory=list)
    recreated: list = field(default_factory=list)
    gone: list = field(default_factory=list)          # pods/departure entries
    replaced: list = field(default_factory=list)      # pods the controller replaced, on the target (finish)
    timings: dict = field(default_factory=dict)
    config_checks: dict = None                        # a config rollout's checks in the pods (batch_step.config_checks)
    steps_run: int = 0
    stopped: bool = False
    changed: bool = False
    progress: list = field(default_factory=list)      # the lines of this call
    mode: str = None                                  # the plan's mode (in_place, restart, unchanged)
    counts: dict = None                               # total, done, failed: the live progress
    plan: dict = None                                 # report.plan_facts of the first call's plan
    diff: list = None
    point: dict = None                                # where the role acts now: after, verify, analysis
    sweeps: int = None                                # steps added for pods the plan did not have
    analysed_end: bool = None
    analysis_failed: bool = None
    finished: dict = None                             # finish()'s result
    rollback: dict = None                             # rollback()'s result
    rolled_back: bool = None
    verified_at: str = None                           # when the end listed the pods its result claims (UTC, ms)

    def to_dict(self):
        """The serialised run (shallow: its values are the run's own lists and dicts), with its schema version."""
        out = {f.name: getattr(self, f.name) for f in FIELDS if getattr(self, f.name) is not None}
        out['version'] = VERSION
        return out

    @classmethod
    def load(cls, data):
        """The run the role passed back (``internal.resume``), checked: the version this collection writes, no
        unknown key, every value of its type, the next step within the batches."""
        if not isinstance(data, dict):
            raise _refused('it is a %s, not the run a previous call returned' % type(data).__name__)
        version = data.get('version')
        if version != VERSION:
            raise _refused('its schema version is %r, this collection reads version %d (a run of another version of '
                           'the collection, or not a run this module returned)' % (version, VERSION))
        unknown = sorted(set(data) - set(KINDS) - {'version'})
        if unknown:
            raise _refused('unknown key(s) %s' % ', '.join(unknown))
        missing = sorted(name for name in REQUIRED if name not in data)
        if missing:
            raise _refused('key(s) missing: %s' % ', '.join(missing))
        for name, value in data.items():
            kind = KINDS.get(name)
            if kind is not None and value is not None and not _is(value, kind):
                raise _refused('%s is a %s, not a %s' % (name, type(value).__name__, kind.__name__))
        batches = data['batches']
        if not all(isinstance(names, list) and all(isinstance(name, str) for name in names) for names in batches):
            raise _refused('batches is not a list of lists of pod names')
        if not 0 <= data['next'] <= len(batches) or data['steps_run'] < 0:
            raise _refused('next (%d) or steps_run (%d) is out of range of its %d batch(es)' % (
                data['next'], data['steps_run'], len(batches)))
        return cls(**{name: value for name, value in data.items() if name != 'version'})


FIELDS = fields(Run)
KINDS = {f.name: {'list': list, 'dict': dict, 'bool': bool, 'int': int, 'str': str}[
    f.type if isinstance(f.type, str) else f.type.__name__] for f in FIELDS}
# The keys every run this module returns has (mode, counts and plan are missing from a rollback that resumed).
REQUIRED = ('batches', 'next', 'canary', 'steps', 'failed_pods', 'not_started', 'recreated', 'gone', 'timings',
            'steps_run', 'stopped', 'changed')


def _is(value, kind):
    """isinstance, where a bool is not an int."""
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _refused(why):
    return ValidationError('%s is not a run state this module can resume: %s. It is the run a previous call of the '
                           'role returned, passed back unchanged: run the role again (a held workload is resumed '
                           'from its record), or end the run with rollout_action=rollback or release; nothing was '
                           'changed' % (RESUME, why))
