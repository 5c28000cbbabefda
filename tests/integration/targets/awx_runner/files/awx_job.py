# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rollout.yml run the way AWX runs a job template, through ansible-runner.

A private data directory with project/ (the playbooks), inventory/, env/extravars and env/envvars,
the credential as AWX's Kubernetes bearer-token credential injects it (K8S_AUTH_HOST, K8S_AUTH_API_KEY,
K8S_AUTH_SSL_CA_CERT, K8S_AUTH_VERIFY_SSL; no kubeconfig), env files suppressed as AWX does. Checks:
  0. the extra variables are the ones AWX makes of examples/awx/job-template.yml and its survey (answers
     typed as AWX types them);
  1. a run canceled through cancel_callback (ansible-runner then SIGKILLs the playbook's process group,
     as on an AWX cancel) after the first batch's progress event, while a pod of the next batch is drained:
     within seconds no pod is left drained (the module's guardian, pods/guardian.py, puts it back);
  2. the re-run finishes: every pod runs the new image with its UID, no gate False, no state in progress;
  3. its job events carry one progress event per batch, its playbook_on_stats event carries
     rollout_result as artifact data (AWX's job artifacts);
  4. no event, artifact or stdout file of either run holds the credential's token (but ansible-runner's own
     private record of the environment, artifacts/IDENT/command, mode 0600, which AWX never shows).
Usage: python awx_job.py REPO NAMESPACE GATE IMAGE WORKDIR   (token in AWX_TEST_TOKEN, admin kubeconfig in
K8S_AUTH_KUBECONFIG). Prints a report; exits 1 naming each check that failed.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import json
import os
import shutil
import sys
import time

import ansible_runner
import yaml
from kubernetes import client, config

PROGRESS_TASK = 'Show the progress'


def cluster_endpoint(kubeconfig_path, workdir):
    """(server, CA file) of the kubeconfig's current cluster, the CA written where AWX puts credential files."""
    with open(kubeconfig_path) as handle:
        doc = yaml.safe_load(handle)
    context = [c for c in doc['contexts'] if c['name'] == doc['current-context']][0]['context']
    cluster = [c for c in doc['clusters'] if c['name'] == context['cluster']][0]['cluster']
    ca_file = os.path.join(workdir, 'ca.crt')
    if 'certificate-authority-data' in cluster:
        with open(ca_file, 'wb') as handle:
            handle.write(base64.b64decode(cluster['certificate-authority-data']))
    else:
        shutil.copy(os.path.join(os.path.dirname(kubeconfig_path), cluster['certificate-authority']), ca_file)
    return cluster['server'], ca_file


def private_data_dir(repo, workdir, namespace, gate, image, envvars):
    pdd = os.path.join(workdir, 'pdd')
    for sub in ('project', 'inventory', 'env'):
        os.makedirs(os.path.join(pdd, sub), exist_ok=True)
    shutil.copytree(os.path.join(repo, 'playbooks'), os.path.join(pdd, 'project', 'playbooks'), dirs_exist_ok=True)
    with open(os.path.join(pdd, 'inventory', 'hosts'), 'w') as handle:
        handle.write('localhost ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    # As AWX launches examples/awx/job-template.yml: its extra_vars (edited on launch), then every survey
    # answer - the defaults, as text, integers or choices - but the ones an operator changes here.
    with open(os.path.join(repo, 'examples', 'awx', 'job-template.yml')) as handle:
        template = yaml.safe_load(handle)
    extravars = dict(template['extra_vars'])
    extravars.update({'rollout_target': {'namespace': namespace, 'label_selectors': ['app=web']},
                      'rollout_images': {'app': image}})
    # Batches (the survey's "false", a string as AWX passes it): the cancel comes between two of them.
    answers = {'rollout_batch_size': '1', 'rollout_order': 'name', 'rollout_readiness_gate': gate,
               'rollout_min_ready_seconds': 0, 'rollout_wait_timeout': 120, 'rollout_window': 'false'}
    for item in template['survey_spec']['spec']:
        extravars[item['variable']] = answers.get(item['variable'], item['default'])
    for name, data in (('extravars', extravars), ('envvars', envvars)):
        with open(os.path.join(pdd, 'env', name), 'w') as handle:
            yaml.safe_dump(data, handle)
    return pdd


def run_job(pdd, ident, cancel_when=None):
    """One job; returns (runner, events). ``cancel_when(progress events so far)``: cancel the job when it is true
    (ansible-runner asks every pexpect_timeout)."""
    events, progress = [], []

    def on_event(event):
        events.append(event)
        data = event.get('event_data', {})
        if event.get('event') == 'runner_on_ok' and data.get('task') == PROGRESS_TASK:
            progress.append(data)
        return True

    def cancel():
        return cancel_when is not None and bool(cancel_when(progress))

    runner = ansible_runner.run(
        private_data_dir=pdd, ident=ident, playbook='playbooks/rollout.yml', quiet=True,
        event_handler=on_event, cancel_callback=cancel, suppress_env_files=True,
        settings={'pexpect_timeout': 0.25, 'job_timeout': 600})
    return runner, events


def progress_lines(events):
    lines = []
    for event in events:
        data = event.get('event_data', {})
        if event.get('event') == 'runner_on_ok' and data.get('task') == PROGRESS_TASK:
            lines.append(data['res']['msg'][0])
    return lines


def pod_view(core, namespace, gate):
    view = {}
    for pod in core.list_namespaced_pod(namespace, label_selector='app=web').items:
        conditions = {c.type: c for c in pod.status.conditions or []}
        gate_condition = conditions.get(gate)
        view[pod.metadata.name] = {
            'uid': pod.metadata.uid,
            'image': pod.spec.containers[0].image,
            'gate': gate_condition.status if gate_condition else None,
            'gate_reason': gate_condition.reason if gate_condition else None,
            'ready': conditions['Ready'].status if 'Ready' in conditions else None,
            'state': json.loads((pod.metadata.annotations or {}).get('inplace.k8s/state', '{}') or '{}'),
        }
    return view


def unfinished(view):
    """Pods whose inplace.k8s/state holds a record in progress."""
    return sorted(name for name, pod in view.items()
                  if any(isinstance(r, dict) and r.get('state') == 'in-progress' for r in pod['state'].values()))


def secret_hits(pdd, secrets):
    """Files under artifacts/ that hold any of the secrets (events, stdout, status, everything) but
    artifacts/IDENT/command: ansible-runner's own record of the job's command line and environment
    (credentials included, mode 0600), which AWX neither shows nor keeps (it removes the directory)."""
    hits = []
    for top, _dirs, files in os.walk(os.path.join(pdd, 'artifacts')):
        for name in files:
            path = os.path.join(top, name)
            if name == 'command' and os.path.dirname(top) == os.path.join(pdd, 'artifacts'):
                continue
            with open(path, 'rb') as handle:
                content = handle.read()
            hits.extend('%s holds %s' % (os.path.relpath(path, pdd), label)
                        for label, value in secrets.items() if value.encode() in content)
    return hits


def main(argv):
    repo, namespace, gate, image, workdir = argv
    token = os.environ.pop('AWX_TEST_TOKEN')
    admin_kubeconfig = os.environ.pop('K8S_AUTH_KUBECONFIG')   # AWX's environment has none
    config.load_kube_config(admin_kubeconfig)
    core = client.CoreV1Api()
    server, ca_file = cluster_endpoint(admin_kubeconfig, workdir)
    envvars = {
        'K8S_AUTH_HOST': server, 'K8S_AUTH_API_KEY': token, 'K8S_AUTH_SSL_CA_CERT': ca_file,
        'K8S_AUTH_VERIFY_SSL': 'True', 'ANSIBLE_COLLECTIONS_PATH': os.environ['ANSIBLE_COLLECTIONS_PATH'],
        'PATH': os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''),
    }
    pdd = private_data_dir(repo, workdir, namespace, gate, image, envvars)
    before = pod_view(core, namespace, gate)
    failures = []

    def check(ok, what):
        print('%s  %s' % ('ok  ' if ok else 'FAIL', what))
        if not ok:
            failures.append(what)

    # Canceled while a pod of the second batch is drained (gate False): the moment a kill can leave one drained.
    at_cancel = {}

    def mid_drain(progress):
        if not progress:
            return False
        at_cancel.update(pod_view(core, namespace, gate))
        return any(p['gate'] == 'False' for p in at_cancel.values())

    t0 = time.time()
    first, first_events = run_job(pdd, 'canceled', cancel_when=mid_drain)
    canceled_after = time.time() - t0
    drained_at_cancel = sorted(n for n, p in at_cancel.items() if p['gate'] == 'False')
    # The module's guardian (pods.guardian) outlives the SIGKILL of the job's process group and puts the pod back.
    deadline = time.time() + 45
    while True:
        left = pod_view(core, namespace, gate)
        drained = sorted(n for n, p in left.items() if p['gate'] == 'False')
        if not drained or time.time() > deadline:
            break
        time.sleep(0.5)
    back_after = time.time() - t0 - canceled_after
    in_progress = unfinished(left)
    print('canceled run: status %s after %.1fs, progress events %s' % (first.status, canceled_after, progress_lines(first_events)))
    print('drained when canceled %s; %.1fs later: drained (gate False) %s %s, records in progress %s; on the new '
          'image %s' % (drained_at_cancel, back_after, drained, [left[n]['gate_reason'] for n in drained], in_progress,
                        sorted(n for n, p in left.items() if p['image'] == image)))
    check(first.status == 'canceled', 'the first run was canceled mid-rollout (status %s)' % first.status)
    check(len(progress_lines(first_events)) >= 1 and len([p for p in left.values() if p['image'] == image]) < len(left),
          'the cancel came after a batch and before the last one')
    check(bool(drained_at_cancel), 'the cancel came while a pod was drained: %s' % drained_at_cancel)
    check(not drained, 'no pod left drained after the cancel (the guardian put back %s in %.1fs): %s' % (
        drained_at_cancel, back_after, drained))

    t0 = time.time()
    second, second_events = run_job(pdd, 'rerun')
    rerun_seconds = time.time() - t0
    after = pod_view(core, namespace, gate)
    lines = progress_lines(second_events)
    print('re-run: status %s rc %s in %.1fs, progress events %s' % (second.status, second.rc, rerun_seconds, lines))
    check(second.status == 'successful' and second.rc == 0, 're-run successful (status %s, rc %s)' % (second.status, second.rc))
    check(all(p['image'] == image for p in after.values()), 'every pod runs %s' % image)
    check({n: p['uid'] for n, p in after.items()} == {n: p['uid'] for n, p in before.items()}, 'every pod kept its UID')
    check(all(p['gate'] == 'True' and p['ready'] == 'True' for p in after.values()) and not unfinished(after),
          'no pod left drained or in progress, every pod Ready: %s' % {n: (p['gate'], p['ready']) for n, p in after.items()})

    stats = [e for e in second_events if e.get('event') == 'playbook_on_stats']
    artifacts = stats[0]['event_data'].get('artifact_data', {}) if stats else {}
    result = artifacts.get('rollout_result', {})
    check(bool(lines) and len(lines) == int(result.get('batches_run', -1)),
          'one progress event per batch run (%d events, batches_run %s)' % (len(lines), result.get('batches_run')))
    check(all(line.startswith('batch ') and ' of ' in line for line in lines), 'progress events read "batch N of M ..."')
    check(result.get('failed_pods') == [] and int(result.get('pods', 0)) > 0 and not result.get('stopped'),
          'rollout_result in the artifacts (pods %s, failed %s, stopped %s)'
          % (result.get('pods'), result.get('failed_pods'), result.get('stopped')))

    hits = secret_hits(pdd, {'the API token': token})
    event_files = sum(len(files) for top, _d, files in os.walk(os.path.join(pdd, 'artifacts')) if top.endswith('job_events'))
    check(not hits, 'no secret in %d event files and the other artifacts%s' % (event_files, ': %s' % hits if hits else ''))
    check(not any(token in json.dumps(e) for e in first_events + second_events), 'no secret in the events handed to the callback')
    modes = set(oct(os.stat(os.path.join(pdd, 'artifacts', ident, 'command')).st_mode & 0o777) for ident in ('canceled', 'rerun'))
    check(modes == set(['0o600']), "ansible-runner's environment record (artifacts/IDENT/command) is private: mode %s" % sorted(modes))

    print('awx_job: %d passed, %d failed' % (10 - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
