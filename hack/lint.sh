#!/usr/bin/env bash
# Lint: yamllint (.yamllint), ansible-lint with the production profile (.ansible-lint), the changelog
# fragments and changelogs/changelog.yaml (antsibull-changelog; hack/changelog.py check: no raw markup).
# Every check runs; fails if any failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
export PATH=$venv/bin:$PATH
cd "$root"

# ansible-lint runs as a user runs it in a checkout (.ansible-lint: online, no switch): it installs this
# collection into .ansible/ itself and the collections of requirements.yml unless they are on the collections
# path. kubernetes.core is there from the `ansible` package (hack/collections.sh), as it is for a user who
# installed it; Galaxy is not needed.
collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
galaxy=$("$root/hack/collections.sh")
export ANSIBLE_COLLECTIONS_PATH=$galaxy ANSIBLE_NOCOLOR=1 NO_COLOR=1

failed=()
check() {
  local name=$1; shift
  echo "=== lint: $name"
  "$@" || failed+=("$name")
}

check yamllint yamllint --strict -f parsable .
check ansible-lint ansible-lint --nocolor -f pep8
# The checks below: this tree as inplace.k8s beside kubernetes.core.
export ANSIBLE_COLLECTIONS_PATH=$collections:$galaxy
check "changelog fragments" antsibull-changelog lint
check "changelog.yaml" antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
check "changelog markup" python hack/changelog.py check

# The playbooks that use kubernetes.core (requirements-collections.txt, installed by hack/collections.sh).
for playbook in examples/kubernetes_core/rbac.yml examples/kubernetes_core/with_kubernetes_core.yml; do
  check "$playbook syntax" ansible-playbook --syntax-check -i localhost, "$playbook"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: passed"
