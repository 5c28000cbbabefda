# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-pod RETURN entries of the pod modules are what hack/returns.py makes of docs/sources/pod-results.yml,
the owners entry of three modules what it makes of docs/sources/owners-result.yml, and the generator finds a
drifted copy, rewrites it, and names what is wrong with a broken source."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import io
import os
import shutil

import pytest
import yaml

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT, load_script

GENERATOR = load_script('returns.py', 'returns')
MODULES = ('inplace_image', 'inplace_resize', 'container_recreate')
OWNERS = ('inplace_image', 'inplace_resize', 'rollout_workload')


def module_return(root, module):
    with open(os.path.join(root, 'plugins', 'modules', module + '.py')) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'RETURN':
            return yaml.safe_load(node.value.value)
    raise AssertionError('%s has no RETURN' % module)


@pytest.fixture
def tree(tmp_path):
    """A copy of the source and the three modules."""
    sources = [region[1] for region in GENERATOR.REGIONS]
    for path in sources + ['plugins/modules/%s.py' % module for module in set(MODULES + OWNERS)]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), str(tmp_path / path))
    return str(tmp_path)


def test_the_modules_carry_what_the_source_says():
    out = io.StringIO()
    assert GENERATOR.run(check=True, out=out) == [], out.getvalue()
    assert sorted(GENERATOR.load()['modules']) == sorted(MODULES)


@pytest.mark.parametrize('module', OWNERS)
def test_the_owners_entry_is_written_once(module):
    source = GENERATOR.load(source=GENERATOR.REGIONS[1][1])
    assert sorted(source['modules']) == sorted(OWNERS)
    documented = module_return(ROOT, module)['owners']
    assert documented['contains'] == source['shared']['owners']['contains']
    want = 'by the steps that plan' if module == 'rollout_workload' else 'unless the change was given no pod'
    assert documented['returned'].startswith(want)


@pytest.mark.parametrize('module', MODULES)
def test_every_module_documents_the_shared_fields_with_its_own_words(module):
    shared = GENERATOR.load()['shared']
    documented = module_return(ROOT, module)
    assert set(shared['pods']['contains']) <= set(documented['pods']['contains'])
    assert documented['summary'] == shared['summary']
    text = yaml.safe_dump(documented)
    assert '{change}' not in text and '{written}' not in text
    uid = documented['pods']['contains']['uid']['description']
    assert uid == 'C(metadata.uid) before the %s.' % ('restart' if module == 'container_recreate' else 'change')


def test_a_module_own_fields_stay_outside_the_region():
    assert module_return(ROOT, 'inplace_image')['prepull']['returned'].startswith('when O(prepull=true)')
    assert module_return(ROOT, 'inplace_resize')['method']['sample'] == 'pods/resize'
    assert module_return(ROOT, 'container_recreate')['strategy']['sample'] == 'image_reference'


def test_samples_replace_instead_of_merging():
    timings = module_return(ROOT, 'inplace_resize')['pods']['contains']['timings']['sample']
    assert timings == {'restart': 0.0, 'ready': 0.6, 'total': 0.7}


@pytest.mark.parametrize('module, good_words, bad_words, source', [
    ('inplace_resize', 'One entry per targeted pod,', 'One entry per pod,', 'pod-results.yml'),
    ('rollout_workload', 'What could not be read (403)', 'What could not be read', 'owners-result.yml'),
])
def test_a_drifted_copy_is_named_by_check_and_rewritten_otherwise(tree, module, good_words, bad_words, source):
    path = os.path.join(tree, 'plugins', 'modules', module + '.py')
    with open(path) as handle:
        good = handle.read()
    with open(path, 'w') as handle:
        handle.write(good.replace(good_words, bad_words))
    out = io.StringIO()
    assert GENERATOR.run(tree, check=True, out=out) == [module]
    assert '%s: RETURN differs from docs/sources/%s' % (module, source) in out.getvalue()
    with open(path) as handle:
        assert bad_words in handle.read()
    assert GENERATOR.run(tree, out=io.StringIO()) == [module]
    with open(path) as handle:
        assert handle.read() == good
    assert GENERATOR.run(tree, check=True, out=io.StringIO()) == []


def test_a_module_without_the_markers_is_an_error(tree):
    path = os.path.join(tree, 'plugins', 'modules', 'inplace_image.py')
    with open(path) as handle:
        text = handle.read()
    with open(path, 'w') as handle:
        handle.write(text.replace(GENERATOR.END, ''))
    with pytest.raises(GENERATOR.SourceError, match='inplace_image.py: no single'):
        GENERATOR.run(tree, out=io.StringIO())


def test_a_word_the_module_does_not_give_is_an_error(tree):
    path = os.path.join(tree, GENERATOR.SOURCE)
    with open(path) as handle:
        source = yaml.safe_load(handle)
    del source['modules']['container_recreate']['words']['written']
    with open(path, 'w') as handle:
        yaml.safe_dump(source, handle)
    with pytest.raises(GENERATOR.SourceError, match="modules.container_recreate.words has no 'written'"):
        GENERATOR.run(tree, out=io.StringIO())
