#!/usr/bin/env bash
# Integration targets (tests/integration/targets/*, setup_* excepted) against the local cluster:
# each target role runs in its own ansible-playbook, with the collection importable from this tree
# and K8S_AUTH_KUBECONFIG pointing at $CLUSTERDIR/kubeconfig. Usage: [SKIP_TARGETS="a b"] hack/integration.sh [target...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
kubeconfig=${CLUSTERDIR:-$root/.cluster}/kubeconfig

"$root/hack/require-cluster.sh" integration
# The test bed's binary of the running cluster's release (its traffic and cri clients), for the targets.
INPLACE_CLUSTER_BIN=${INPLACE_CLUSTER_BIN:-$("$root/hack/cluster.sh" bin)}
export INPLACE_CLUSTER_BIN

collections=$cache/collections
galaxy=$("$root/hack/collections.sh")   # kubernetes.core (target kubernetes_core)
# The helm binary (target owners_helm), built once from its Go module and cached (hack/helm.sh). Without it that
# target fails naming the build; the others run.
INPLACE_HELM=$("$root/hack/helm.sh") || INPLACE_HELM=
export INPLACE_HELM
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for dir in "$root"/tests/integration/targets/*/; do
    name=$(basename "$dir")
    case $name in setup_*) continue ;; esac
    # SKIP_TARGETS: targets another run takes (hack/test.sh's second lane)
    if [[ " ${SKIP_TARGETS:-} " == *" $name "* ]]; then continue; fi
    if grep -qxE 'disabled|unsupported|hidden' "$dir/aliases" 2>/dev/null; then continue; fi
    targets+=("$name")
  done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 failures=() times=()
for target in "${targets[@]}"; do
  echo "=== integration target $target"
  t0=$SECONDS
  cat > "$work/$target.yml" <<YAML
- name: Integration target $target
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - $target
YAML
  if K8S_AUTH_KUBECONFIG=$kubeconfig \
     ANSIBLE_COLLECTIONS_PATH=$collections:$galaxy \
     ANSIBLE_ROLES_PATH=$root/tests/integration/targets \
     ANSIBLE_NOCOLOR=1 \
     "$venv/bin/ansible-playbook" -i localhost, -e "ansible_python_interpreter=$venv/bin/python" \
       "$work/$target.yml" 2>&1 | tee "$work/$target.log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$target")
    # The failures that were not ignored (the last few), each under its task, kept for the end of the run:
    # a long log is often cut.
    {
      echo "--- $target"
      awk '/^TASK \[/ { task = $0 }
           pending { if ($0 !~ /^\.\.\.ignoring/) print pending; pending = "" }
           /^(fatal|failed): |^\[ERROR\]/ { pending = task "\n" substr($0, 1, 800) }
           END { if (pending) print pending }' "$work/$target.log" | tail -n 12
    } >> "$work/failures.txt"
  fi
  times+=("$((SECONDS - t0))s $target")
done
# The seconds of each target, slowest first: where the stage's time goes.
echo "integration seconds per target: $(printf '%s\n' "${times[@]}" | sort -rn | paste -sd, - | sed 's/,/, /g')"
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed targets: ${failures[*]}"
  cat "$work/failures.txt"
  if [ -n "${FAILURES_OUT:-}" ]; then cp "$work/failures.txt" "$FAILURES_OUT"; fi
fi
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
