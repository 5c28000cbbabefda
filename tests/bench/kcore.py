# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The same image change the way kubernetes.core users make it today (scenario 'kubernetes.core patched+wait'):
kubernetes.core.k8s state=patched on each pod, with wait: true. For a Pod, kubernetes.core's wait checks that
every container is ready; right after the patch the old container still is, so the question is whether the
wait noticed the restart at all. When the playbook returns, the pods are read once: how many already run the
new image and are ready again (what a wait that noticed the restart would guarantee). Then the scenario waits
until every pod does, and reports that time too (the real end of the change).
"""

import statistics
import time

import measure
import workloads

TASK = {
    'name': 'Patch each pod with kubernetes.core.k8s and wait',
    'kubernetes.core.k8s': {
        'state': 'patched', 'kind': 'Pod', 'api_version': 'v1', 'namespace': '{{ bench_namespace }}',
        'name': '{{ item }}',
        'definition': {'spec': {'containers': [{'name': workloads.CONTAINER, 'image': '{{ bench_image }}'}]}},
        'wait': True, 'wait_timeout': '{{ bench_timeout }}'},
    'loop': '{{ bench_batches | flatten }}',
}


def running_new(cluster, namespace):
    """Names of the pods whose app container runs NEW_IMAGE and is ready, and whose pod is Ready."""
    names = []
    for pod in cluster.pods(namespace):
        statuses = [s for s in pod.status.container_statuses or [] if s.name == workloads.CONTAINER]
        if (statuses and statuses[0].image == workloads.NEW_IMAGE and statuses[0].ready
                and workloads.condition(pod, 'Ready') == 'True'):
            names.append(pod.metadata.name)
    return names


def observe(cluster, namespace, pods, started, timeout, trace):
    """Right after the playbook returned: the pods already done; then the seconds from the start until all are,
    and per pod (from the request trace and the kubelet's times): how long its module waited after its PATCH,
    and how long the restart took from that PATCH until the pod was ready on the new image."""
    done_at_return = len(running_new(cluster, namespace))
    workloads.wait_until(lambda: len(running_new(cluster, namespace)) == pods, timeout,
                         'every pod running the new image and ready after kubernetes.core returned')
    settled = time.time() - started
    ready = cluster.ready_times(namespace)
    procs = measure.processes(trace)
    waited, restart, covered = [], [], 0
    for name, (pid, patched) in measure.first_writes(trace).items():
        ended = procs[pid]['exit'] or procs[pid]['last']
        waited.append(ended - patched)
        if name in ready:
            restart.append(ready[name] - patched)
            covered += ready[name] <= ended
    return {'done_at_return': done_at_return, 'settled': round(settled, 2),
            'wait_noticed_restart': done_at_return == pods and covered == pods, 'waits_covering_restart': covered,
            'wait_after_patch_median': round(statistics.median(waited), 2) if waited else None,
            'restart_after_patch_median': round(statistics.median(restart), 2) if restart else None}


def report_lines(results):
    """One line per kubernetes.core run, beside the in-place rows of the table."""
    lines = []
    for result in results:
        if result.get('method') != 'kcore' or 'error' in result:
            continue
        lines.append(
            'kubernetes.core patched+wait N=%d: returned after %s s with %d/%d pods on the new image and ready '
            '(its wait %s the restart: each module returned %s s after its PATCH, the restart took %s s, '
            '%d/%d waits covered it); all done after %s s; %s requests (%s pod writes/pod, %s pod GETs/pod), '
            '%s module processes' % (
                result['pods'], result['wall'], result['done_at_return'], result['pods'],
                'noticed' if result['wait_noticed_restart'] else 'did not notice', result['wait_after_patch_median'],
                result['restart_after_patch_median'], result['waits_covering_restart'], result['pods'],
                result['settled'],
                result['client']['total'], result['client']['pod_writes_per_pod'],
                result['client']['pod_gets_per_pod'], result['client']['processes']))
    return lines
