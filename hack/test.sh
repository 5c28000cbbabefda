#!/usr/bin/env bash
# `make test`: sanity, units, lint, docs, the version matrix, then on the local cluster: its own
# suite, the integration targets in two lanes (the second on a cluster of its own: first a core subset on the
# oldest supported Kubernetes release, hack/test-oldest.sh, then its share of the targets on the default release),
# the fleet test (a second cluster), the installed-tarball test, a small benchmark run and a short chaos soak.
# Every stage runs; the run fails if any failed, and the cluster is stopped at the end.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export CACHE=${CACHE:-$root/.cache} CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
# shellcheck source=hack/stages.sh
source "$root/hack/stages.sh"
# A second lane on a cluster of its own (hack/lanes.sh) beside the default's: the core subset on the oldest supported
# release, then its integration targets on the default release (the first lane runs the others).
# shellcheck source=hack/lanes.sh
source "$root/hack/lanes.sh"
trap 'hack/cluster.sh down >/dev/null 2>&1; env "${lane_env[@]}" hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
# The failing tasks of the integration targets, repeated after the summary: a long log is often cut.
export FAILURES_OUT=$CACHE/integration-failures.txt
rm -f "$FAILURES_OUT"
# The second lane, run in the background (lane_run), waited for once (lane_wait); each of its parts is a stage
# that prints its output and passes when it exited 0.
# shellcheck disable=SC2317  # called through stage below
lane_run() {
  env "${lane_env[@]}" hack/test-oldest.sh > "$CACHE/test-oldest.log" 2>&1; echo $? > "$CACHE/test-oldest.rc"
  (
    export "${lane_env[@]}"
    hack/cluster.sh up && hack/integration.sh "${lane_b[@]}"
    rc=$?
    hack/cluster.sh down
    exit "$rc"
  ) > "$CACHE/lane-b.log" 2>&1
  echo $? > "$CACHE/lane-b.rc"
}
# shellcheck disable=SC2317
lane_wait() {
  local part=$1
  if [ -n "${lane_pid:-}" ]; then wait "$lane_pid"; lane_pid=; fi
  cat "$CACHE/$part.log"
  [ "$(cat "$CACHE/$part.rc" 2>/dev/null)" = 0 ]
}

stage "sanity" hack/sanity.sh
stage "units" hack/units.sh
stage "lint" hack/lint.sh
stage "galaxy import" hack/galaxy-import.sh
stage "docs" hack/docs.sh
stage "version matrix" hack/matrix.sh
stage "cluster build" hack/cluster.sh build
stage "helm build" hack/helm.sh
if stage "cluster up" hack/cluster.sh up && [[ ${results[-1]} == PASS* ]]; then
  stage "cluster suite" hack/cluster.sh test
  # The second lane (the core subset on the oldest supported release, hack/test-oldest.sh: 1.33, then the targets
  # of lane_b) runs on its own cluster while the first lane's targets run on the default's.
  rm -f "$CACHE/test-oldest.rc" "$CACHE/lane-b.rc"
  lane_run &
  lane_pid=$!
  stage "integration (first lane)" env SKIP_TARGETS="${lane_b[*]}" hack/integration.sh
  stage "oldest release: core subset (second lane)" lane_wait test-oldest
  stage "integration (second lane: ${lane_b[*]})" lane_wait lane-b
  stage "fleet (a second cluster)" hack/fleet-test.sh
  stage "package" hack/package-test.sh
  # The targets' pairs and the traffic scenario (every scenario: make bench), to keep make test under an hour.
  stage "bench (smoke)" env SCENARIOS="image window 25%,role Deployment 25%,native Deployment 25%/0,traffic" \
    hack/bench.sh 10
  # A new seed each run unless SOAK_SEED is set (hack/soak.sh prints it and how to replay it).
  stage "soak (short)" env SOAK_PODS=10 SOAK_FAULTS=6 SOAK_SEED="${SOAK_SEED:-}" SOAK_JSON="$CLUSTERDIR/soak-short.json" \
    SOAK_KINDS=apiserver,node,kill-term,writer-pod-image,api-429,watch-stall,evict,drain,delete-pod,scale,node-stop hack/soak.sh
else
  echo "the local cluster did not start: see $CLUSTERDIR/logs; the cluster suite and integration tests cannot run" >&2
  results+=("FAIL  cluster suite (cluster not up)" "FAIL  integration (cluster not up)"
            "FAIL  fleet (cluster not up)"
            "FAIL  package (cluster not up)" "FAIL  bench (cluster not up)" "FAIL  soak (cluster not up)")
  failed=$((failed + 6))
fi
stage "cluster down leaves no process" hack/check-down.sh

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
passed=$(( ${#results[@]} - failed ))
echo "stages: $passed passed, $failed failed"
if [ -s "$FAILURES_OUT" ]; then
  echo
  echo "=== failed integration targets (their failing tasks)"
  cat "$FAILURES_OUT"
fi
# The second lane's oldest-release run, when it failed: what failed, and why (its log above is long).
if [ -e "$CACHE/test-oldest.rc" ] && [ "$(cat "$CACHE/test-oldest.rc")" != 0 ]; then
  echo
  echo "=== the oldest release's failures (second lane; logs in $CACHE/test-versions)"
  "${VENV:-$CACHE/venv}/bin/python" hack/versions-results.py --failures "$CACHE/oldest-release-results.json" ||
    tail -n 40 "$CACHE/test-oldest.log"
fi
exit $(( failed > 0 ))
