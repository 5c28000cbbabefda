#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The changelog's checks and the first release's folding, for hack/release.sh and tests/unit/hack/test_changelog.py.

  hack/changelog.py check                 every entry of the fragments and of changelogs/changelog.yaml renders:
                                          no Ansible doc markup (C(), V(), O(), M(), ...: antsibull-changelog writes
                                          reStructuredText, where it would show raw; write ``code``), valid RST
  hack/changelog.py fold-first VERSION    when VERSION is the first release: the fragments' sections that speak of
                                          an earlier version (breaking changes, bug fixes, deprecations, removals,
                                          security fixes) move to ``trivial`` (not rendered), each printed

Nobody received a version before the first release, so a fix or a breaking change against one means nothing to its
readers; what such an entry describes is already in the release's features, or belongs there as a minor change."""

import glob
import os
import re
import sys

import yaml
from antsibull_docs_parser import dom
from antsibull_docs_parser.parser import Context, parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAGMENTS = os.path.join('changelogs', 'fragments')
CHANGELOG = os.path.join('changelogs', 'changelog.yaml')
AGAINST_EARLIER = ('breaking_changes', 'bugfixes', 'deprecated_features', 'removed_features', 'security_fixes')


def markup_problems(text):
    """What in ``text`` (one changelog entry) would not render in the RST changelog: Ansible doc markup."""
    found = []
    text = re.sub(r'``.+?``', '``literal``', text)   # markup inside an RST literal shows as written, on purpose
    for paragraph in parse(text, Context(), errors='message', add_source=True):
        for part in paragraph:
            if part.type == dom.PartType.TEXT:
                continue
            if part.type == dom.PartType.ERROR:
                found.append('markup that does not parse: %s' % part.message)
            else:
                found.append('%s (%s) shows raw in the RST changelog: write ``...`` instead'
                             % (part.source or part.type.name, part.type.name.lower()))
    return found


def entries(sections):
    """(section, text) of a fragment's or a release's ``changes``."""
    for section, value in (sections or {}).items():
        for text in value if isinstance(value, list) else [value]:
            yield section, text


def fragment_files(root=None):
    return sorted(glob.glob(os.path.join(root or ROOT, FRAGMENTS, '*.yml')) +
                  glob.glob(os.path.join(root or ROOT, FRAGMENTS, '*.yaml')))


def problems(root=None):
    """Every entry that would not render, as 'where: what'."""
    root = root or ROOT
    found = []
    for path in fragment_files(root):
        with open(path) as handle:
            for section, text in entries(yaml.safe_load(handle)):
                found += ['%s (%s): %s' % (os.path.relpath(path, root), section, p) for p in markup_problems(text)]
    with open(os.path.join(root, CHANGELOG)) as handle:
        changelog = yaml.safe_load(handle)
    for version, release in sorted((changelog.get('releases') or {}).items()):
        for section, text in entries(release.get('changes')):
            found += ['%s %s (%s): %s' % (CHANGELOG, version, section, p) for p in markup_problems(text)]
    return found


def fold_first(version, root=None):
    """Move the sections that speak of an earlier version to ``trivial`` in every fragment, when ``version`` is the
    first release (changelog.yaml has no other). Returns the moved entries as 'fragment (section): text'."""
    root = root or ROOT
    with open(os.path.join(root, CHANGELOG)) as handle:
        releases = (yaml.safe_load(handle) or {}).get('releases') or {}
    if set(releases) - {version}:
        return []
    moved = []
    for path in fragment_files(root):
        with open(path) as handle:
            fragment = yaml.safe_load(handle) or {}
        sections = [s for s in AGAINST_EARLIER if fragment.get(s)]
        if not sections:
            continue
        for section in sections:
            texts = fragment.pop(section)
            texts = texts if isinstance(texts, list) else [texts]
            fragment.setdefault('trivial', []).extend(texts)
            moved += ['%s (%s): %s' % (os.path.basename(path), section, ' '.join(t.split())) for t in texts]
        with open(path, 'w') as handle:
            handle.write('---\n')
            yaml.safe_dump(fragment, handle, sort_keys=False, width=110, allow_unicode=True)
    return moved


def main(argv):
    if argv[1:2] == ['check'] and len(argv) == 2:
        found = problems()
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    if argv[1:2] == ['fold-first'] and len(argv) == 3:
        for line in fold_first(argv[2]):
            print('first release: not a change against an earlier version, moved to trivial: %s' % line)
        return 0
    sys.exit(__doc__)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
