#!/usr/bin/env bash
# Benchmarks of in-place rollouts on the local cluster (tests/bench): prints a table and the targets,
# writes bench/results.json. Usage: hack/bench.sh [PODS], PODS a comma-separated list (default 10).
# Starts the local cluster if it is not up, and then stops it at the end. Exits non-zero only when the
# benchmark itself breaks (a scenario could not be measured), never because a target was missed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
kubeconfig=${CLUSTERDIR:-$root/.cluster}/kubeconfig
pods=${1:-10}

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
  echo "bench: starting the local cluster"
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
mkdir -p "$collections/ansible_collections/inplace" "$root/bench"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"

PYTHONPATH=$collections:$root/tests/bench "$venv/bin/python" "$root/tests/bench/run.py" \
  --pods "$pods" --kubeconfig "$kubeconfig" --hook "$root/tests/bench/hook" --collections "$collections" \
  --out "$root/bench/results.json" --work "$work"
