#!/usr/bin/env bash
# `make demo`: start the local cluster, deploy a sample app, roll a sidecar image in place in batches
# (draining through a readiness gate), resize the app container in place, print before/after per pod,
# then do the same image change with the controller's native rolling update on a copy for comparison.
# The cluster is stopped at the end unless KEEP_CLUSTER=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
export CLUSTERDIR=${CLUSTERDIR:-$root/.cluster}
export KUBECONFIG=$CLUSTERDIR/kubeconfig K8S_AUTH_KUBECONFIG=$CLUSTERDIR/kubeconfig
namespace=${DEMO_NAMESPACE:-inplace-demo}
py=$venv/bin/python

collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-1} ANSIBLE_DISPLAY_SKIPPED_HOSTS=false

stop() {
  if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
    echo "demo: cluster kept (KEEP_CLUSTER=1): namespace $namespace, kubeconfig $KUBECONFIG"
  else
    "$root/hack/cluster.sh" down
  fi
}
step() { printf '\n=== %s\n' "$*"; }
# Steady requests through a Service while a change runs (tests/cluster's traffic client: bounded in rate and
# time, it stops by itself), then one line: served and failed.
traffic_start() {
  "$("$root/hack/cluster.sh" bin)" traffic --kubeconfig "$KUBECONFIG" --namespace "$namespace" --service "$1" --rate 50 \
    --delay 1s --duration 300s --out "$cache/demo-traffic-$1.json" > "$cache/demo-traffic-$1.log" 2>&1 < /dev/null &
  traffic_pid=$!
  sleep 3
}
traffic_stop() {
  sleep 3
  kill -TERM "$traffic_pid" 2>/dev/null || true
  wait "$traffic_pid" 2>/dev/null || true
  "$py" "$root/hack/demo.py" traffic "$cache/demo-traffic-$1.json" "$2"
}
# A playbook told as a story: hack/callbacks/story.py prints the role's plan, progress and result lines, warnings
# and failures, none of Ansible's own output.
playbook() {
  ANSIBLE_CALLBACK_PLUGINS=$root/hack/callbacks ANSIBLE_STDOUT_CALLBACK=story ANSIBLE_LOAD_CALLBACK_PLUGINS=1 \
    "$venv/bin/ansible-playbook" -i localhost, -e "ansible_python_interpreter=$py" -e "kubeconfig=$KUBECONFIG" "$@" || true
}
# What kubectl shows of a rollout: the workload's status line and its Events (docs/events.md).
told() {
  printf '  status (kubectl get %s %s -o jsonpath=...inplace.k8s/status): ' "$1" "$2"
  kubectl get -n "$namespace" "$1" "$2" -o 'jsonpath={.metadata.annotations.inplace\.k8s/status}'
  printf '\n  Events (kubectl events --for %s/%s):\n' "$1" "$2"
  kubectl events -n "$namespace" --for "$1/$2" 2>&1 | grep -E 'REASON|inplace|Rollout|Rolled|Released|InPlace' \
    | sed 's/^/    /' || true
}

step "Starting the local cluster"
"$root/hack/cluster.sh" up
trap stop EXIT

step "Deploying the sample app in namespace $namespace"
"$py" - "$namespace" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config()
try:
    client.CoreV1Api().delete_namespace(sys.argv[1])
    print('demo: removing the namespace of an earlier run')
except client.exceptions.ApiException:
    pass
PY
while "$py" -c "
import sys
from kubernetes import client, config
config.load_kube_config()
try:
    client.CoreV1Api().read_namespace('$namespace')
except client.exceptions.ApiException:
    sys.exit(1)" 2>/dev/null; do sleep 1; done
"$py" "$root/hack/demo.py" deploy "$namespace"
"$py" "$root/hack/demo.py" snapshot "$namespace" app=db log "$cache/demo-db-before.json"
"$py" "$root/hack/demo.py" snapshot "$namespace" app=web log "$cache/demo-web-before.json"

