#!/usr/bin/env bash
# `make galaxy-import`: the tarball as Galaxy and Automation Hub judge it. Builds the collection with
# ansible-galaxy into a temporary directory and runs galaxy-importer on it (local mode, no containers) with
# Automation Hub's settings (hack/galaxy-importer.cfg: version >= 1.0.0, a required tag, the changelog,
# ansible-doc, ansible-lint, flake8). Fails on any warning or error the importer logs, not only on a refusal.
# galaxy-importer lives in a virtualenv of its own ($CACHE/galaxy-importer, requirements-galaxy-importer.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/galaxy-importer
requirements=$root/requirements-galaxy-importer.txt

"$root/hack/own-venv.sh" "$venv" "$requirements"
export PATH=$venv/bin:$PATH ANSIBLE_NOCOLOR=1 NO_COLOR=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ansible-galaxy collection build --output-path "$work/dist" "$root" >/dev/null
tarball=$(echo "$work"/dist/*.tar.gz)
echo "galaxy-import: $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KB)"

# The importer writes importer_result.json into its working directory and keeps ansible's temp under ~.
mkdir -p "$work/run" "$work/tmp"
rc=0
(cd "$work/run" && GALAXY_IMPORTER_CONFIG=$root/hack/galaxy-importer.cfg \
   GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP=$work/tmp GALAXY_IMPORTER_TMP_ROOT_DIR=$work/tmp \
   python -m galaxy_importer.main "$tarball") > "$work/log" 2>&1 || rc=$?
cat "$work/log"
problems=$(grep -E '^(WARNING|ERROR|CRITICAL)' "$work/log" || true)
if [ "$rc" -ne 0 ] || [ -n "$problems" ] || ! grep -q '^Importer processing completed successfully' "$work/log"; then
  echo "galaxy-import: failed (exit $rc, $(grep -c . <<<"$problems") warning/error line(s)):" >&2
  [ -z "$problems" ] || echo "$problems" >&2
  exit 1
fi
echo "galaxy-import: passed, no warning"
