# shellcheck shell=bash
# The second lane of the integration targets (sourced by hack/test.sh and hack/test-versions.sh): a cluster of its
# own (its own directory and ports, beside the first lane's) that runs these targets while the first lane runs the
# others. Chosen so that the two lanes take about as long: these are long, mostly waiting targets.
# shellcheck disable=SC2034  # used by the scripts that source this file
lane_env=(CLUSTERDIR="$CACHE/lane-b-cluster" APISERVER_PORT=36443 ETCD_PORT=32379 KUBELET_PORT_BASE=31250)
# shellcheck disable=SC2034
lane_b=(awx_runner service_continuity concurrent_runs label_drain fix_forward resume rollout_progress moving_daemonset
  moving_node_stop)
