#!/usr/bin/env bash
# Lint: yamllint (.yamllint), ansible-lint with the production profile (.ansible-lint), the changelog
# fragments and changelogs/changelog.yaml (antsibull-changelog). Every check runs; fails if any failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
export PATH=$venv/bin:$PATH
cd "$root"

# ansible-lint syntax-checks the playbooks: make this collection importable as inplace.k8s.
collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_NOCOLOR=1 NO_COLOR=1

failed=()
check() {
  local name=$1; shift
  echo "=== lint: $name"
  "$@" || failed+=("$name")
}

check yamllint yamllint --strict -f parsable .
check ansible-lint ansible-lint --nocolor -f pep8
check "changelog fragments" antsibull-changelog lint
check "changelog.yaml" antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

# playbooks/with_kubernetes_core.yml loads only where kubernetes.core is installed (default paths).
with_default_paths=$collections:$HOME/.ansible/collections:/usr/share/ansible/collections
if ANSIBLE_COLLECTIONS_PATH=$with_default_paths ansible-galaxy collection list --format json 2>/dev/null \
     | grep -q '"kubernetes\.core"'; then
  check "with_kubernetes_core.yml syntax" env ANSIBLE_COLLECTIONS_PATH="$with_default_paths" \
    ansible-playbook --syntax-check -i localhost, playbooks/with_kubernetes_core.yml
else
  echo "=== lint: playbooks/with_kubernetes_core.yml not syntax-checked: kubernetes.core is not installed"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: passed"
