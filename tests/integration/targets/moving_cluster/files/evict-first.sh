#!/usr/bin/env bash
# Evicts (the Eviction API, as kubectl drain does) the first pod of app=web whose container runs an image ending
# in SUFFIX, as soon as one does: the pod whose change is in flight. Bounded: 200 looks, 0.1 s apart.
# Usage: evict-first.sh KUBECONFIG NAMESPACE SUFFIX
set -u
kubeconfig=$1 ns=$2 suffix=$3
for _ in $(seq 1 200); do
  pod=$(kubectl --kubeconfig "$kubeconfig" -n "$ns" get pods -l app=web -o json | python3 -c '
import json, sys
suffix = sys.argv[1]
for p in json.load(sys.stdin)["items"]:
    if p["spec"]["containers"][0]["image"].endswith(suffix) and not p["metadata"].get("deletionTimestamp"):
        print(p["metadata"]["name"])
        break' "$suffix")
  if [ -n "$pod" ]; then
    printf '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "%s", "namespace": "%s"}}' "$pod" "$ns" |
      kubectl --kubeconfig "$kubeconfig" create --raw "/api/v1/namespaces/$ns/pods/$pod/eviction" -f - &&
      echo "evicted $pod"
    exit 0
  fi
  sleep 0.1
done
echo "no pod took the image ending in $suffix" >&2
exit 1
