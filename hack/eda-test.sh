#!/usr/bin/env bash
# `make eda-test`: Event-Driven Ansible end to end with the real ansible-rulebook (requirements-eda.txt, in a
# virtualenv of its own: $CACHE/eda) and a Java runtime (Debian's openjdk-17-jre-headless, installed when java is
# missing and this is root on Debian, as in CI). On the local cluster (started when it is not running): a Deployment
# whose container `app` reads a ConfigMap through envFrom, beside a sidecar that uses nothing; ansible-rulebook runs
# the collection's rulebook inplace.k8s.config_rollout in the background (at most EDA_SECONDS); the ConfigMap is
# edited, and nothing else is done: within EDA_WAIT seconds every pod's `app` must have restarted in place (a new
# containerID and a higher restartCount), its sidecar not, and no pod replaced (the same pod UIDs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/eda
requirements=$root/requirements-eda.txt
ns=eda-test
EDA_SECONDS=${EDA_SECONDS:-300}
EDA_WAIT=${EDA_WAIT:-60}
t0=$SECONDS

if ! command -v java >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "eda-test: installing openjdk-17-jre-headless (ansible-rulebook's rule engine runs on Java)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "eda-test: ansible-rulebook needs a Java runtime (17 or later): install openjdk-17-jre-headless" >&2
    exit 1
  fi
fi

"$root/hack/own-venv.sh" "$venv" "$requirements" "$root/requirements.txt"

"$root/hack/cluster.sh" up >/dev/null
export KUBECONFIG=${CLUSTERDIR:-$root/.cluster}/kubeconfig
export K8S_AUTH_KUBECONFIG=$KUBECONFIG
# The collection as ansible-rulebook and ansible-playbook find it, and the interpreter of its modules.
collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_PYTHON_INTERPRETER=$venv/bin/python PATH=$venv/bin:$PATH
export ANSIBLE_NOCOLOR=1 PYTHONUNBUFFERED=1

work=$(mktemp -d)
rulebook_pid=
cleanup() {
  [ -z "$rulebook_pid" ] || kill "$rulebook_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

kubectl delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$ns" >/dev/null
kubectl -n "$ns" create configmap app-config --from-literal=GREETING=hello >/dev/null
kubectl -n "$ns" apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: app, image: registry.example/app:1.0, envFrom: [{configMapRef: {name: app-config}}]}
        - {name: sidecar, image: registry.example/proxy:1.0}
EOF
kubectl -n "$ns" rollout status deployment/web --timeout=120s >/dev/null
echo "eda-test: Deployment web ready after $((SECONDS - t0)) s"

# One line per pod: "uid app=<containerID>#<restartCount> sidecar=<containerID>#<restartCount>", sorted by uid.
pods() {
  kubectl -n "$ns" get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.uid}{range .status.containerStatuses[*]} {.name}={.containerID}#{.restartCount}{end}{"\n"}{end}' | sort
}
before=$(pods)

printf 'config_namespace: %s\nconfig_debounce_seconds: 1\n' "$ns" > "$work/vars.yml"
printf 'all:\n  hosts:\n    localhost:\n      ansible_connection: local\n' > "$work/inventory.yml"
(cd "$work" && exec timeout "$EDA_SECONDS" ansible-rulebook -v -i inventory.yml --rulebook inplace.k8s.config_rollout \
   --vars vars.yml > "$work/rulebook.log" 2>&1) &
rulebook_pid=$!
for _ in $(seq 240); do
  grep -q 'config_changes: watching' "$work/rulebook.log" && break
  kill -0 "$rulebook_pid" 2>/dev/null || break
  sleep 0.5
done
if ! grep -q 'config_changes: watching' "$work/rulebook.log"; then
  cat "$work/rulebook.log"; echo "eda-test: ansible-rulebook did not start watching" >&2; exit 1
fi
echo "eda-test: ansible-rulebook watching after $((SECONDS - t0)) s; editing the ConfigMap"

edited=$SECONDS
kubectl -n "$ns" patch configmap app-config -p '{"data":{"GREETING":"bonjour"}}' >/dev/null
verdict=
while [ $((SECONDS - edited)) -lt "$EDA_WAIT" ]; do
  after=$(pods)
  verdict=$(BEFORE=$before AFTER=$after "$venv/bin/python" - <<'EOF'
import os

def parse(text):
    pods = {}
    for line in text.splitlines():
        uid, *containers = line.split()
        pods[uid] = dict(c.split('=', 1) for c in containers)
    return pods

before, after = parse(os.environ['BEFORE']), parse(os.environ['AFTER'])
if set(before) != set(after):
    print('FAIL pods replaced: %d of %d UIDs changed' % (len(set(before) - set(after)), len(before)))
elif any(after[u]['sidecar'] != before[u]['sidecar'] for u in before):
    print('FAIL a sidecar, which uses no ConfigMap, restarted')
elif all(after[u]['app'].rsplit('#', 1)[0] != before[u]['app'].rsplit('#', 1)[0]
         and int(after[u]['app'].rsplit('#', 1)[1]) > int(before[u]['app'].rsplit('#', 1)[1]) for u in before):
    print('OK')
EOF
)
  case "$verdict" in OK|FAIL*) break ;; esac
  if grep -q 'run_playbook - ERROR' "$work/rulebook.log"; then verdict='FAIL the playbook failed (above)'; break; fi
  sleep 1
done
restarted=$((SECONDS - edited))
if [ "$verdict" = OK ]; then
  # A label edit leaves the data as it was: no second event (debounce_seconds is 1).
  kubectl -n "$ns" label configmap app-config edited-by=eda-test >/dev/null
  sleep 4
  events=$(grep -c 'config_changes: modified ConfigMap/app-config' "$work/rulebook.log" || true)
  [ "$events" = 1 ] || verdict="FAIL $events events for one data edit and one label edit (1 expected)"
fi
kill "$rulebook_pid" 2>/dev/null || true
if [ "$verdict" != OK ]; then
  cat "$work/rulebook.log"
  printf 'before:\n%s\nafter:\n%s\n' "$before" "$(pods)"
  echo "eda-test: failed: ${verdict:-the app containers did not all restart within $EDA_WAIT s}" >&2
  exit 1
fi
kubectl delete namespace "$ns" --wait=false >/dev/null
echo "eda-test: passed: the ConfigMap edit restarted app in both pods in place within ${restarted} s (same pod UIDs," \
     "new containerIDs, sidecars untouched), one event, none for a label edit; $((SECONDS - t0)) s in all"
