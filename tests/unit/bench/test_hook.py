# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bench's trace hook (tests/bench/hook/sitecustomize.py) times steps that exist: a refactor that moves one
fails here, not in the bench's run."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib

import pytest

from ansible_collections.inplace.k8s.tests.unit.bench.helpers import load

HOOK = load('hook/sitecustomize')


@pytest.mark.parametrize('phase', sorted(HOOK.PHASES))
def test_each_timed_phase_is_a_method_of_its_step(phase):
    name, cls, method = HOOK.PHASES[phase]
    assert callable(getattr(getattr(importlib.import_module(name), cls), method))


def test_one_hook_per_step_module():
    hooks = HOOK.time_steps(recorder=None)
    assert sorted(h.name for h in hooks) == sorted(name for name, _cls, _method in HOOK.PHASES.values())
