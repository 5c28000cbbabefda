# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure analysis for the benchmarks: the API server's request counters (delta of
``apiserver_request_total``), the request trace of the Ansible side (hook/sitecustomize.py),
the kubelet floor of each batch or window, and each pod's unavailable time from a pod watch (which
also gives the floor its pods' times), and for the traffic scenario the traffic client's report."""

import collections
import heapq
import json
import math
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
            'watches_opened': watches, 'processes': len(processes(trace)),
            # the peak resident set of the largest process that made requests (a module; the tree's is rss_mib)
            'module_peak_mib': max([p['peak_mib'] for p in processes(trace).values() if p['peak_mib']] or [None])}


def processes(trace):
    """{pid: {'start', 'first', 'last', 'exit', 'peak_mib', 'cpu'}} of the processes that made requests ('cpu': the
    process's own user + system seconds at its exit, None when the trace has none)."""
    result = {}
    for entry in trace:
        proc = result.setdefault(entry['pid'], {'start': entry['proc_start'], 'first': None, 'last': None,
                                                'exit': None, 'peak_mib': None, 'cpu': None})
        if entry.get('event') == 'exit':
            proc['exit'] = entry['t']
            proc['peak_mib'] = entry.get('peak_mib')
            proc['cpu'] = entry.get('cpu')
        else:
            proc['first'] = entry['t'] if proc['first'] is None else min(proc['first'], entry['t'])
            proc['last'] = entry['t'] if proc['last'] is None else max(proc['last'], entry['t'])
    return result


def module_cpu_seconds(trace):
    """CPU seconds of our module processes (those that made requests) in all, or None when the trace does not
    have them: the rest of a run's CPU is ansible-playbook's own (its start, templating, and its wait for a
    task's result, which polls every millisecond)."""
    values = [p['cpu'] for p in processes(trace).values() if p['cpu'] is not None]
    return round(sum(values), 2) if values else None


def module_cpu_phases(trace):
    """Where our module processes' CPU seconds go, from the CPU readings of their phase lines and exit lines:
    {'start': before the first phase (imports, arguments), 'prepare', 'steps' (the batches or windows), 'finish',
    'exit': after the last phase (the result written out)}, summed over the processes that ran a phase; None when
    the trace has no such readings (a module scenario, or a trace written before phases had them)."""
    phases = {'prepare': 'prepare', 'batch': 'steps', 'finish': 'finish'}
    found = {'start': 0.0, 'prepare': 0.0, 'steps': 0.0, 'finish': 0.0, 'exit': 0.0}
    seen = False
    for pid, proc in processes(trace).items():
        marks = sorted((e for e in trace if e['pid'] == pid and e.get('event') == 'phase' and 'cpu' in e),
                       key=lambda e: e['t'])
        if not marks or proc['cpu'] is None:
            continue
        seen = True
        found['start'] += marks[0]['cpu']
        for mark in marks:
            found[phases[mark['phase']]] += mark['cpu_end'] - mark['cpu']
        found['exit'] += proc['cpu'] - marks[-1]['cpu_end']
    return dict((key, round(value, 2)) for key, value in found.items()) if seen else None


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
    write to its final readiness (``ready_times``: {pod name: epoch seconds}, see ready_after()). With a
    drain this spans the kubelet's three reactions: NotReady after the gate, the new container, Ready
    after the gate."""
    batches = collections.OrderedDict()
    for name, (pid, written) in sorted(first_writes(trace).items(), key=lambda item: item[1][1]):
        if name in ready_times:
            batches.setdefault(pid, []).append(max(0.0, ready_times[name] - written))
    return [round(max(values), 2) for values in batches.values()]


def window_floors(trace, ready_times, window):
    """The floor of a sliding window of ``window`` pods in flight: the wall time of a rollout that adds
    nothing of its own to the pods' times. Each pod, in the order of its first write, takes the first
    place in the window that frees and holds it for its own time (first write to ready, as in
    batch_floors); the floor is when the last place frees. Returned as ceil(N / window) equal waves, the
    window's steps. With pods of unequal times this is above the pods' total time over the window (the
    lower bound a window reaches only with the window always full, which the last pods of a rollout
    never keep)."""
    times = [max(0.0, ready_times[name] - written)
             for name, (_pid, written) in sorted(first_writes(trace).items(), key=lambda item: item[1][1])
             if name in ready_times]
    if not times:
        return []
    places = [0.0] * min(window, len(times))
    for seconds in times:
        heapq.heappush(places, heapq.heappop(places) + seconds)
    waves = -(-len(times) // window)
    return [round(max(places) / waves, 2)] * waves


def refill_seconds(trace, ready_times, window):
    """How long a sliding window of ``window`` pods left a place empty: the k-th pod written after the
    first ``window`` took the place the (k - window)-th pod to be ready freed (the ready times in order,
    ``ready_times`` as in window_floors); its seconds from that moment to its first write. A rollout that
    adds nothing of its own would write it at that moment (0 s)."""
    writes = sorted(written for _pid, written in first_writes(trace).values())
    freed = sorted(ready_times.values())
    return [max(0.0, written - free) for written, free in zip(writes[window:], freed)]


def ready_after(events, old_image):
    """{pod name: epoch seconds} at which a pod watch (``events``, see unavailable_in_place) first saw
    each pod of an in-place change Ready again with the new image running: its readiness as the API
    server holds it, which is when anything else in the cluster (a controller, a rollout) can know it,
    with the watch's resolution (milliseconds). The kubelet's own clock (the conditions'
    lastTransitionTime) has a resolution of 1 s and does not count the kubelet's report to the API
    server (its status writes, held to its client's rate)."""
    spans, _missing = in_place_spans(events, old_image)
    return dict((name, back) for name, _left, back in spans.values())


def fixed_seconds(trace):
    """The role's fixed cost, from its module processes: {'prepare': seconds of the processes before the
    first that wrote a pod (plan, hold, template), 'finish': after the last one (revision, release,
    convergence), 'steps': the processes that wrote pods}; each process from its start to its exit. A
    process that wrote pods and ran prepare or finish too (state rollout) adds its start to the end of its
    prepare, and the start of its finish to its exit (the phase events of the trace)."""
    procs = processes(trace)
    writers = set(pid for pid, _t in first_writes(trace).values())
    spans = sorted((p['start'], (p['exit'] or p['last']), pid in writers) for pid, p in procs.items()
                   if p['first'] is not None)
    written = [(start, stop) for start, stop, wrote in spans if wrote]
    if not written:
        return {'prepare': None, 'finish': None, 'steps': 0, 'total': None}
    first, last = written[0][0], max(stop for _start, stop in written)
    prepare = sum(stop - start for start, stop, wrote in spans if not wrote and start < first)
    finish = sum(stop - start for start, stop, wrote in spans if not wrote and start >= last)
    for entry in trace:
        if entry.get('event') == 'phase' and entry['pid'] in writers:
            proc = procs[entry['pid']]
            if entry['phase'] == 'prepare':
                prepare += entry['end'] - proc['start']
            elif entry['phase'] == 'finish':
                finish += (proc['exit'] or entry['end']) - entry['t']
    return {'prepare': round(prepare, 2), 'finish': round(finish, 2), 'steps': len(written),
            'total': round(prepare + finish, 2)}


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


# --------------------------------------------------------------------------- traffic scenario

def traffic_summary(report):
    """The figures of one `cluster traffic` JSON report (tests/cluster/traffic.go)."""
    sent, failed = report['sent'], report['failed']
    return {'sent': sent, 'failed': failed, 'failure_rate': round(failed / float(sent), 4) if sent else None,
            'rate': report.get('rate'), 'delay_seconds': report.get('delay_seconds'),
            'seconds': round(report.get('duration_seconds') or 0, 1), 'failures': report.get('failures') or {},
            'by_image': report.get('by_image') or {}}


def in_place_spans(events, old_image):
    """Per pod of an in-place change, from a pod watch (``events``: (seen, pod_state) in any order; see
    workloads.PodWatch): the first moment the pod was seen leaving service (its readiness gate set False,
    i.e. its drain started; Ready not True; a new image in its spec; going away) and the first moment
    after that it was seen Ready again with the new image running. Returns ({uid: (pod name, left, back)}
    of the pods that came back, names of the pods that left service and did not come back)."""
    start, end, names = {}, {}, {}
    for seen, pod in sorted(events, key=lambda event: event[0]):
        uid = pod['uid']
        names[uid] = pod['name']
        if uid not in start:
            if pod['gate'] == 'False' or pod['ready'] != 'True' or pod['image'] != old_image or pod['deleted']:
                start[uid] = seen
        elif uid not in end and pod['ready'] == 'True' and not pod['deleted'] and pod['image'] != old_image \
                and pod['running'] == pod['image']:
            end[uid] = seen
    return (dict((uid, (names[uid], start[uid], end[uid])) for uid in end),
            sorted(names[uid] for uid in start if uid not in end))


def unavailable_in_place(events, old_image):
    """Per pod of an in-place change: the seconds out of service (in_place_spans). Returns (seconds of
    the pods that came back, names of the pods that left service and did not come back)."""
    spans, missing = in_place_spans(events, old_image)
    return [back - left for _name, left, back in spans.values()], missing


def unavailable_native(events, old_uids):
    """The same for a rolling update that replaces pods: the old pods in the order they were seen leaving
    Ready (or getting a deletion timestamp, or gone), paired with the new pods in the order they were
    seen Ready; each pair's seconds from the one to the other (0 when the replacement was Ready first: a
    surge pod). Returns (seconds, names of the old pods without a replacement Ready)."""
    leave, ready = {}, {}
    for seen, pod in sorted(events, key=lambda event: event[0]):
        uid = pod['uid']
        if uid in old_uids:
            if uid not in leave and (pod['ready'] != 'True' or pod['deleted']):
                leave[uid] = (seen, pod['name'])
        elif uid not in ready and pod['ready'] == 'True' and not pod['deleted']:
            ready[uid] = seen
    leaves, readies = sorted(leave.values()), sorted(ready.values())
    return ([max(0.0, back - gone[0]) for gone, back in zip(leaves, readies)],
            sorted(name for _seen, name in leaves[len(readies):]))


def spread(values):
    """{'pods', 'median', 'p95' (nearest rank), 'max', 'total'} of per-pod seconds (None when empty)."""
    ordered = sorted(values)
    if not ordered:
        return {'pods': 0, 'median': None, 'p95': None, 'max': None, 'total': None}
    return {'pods': len(ordered), 'median': round(statistics.median(ordered), 2),
            'p95': round(ordered[max(0, int(math.ceil(0.95 * len(ordered))) - 1)], 2),
            'max': round(ordered[-1], 2), 'total': round(sum(ordered), 1)}


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


def cluster_size(pods, nodes=None):
    """(nodes, pod slots per node) for ``pods``, as hack/bench.sh starts the cluster: at most 110 pods per node
    (the kubelet's default), 3 to 15 nodes (the test bed's limit), more slots per node only past 15 or when
    ``nodes`` is given."""
    nodes = min(15, max(1, nodes)) if nodes else min(15, max(3, -(-pods // 110)))
    return nodes, max(110, -(-pods // nodes))
