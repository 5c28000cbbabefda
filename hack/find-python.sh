#!/usr/bin/env bash
# Prints a Python interpreter that can create virtualenvs.
#   hack/find-python.sh            the project's: a working 3.12 or 3.13, else python3
#   hack/find-python.sh 3.11 ...   the first of these versions found; fails if none is
set -euo pipefail
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.12 3.13)
for v in "${versions[@]}"; do
  for p in "$HOME"/.pyenv/versions/"$v".*/bin/python "/usr/bin/python$v" "/usr/local/bin/python$v"; do
    if [ -x "$p" ] && "$p" -c 'import venv' >/dev/null 2>&1; then echo "$p"; exit 0; fi
  done
done
if [ $# -gt 0 ]; then
  echo "find-python: no Python ${versions[*]} with venv found" >&2
  exit 1
fi
command -v python3
