#!/usr/bin/env bash
# Stops the local cluster and fails if any of its processes is still alive.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
"$root/hack/cluster.sh" down
dir=$(cd "$CLUSTERDIR" 2>/dev/null && pwd || echo "$CLUSTERDIR")
mapfile -t left < <(grep -lzxF "INPLACE_LOCAL_CLUSTER_DIR=$dir" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
if [ ${#left[@]} -gt 0 ]; then
  echo "cluster processes still running after cluster-down: ${left[*]}" >&2
  exit 1
fi
echo "no cluster process left"
