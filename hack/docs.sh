#!/usr/bin/env bash
# Module and role documentation from the sources: write the modules' per-pod RETURN entries from
# docs/sources/pod-results.yml (hack/returns.py; fails when a module's copy differed, leaving it
# rewritten), lint it (antsibull-docs lint-collection-docs; any error fails), then generate
# reStructuredText into docs/collection/ (gitignored), failing on errors.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CACHE:-$root/.cache}
venv=$cache/venv
dest=${DOCS_DEST:-$root/docs/collection}
export PATH=$venv/bin:$PATH

collections=$cache/collections
mkdir -p "$collections/ansible_collections/inplace"
ln -sfn "$root" "$collections/ansible_collections/inplace/k8s"
export ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_NOCOLOR=1

echo "=== docs: per-pod RETURN entries from docs/sources/pod-results.yml"
python "$root/hack/returns.py" || {
  echo "docs: a module's per-pod RETURN entries differed from docs/sources/pod-results.yml (see above)" >&2
  exit 1
}

echo "=== docs: lint"
(cd "$collections/ansible_collections/inplace/k8s" &&
  antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs all .)

echo "=== docs: generate into $dest"
rm -rf "$dest"
mkdir -p "$dest"
chmod 755 "$dest"
antsibull-docs collection --use-current --fail-on-error --dest-dir "$dest" --output-format simplified-rst \
  --squash-hierarchy --no-add-antsibull-docs-version inplace.k8s
for page in index inplace_image_module rollout_role; do
  [ -s "$dest/$page.rst" ] || { echo "docs: $dest/$page.rst was not written" >&2; exit 1; }
done
echo "docs: $(find "$dest" -name '*.rst' | wc -l) pages in $dest"
