#!/usr/bin/env bash
# Sanity and unit tests on the oldest and the newest supported ansible-core, each in its own
# virtualenv under $CACHE (created or refreshed here): hack/sanity.sh and hack/units.sh with VENV set.
# Integration tests stay on the main virtualenv. Usage: hack/matrix.sh [NAME...] (default: all rows)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
cd "$root"

# name | Python | ansible-core requirement ("ansible-core": the newest release for that Python)
rows=(
  "2.18-py3.11|3.11|ansible-core>=2.18,<2.19"
  "latest-py3.13|3.13|ansible-core"
)

# Creates or refreshes $1 with Python $2 and requirement $3 (hack/venv.sh); skipped while nothing
# changed, except for the newest ansible-core, which is looked up every time.
make_venv() {
  local venv=$1 version=$2 core=$3 python want stamp
  python=$("$root/hack/find-python.sh" "$version") || return 1
  want=$(cat requirements.txt requirements-test.txt; echo "$core"; "$python" --version)
  stamp=$venv/.matrix-requirements
  if [ "$core" = ansible-core ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$root/hack/venv.sh" "$python" "$venv" "$core" && printf '%s\n' "$want" > "$stamp" || return 1
  fi
  echo "matrix: $(basename "$venv"): $("$venv/bin/python" --version), $("$venv/bin/ansible" --version | head -1)"
}

selected=("$@")
STAGE_PREFIX="matrix: "
# shellcheck source=hack/stages.sh
source "$root/hack/stages.sh"

for row in "${rows[@]}"; do
  IFS='|' read -r name version core <<<"$row"
  if [ ${#selected[@]} -gt 0 ] && [[ " ${selected[*]} " != *" $name "* ]]; then continue; fi
  venv=$cache/venv-$name
  stage "$name venv" make_venv "$venv" "$version" "$core"
  if [[ ${results[-1]} == FAIL* ]]; then
    results+=("FAIL  $name sanity (no venv)" "FAIL  $name units (no venv)"); failed=$((failed + 2))
    continue
  fi
  stage "$name sanity" env VENV="$venv" "$root/hack/sanity.sh"
  stage "$name units" env VENV="$venv" "$root/hack/units.sh"
done

if [ ${#results[@]} -eq 0 ]; then
  echo "matrix: no row named ${selected[*]}; rows: $(printf '%s ' "${rows[@]%%|*}")" >&2
  exit 1
fi
echo
echo "=== matrix summary"
printf '%s\n' "${results[@]}"
echo "matrix: $(( ${#results[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
