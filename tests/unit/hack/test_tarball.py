# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's tarball (ansible-galaxy collection build, as a release builds it) holds what an installed
collection uses and nothing it cannot use, and every relative link of its Markdown files resolves inside it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import posixpath
import re
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.inplace.k8s.tests.unit.hack.conftest import ROOT

# What runs only from the source tree: development tools, and what needs hack/ or the local test cluster.
DEVELOPMENT_ONLY = ('hack/', 'Makefile', 'tests/cluster/', 'tests/kruise/', 'tests/integration/', 'tests/bench/',
                    'tests/soak/', 'tests/faults/', 'tests/package/', 'tests/unit/hack/', 'tests/unit/bench/',
                    'docs/sources/', 'docs/collection/', 'changelogs/fragments/', 'changelogs/config.yaml',
                    'examples/kubernetes_core/', 'galaxy.yml', 'requirements.yml')
# What an installed collection needs.
NEEDED = ('MANIFEST.json', 'FILES.json', 'README.md', 'LICENSE', 'meta/runtime.yml', 'meta/execution-environment.yml',
          'requirements.txt', 'bindep.txt', 'roles/rollout/README.md', 'roles/rollout/tasks/main.yml',
          'roles/rollout/meta/argument_specs.yml', 'plugins/modules/inplace_image.py', 'changelogs/changelog.yaml',
          'rbac/inplace-k8s-rbac.yml', 'playbooks/rollout.yml', 'CHANGELOG.rst',
          'extensions/eda/plugins/event_source/config_changes.py', 'extensions/eda/rulebooks/config_rollout.yml')
# A Markdown link or image: [text](target) / ![alt](target), the target up to a blank or the closing parenthesis.
LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^(```|~~~).*?^\1', re.S | re.M)
INLINE_CODE = re.compile(r'`[^`\n]*`')


@pytest.fixture(scope='module')
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp('dist')
    galaxy = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    subprocess.run([galaxy, 'collection', 'build', '--output-path', str(out), ROOT], check=True,
                   stdout=subprocess.DEVNULL)
    [name] = os.listdir(str(out))
    with tarfile.open(str(out / name)) as archive:
        members = {m.name[2:] if m.name.startswith('./') else m.name: m for m in archive.getmembers()}
        texts = {path: archive.extractfile(m).read().decode('utf-8')
                 for path, m in members.items() if m.isfile() and path.endswith('.md')}
    return members, texts


def links(markdown):
    """The link targets of a Markdown text, code blocks and code spans left out."""
    text = INLINE_CODE.sub('', FENCE.sub('', markdown))
    return LINK.findall(text)


def relative(target):
    return not re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I) and not target.startswith('#')


def test_the_tarball_holds_what_an_installed_collection_needs(tarball):
    members = tarball[0]
    missing = [path for path in NEEDED if path not in members]
    assert not missing, 'the tarball lacks %s' % missing


def test_the_tarball_holds_nothing_it_cannot_use(tarball):
    members, texts = tarball
    files = [path for path, m in members.items() if m.isfile()]
    unusable = [path for path in files if path.startswith(DEVELOPMENT_ONLY)
                or any(part.startswith('.') or part in ('__pycache__', 'venv') for part in path.split('/'))
                or path.endswith(('.pyc', '.tmp', '.tar.gz'))
                or re.match(r'requirements-.*\.txt$', path)]
    # tests: only what ansible-test runs from an installed collection (sanity config, the plugins' unit tests)
    unusable += [path for path in files if path.startswith('tests/')
                 and not (path == 'tests/config.yml' or path.startswith('tests/unit/plugins/'))]
    # bench/: only the charts the shipped docs show; the results behind them are for make bench
    shown = set()
    for path, text in texts.items():
        shown.update(posixpath.normpath(posixpath.join(posixpath.dirname(path), target.split('#')[0]))
                     for target in links(text) if relative(target))
    unusable += [path for path in files if path.startswith('bench/') and path not in shown]
    assert not unusable, 'the tarball holds files an installed collection cannot use: %s' % sorted(set(unusable))


def test_every_relative_link_of_the_shipped_docs_resolves_inside_the_tarball(tarball):
    members, texts = tarball
    directories = {posixpath.dirname(path) for path in members} | {path for path, m in members.items() if m.isdir()}
    assert 'README.md' in texts and 'docs/rollouts.md' in texts and 'roles/rollout/README.md' in texts
    broken, checked = [], 0
    for path, text in sorted(texts.items()):
        for target in links(text):
            if not relative(target):
                continue
            checked += 1
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target.split('#')[0]))
            if resolved.startswith('..') or (resolved not in members and resolved not in directories):
                broken.append('%s -> %s' % (path, target))
    assert checked > 20
    assert not broken, 'links that do not resolve inside the tarball:\n' + '\n'.join(broken)


@pytest.mark.parametrize('markdown, expected', [
    ('see [a](docs/a.md#x) and ![c](../bench/wall.svg "chart")', ['docs/a.md#x', '../bench/wall.svg']),
    ('`[not](a link)` and\n```\n[nor](this)\n```\n[but](this.md)', ['this.md']),
])
def test_links_are_found_outside_code(markdown, expected):
    assert links(markdown) == expected
