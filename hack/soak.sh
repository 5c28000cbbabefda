#!/usr/bin/env bash
# Chaos soak of the rollout role on the running local cluster (tests/soak/soak.py, issue 19): a Deployment and
# a StatefulSet rolled again and again while one fault per scenario fires at a random moment; the invariants
# are checked after every scenario. Prints a table, writes a JSON summary, exits 1 on any violation or a
# rollout that did not converge.
# SOAK_SEED unset or empty: a new random seed each run (printed at the start and in the summary; SOAK_SEED=<n>
# replays that run's faults), so that every run tries other interleavings.
# Usage: [SOAK_FAULTS=55] [SOAK_SEED=<n>] [SOAK_PODS=30] [SOAK_MINUTES=0] [SOAK_KINDS=a,b] [SOAK_BATCH=25%]
#        [SOAK_JSON=bench/soak.json] [SOAK_PROXY_PORT=APISERVER_PORT+157] hack/soak.sh
# Fails at once, saying so, when the local cluster is not up (make cluster-up).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
clusterdir=${CLUSTERDIR:-$root/.cluster}

"$root/hack/require-cluster.sh" soak

collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace" "$root/bench"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"

seed=${SOAK_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 ))}
echo "soak: seed $seed (reproduce with SOAK_SEED=$seed)"
work=$(mktemp -d "${TMPDIR:-/tmp}/inplace-soak.XXXXXX")
rc=0
"$venv/bin/python" "$root/tests/soak/soak.py" --clusterdir "$clusterdir" --root "$root" \
  --collections "$collections" --work "$work" \
  --seed "$seed" --faults "${SOAK_FAULTS:-55}" --pods "${SOAK_PODS:-30}" \
  --minutes "${SOAK_MINUTES:-0}" --batch "${SOAK_BATCH:-25%}" \
  --proxy-port "${SOAK_PROXY_PORT:-$(( ${APISERVER_PORT:-16443} + 157 ))}" \
  --json "${SOAK_JSON:-$root/bench/soak.json}" ${SOAK_KINDS:+--kinds "$SOAK_KINDS"} || rc=$?
if [ "$rc" = 0 ]; then rm -rf "$work"; else
  echo "soak: playbook and proxy logs kept in $work; replay this run with SOAK_SEED=$seed" >&2; fi
exit "$rc"
