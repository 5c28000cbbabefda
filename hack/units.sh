#!/usr/bin/env bash
# Unit tests: pytest on tests/unit with the collection importable as ansible_collections.inplace.k8s,
# in the project's virtualenv (or $VENV: hack/matrix.sh). Prints the line coverage of each file of
# plugins/ (pytest-cov; the data file is $CACHE/coverage, outside the tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=${VENV:-$cache/venv}
collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
cd "$collections/ansible_collections/inplace/k8s"
PYTHONPATH="$collections${PYTHONPATH:+:$PYTHONPATH}" COVERAGE_FILE="$cache/coverage" exec "$venv/bin/python" -m pytest \
  -q -p no:cacheprovider --cov=ansible_collections.inplace.k8s.plugins --cov-report=term tests/unit "$@"
