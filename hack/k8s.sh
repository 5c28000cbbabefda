# shellcheck shell=bash
# Which Kubernetes release the local cluster is built from and runs (sourced by hack/cluster.sh and the
# scripts that call the test bed's binary). The default release is the one tests/cluster/go.mod pins,
# built to $CACHE/bin/cluster; K8S=1.NN picks tests/cluster/versions/1.NN/go.mod instead, built with the
# build tag k8s1.NN to $CACHE/bin/cluster-1.NN (README: tests/cluster/README.md, "Versions").
k8s_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# k8s_pin GOMOD: the k8s.io/kubernetes version a go.mod requires (v1.37.2).
k8s_pin() { awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == "k8s.io/kubernetes" {print $3; exit}' "$1"; }

# k8s_minor v1.37.2 -> 1.37
k8s_minor() { local v=${1#v}; echo "${v%.*}"; }

k8s_default() { k8s_minor "$(k8s_pin "$k8s_root/tests/cluster/go.mod")"; }

# Every supported minor, oldest first.
k8s_supported() {
  { k8s_default; for m in "$k8s_root"/tests/cluster/versions/*/go.mod; do basename "$(dirname "$m")"; done; } | sort -t. -k2,2n -u
}

# k8s_running: the minor the cluster in $CLUSTERDIR last reported (its state.json), empty when none.
k8s_running() {
  local s=${CLUSTERDIR:-$k8s_root/.cluster}/state.json
  [ -f "$s" ] || return 0
  sed -n 's/^ *"version": "v\(1\.[0-9]*\)\..*/\1/p' "$s" | head -n1
}

# k8s_select MINOR: sets K8S_MINOR, K8S_VERSION (v1.37.2), K8S_MODFILE (relative to tests/cluster),
# K8S_TAGS and K8S_BIN; fails naming the supported minors when MINOR is not one of them.
k8s_select() {
  local want=${1:-$(k8s_default)}
  want=${want#v}
  [[ $want =~ ^1\.[0-9]+$ ]] || want=$(k8s_minor "v$want")
  if [ "$want" = "$(k8s_default)" ]; then
    K8S_MODFILE=go.mod K8S_BIN=${CACHE:-$k8s_root/.cache}/bin/cluster
  elif [ -f "$k8s_root/tests/cluster/versions/$want/go.mod" ]; then
    K8S_MODFILE=versions/$want/go.mod K8S_BIN=${CACHE:-$k8s_root/.cache}/bin/cluster-$want
  else
    echo "K8S=$1: not a Kubernetes release the local cluster supports; supported: $(k8s_supported | tr '\n' ' ')(default $(k8s_default))" >&2
    return 1
  fi
  K8S_MINOR=$want
  K8S_VERSION=$(k8s_pin "$k8s_root/tests/cluster/$K8S_MODFILE")
  K8S_TAGS=k8s$want
  export K8S_MINOR K8S_VERSION K8S_MODFILE K8S_TAGS K8S_BIN
}
