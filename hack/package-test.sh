#!/usr/bin/env bash
# The collection as users get it: build the tarball, check what it holds, install it into an empty
# collections path, check the execution-environment files with ansible-builder (no image build), and
# run tests/package/install_test.yml from the installed copy against the local cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
kubeconfig=${CLUSTERDIR:-$root/.cluster}/kubeconfig
export PATH=$venv/bin:$PATH

fail() { echo "package-test: $*" >&2; exit 1; }

"$root/hack/require-cluster.sh" package-test

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["version"])' "$root/galaxy.yml")
tarball=$work/dist/inplace-k8s-$version.tar.gz

echo "=== build"
ansible-galaxy collection build --output-path "$work/dist" "$root"
[ -f "$tarball" ] || fail "no $tarball after the build"

echo "=== tarball contents"
tar -tzf "$tarball" | sed 's|^\./||' | sort > "$work/files"
echo "package-test: $(wc -l < "$work/files") entries"
unwanted=$(grep -E '^(tests/cluster|tests/kruise|tests/output|\.cache|\.cluster[^/]*|\.ci|\.git|\.ansible|hack|docs/collection)(/|$)|(^|/)(__pycache__|\.pytest_cache|venv|\.venv)(/|$)|\.(pyc|tmp|tar\.gz)$' "$work/files" || true)
[ -z "$unwanted" ] || fail "the tarball holds development files:"$'\n'"$unwanted"
for wanted in MANIFEST.json FILES.json README.md LICENSE meta/runtime.yml meta/execution-environment.yml \
              requirements.txt bindep.txt plugins/modules/inplace_image.py roles/rollout/tasks/main.yml \
              changelogs/changelog.yaml; do
  grep -qxF "$wanted" "$work/files" || fail "the tarball lacks $wanted"
done

echo "=== install into an empty collections path"
collections=$work/collections
mkdir -p "$collections"
# From here on the installed copy is the only collection Ansible sees.
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_NOCOLOR=1
ansible-galaxy collection install --offline -p "$collections" "$tarball"
installed=$collections/ansible_collections/inplace/k8s
[ -f "$installed/MANIFEST.json" ] || fail "nothing installed at $installed"
listed=$(ansible-galaxy collection list inplace.k8s 2>/dev/null)
grep -qE "^inplace\.k8s +$version\b" <<<"$listed" || fail "ansible-galaxy collection list does not show inplace.k8s $version:"$'\n'"$listed"
doc=$(ansible-doc inplace.k8s.inplace_image)
grep -qF "$installed/plugins/modules/inplace_image.py" <<<"$doc" || fail "ansible-doc does not find the installed inplace_image"

echo "=== execution environment (ansible-builder)"
deps=$(ansible-builder introspect "$collections")
echo "$deps"
grep -q 'kubernetes' <<<"$deps" || fail "ansible-builder introspect does not see requirements.txt (kubernetes)"
grep -q 'python3' <<<"$deps" || fail "ansible-builder introspect does not see bindep.txt"
mkdir "$work/ee"
cp "$root/examples/execution-environment.yml" "$tarball" "$work/ee/"
(cd "$work/ee" && ansible-builder create --file execution-environment.yml --context context)
[ -f "$work/ee/context/_build/collections/$(basename "$tarball")" ] || fail "ansible-builder create did not copy the tarball"
grep -q 'ansible-galaxy collection install' "$work/ee/context/"*file || fail "ansible-builder create wrote no collection install step"

echo "=== playbook from the installed collection"
cp "$root/tests/package/install_test.yml" "$work/"
# The test's helper module comes from the source tree (tests/integration is not in the tarball); the
# collection's own modules and module_utils only from the installed copy.
ANSIBLE_LIBRARY=$root/tests/integration/targets/setup_inplace_k8s/library \
  ansible-playbook -i localhost, -e "ansible_python_interpreter=$venv/bin/python" -e "kubeconfig=$kubeconfig" \
    "$work/install_test.yml"
echo "package-test: passed"
