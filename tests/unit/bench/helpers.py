# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests of tests/bench share: the bench's scripts loaded as modules (load), and the arguments of a bench
run (ARGS)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'bench'))

ARGS = ['--kubeconfig', 'k', '--hook', 'h', '--collections', 'c', '--out', 'o', '--work', 'w',
        '--cluster-bin', sys.executable]


def load(name):
    spec = importlib.util.spec_from_file_location('bench_' + name, os.path.join(ROOT, 'tests', 'bench', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
