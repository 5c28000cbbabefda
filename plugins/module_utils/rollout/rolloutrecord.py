# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The rollout record of a workload (annotation ``inplace.k8s/rollout``, pods/record.py's codec) read through one
typed reader: the state of the rollout that holds the workload, its target, the values from before, the strategy
saved to restore, the partition it asked for, the protection a release left, the owner and the times. The record
is a claim (anyone may edit an annotation): a field of another type than ours reads as absent, never as a value.
Writes build the record as a dict (pods/record.py claim, rollout/workload.py write_record)."""

from ansible_collections.inplace.k8s.plugins.module_utils.pods.record import (
    ACTIVE, IN_PROGRESS, ROLLED_BACK, ROLLING_BACK, workload_record,
)


class RolloutRecord:
    """A workload's rollout record (``raw``: the decoded annotation, or None when there is none: falsy)."""

    def __init__(self, raw):
        self.raw = raw if isinstance(raw, dict) else None

    @classmethod
    def of(cls, obj):
        """The record on the workload object ``obj`` (None: no object)."""
        return cls(workload_record(obj) if obj is not None else None)

    def __bool__(self):
        return bool(self.raw)

    def _field(self, key, kind):
        value = (self.raw or {}).get(key)
        return value if isinstance(value, kind) else None

    @property
    def state(self):
        return self._field('state', str)

    @property
    def active(self):
        """Held by its owner: a rollout or a rollback under way."""
        return self.state in ACTIVE

    @property
    def in_progress(self):
        return self.state == IN_PROGRESS

    @property
    def rolling_back(self):
        """A rollback under way or finished: the pods should have the values from before."""
        return self.state in (ROLLING_BACK, ROLLED_BACK)

    @property
    def target(self):
        """The rollout's target as recorded ({images, resources}, or {labels} of drain_label), or None."""
        return self._field('target', dict)

    @property
    def before(self):
        """The template values from before the rollout, or None."""
        return self._field('before', dict)

    @property
    def target_values(self):
        """(images, resources) of the target."""
        return _values(self.target)

    @property
    def before_values(self):
        """(images, resources) from before."""
        return _values(self.before)

    @property
    def values_now(self):
        """(images, resources) the pods should have now: from before while rolling back, else the target."""
        return self.before_values if self.rolling_back else self.target_values

    @property
    def saved(self):
        """The controller's strategy to restore ({} when none was saved)."""
        return self._field('saved', dict) or {}

    @property
    def partition(self):
        """The partition a StatefulSet rollout was given (its pods below that ordinal stay on the old revision),
        or None."""
        value = self._field('partition', int)
        return value if not isinstance(value, bool) and (value or 0) >= 0 else None

    @property
    def protection(self):
        """The note of a release that left a protecting strategy ({left, user}), or None."""
        return self._field('protection', dict)

    @property
    def owner_run(self):
        """The run id of its owner, or None."""
        owner = self._field('owner', dict) or {}
        return owner.get('run') if isinstance(owner.get('run'), str) else None

    @property
    def started(self):
        return self._field('started', str)

    @property
    def finished(self):
        return self._field('finished', str)


def _values(values):
    values = values or {}
    images, resources = values.get('images'), values.get('resources')
    return images if isinstance(images, dict) else {}, resources if isinstance(resources, dict) else {}
