#!/usr/bin/env bash
# OpenKruise v1.8.2 on the running local cluster (opt-in: nothing of it is needed by `make test`).
#   hack/kruise.sh build|up|down|status|test
# build: kruise-manager and kruise-daemon from the Go module tests/kruise (cached in $CACHE/bin; FORCE=1 rebuilds).
# up:    the cluster must be up (hack/cluster.sh up). Applies Kruise's CRDs and webhook configurations from the
#        module's own config/ (kustomize, with config/default's name prefix), then runs kruise-manager as a process
#        against the cluster, its webhooks served on 127.0.0.1 (WEBHOOK_HOST: Kruise writes URL webhooks and makes
#        its own self-signed certificates for that IP), and one kruise-daemon per node in a mount namespace of its
#        own where /hostvarrun is the node's directory (the daemon finds the CRI socket only under /hostvarrun).
#        KRUISE_DAEMON=0: no daemons. KRUISE_FEATURE_GATES: more feature gates for the manager, KRUISE_MANAGER_ARGS:
#        more flags (e.g. --rest-config-qps 300; its default client rate is 30 requests/s, burst 50).
# down:  deletes the webhook configurations first (their failurePolicy Fail would refuse every pod creation once
#        the manager is gone), stops the processes, deletes the CRDs (with every Kruise object) and the namespace.
# test:  tests/kruise/crr.yml: container_recreate strategy kruise against real ContainerRecreateRequests (Kruise up).
# Ports: KRUISE_PORT_BASE (default APISERVER_PORT + 100): webhook, +1 metrics, +2 health, +10+N daemon of node N.
# The processes carry the cluster's marker (INPLACE_LOCAL_CLUSTER_DIR), so hack/cluster.sh down stops them too.
# Needs kubectl (its kustomize applies Kruise's manifests), curl, and root for the daemons' mount namespaces (unshare).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=local
CACHE=${CACHE:-$root/.cache}
CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
kubeconfig=$CLUSTERDIR/kubeconfig
state=$CLUSTERDIR/kruise
manager=$CACHE/bin/kruise-manager
daemon=$CACHE/bin/kruise-daemon
base=${KRUISE_PORT_BASE:-$(( ${APISERVER_PORT:-16443} + 100 ))}
namespace=kruise-system
hostvarrun=/hostvarrun   # fixed in kruise-daemon (pkg/daemon/daemon.go varRunMountPath)

kube() { kubectl --kubeconfig "$kubeconfig" "$@"; }

module_dir() {
  (cd "$root/tests/kruise" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/openkruise/kruise)
}

build() {
  if [ -x "$manager" ] && [ -x "$daemon" ] && [ -z "${FORCE:-}" ]; then
    echo "kruise: $manager and $daemon are built (FORCE=1 rebuilds)"; return
  fi
  command -v go >/dev/null || { echo "kruise: Go is not installed (Go >= 1.22 builds OpenKruise)" >&2; exit 1; }
  mkdir -p "$CACHE/bin"
  local t0=$SECONDS
  (cd "$root/tests/kruise" && export GOFLAGS=-mod=mod &&
    nice -n 10 go build -trimpath -o "$manager.new" github.com/openkruise/kruise &&
    nice -n 10 go build -trimpath -o "$daemon.new" github.com/openkruise/kruise/cmd/daemon) || {
    echo "kruise: build failed (see the errors above)" >&2; exit 1; }
  mv "$manager.new" "$manager"
  mv "$daemon.new" "$daemon"
  echo "kruise: built kruise-manager and kruise-daemon (OpenKruise v1.8.2) in $((SECONDS - t0))s"
}

# Kruise's own kustomizations with config/default's name prefix (the names the manager looks up); kustomize
# takes no absolute path, hence the link to the module's config/.
manifests() {
  local dir=$state/kustomize part=$1
  rm -rf "$dir" && mkdir -p "$dir"
  ln -s "$(module_dir)/config" "$dir/config"
  printf 'namePrefix: kruise-\nresources:\n- config/%s\n' "$part" >"$dir/kustomization.yaml"
  kubectl kustomize "$dir" 2>"$dir/warnings"
}

start() {   # name, then the command; env from the caller
  local name=$1; shift
  INPLACE_LOCAL_CLUSTER_DIR=$CLUSTERDIR KUBECONFIG=$kubeconfig setsid "$@" >"$state/$name.log" 2>&1 </dev/null &
  echo $! >"$state/$name.pid"
}

wait_for() {   # what, seconds, command
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "kruise: timed out after ${seconds}s waiting for $what" >&2; return 1; fi
    sleep 1
  done
}

running() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

kruise_crds() { kube get crd -o name | grep -E '\.kruise\.io$' || true; }

nodes() { kube get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }

