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

def image_writes(trace):
    """{pod name: (pid, time)} of the first PATCH of each pod itself (no subresource): the image write."""
    first = {}
    for request in sorted((r for r in trace if r.get('event') == 'request'), key=lambda r: r['t']):
        verb, resource, subresource, name = classify(request)
        if verb == 'PATCH' and resource == 'pods' and not subresource and name not in first:
            first[name] = (request['pid'], request['t'])
    return first


def batch_floors(trace, ready_times):
    """Per batch (the pods one module process wrote), in order: the slowest pod's time from its
    image write to its containers ready, as the kubelet reports them (1 s resolution)."""
    batches = collections.OrderedDict()
    for name, (pid, written) in sorted(image_writes(trace).items(), key=lambda item: item[1][1]):
        if name in ready_times:
            batches.setdefault(pid, []).append(max(0.0, ready_times[name] - written))
    return [round(max(values), 2) for values in batches.values()]


def overhead(wall, floors):
    """{'floor', 'overhead', 'per_batch', 'ratio'}: wall time above the sum of the batch floors."""
    floor = sum(floors)
    above = wall - floor
    return {'floor': round(floor, 2), 'overhead': round(above, 2),
            'per_batch': round(above / len(floors), 2) if floors else None,
            'ratio': round(above / floor, 3) if floor else None}
