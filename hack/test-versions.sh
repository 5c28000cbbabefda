#!/usr/bin/env bash
# `make test-versions`: the local cluster at each supported Kubernetes release in turn: build, up, the
# cluster's own suite (hack/cluster.sh test), the integration targets one by one, down. Each release's
# results (pass or fail and seconds per stage, the failing tests and tasks) replace that release's entry
# in tests/cluster/versions/results.json; the entries of releases not run are kept.
#   VERSIONS="1.37 1.33" (default: every supported release), TARGETS="inplace_image inplace_resize"
#   (default: every integration target), RESULTS (default tests/cluster/versions/results.json).
# The targets of hack/lanes.sh's second lane run on a second cluster of the same release beside the others (LANES=1:
# all on one). Logs: $CACHE/test-versions/<release>/*.log. Fails when any stage of any release failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export CACHE=${CACHE:-$root/.cache} CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
# shellcheck source=hack/k8s.sh
source "$root/hack/k8s.sh"
# shellcheck source=hack/lanes.sh
source "$root/hack/lanes.sh"
results=${RESULTS:-$root/tests/cluster/versions/results.json}
read -r -a versions <<< "${VERSIONS:-$(k8s_supported | tr '\n' ' ')}"
read -r -a targets <<< "${TARGETS:-}"
if [ ${#targets[@]} -eq 0 ]; then
  for dir in tests/integration/targets/*/; do
    name=$(basename "$dir")
    case $name in setup_*) continue ;; esac
    grep -qxE 'disabled|unsupported|hidden' "$dir/aliases" 2>/dev/null || targets+=("$name")
  done
fi
py=${VENV:-$CACHE/venv}/bin/python
trap 'hack/cluster.sh down >/dev/null 2>&1; [ -z "${second:-}" ] || env "${lane_env[@]}" hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
status=0

# step NAME LOG COMMAND...: runs COMMAND with its output in LOG (and on the terminal), appends
# "NAME ok|fail SECONDS LOG" to $steps (the second lane's: to $lane_steps).
step() {
  local name=$1 log=$2 t0=$SECONDS rc; shift 2
  echo "=== K8S=$K8S_MINOR $name"
  "$@" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}   # no background process: the second lane runs in one
  printf '%s %s %s %s\n' "$name" "$([ "$rc" -eq 0 ] && echo ok || echo fail)" $((SECONDS - t0)) "$log" >> "${lane_steps:-$steps}"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

for minor in "${versions[@]}"; do
  k8s_select "$minor" || { status=1; continue; }
  export K8S=$K8S_MINOR
  logs=$CACHE/test-versions/$K8S_MINOR
  rm -rf "$logs" && mkdir -p "$logs"
  steps=$logs/steps.txt
  : > "$steps"
  t0=$SECONDS
  first=() second=()
  for target in "${targets[@]}"; do
    # (one lane when run inside the second lane of make test: its ports are taken)
    if [ "${LANES:-2}" != 1 ] && [ "$CLUSTERDIR" != "$CACHE/lane-b-cluster" ] && [[ " ${lane_b[*]} " == *" $target "* ]]; then
      second+=("$target")
    else
      first+=("$target")
    fi
  done
  if step build "$logs/build.log" hack/cluster.sh build && step up "$logs/up.log" hack/cluster.sh up; then
    export INPLACE_CLUSTER_BIN=$K8S_BIN
    step cluster-suite "$logs/cluster-suite.log" hack/cluster.sh test   # alone: its timings are the kubelet's
    lane=
    if [ ${#second[@]} -gt 0 ]; then
      # the second lane: its own cluster, its own steps file (merged below), its output in its logs only
      (
        export "${lane_env[@]}"
        lane_steps=$logs/steps-second-lane.txt
        : > "$lane_steps"
        if step up-second-lane "$logs/up-second-lane.log" hack/cluster.sh up; then
          for target in "${second[@]}"; do
            FAILURES_OUT=$logs/$target.failures step "target:$target" "$logs/$target.log" hack/integration.sh "$target"
          done
        fi
        hack/cluster.sh down > "$logs/down-second-lane.log" 2>&1
      ) > /dev/null 2>&1 &
      lane=$!
    fi
    for target in "${first[@]}"; do
      FAILURES_OUT=$logs/$target.failures step "target:$target" "$logs/$target.log" hack/integration.sh "$target"
    done
    if [ -n "$lane" ]; then
      wait "$lane"
      cat "$logs/steps-second-lane.txt" >> "$steps"
      ! grep -q ' fail ' "$logs/steps-second-lane.txt" || status=1
      echo "=== K8S=$K8S_MINOR second lane: $(grep -c ' ok ' "$logs/steps-second-lane.txt") ok, $(grep -c ' fail ' "$logs/steps-second-lane.txt") failed (${second[*]})"
    fi
  fi
  hack/cluster.sh down > "$logs/down.log" 2>&1 || status=1
  "$py" "$root/hack/versions-results.py" "$results" "$K8S_MINOR" "$K8S_VERSION" $((SECONDS - t0)) "$steps" ||
    status=1
done
echo
"$py" "$root/hack/versions-results.py" --summary "$results"
exit $status
