#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection (git-tracked + untracked-not-ignored files) laid out
# as ansible_collections/inplace/k8s, with the project's virtualenv (or $VENV: hack/matrix.sh) and its
# Python version. Fails on any error; no ignore file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=${VENV:-$cache/venv}
if [ "$venv" = "$cache/venv" ]; then tree=$cache; else tree=$cache/sanity-$(basename "$venv"); fi
dest=$tree/ansible_collections/inplace/k8s

# shellcheck source=/dev/null
source "$venv/bin/activate"

# Sanity tests run in virtualenvs that ansible-test bootstraps with a downloaded get-pip script;
# put a local stand-in where ansible-test caches that script.
pip_version=$(grep -oP "pip='\K[0-9.]+" "$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py")
get_pip=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
if ! cmp -s "$root/hack/pip_bootstrap.py" "$get_pip"; then
  mkdir -p "$(dirname "$get_pip")"
  cp "$root/hack/pip_bootstrap.py" "$get_pip"
fi

rm -rf "$dest"
mkdir -p "$dest"
cd "$root"
git ls-files -co --exclude-standard -z | grep -zv '^tests/cluster/' | while IFS= read -r -d '' f; do
  if [ -e "$f" ]; then printf '%s\0' "$f"; fi
done | tar --null -T - -cf - | tar -xf - -C "$dest"

cd "$dest"
# The copy lives below the project's (ignored) cache: give it its own git root so that ansible-test
# lists exactly the copied files.
git init -q . && git add -A >/dev/null
# --requirements installs the pinned tools each sanity test needs into the project virtualenv.
ansible-test sanity --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
  --requirements --color no "$@"
