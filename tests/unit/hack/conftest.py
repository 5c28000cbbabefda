# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests of hack/ share: the tree's root and a script of hack/ loaded as a module."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def load_script(filename, name):
    """hack/``filename`` as the module ``name`` (the scripts' names are no module names)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'hack', filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
