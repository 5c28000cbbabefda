#!/usr/bin/env bash
# `make release`: fold the changelog fragments into the release of galaxy.yml's version, and write CHANGELOG.rst.
# Re-runnable: fragments that land later are added to the same release (--update-existing; the release date
# becomes today's). For the first release, the fragments' sections that speak of an earlier version (breaking
# changes, bug fixes, ...) move to `trivial` first, each printed (hack/changelog.py fold-first): nobody had an
# earlier version. Fails, changing nothing, when an entry would not render (Ansible doc markup such as C(x) in a
# fragment: write ``x``) or the fragments do not lint. Modules and roles are listed from their version_added.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
export PATH=$venv/bin:$PATH ANSIBLE_NOCOLOR=1
cd "$root"

version=$(python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' galaxy.yml)
python hack/changelog.py check || { echo "release: fix the entries above first" >&2; exit 1; }
antsibull-changelog lint
python hack/changelog.py fold-first "$version"

# antsibull-changelog finds the modules and the role through ansible-doc: this tree as inplace.k8s.
collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
ANSIBLE_COLLECTIONS_PATH=$collections antsibull-changelog release --version "$version" --update-existing \
  --reload-plugins
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
python hack/changelog.py check
echo "release: $version in changelogs/changelog.yaml and CHANGELOG.rst"
