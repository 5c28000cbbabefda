# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure analysis for the benchmarks: the API server's request counters (delta of
``apiserver_request_total``), the request trace of the Ansible side (hook/sitecustomize.py) and
the kubelet floor of each batch."""

import collections
import json
import re
import statistics

WRITE_VERBS = frozenset(['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY'])
_SAMPLE = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


# --------------------------------------------------------------------------- API server metrics

def request_totals(text):
    """{(verb, resource, subresource): count} from /metrics text (resource requests only, summed
    over codes, scopes and components)."""
    totals = collections.Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match.group('labels')))
        if labels.get('resource'):
            key = (labels.get('verb'), labels['resource'], labels.get('subresource', ''))
            totals[key] += int(float(match.group('value')))
    return totals


def delta(before, after):
    """Requests between two request_totals(): {'VERB resource[/subresource]': count}."""
    result = {}
    for key in set(after) | set(before):
        count = after.get(key, 0) - before.get(key, 0)
        if count > 0:
            result[label(*key)] = count
    return dict(sorted(result.items()))


def label(verb, resource, subresource=''):
    return '%s %s%s' % (verb, resource, '/' + subresource if subresource else '')


def writes(counts):
    return sum(n for key, n in counts.items() if key.split()[0] in WRITE_VERBS)


# --------------------------------------------------------------------------- the request trace

def load_trace(path):
    try:
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except IOError:
        return []


def classify(request):
    """(verb as the API server names it, resource, subresource, object name) of a traced request."""
    parts = [p for p in request['path'].split('/') if p]
    if parts[:1] == ['api']:
        parts = parts[2:]
    elif parts[:1] == ['apis']:
        parts = parts[3:]
    else:
        return request['method'], '', '', None      # discovery, /version, /metrics
    if len(parts) >= 2 and parts[0] == 'namespaces' and len(parts) != 2:
        parts = parts[2:]
    resource = parts[0] if parts else ''
    name = parts[1] if len(parts) > 1 else None
    subresource = parts[2] if len(parts) > 2 else ''
    verb = request['method']
    if verb == 'GET' and name is None:
        verb = 'WATCH' if request.get('watch') else 'LIST'
    return verb, resource, subresource, name


def trace_summary(trace, pods):
    """What the Ansible side asked of the API server, from the trace of one run over ``pods`` pods."""
    requests = [r for r in trace if r.get('event') == 'request']
    counts = collections.Counter()
    pod_writes = pod_gets = watches = 0
    for request in requests:
        verb, resource, subresource, name = classify(request)
        if not resource:
            continue
        counts[label(verb, resource, subresource)] += 1
        pod_writes += resource == 'pods' and verb in WRITE_VERBS
        pod_gets += resource == 'pods' and verb == 'GET' and name is not None
        watches += verb == 'WATCH'
    return {'requests': dict(sorted(counts.items())), 'total': sum(counts.values()),
            'pod_writes_per_pod': round(pod_writes / float(pods), 2),
            'pod_gets_per_pod': round(pod_gets / float(pods), 2),
            'watches_opened': watches, 'processes': len(processes(trace))}


def processes(trace):
    """{pid: {'start', 'first', 'last', 'exit'}} of the processes that made requests."""
    result = {}
    for entry in trace:
        proc = result.setdefault(entry['pid'], {'start': entry['proc_start'], 'first': None, 'last': None,
                                                'exit': None})
        if entry.get('event') == 'exit':
            proc['exit'] = entry['t']
        else:
            proc['first'] = entry['t'] if proc['first'] is None else min(proc['first'], entry['t'])
            proc['last'] = entry['t'] if proc['last'] is None else max(proc['last'], entry['t'])
    return result


def startup_seconds(trace):
    """Median time from process start to first request over the processes in the trace."""
    values = [p['first'] - p['start'] for p in processes(trace).values() if p['first'] is not None]
    return round(statistics.median(values), 3) if values else None


# --------------------------------------------------------------------------- kubelet floor

def first_writes(trace):
    """{pod name: (pid, time)} of the first write to each pod or its subresources (the image PATCH, or
    the readiness gate set False when the pod is drained first): where the pod's kubelet work starts."""
    first = {}
    for request in sorted((r for r in trace if r.get('event') == 'request'), key=lambda r: r['t']):
        verb, resource, _subresource, name = classify(request)
        if verb in WRITE_VERBS and resource == 'pods' and name and name not in first:
            first[name] = (request['pid'], request['t'])
    return first


def batch_floors(trace, ready_times):
    """Per batch (the pods one module process wrote), in order: the slowest pod's time from its first
    write to its final readiness as the kubelet reports it (1 s resolution). With a drain this spans
    the kubelet's three reactions: NotReady after the gate, the new container, Ready after the gate."""
    batches = collections.OrderedDict()
    for name, (pid, written) in sorted(first_writes(trace).items(), key=lambda item: item[1][1]):
        if name in ready_times:
            batches.setdefault(pid, []).append(max(0.0, ready_times[name] - written))
    return [round(max(values), 2) for values in batches.values()]


def window_floors(trace, ready_times, window):
    """The floor of a sliding window of ``window`` pods in flight, as ceil(N / window) waves: the pods'
    kubelet times (first write to ready) divided among the waves, i.e. their sum over the window, the
    time the kubelets need with the window always full."""
    times = [max(0.0, ready_times[name] - written) for name, (_pid, written) in first_writes(trace).items()
             if name in ready_times]
    if not times:
        return []
    waves = -(-len(times) // window)
    return [round(sum(times) / window / waves, 2)] * waves


def outside_modules(trace, wall):
    """Seconds of the playbook's wall time spent outside our module processes (Ansible's own start-up,
    task handling and exit): wall minus the time at least one of our processes was running."""
    spans = sorted((p['start'], p['exit'] or p['last']) for p in processes(trace).values() if p['first'] is not None)
    inside, end = 0.0, None
    for start, stop in spans:
        if end is None or start > end:
            inside += stop - start
            end = stop
        elif stop > end:
            inside += stop - end
            end = stop
    return round(max(0.0, wall - inside), 2)


def overhead(wall, floors, outside=None):
    """{'floor', 'overhead', 'per_batch', 'ratio'} of the wall time above the sum of the batch floors, and
    the same within our modules (``outside``: seconds Ansible spent outside them)."""
    floor = sum(floors)
    above = wall - floor
    result = {'floor': round(floor, 2), 'overhead': round(above, 2),
              'per_batch': round(above / len(floors), 2) if floors else None,
              'ratio': round(above / floor, 3) if floor else None}
    if outside is not None and floors:
        result.update(outside_modules=outside,
                      modules_per_batch=round((above - outside) / len(floors), 2))
    return result


# --------------------------------------------------------------------------- repeats

def aggregate(runs):
    """One row from the repeated runs of a scenario: the run with the median wall time, and the spread
    of the wall time over the runs (``wall_runs``, ``wall_min``, ``wall_max``, ``wall_stdev``)."""
    good = [r for r in runs if 'error' not in r and r.get('wall') is not None]
    if not good:
        return runs[-1]
    ordered = sorted(good, key=lambda r: r['wall'])
    row = dict(ordered[(len(ordered) - 1) // 2])
    walls = [r['wall'] for r in good]
    row.update(repeats=len(runs), wall_runs=walls, wall_min=min(walls), wall_max=max(walls),
               wall_stdev=round(statistics.stdev(walls), 2) if len(walls) > 1 else 0.0)
    errors = [r['error'] for r in runs if 'error' in r]
    if errors:
        row['errors_in_repeats'] = errors
    return row
