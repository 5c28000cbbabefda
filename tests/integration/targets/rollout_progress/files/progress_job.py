# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live progress of a rollout as AWX shows it: playbooks/rollout.yml run through ansible-runner (as an AWX job
runs) on a Deployment of 30 pods whose new image takes 3 s to start (-slow3), a canary then a window of 5.

Checked from the job's events, by their creation times: while the rollout's one module call runs, a progress event
(a verbose job event "[localhost] progress: ...") came at least every 10 s - the first within 10 s of the task's
start, the last within 10 s of its end; the plan came first; each step's start and end were shown (the canary and
the window); the last line counts 30/30 pods done; rollout_result is in the artifacts with no failed pod.
Usage: python progress_job.py REPO NAMESPACE WORKDIR   (the kubeconfig in K8S_AUTH_KUBECONFIG). Prints a report;
exits 1 naming each check that failed.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import os
import shutil
import sys

import ansible_runner
import yaml

PROGRESS = '] progress: '
TASK = 'Plan the rollout, hold the controller, update the template and roll the pods'
GAP = 10.0


def when(event):
    return datetime.datetime.fromisoformat(event['created']).timestamp()


def main(argv):
    repo, namespace, workdir = argv
    pdd = os.path.join(workdir, 'pdd')
    for sub in ('project', 'inventory', 'env'):
        os.makedirs(os.path.join(pdd, sub), exist_ok=True)
    shutil.copytree(os.path.join(repo, 'playbooks'), os.path.join(pdd, 'project', 'playbooks'), dirs_exist_ok=True)
    with open(os.path.join(pdd, 'inventory', 'hosts'), 'w') as handle:
        handle.write('localhost ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    extravars = {'rollout_target': {'kind': 'Deployment', 'name': 'web', 'namespace': namespace},
                 'rollout_images': {'app': 'registry.example/web:2.0-slow3'}, 'rollout_canary': 1,
                 'rollout_batch_size': 5, 'rollout_wait_timeout': 120}
    envvars = {'K8S_AUTH_KUBECONFIG': os.environ['K8S_AUTH_KUBECONFIG'],
               'ANSIBLE_COLLECTIONS_PATH': os.environ['ANSIBLE_COLLECTIONS_PATH'],
               'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', '')}
    for name, data in (('extravars', extravars), ('envvars', envvars)):
        with open(os.path.join(pdd, 'env', name), 'w') as handle:
            yaml.safe_dump(data, handle)
    events = []
    runner = ansible_runner.run(private_data_dir=pdd, playbook='playbooks/rollout.yml', quiet=True,
                                event_handler=lambda event: events.append(event) or True,
                                settings={'job_timeout': 300})
    failures = []

    def check(ok, what):
        print('%s  %s' % ('ok  ' if ok else 'FAIL', what))
        if not ok:
            failures.append(what)

    check(runner.status == 'successful', 'the job succeeded (status %s, rc %s)' % (runner.status, runner.rc))
    start = [e for e in events if e.get('event') == 'playbook_on_task_start' and e['event_data'].get('task') == TASK]
    end = [e for e in events if e.get('event') == 'runner_on_ok' and e['event_data'].get('task') == TASK]
    lines = [(when(e), e['stdout'].split(PROGRESS, 1)[1]) for e in events
             if e.get('event') == 'verbose' and PROGRESS in (e.get('stdout') or '')]
    check(bool(start and end and lines), 'the rollout task and %d progress events found' % len(lines))
    if not (start and end and lines):
        return failures
    times = [when(start[0])] + [t for t, _line in lines] + [when(end[0])]
    gaps = [round(b - a, 1) for a, b in zip(times, times[1:])]
    print('rollout task %.1fs; progress events %d; seconds between them (task start .. task end): %s'
          % (times[-1] - times[0], len(lines), gaps))
    for _t, line in lines:
        print('    ' + line)
    check(times[-1] - times[0] > 2 * GAP, 'the rollout ran long enough to judge (%.1fs)' % (times[-1] - times[0]))
    check(max(gaps) <= GAP, 'a progress event at least every %ds (longest gap %.1fs)' % (GAP, max(gaps)))
    texts = [line for _t, line in lines]
    check(texts[0].startswith('plan: 30 pod(s), 0 already on the target, 30 to update in 2 step(s)'),
          'the plan first: %s' % texts[0])
    check(any(t.startswith('canary (step 1 of 2): 1/30 pods done') for t in texts)
          and any(t.startswith('step 2 of 2: ') for t in texts), 'the canary and the window shown')
    check(texts[-1].startswith('step 2 of 2: 30/30 pods done, 0 in flight'), 'the end: %s' % texts[-1])
    stats = [e for e in events if e.get('event') == 'playbook_on_stats']
    result = (stats[0]['event_data'].get('artifact_data', {}) if stats else {}).get('rollout_result', {})
    check(int(result.get('pods', 0)) == 30 and result.get('failed_pods') == [] and result.get('recreated_pods') == 0,
          'rollout_result in the artifacts: 30 pods, none failed, none recreated')
    return failures


if __name__ == '__main__':
    FAILED = main(sys.argv[1:])
    print('%d check(s) failed%s' % (len(FAILED), ': ' + '; '.join(FAILED) if FAILED else ''))
    sys.exit(1 if FAILED else 0)
