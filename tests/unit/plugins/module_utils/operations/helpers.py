# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the operations' tests share: engine.Options with the tests' defaults, and one engine run on a fake cluster."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

from ansible_collections.inplace.k8s.plugins.module_utils.operations import engine
from ansible_collections.inplace.k8s.plugins.module_utils.operations.image import ImageOperation
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.fakes import FakeWatcher

NEW = 'registry.example/app:2.0'


def options(**changes):
    values = dict(check_mode=False, wait=True, wait_timeout=30, max_concurrency=4, readiness_gate=None,
                  drain_seconds=0, require_readiness_gate=False, gate_on_failure='restore_if_healthy',
                  on_failure='stop', min_ready_seconds=0)
    values.update(changes)
    return engine.Options(**values)


def run(cluster, images, cancel=None, **changes):
    runner = engine.Engine(cluster, ImageOperation(images), options(**changes), FakeWatcher(cluster),
                           sleep=lambda seconds: None, cancel=cancel)
    listed = [copy.deepcopy(p) for p in sorted(cluster.pods.values(), key=lambda p: p['metadata']['name'])]
    return runner.run(listed), runner
