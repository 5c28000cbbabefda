#!/usr/bin/env bash
# Creates (or refreshes) a virtualenv.
#   hack/venv.sh PYTHON VENV                  the project's: runtime and development requirements
#   hack/venv.sh PYTHON VENV REQUIREMENT...   a test one (hack/matrix.sh): runtime and test requirements
#                                             plus the given ones (an ansible-core version)
set -euo pipefail
python=$1 venv=$2
shift 2
if [ $# -gt 0 ]; then
  requirements=(-r requirements.txt -r requirements-test.txt --upgrade "$@")
else
  requirements=(-r requirements.txt -r requirements-dev.txt)
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "${requirements[@]}"
touch "$venv/.done"
