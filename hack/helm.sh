#!/usr/bin/env bash
# Builds the `helm` binary the integration targets use (the Helm workflow: kubernetes.core.helm runs it)
# from its Go module, served by the Go module proxy, into $CACHE/bin/helm. Quick when already built.
# Prints the binary's path. Usage: hack/helm.sh      (hack/integration.sh calls it; HELM_VERSION=v3.NN.N)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
version=${HELM_VERSION:-v3.22.0}
bin=$cache/bin/helm
stamp=$cache/bin/.helm-$version

if [ -x "$bin" ] && [ -f "$stamp" ]; then echo "$bin"; exit 0; fi
if ! command -v go >/dev/null; then
  echo "hack/helm.sh: go is needed to build helm $version (https://go.dev/dl/)" >&2; exit 1
fi
mkdir -p "$cache/bin"
rm -f "$cache"/bin/.helm-*
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "hack/helm.sh: building helm $version from helm.sh/helm/v3 (once; cached in $bin)" >&2
# The version helm reports (kubernetes.core.helm reads it) is stamped as upstream's Makefile does.
GOBIN=$work GOFLAGS=-buildvcs=false nice -n 10 go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
  "helm.sh/helm/v3/cmd/helm@$version"
mv "$work/helm" "$bin"
touch "$stamp"
echo "$bin"