step "In place: log sidecar fluent-bit:3.0 -> 3.1 on Deployment web, 2 pods per batch, drained through the readiness gate"
traffic_start web
t0=$SECONDS
playbook "$root/playbooks/rollout.yml" -e "{\"rollout_target\": {\"kind\": \"Deployment\", \"name\": \"web\", \"namespace\": \"$namespace\"},
  \"rollout_images\": {\"log\": \"registry.example/fluent-bit:3.1\"}, \"rollout_batch_size\": 2,
  \"rollout_readiness_gate\": \"inplace.k8s/ready\", \"rollout_drain_seconds\": 2}"
web_seconds=$((SECONDS - t0))
traffic_stop web "the in-place rollout of Deployment web"
told deployment web

step "In place: log sidecar 3.0 -> 3.1 on StatefulSet db, canary of 1 then batches of 2 (reverse ordinal)"
playbook "$root/playbooks/rollout.yml" -e "{\"rollout_target\": {\"kind\": \"StatefulSet\", \"name\": \"db\", \"namespace\": \"$namespace\"},
  \"rollout_images\": {\"log\": \"registry.example/fluent-bit:3.1\"}, \"rollout_batch_size\": 2, \"rollout_canary\": 1,
  \"rollout_order\": \"reverse_ordinal\"}"
told statefulset db

step "In place: resize the app container of StatefulSet db (requests cpu 250m -> 500m, memory 128Mi -> 192Mi)"
playbook "$root/playbooks/resize.yml" -e "{\"rollout_target\": {\"kind\": \"StatefulSet\", \"name\": \"db\", \"namespace\": \"$namespace\"},
  \"rollout_resources\": {\"app\": {\"requests\": {\"cpu\": \"500m\", \"memory\": \"192Mi\"}}}, \"rollout_batch_size\": \"50%\"}"

"$py" "$root/hack/demo.py" snapshot "$namespace" app=db log "$cache/demo-db-after.json"
"$py" "$root/hack/demo.py" snapshot "$namespace" app=web log "$cache/demo-web-after.json"

step "StatefulSet db, before -> after (in place)"
"$py" "$root/hack/demo.py" table "$cache/demo-db-before.json" "$cache/demo-db-after.json"
step "Deployment web, before -> after (in place, ${web_seconds}s including Ansible start-up)"
"$py" "$root/hack/demo.py" table "$cache/demo-web-before.json" "$cache/demo-web-after.json"
"$py" - "$namespace" <<'PY'
import sys
from kubernetes import client, config
config.load_kube_config()
apps, ns = client.AppsV1Api(), sys.argv[1]
sts = apps.read_namespaced_stateful_set('db', ns).status
web = apps.read_namespaced_deployment('web', ns).status
sets = apps.list_namespaced_replica_set(ns, label_selector='app=web').items
print('\n  StatefulSet db: currentRevision=%s updateRevision=%s updatedReplicas=%s/%s' % (
    sts.current_revision, sts.update_revision, sts.updated_replicas, sts.replicas))
running = [rs for rs in sets if rs.spec.replicas]
print('  Deployment web: updatedReplicas=%s/%s, ReplicaSets with pods %d (no new one), %d kept as revision history '
      '(kubectl rollout history deployment/web)' % (web.updated_replicas, web.replicas, len(running), len(sets) - len(running)))
PY

step "For comparison: the same sidecar change by the Deployment controller's own rolling update (copy web-native)"
"$py" "$root/hack/demo.py" snapshot "$namespace" app=web-native log "$cache/demo-native-before.json"
traffic_start web-native
"$py" "$root/hack/demo.py" native "$namespace" registry.example/fluent-bit:3.1
traffic_stop web-native "the native rolling update of Deployment web-native"
"$py" "$root/hack/demo.py" snapshot "$namespace" app=web-native log "$cache/demo-native-after.json"
"$py" "$root/hack/demo.py" table "$cache/demo-native-before.json" "$cache/demo-native-after.json"

step "Done"
echo "In place: same pods (UID, IP, node), only the changed container restarted. Native: every pod replaced."
