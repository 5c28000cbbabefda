#!/usr/bin/env bash
# Builds and drives the local Kubernetes in tests/cluster.
#   [K8S=1.NN] hack/cluster.sh build|up|down|status|restart COMPONENT|test|bin
# K8S picks the Kubernetes release (default: the one tests/cluster/go.mod pins; see hack/k8s.sh). build
# and up use K8S or the default; the other commands follow the release the running cluster reported,
# unless K8S is set. `bin` prints the path of the binary they use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=local
CACHE=${CACHE:-$root/.cache}
CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
export CACHE CLUSTERDIR
# shellcheck source=hack/k8s.sh
source "$root/hack/k8s.sh"
cmd=${1:-}
shift || true
case "$cmd" in
  build|up) k8s_select "${K8S:-}" ;;
  *) k8s_select "${K8S:-$(k8s_running)}" ;;
esac
bin=$K8S_BIN

build() {
  mkdir -p "$CACHE/bin"
  if ! command -v go >/dev/null; then
    echo "cluster: Go is not installed; the local cluster is built from Kubernetes' Go modules (Go >= 1.26)" >&2
    exit 1
  fi
  local t0=$SECONDS
  # Stamp the Kubernetes version the module requires, as upstream's build does.
  local v=$K8S_VERSION major minor pkg=k8s.io/component-base/version
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local ldflags="-X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=$major"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  # cluster-app: the small binary each container process runs (see tests/cluster/app).
  # One binary per release (go.mod K8S_MODFILE, build tag k8s1.NN: compat_*.go); one cluster-app for all.
  local app=$CACHE/bin/cluster-app
  (cd "$root/tests/cluster" &&
    go build -modfile "$K8S_MODFILE" -tags "$K8S_TAGS" -ldflags "$ldflags" -o "$bin.new" . &&
    go build -trimpath -ldflags "-s -w" -o "$app.new" ./cmd/cluster-app) || {
    echo "cluster: build of Kubernetes $v failed (see the errors above)" >&2; exit 1; }
  mv "$app.new" "$app"
  mv "$bin.new" "$bin"
  echo "cluster: built $bin (Kubernetes $v) in $((SECONDS - t0))s"
}

# The test bed's pod networks need ip(8) and nsenter(1) (Debian: iproute2, util-linux); install them when
# they are missing and this is root on Debian (CI), else cluster up says which is missing.
tools() {
  local missing=()
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nsenter >/dev/null || missing+=(util-linux)
  if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "cluster: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

case "$cmd" in
  build) build ;;
  up)
    tools
    if [ ! -x "$bin" ] || [ ! -x "$CACHE/bin/cluster-app" ]; then build; fi
    running=$(k8s_running)
    if [ -n "$running" ] && [ "$running" != "$K8S_MINOR" ]; then
      # A cluster of another release in this directory: up would find it ready and keep it.
      echo "cluster: $CLUSTERDIR holds Kubernetes $running; stopping it to start $K8S_VERSION"
      "$bin" down --dir "$CLUSTERDIR"
    fi
    "$bin" up --dir "$CLUSTERDIR" "$@" ;;
  bin) echo "$bin" ;;
  down)
    # Stopping does not depend on the release: any build of the test bed finds every process by its marker.
    for b in "$bin" "$CACHE"/bin/cluster "$CACHE"/bin/cluster-1.*; do
      case $b in *-app|*.new) continue ;; esac
      if [ -x "$b" ]; then exec "$b" down --dir "$CLUSTERDIR" "$@"; fi
    done
    echo "cluster: not built, nothing to stop" ;;
  status) [ -x "$bin" ] || { echo "cluster: not built (make cluster-up)"; exit 0; }; "$bin" status --dir "$CLUSTERDIR" "$@" ;;
  restart) "$bin" restart --dir "$CLUSTERDIR" "$@" ;;
  test)
    # The test bed's own Go unit tests (the app's image tags), then its suite, which expects the release
    # this binary was built from.
    (cd "$root/tests/cluster" && go test -count=1 ./app)
    py=${VENV:-$CACHE/venv}/bin/python
    INPLACE_CLUSTER_BIN=$bin INPLACE_K8S_VERSION=$K8S_VERSION \
      "$py" -m pytest -p no:cacheprovider -v "$root/tests/cluster/suite" "$@" ;;
  *) echo "usage: [K8S=1.NN] hack/cluster.sh build|up|down|status|restart COMPONENT|test|bin" >&2; exit 2 ;;
esac
