#!/usr/bin/env bash
# Builds and drives the local Kubernetes in tests/cluster.
#   hack/cluster.sh build|up|down|status|restart COMPONENT|test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=local
CACHE=${CACHE:-$root/.cache}
CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
export CLUSTERDIR
bin=$CACHE/bin/cluster

build() {
  mkdir -p "$CACHE/bin"
  if ! command -v go >/dev/null; then
    echo "cluster: Go is not installed; the local cluster is built from Kubernetes' Go modules (Go >= 1.26)" >&2
    exit 1
  fi
  local t0=$SECONDS
  # Stamp the Kubernetes version the module requires, as upstream's build does.
  local v major minor pkg=k8s.io/component-base/version
  v=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$root/tests/cluster/go.mod")
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local ldflags="-X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=$major"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  # cluster-app: the small binary each container process runs (see tests/cluster/app).
  (cd "$root/tests/cluster" && go build -ldflags "$ldflags" -o "$bin.new" . &&
    go build -trimpath -ldflags "-s -w" -o "$bin-app.new" ./cmd/cluster-app) || {
    echo "cluster: build failed (see the errors above)" >&2; exit 1; }
  mv "$bin-app.new" "$bin-app"
  mv "$bin.new" "$bin"
  echo "cluster: built $bin in $((SECONDS - t0))s"
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

cmd=${1:-}
shift || true
case "$cmd" in
  build) build ;;
  up) tools; if [ ! -x "$bin" ] || [ ! -x "$bin-app" ]; then build; fi; "$bin" up --dir "$CLUSTERDIR" "$@" ;;
  down)
    if [ -x "$bin" ]; then "$bin" down --dir "$CLUSTERDIR" "$@"; else echo "cluster: not built, nothing to stop"; fi ;;
  status) [ -x "$bin" ] || { echo "cluster: not built (make cluster-up)"; exit 0; }; "$bin" status --dir "$CLUSTERDIR" "$@" ;;
  restart) "$bin" restart --dir "$CLUSTERDIR" "$@" ;;
  test)
    # The test bed's own Go unit tests (the app's image tags), then its suite.
    (cd "$root/tests/cluster" && go test -count=1 ./app)
    py=${VENV:-$CACHE/venv}/bin/python
    "$py" -m pytest -p no:cacheprovider -v "$root/tests/cluster/suite" "$@" ;;
  *) echo "usage: hack/cluster.sh build|up|down|status|restart COMPONENT|test" >&2; exit 2 ;;
esac
