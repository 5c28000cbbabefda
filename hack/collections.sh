#!/usr/bin/env bash
# Installs the collections of requirements-collections.txt (kubernetes.core) into $CACHE/galaxy, from
# the wheel of the pinned `ansible` package on PyPI, without its ansible-core dependency: only their
# directories are extracted. Prints that collections root. Quick when already there.
# Usage: hack/collections.sh     (callers: ANSIBLE_COLLECTIONS_PATH=...:$(hack/collections.sh))
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
galaxy=$cache/galaxy
requirements=$root/requirements-collections.txt

pin=$(grep -E '^ansible==' "$requirements")
mapfile -t names < <(grep -vE '^(#|ansible==|$)' "$requirements")
stamp="$galaxy/.done-$pin-$(printf '%s,' "${names[@]}")"
if [ -f "$stamp" ]; then echo "$galaxy"; exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" -m pip download --quiet --no-deps --only-binary :all: -d "$work" "$pin" >&2
rm -rf "$galaxy"
mkdir -p "$galaxy"
"$venv/bin/python" - "$galaxy" "$work"/ansible-*.whl "${names[@]}" <<'PY'
import sys
import zipfile

target, wheel, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as archive:
    for name in names:
        prefix = 'ansible_collections/%s/' % name.replace('.', '/')
        members = [m for m in archive.namelist() if m.startswith(prefix)]
        if not members:
            sys.exit('hack/collections.sh: %s is not in %s' % (name, wheel))
        archive.extractall(target, members)
        print('hack/collections.sh: %s (%d files) into %s' % (name, len(members), target), file=sys.stderr)
PY
touch "$stamp"
echo "$galaxy"
