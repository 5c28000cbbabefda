#!/usr/bin/env bash
# Prints the Python interpreter used for the project's virtualenv: a working 3.12 or 3.13, else python3.
for v in 3.12 3.13; do
  for p in "$HOME"/.pyenv/versions/"$v".*/bin/python "/usr/bin/python$v" "/usr/local/bin/python$v"; do
    if [ -x "$p" ] && "$p" -c 'import venv' >/dev/null 2>&1; then echo "$p"; exit 0; fi
  done
done
command -v python3
