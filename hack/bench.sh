#!/usr/bin/env bash
# Benchmarks of in-place rollouts on the local cluster (tests/bench): prints a table and the targets,
# writes bench/results.json (or $OUT).
# Usage: [REPEAT=n] [SCENARIOS=a,b] [OUT=file] [TRAFFIC_PODS=n] [MERGE=1] hack/bench.sh [PODS]
#   PODS          comma-separated pod counts (default 10)
#   REPEAT        runs per scenario (default 1; the median is reported with the range), interleaved: the scenarios
#                 of a size in turn, each round in the order opposite to the one before
#   SCENARIOS     names from tests/bench/run.py SCENARIOS or TRAFFIC, or "traffic" (default: all), or "config"
#                 (the config rollouts of tests/bench/reloader.py, never by default)
#   TRAFFIC_PODS  pod counts of the traffic scenario (default: 100 if PODS has it, else the smallest of
#                 PODS; 0: none). It needs the test bed's binary (hack/cluster.sh bin, its traffic client).
#   MERGE=1       keep the rows of OUT that this run does not measure again
#   PROFILE=dir   every measured Python process (ansible-playbook, our modules) runs under cProfile and writes
#                 dir/<pid>.prof (read with python -m pstats); slower: its wall and CPU figures are not comparable
# Starts the local cluster if it is not up, with enough nodes (NODES) and pod slots (NODE_MAX_PODS) for the
# largest N, at most 110 pods per node where 15 nodes allow it, and
# then stops it at the end; a running cluster with too few slots is refused with the command that fixes
# it. Exits non-zero only when the benchmark itself breaks (a scenario could not be measured), never
# because a target was missed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
kubeconfig=${CLUSTERDIR:-$root/.cluster}/kubeconfig
pods=${1:-10}
repeat=${REPEAT:-1}
largest=$(tr ',' '\n' <<<"$pods,${TRAFFIC_PODS:-}" | sed '/^$/d' | sort -n | tail -1)

cluster_answers() {
  [ -f "$kubeconfig" ] && "$venv/bin/python" - "$kubeconfig" <<'PY' >/dev/null 2>&1
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
client.VersionApi().get_code(_request_timeout=5)
PY
}

started=0
if ! cluster_answers; then
  # The largest workload plus the native Deployment's 25% surge, with room to spare, over enough nodes
  # that none holds more than the kubelet's default of 110 pods (at most 15 nodes, the test bed's limit): a
  # kubelet compares every pod it holds on each pod change it is told of, so 333 pods per node made the
  # kubelets the 2 cores' largest user and the rollouts slower than the pods' restarts (docs/performance.md).
  read -r nodes slots < <(PYTHONPATH=$root/tests/bench "$venv/bin/python" -c \
    'import sys, measure; print(*measure.cluster_size(int(sys.argv[1]), int(sys.argv[2] or 0)))' \
    "$(( largest + (largest + 3) / 4 + 40 ))" "${NODES:-}")
  [ -n "${slots:-}" ] || { echo "bench: could not size the cluster (tests/bench/measure.py cluster_size)" >&2; exit 1; }
  export NODES=$nodes NODE_MAX_PODS=${NODE_MAX_PODS:-$slots}
  echo "bench: starting the local cluster ($nodes nodes, max $NODE_MAX_PODS pods each)"
  "$root/hack/cluster.sh" up
  started=1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/inplace-bench.XXXXXX")
cleanup() {
  rc=$?
  if [ "$started" = 1 ]; then "$root/hack/cluster.sh" down || true; fi
  if [ "$rc" = 0 ]; then rm -rf "$work"; else echo "bench: logs and traces kept in $work"; fi
}
trap cleanup EXIT

collections=$cache/collections
galaxy=$("$root/hack/collections.sh")   # kubernetes.core, for its scenario
mkdir -p "$collections/ansible_collections/inplace" "$root/bench"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"

if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  INPLACE_BENCH_PROFILE=$(cd "$PROFILE" && pwd)
  export INPLACE_BENCH_PROFILE
fi
PYTHONPATH=$collections:$root/tests/bench "$venv/bin/python" "$root/tests/bench/run.py" \
  --pods "$pods" --kubeconfig "$kubeconfig" --hook "$root/tests/bench/hook" --collections "$collections:$galaxy" \
  --out "${OUT:-$root/bench/results.json}" --work "$work" --repeat "$repeat" ${SCENARIOS:+--scenarios "$SCENARIOS"} \
  --cluster-bin "${INPLACE_CLUSTER_BIN:-$("$root/hack/cluster.sh" bin)}" ${TRAFFIC_PODS:+--traffic-pods "$TRAFFIC_PODS"} ${MERGE:+--merge}
