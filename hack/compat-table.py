"""The features x Kubernetes versions table of docs/compatibility.md, from the results of the last
`make test-versions` (tests/cluster/versions/results.json, written by hack/versions-results.py).

    compat-table.py            rewrite the table between its markers in docs/compatibility.md
    compat-table.py --check    exit 1 (and say which lines differ) when the page and the results disagree

A feature is proven on a release when every integration target that proves it passed there; a cell
names the failing target otherwise, and is empty (not run) when the release's run did not include it.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, 'tests', 'cluster', 'versions', 'results.json')
PAGE = os.path.join(ROOT, 'docs', 'compatibility.md')
START = '<!-- versions table: written by hack/compat-table.py from tests/cluster/versions/results.json -->'
END = '<!-- end of the versions table -->'

# (feature, the integration targets that prove it); a target may prove several.
FEATURES = [
    ('The local cluster\'s own suite', ['@cluster-suite']),
    ('Image change in place (`inplace_image`)', ['inplace_image']),
    ('Resize in place (`inplace_resize`)', ['inplace_resize']),
    ('Container restart (`container_recreate`)', ['container_recreate']),
    ('Readiness gate drain (`readiness_gate`)', ['readiness_gate']),
    ('Drain by label', ['label_drain']),
    ('Admission: policies and webhooks rewriting a write', ['admission']),
    ('Probes, lifecycle hooks, sidecars', ['probes_lifecycle']),
    ('Pre-pull of the new image', ['prepull']),
    ('Role on a Deployment', ['role_rollout_deployment']),
    ('Role on a StatefulSet (partition)', ['role_rollout_statefulset', 'role_rollout_partition']),
    ('Role on a DaemonSet, on OnDelete workloads', ['role_rollout_daemonset', 'role_rollout_ondelete']),
    ('Role on pods by selector', ['role_rollout_pods']),
    ('Role: restart, recreate, analysis, failures and rollback',
     ['role_rollout_restart', 'role_rollout_recreate', 'role_rollout_analysis', 'role_rollout_failures']),
    ('Revision history and `kubectl rollout undo`', ['rollout_history']),
    ('Resume after an interrupted run; concurrent runs', ['resume', 'concurrent_runs', 'fix_forward']),
    ('Cancel from AWX (ansible-runner)', ['awx_runner']),
    ('Traffic kept during a rollout (drain)', ['service_continuity']),
    ('Faults: API errors, restarts, a stalled watch', ['faults', 'watch_stall']),
    ('Least privilege, impersonation, secrets',
     ['least_privilege', 'impersonation', 'secrets']),
    ('Refusals and bad input', ['refusals', 'bad_input']),
    ('kubernetes.core beside us', ['kubernetes_core']),
]


def load(path=None):
    path = path or RESULTS
    if not os.path.exists(path):
        return {}
    with open(path, encoding='utf-8') as f:
        return json.load(f).get('versions', {})


def cell(entry, targets):
    """'pass', 'FAIL (target, ...)' or '' (not run) for one release."""
    failed, ran = [], 0
    for target in targets:
        if target.startswith('@'):
            item = entry.get('stages', {}).get(target[1:])
        else:
            item = entry.get('targets', {}).get(target)
        if item is None:
            continue
        ran += 1
        if not item.get('ok'):
            failed.append(target.lstrip('@'))
    if failed:
        return 'FAIL (%s)' % ', '.join(failed)
    if ran == 0:
        return ''
    return 'pass' if ran == len(targets) else 'pass (%d of %d targets run)' % (ran, len(targets))


def table(versions):
    """The markdown of the table (between the markers), from results.json's 'versions'."""
    minors = sorted(versions, key=lambda m: int(m.split('.')[1]))
    if not minors:
        return 'No run of `make test-versions` is recorded yet.\n'
    lines = ['| Feature | ' + ' | '.join(minors) + ' |', '| --- |' + ' --- |' * len(minors)]
    for feature, targets in FEATURES:
        lines.append('| %s | %s |' % (feature, ' | '.join(cell(versions[m], targets) for m in minors)))
    lines.append('| **Release tested** | %s |' % ' | '.join(versions[m].get('version', '') for m in minors))
    lines.append('| **Run on** | %s |' % ' | '.join(versions[m].get('date', '')[:10] for m in minors))
    lines.append('| **Minutes (build to down)** | %s |' % ' | '.join(
        '%.0f' % (versions[m].get('seconds', 0) / 60.0) for m in minors))
    known = {t for _f, ts in FEATURES for t in ts}
    others = sorted({t for m in minors for t in versions[m].get('targets', {}) if t not in known})
    if others:
        lines.append('')
        lines.append('Other targets run: %s.' % ', '.join('`%s`' % t for t in others))
    return '\n'.join(lines) + '\n'


def render(page_text, versions):
    """page_text with the block between START and END replaced by the table."""
    try:
        head, rest = page_text.split(START + '\n', 1)
        _old, tail = rest.split(END, 1)
    except ValueError:
        raise SystemExit('%s: the markers of the versions table are missing (%s ... %s)' % (PAGE, START, END))
    return head + START + '\n' + table(versions) + END + tail


def main(argv):
    with open(PAGE, encoding='utf-8') as f:
        text = f.read()
    new = render(text, load())
    if argv[:1] == ['--check']:
        if new != text:
            old_lines, new_lines = text.splitlines(), new.splitlines()
            diff = [n for o, n in zip(old_lines, new_lines) if o != n][:5]
            sys.stderr.write('docs/compatibility.md disagrees with tests/cluster/versions/results.json: run '
                             'hack/compat-table.py (first differing lines: %s)\n' % (diff or 'length'))
            return 1
        return 0
    if new != text:
        with open(PAGE, 'w', encoding='utf-8') as f:
            f.write(new)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
