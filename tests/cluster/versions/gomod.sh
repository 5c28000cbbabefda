#!/usr/bin/env bash
# Writes tests/cluster/versions/<minor>/go.mod and go.sum for one Kubernetes release, from that
# release's own go.mod: k8s.io/kubernetes at the release, each staging module it replaces
# (./staging/src/k8s.io/X) pinned to the matching v0.<minor>.<patch>, every other module at the version
# the release requires (etcd, grpc, cadvisor...): `go list -mod=mod` with the release's build tag adds
# what the test bed imports and its go.sum lines. Not `go mod tidy`: it ignores build tags, and the files
# of other releases import packages this one does not have.
# Usage: tests/cluster/versions/gomod.sh v1.37.2   (the default version's go.mod is tests/cluster/go.mod)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
v=${1:?usage: gomod.sh v1.MINOR.PATCH}
[[ $v =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "gomod.sh: $v is not a release like v1.37.2" >&2; exit 2; }
minor=1.${BASH_REMATCH[1]} staging=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
upstream=$(go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
[ -f "$upstream" ] || { echo "gomod.sh: no go.mod for k8s.io/kubernetes@$v" >&2; exit 1; }
mkdir -p "$here/$minor"
mod=$here/$minor/go.mod
{
  echo "// Kubernetes $v for the local cluster (K8S=$minor), written by tests/cluster/versions/gomod.sh $v."
  echo "module github.com/inplace-k8s/localcluster"
  echo
  echo "go 1.26.0"
  echo
  echo "godebug default=go1.26"
  echo
  echo "require k8s.io/kubernetes $v"
  echo
  echo "replace ("
  awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\/k8s\.io\// {print $1}' "$upstream" | sort -u |
    while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
  echo ")"
} > "$mod"
rm -f "${mod%.mod}.sum"
cd "$here/.."
go list -mod=mod -modfile "$mod" -tags "k8s$minor" -deps -test ./... >/dev/null
# What a fresh clone's build reads: it must need nothing more.
GOFLAGS=-mod=readonly go list -modfile "$mod" -tags "k8s$minor" -deps -test ./... >/dev/null
echo "gomod.sh: wrote $mod"
