# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A module's start. Each module calls compile_once() before its other imports, so that the code it imports from the
AnsiballZ zip is compiled once instead of twice.

Ansible runs a module from a zip (AnsiballZ). Python's zipimport keeps no bytecode, so each run compiles every module
it imports from source. Python 3.11 to 3.13 also compile it twice: finding a module asks the zip's importer for the
file name (``get_filename``), and it compiles the source to tell which file the code comes from; loading the module
then asks for the code (``get_code``), which compiles it again. compile_once() hands the first compile's answer to
the second ask: less CPU and wall time at each start (docs/performance.md). Nothing changes when the
module does not run from a zip, or when zipimport has no such lookup.
"""

import threading
import zipimport


def _once_per_load(lookup):
    """``lookup`` (importer, name) -> (code, is package, path), where the second call for a name gets the first
    call's answer, and the third call compiles again."""
    kept = {}
    lock = threading.Lock()

    def remembered(importer, *args):
        key = (getattr(importer, 'archive', None), getattr(importer, 'prefix', None)) + args
        with lock:
            found = kept.pop(key, None)
        if found is None:
            found = lookup(importer, *args)
            with lock:
                kept[key] = found
        return found
    remembered.inplace_k8s = True
    return remembered


def compile_once():
    """Install the lookup above, once per process."""
    lookup = getattr(zipimport, '_get_module_code', None)
    if lookup is not None and not getattr(lookup, 'inplace_k8s', False):
        zipimport._get_module_code = _once_per_load(lookup)
