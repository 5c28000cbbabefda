"""The soak's summary as an operator reads it: one markdown table of the faults by kind, the violations, the
seed(s). `python tests/soak/table.py bench/soak-a.json bench/soak-b.json ...` combines the summaries of several
runs (each with its own seed) into one table, as docs/safety.md shows them."""
from __future__ import absolute_import, division, print_function

import json
import sys

COUNTS = ('faults', 'landed', 'first_run_failed', 'conflict_reported', 'reruns', 'violations', 'fault_errors')


def print_table(summary, out=None):
    """The table of one summary (soak.py's), or of several combined (combine())."""
    out = out or sys.stdout

    def say(line=''):
        out.write(line + '\n')
    say()
    say('| fault | injected | landed mid-run | first run failed | conflict reported | re-runs (max) | violations |')
    say('| --- | --- | --- | --- | --- | --- | --- |')
    for kind, row in summary['by_kind'].items():
        say('| %s | %d | %d | %d | %d | %d (%d) | %d |' % (
            kind, row['faults'], row['landed'], row['first_run_failed'], row['conflict_reported'],
            row['reruns'], row['max_reruns'], row['violations']))
    say('| **total** | %d | %d | %d | %d | %d | %d |' % (
        summary['faults'], summary['faults_landed'],
        sum(r['first_run_failed'] for r in summary['by_kind'].values()),
        sum(r['conflict_reported'] for r in summary['by_kind'].values()), summary['reruns'],
        summary['violations_total']))
    say()
    say('invariant violations: %s' % ', '.join('%s %d' % kv for kv in summary['violations'].items()))
    say('fault kinds drawn (of %s): %s' % (','.join(summary['kinds']), ', '.join(
        '%s %d' % (kind, row['faults']) for kind, row in summary['by_kind'].items())))
    seeds = summary.get('seeds') or [summary['seed']]
    say('seed%s %s (replay with SOAK_SEED=<seed>), %d pods per workload (Deployment + StatefulSet), batch %s, '
        '%d scenarios, %d faults, all converged: %s, wall %.0f s' % (
            's' if len(seeds) > 1 else '', ', '.join(str(s) for s in seeds), summary['pods_per_workload'],
            summary['batch'], summary['scenarios'], summary['faults'], summary['converged'],
            summary['wall_seconds']))


def combine(summaries):
    """One summary of several runs: counts summed by kind and invariant, the largest re-run count kept."""
    by_kind, violations = {}, {}
    for summary in summaries:
        for kind, row in summary['by_kind'].items():
            into = by_kind.setdefault(kind, dict((key, 0) for key in COUNTS + ('max_reruns',)))
            for key in COUNTS:
                into[key] += row.get(key, 0)
            into['max_reruns'] = max(into['max_reruns'], row['max_reruns'])
        for name, count in summary['violations'].items():
            violations[name] = violations.get(name, 0) + count
    kinds = []
    for summary in summaries:
        kinds.extend(kind for kind in summary['kinds'] if kind not in kinds)
    first = summaries[0]
    return {'seeds': [s['seed'] for s in summaries], 'seed': first['seed'],
            'pods_per_workload': first['pods_per_workload'], 'batch': first['batch'], 'kinds': kinds,
            'scenarios': sum(s['scenarios'] for s in summaries), 'faults': sum(s['faults'] for s in summaries),
            'faults_landed': sum(s['faults_landed'] for s in summaries), 'by_kind': by_kind,
            'violations': violations, 'violations_total': sum(violations.values()),
            'converged': all(s['converged'] for s in summaries), 'reruns': sum(s['reruns'] for s in summaries),
            'wall_seconds': sum(s['wall_seconds'] for s in summaries)}


def main(paths):
    if not paths:
        sys.exit('usage: table.py SUMMARY.json [SUMMARY.json ...] (the soak summaries, SOAK_JSON)')
    summaries = []
    for path in paths:
        with open(path) as handle:
            summaries.append(json.load(handle))
    print_table(combine(summaries) if len(summaries) > 1 else summaries[0])


if __name__ == '__main__':
    main(sys.argv[1:])
