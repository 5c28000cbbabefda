#!/usr/bin/env bash
# The fleet test: playbooks/fleet.yml against two local clusters at once. Cluster A is the running local
# cluster ($CLUSTERDIR); this script starts cluster B next to it (its own directory and ports, one node),
# runs the integration target `fleet` with FLEET_KUBECONFIG_B, then stops cluster B and checks that none of
# its processes is left. Fails (never skips) when either cluster is missing or cannot start.
#   FLEET_CLUSTERDIR (default $CACHE/fleet-cluster-b), FLEET_APISERVER_PORT (26443), FLEET_ETCD_PORT (22379),
#   FLEET_KUBELET_PORT_BASE (21250): cluster B's directory and ports.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CACHE=${CACHE:-$root/.cache}
export CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
dir_b=${FLEET_CLUSTERDIR:-$CACHE/fleet-cluster-b}

"$root/hack/require-cluster.sh" fleet

cluster_b() {
  CLUSTERDIR=$dir_b APISERVER_PORT=${FLEET_APISERVER_PORT:-26443} ETCD_PORT=${FLEET_ETCD_PORT:-22379} \
    KUBELET_PORT_BASE=${FLEET_KUBELET_PORT_BASE:-21250} NODES=1 "$@"
}
stop_b() { cluster_b "$root/hack/check-down.sh"; }
trap 'stop_b >/dev/null 2>&1 || true' EXIT

if ! cluster_b "$root/hack/cluster.sh" up; then
  echo "fleet: the second cluster did not start: see $dir_b/logs" >&2
  exit 1
fi
cluster_b "$root/hack/require-cluster.sh" "fleet (cluster B)"

rc=0
FLEET_KUBECONFIG_B=$dir_b/kubeconfig "$root/hack/integration.sh" fleet || rc=$?
trap - EXIT
stop_b || rc=1
exit "$rc"
