# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A module's start: code imported from a zip is compiled once."""

import importlib
import sys
import zipfile
import zipimport

import pytest

from ansible_collections.inplace.k8s.plugins.module_utils import startup


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A zip holding package zipstarted (with one module) on sys.path; zipimport as it was, afterwards."""
    path = tmp_path / 'lib.zip'
    with zipfile.ZipFile(str(path), 'w') as zipped:
        zipped.writestr('zipstarted/__init__.py', 'PACKAGE = True\n')
        zipped.writestr('zipstarted/one.py', 'VALUE = 41 + 1\n')
    monkeypatch.setattr(zipimport, '_get_module_code', zipimport._get_module_code)
    compiled = []
    real = zipimport._compile_source
    monkeypatch.setattr(zipimport, '_compile_source', lambda name, source: compiled.append(name) or real(name, source))
    monkeypatch.syspath_prepend(str(path))
    yield compiled
    for name in ('zipstarted.one', 'zipstarted'):
        sys.modules.pop(name, None)
    sys.path_importer_cache.pop(str(path), None)


def test_zipimport_compiles_each_module_twice_without_it(archive):
    module = importlib.import_module('zipstarted.one')
    assert module.VALUE == 42
    assert sorted(name.rsplit('/', 1)[-1] for name in archive) == ['__init__.py'] * 2 + ['one.py'] * 2


def test_with_it_each_module_is_compiled_once_and_loads_the_same(archive):
    startup.compile_once()
    startup.compile_once()   # a second call adds nothing
    assert getattr(zipimport._get_module_code, 'inplace_k8s', False)
    module = importlib.import_module('zipstarted.one')
    assert module.VALUE == 42 and module.__file__.endswith('lib.zip/zipstarted/one.py')
    assert sys.modules['zipstarted'].PACKAGE
    assert sorted(name.rsplit('/', 1)[-1] for name in archive) == ['__init__.py', 'one.py']
    # asked again (a reload), a module is compiled again: nothing old is handed out
    importlib.reload(module)
    assert module.VALUE == 42 and sorted(name.rsplit('/', 1)[-1] for name in archive) == ['__init__.py', 'one.py', 'one.py']


def test_a_python_without_the_lookup_is_left_alone(monkeypatch):
    monkeypatch.delattr(zipimport, '_get_module_code')
    startup.compile_once()
    assert not hasattr(zipimport, '_get_module_code')
