#!/usr/bin/env bash
# The core of the collection on the oldest supported Kubernetes release (`make test-oldest`, and a stage of
# `make test` beside its integration targets): the
# local cluster at that release (K8S, default the oldest of hack/k8s.sh), its own suite and the targets
# that cover image changes, resizes, restarts, the role on a Deployment and a StatefulSet, admission and
# the readiness gate. Through hack/test-versions.sh, with its results in $CACHE (the committed
# tests/cluster/versions/results.json is written by `make test-versions` only). Stops that cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CACHE=${CACHE:-$root/.cache}
# shellcheck source=hack/k8s.sh
source "$root/hack/k8s.sh"
oldest=${OLDEST_K8S:-$(k8s_supported | head -n1)}
core=${OLDEST_TARGETS:-"inplace_image inplace_resize container_recreate role_rollout_deployment role_rollout_statefulset admission readiness_gate"}
exec env VERSIONS="$oldest" TARGETS="$core" RESULTS="$CACHE/oldest-release-results.json" "$root/hack/test-versions.sh"
