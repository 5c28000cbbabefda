# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What one step of a rollout returns (rollout/batch_step.py, finish.py): its report, the gate's error when it did
not let the batch through, and its failures - each failed pod, or the whole batch as the names it covers (a gate that did not
let it through, a change that failed as a whole), never a pod name to split again."""

from dataclasses import dataclass, field

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import InplaceError


@dataclass
class StepResult:
    """``out``: the step's report (the module's result of state batch or finish, and what the loop adds to the run);
    ``error``: the gate's, when the step failed as a whole before anything was written, or the finish's conflict
    (another writer's change found before the release: nothing released); the module's state raises it."""

    out: dict
    error: InplaceError = None


@dataclass
class WholeBatch:
    """The whole batch failed: its pods' names, the status (blocked, conflict, failed) and why."""

    names: list
    status: str
    reason: str

    def entry(self):
        """Its failed_pods entry: one for the batch, its name the pods' names joined by commas."""
        return {'name': ','.join(self.names), 'status': self.status, 'reason': self.reason}


@dataclass
class Failures:
    """The failed pods of a step in the order reported: {name, status, reason} entries of one pod each (this
    step's, or pods counted done earlier that failed since) and WholeBatch failures."""

    items: list = field(default_factory=list)

    def __post_init__(self):
        self.items = list(self.items)

    def add(self, items):
        self.items.extend(items)

    def names_in(self, names):
        """The names of ``names`` (the step's pods) that failed: all of them when the batch failed as a whole."""
        names = set(names)
        if any(isinstance(item, WholeBatch) for item in self.items):
            return names
        return set(item['name'] for item in self.items if item['name'] in names)

    def earlier(self, names):
        """How many failed pods are not of this step (pods counted done earlier)."""
        return len([item for item in self.items if not isinstance(item, WholeBatch) and item['name'] not in names])

    def entries(self):
        """The failed_pods of the step's report."""
        return [item.entry() if isinstance(item, WholeBatch) else item for item in self.items]
