#!/usr/bin/env bash
# hack/own-venv.sh VENV REQUIREMENTS...: the virtualenv of a tool kept apart from the project's (galaxy-importer:
# hack/galaxy-import.sh, ansible-rulebook: hack/eda-test.sh), made anew when the requirements files changed (a stamp
# of their digest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$1; shift
stamp="$venv/.done-$(cat "$@" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  "${PYTHON:-$("$root/hack/find-python.sh")}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  for requirements in "$@"; do "$venv/bin/python" -m pip install --quiet -r "$requirements"; done
  touch "$stamp"
fi
