#!/usr/bin/env bash
# Creates (or refreshes) the project's virtualenv with runtime and development requirements.
set -euo pipefail
python=$1 venv=$2
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r requirements.txt -r requirements-dev.txt
touch "$venv/.done"