up() {
  if ! { [ -f "$kubeconfig" ] && kube get --raw /readyz >/dev/null 2>&1; }; then
    echo "kruise: the local cluster is not up ($kubeconfig): hack/cluster.sh up first" >&2; exit 1
  fi
  build
  mkdir -p "$state/certs"
  if running manager; then echo "kruise: kruise-manager is running (pid $(cat "$state/manager.pid"))"; return; fi
  kube create namespace "$namespace" --dry-run=client -o yaml | kube apply -f - >/dev/null
  # Once only: the manager rewrites the webhooks' client configs (a Service reference to a URL), and applying
  # Kruise's manifests over them again would ask for both (refused: "exactly one of url or service").
  if ! kube get crd clonesets.apps.kruise.io >/dev/null 2>&1; then
    manifests crd | kube apply --server-side -f - >/dev/null
  fi
  local crds
  mapfile -t crds < <(kruise_crds)
  kube wait --for condition=Established --timeout=60s "${crds[@]}" >/dev/null
  if ! kube get mutatingwebhookconfiguration kruise-mutating-webhook-configuration >/dev/null 2>&1; then
    manifests webhook | kube apply --server-side -f - >/dev/null
  fi
  local extra=()
  read -r -a extra <<<"${KRUISE_MANAGER_ARGS:-}"
  WEBHOOK_HOST=127.0.0.1 WEBHOOK_PORT=$base WEBHOOK_CERT_DIR=$state/certs POD_NAMESPACE=$namespace \
    start manager "$manager" --enable-leader-election=false --enable-pprof=false \
    --metrics-addr "127.0.0.1:$((base + 1))" --health-probe-addr "127.0.0.1:$((base + 2))" \
    ${KRUISE_FEATURE_GATES:+--feature-gates "$KRUISE_FEATURE_GATES"} "${extra[@]}" --v=2
  wait_for "kruise-manager ready (log: $state/manager.log)" 180 curl -sf "http://127.0.0.1:$((base + 2))/readyz"
  echo "kruise: kruise-manager ready, webhooks at https://127.0.0.1:$base (log: $state/manager.log)"
  [ "${KRUISE_DAEMON:-1}" = 1 ] || return 0
  mkdir -p "$hostvarrun"
  local i=0 node
  for node in $(nodes); do
    i=$((i + 1))
    [ -S "$CLUSTERDIR/nodes/$node/cri.sock" ] || { echo "kruise: no CRI socket for $node" >&2; exit 1; }
    # shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
    NODE_NAME=$node start "daemon-$node" unshare --mount --propagation private sh -c \
      'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$CLUSTERDIR/nodes/$node" "$hostvarrun" \
      "$daemon" --socket-file cri.sock --addr "127.0.0.1:$((base + 10 + i))" --enable-pprof=false --v=2
    wait_for "kruise-daemon of $node (log: $state/daemon-$node.log)" 60 curl -sf "http://127.0.0.1:$((base + 10 + i))/healthz"
  done
  echo "kruise: $i kruise-daemon processes ready (one per node, CRI socket .cluster/nodes/<node>/cri.sock)"
}

stop_pid() {
  local pid=$1 _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  if [ -f "$kubeconfig" ] && kube get --raw /readyz >/dev/null 2>&1; then
    kube delete mutatingwebhookconfiguration kruise-mutating-webhook-configuration --ignore-not-found >/dev/null
    kube delete validatingwebhookconfiguration kruise-validating-webhook-configuration --ignore-not-found >/dev/null
  fi
  local f
  for f in "$state"/*.pid; do
    [ -f "$f" ] || continue
    stop_pid "$(cat "$f")"
    rm -f "$f"
  done
  if [ -f "$kubeconfig" ] && kube get --raw /readyz >/dev/null 2>&1; then
    local crds
    mapfile -t crds < <(kruise_crds)
    # Waited for (bounded): an up right after must not find them still terminating.
    [ ${#crds[@]} = 0 ] || kube delete --ignore-not-found --timeout=120s "${crds[@]}" >/dev/null
    kube delete namespace "$namespace" --ignore-not-found --timeout=120s >/dev/null
  fi
  rmdir "$hostvarrun" 2>/dev/null || true
  echo "kruise: stopped"
}

status() {
  local f
  for f in "$state"/*.pid; do
    [ -f "$f" ] || { echo "kruise: not running"; return; }
    local name; name=$(basename "$f" .pid)
    if running "$name"; then echo "$name: running (pid $(cat "$f")), log $state/$name.log"; else echo "$name: stopped"; fi
  done
}

crr_test() {
  running manager || { echo "kruise: not running: hack/kruise.sh up first" >&2; exit 1; }
  local venv=${VENV:-$CACHE/venv} collections=$CACHE/collections
  mkdir -p "$collections/ansible_collections/inplace"
  ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
  ANSIBLE_COLLECTIONS_PATH=$collections K8S_AUTH_KUBECONFIG=$kubeconfig ANSIBLE_LOCALHOST_WARNING=False \
    "$venv/bin/ansible-playbook" -i localhost, -e "ansible_python_interpreter=$venv/bin/python" \
    "$root/tests/kruise/crr.yml" "$@"
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  status) status ;;
  test) shift; crr_test "$@" ;;
  *) echo "usage: hack/kruise.sh build|up|down|status|test" >&2; exit 2 ;;
esac
