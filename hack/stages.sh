# shellcheck shell=bash
# Sourced by hack/test.sh and hack/matrix.sh: `stage NAME COMMAND...` runs a command, prints
# "=== $STAGE_PREFIX$NAME" first, and records "PASS|FAIL  NAME (Ns)" in results, counting failures.
results=()
failed=0
STAGE_PREFIX=${STAGE_PREFIX:-}
stage() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $STAGE_PREFIX$name"
  if "$@"; then results+=("PASS  $name ($((SECONDS - t0))s)")
  else results+=("FAIL  $name ($((SECONDS - t0))s)"); failed=$((failed + 1)); fi
}
