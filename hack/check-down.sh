#!/usr/bin/env bash
# Stops the local cluster and fails if any of its processes, network namespaces or
# interfaces (tests/cluster/netbed.go) is still there.
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
# The cluster's name prefix ("ikBB") is in state.json; its bridge carries the directory as alias.
prefix=$(sed -n 's/.*"prefix": *"\(ik[0-9]*\)".*/\1/p' "$dir/state.json" 2>/dev/null | head -1)
net_left=()
if command -v ip >/dev/null; then
  while read -r name; do net_left+=("bridge $name"); done < <(
    ip -o link show type bridge | awk -v d="$dir" '{for (i = 1; i < NF; i++) if ($i == "alias") { a = $(i+1); for (j = i+2; j <= NF; j++) a = a " " $j; if (a == d) { sub(":", "", $2); print $2 } } }')
  if [ -n "$prefix" ]; then
    while read -r name _; do [ -n "$name" ] && net_left+=("netns $name"); done < <(ip netns list | grep "^${prefix}n" || true)
    while read -r name; do [ -n "$name" ] && net_left+=("link $name"); done < <(
      ip -o link | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${prefix}" || true)
  fi
fi
if [ ${#net_left[@]} -gt 0 ]; then
  echo "cluster network left after cluster-down: ${net_left[*]}" >&2
  exit 1
fi
echo "no cluster process, network namespace or interface left"
