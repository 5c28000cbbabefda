#!/usr/bin/env bash
# Fails loudly unless the local cluster's kubeconfig exists and its API server answers.
# Usage: hack/require-cluster.sh WHO   (WHO prefixes the messages: the calling stage's name)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
who=${1:-cluster}
venv=${CACHE:-$root/.cache}/venv
kubeconfig=${CLUSTERDIR:-$root/.cluster}/kubeconfig

if [ ! -f "$kubeconfig" ]; then
  echo "$who: no kubeconfig at $kubeconfig; start the local cluster first (make cluster-up)" >&2
  exit 1
fi
if ! "$venv/bin/python" - "$kubeconfig" "$who" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
print('%s: cluster %s' % (sys.argv[2], client.VersionApi().get_code(_request_timeout=10).git_version))
PY
then
  echo "$who: the cluster of $kubeconfig does not answer" >&2
  exit 1
fi
