# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/awx_rollout.yml (the playbook of examples/awx/job-template.yml) run the way AWX runs a job template,
through ansible-runner, and stopped the ways an operator stops it.

A private data directory with project/ (the playbooks), inventory/, env/extravars and env/envvars,
the credential as AWX's Kubernetes bearer-token credential injects it (K8S_AUTH_HOST, K8S_AUTH_API_KEY,
K8S_AUTH_SSL_CA_CERT, K8S_AUTH_VERIFY_SSL; no kubeconfig), env files suppressed as AWX does. Four jobs, each
to a new image of the same three gated pods, each stopped, then launched again right after (the relaunch):
  plan     canceled through cancel_callback (ansible-runner SIGKILLs ansible-playbook's process group, as on an
           AWX cancel) as the module of the plan starts (one call: plan, window, finish);
  drained  canceled while a pod is drained and another one is done already (one call);
  pause    canceled in the pause between two batches (rollout_pause_seconds, batches of 2);
  sigterm  SIGTERM to ansible-playbook (AWX's graceful stop, Ctrl-C's kin) while a pod is drained (one call).
Checked from the cluster for each: the modules of the stopped job exit (their pids found by the job's
environment), no pod's change started more than 2 s after the stop (the records' ``started`` of the pods the
stopped job's modules own), no pod left drained by it; the relaunch, started while the stopped job's modules may
still finish their pods in flight, succeeds with every pod on the image, the same UIDs (0 recreated), gate True,
Ready, nothing in progress. Also: the extra variables are the ones AWX makes of examples/awx/job-template.yml and
its survey; the batched relaunch's events carry one progress event per batch and rollout_result as artifact data;
no event, artifact or stdout file holds the credential's token (but ansible-runner's own private record of the
environment, artifacts/IDENT/command, mode 0600, which AWX never shows).
Usage: python awx_job.py REPO NAMESPACE GATE WORKDIR   (token in AWX_TEST_TOKEN, admin kubeconfig in
K8S_AUTH_KUBECONFIG). Prints a report; exits 1 naming each check that failed.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import calendar
import json
import os
import shutil
import signal
import sys
import threading
import time

import ansible_runner
import yaml
from kubernetes import client, config

PROGRESS = '] progress: '       # the live progress lines the rollout's action shows (verbose job events)
PAUSE_NOTE = 'the pause before step'
MARK = 'INPLACE_AWX_TEST_JOB'   # in the job's environment: its processes are found by it
BOUND = 2.0                     # seconds after the stop within which no pod's change may start
EXIT_BOUND = 20                 # seconds within which the stopped job's modules exit
EVENTS = []                     # every event of every job, as handed to the event handler
PLAYBOOK = 'playbooks/awx_rollout.yml'   # the job template's playbook


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


def private_data_dir(repo, workdir):
    pdd = os.path.join(workdir, 'pdd')
    for sub in ('project', 'inventory', 'env'):
        os.makedirs(os.path.join(pdd, sub), exist_ok=True)
    shutil.copytree(os.path.join(repo, 'playbooks'), os.path.join(pdd, 'project', 'playbooks'), dirs_exist_ok=True)
    with open(os.path.join(pdd, 'inventory', 'hosts'), 'w') as handle:
        handle.write('localhost ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
    return pdd


def write_job(pdd, repo, namespace, gate, image, answers, envvars, ident):
    """The job as AWX launches examples/awx/job-template.yml: its extra_vars (the template author's: here the
    readiness gate), then every survey answer - the defaults, as text, integers or choices - but the ones the
    launcher gives (the target, the image, and ``answers``). Nothing else comes from the launcher."""
    with open(os.path.join(repo, 'examples', 'awx', 'job-template.yml')) as handle:
        template = yaml.safe_load(handle)
    assert template['ask_variables_on_launch'] is False and template['playbook'] == PLAYBOOK
    extravars = dict(template['extra_vars'], rollout_readiness_gate=gate)
    answers = dict({'awx_target_kind': 'pods', 'awx_target_namespace': namespace, 'awx_target_selector': 'app=web',
                    'awx_container': 'app', 'awx_image': image, 'rollout_batch_size': '1', 'rollout_order': 'name',
                    'rollout_min_ready_seconds': 0, 'rollout_wait_timeout': 120}, **answers)
    for item in template['survey_spec']['spec']:
        extravars[item['variable']] = answers.get(item['variable'], item['default'])
    for name, data in (('extravars', extravars), ('envvars', dict(envvars, **{MARK: ident}))):
        with open(os.path.join(pdd, 'env', name), 'w') as handle:
            yaml.safe_dump(data, handle)


def run_job(pdd, ident, stop_when=None):
    """One job; returns (runner, events). ``stop_when(events so far)``: asked every pexpect_timeout; True cancels
    the job (ansible-runner SIGKILLs its process group), 'sigterm' sends SIGTERM to ansible-playbook."""
    events = []

    def cancel():
        if stop_when is None:
            return False
        verdict = stop_when(events)
        if verdict == 'sigterm':
            os.kill(playbook_pid(), signal.SIGTERM)
            return False
        return bool(verdict)

    runner = ansible_runner.run(
        private_data_dir=pdd, ident=ident, playbook=PLAYBOOK, quiet=True,
        event_handler=lambda event: events.append(event) or EVENTS.append(event) or True, cancel_callback=cancel, suppress_env_files=True,
        settings={'pexpect_timeout': 0.25, 'job_timeout': 600})
    return runner, events


def proc_read(pid, name):
    try:
        with open('/proc/%s/%s' % (pid, name), 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return b''


def playbook_pid():
    """ansible-playbook's main process: ansible-runner's child (pexpect spawns it from this process)."""
    for pid in filter(str.isdigit, os.listdir('/proc')):
        stat = proc_read(pid, 'stat').rpartition(b')')[2].split()
        if stat and int(stat[1]) == os.getpid() and b'ansible-playbook' in proc_read(pid, 'cmdline'):
            return int(pid)
    raise RuntimeError('ansible-playbook not found')


def module_pids(ident, module=b'AnsiballZ_'):
    """The module processes of job ``ident`` (AnsiballZ, with the job's mark in their environment)."""
    mark = ('%s=%s' % (MARK, ident)).encode()
    return set(int(pid) for pid in filter(str.isdigit, os.listdir('/proc'))
               if module in proc_read(pid, 'cmdline') and mark in proc_read(pid, 'environ').split(b'\0'))


def progress_lines(events):
    """The live progress lines of a job, as AWX shows them (job events of the kind verbose)."""
    return [e['stdout'].split(PROGRESS, 1)[1] for e in events
            if e.get('event') == 'verbose' and PROGRESS in (e.get('stdout') or '')]


def in_pause(events):
    return any(line.startswith(PAUSE_NOTE) for line in progress_lines(events))


def pod_view(core, namespace, gate):
    view = {}
    for pod in core.list_namespaced_pod(namespace, label_selector='app=web').items:
        conditions = {c.type: c for c in pod.status.conditions or []}
        gate_condition = conditions.get(gate)
        view[pod.metadata.name] = {
            'uid': pod.metadata.uid,
            'image': pod.spec.containers[0].image,
            'gate': gate_condition.status if gate_condition else None,
            'ready': conditions['Ready'].status if 'Ready' in conditions else None,
            'state': json.loads((pod.metadata.annotations or {}).get('inplace.k8s/state', '{}') or '{}'),
        }
    return view


def unfinished(view):
    """Pods whose inplace.k8s/state holds a record in progress."""
    return sorted(name for name, pod in view.items()
                  if any(isinstance(r, dict) and r.get('state') == 'in-progress' for r in pod['state'].values()))


def started_by(view, pids):
    """{pod: seconds since the epoch} when a record owned by one of ``pids`` (the stopped job's modules) began."""
    found = {}
    for name, pod in view.items():
        for rec in pod['state'].values():
            if isinstance(rec, dict) and (rec.get('owner') or {}).get('pid') in pids and rec.get('started'):
                found[name] = calendar.timegm(time.strptime(rec['started'], '%Y-%m-%dT%H:%M:%SZ'))
    return found


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


class Stopped:
    """What a stop left: the stopped job's module processes (seen until the stop and a little after) are
    followed until they exit, and the pods are read then: their exit time and that view."""

    def __init__(self, core, namespace, gate, ident, at, seen):
        self.core, self.namespace, self.gate, self.ident, self.at = core, namespace, gate, ident, at
        self.pids = set(seen) | module_pids(ident)
        self.exited, self.view = None, None
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self):
        # A worker that outlived the SIGKILL may start its module a little after the stop: followed too.
        deadline, last = time.time() + 150, time.time()
        while time.time() < deadline:
            running = module_pids(self.ident)
            self.pids |= running
            if running:
                last = time.time()
            elif time.time() > max(last, self.at + 3):
                break
            time.sleep(0.1)
        self.exited = last - self.at if not module_pids(self.ident) else None
        self.view = pod_view(self.core, self.namespace, self.gate)

    def report(self):
        self.thread.join()
        late = dict((n, round(t - self.at, 1)) for n, t in started_by(self.view, self.pids).items() if t > self.at + BOUND)
        drained = sorted(n for n, p in self.view.items() if p['gate'] == 'False' and n in started_by(self.view, self.pids))
        return late, drained


def scenario(core, pdd, args, name, image, answers, trigger, check, before):
    """Stop job ``name`` when ``trigger(name, events so far, view)`` says so (True: cancel, 'sigterm'), relaunch it
    right after, check both; (the stop, the relaunch's events) or None."""
    repo, namespace, gate, envvars = args
    write_job(pdd, repo, namespace, gate, image, answers, envvars, name)
    moment = {}

    def stop_when(events):
        if moment:   # ansible-runner asks again until the job ended: a cancel must stay asked
            return moment['verdict'] is True
        verdict = trigger(name, events, lambda: pod_view(core, namespace, gate))
        if verdict:
            moment.update(at=time.time(), pids=module_pids(name), view=pod_view(core, namespace, gate),
                          verdict=verdict)
        return verdict
    t0 = time.time()
    first, _events = run_job(pdd, name, stop_when)
    if not moment:
        check(False, '%s: the stop came (status %s after %.1fs)' % (name, first.status, time.time() - t0))
        return None
    stopped = Stopped(core, namespace, gate, name, moment['at'], moment['pids'])
    write_job(pdd, repo, namespace, gate, image, answers, envvars, name + '-relaunch')
    t1 = time.time()
    second, second_events = run_job(pdd, name + '-relaunch')
    relaunch_seconds = time.time() - t1
    late, drained = stopped.report()
    after = pod_view(core, namespace, gate)
    at_stop = moment['view']
    print('%s: stopped (%s) after %.1fs, status %s; at the stop: on %s %s, drained %s; its modules %s exited %s s '
          'after the stop, their pods\' changes started at %s s from it; relaunch %s in %.1fs' % (
              name, 'SIGTERM' if moment['verdict'] == 'sigterm' else 'cancel', moment['at'] - t0, first.status,
              image, sorted(n for n, p in at_stop.items() if p['image'] == image),
              sorted(n for n, p in at_stop.items() if p['gate'] == 'False'), sorted(stopped.pids),
              stopped.exited if stopped.exited is None else round(stopped.exited, 1),
              dict((n, round(t - moment['at'], 1)) for n, t in started_by(stopped.view, stopped.pids).items()),
              second.status, relaunch_seconds))
    expected = ('failed',) if moment['verdict'] == 'sigterm' else ('canceled',)
    check(first.status in expected, '%s: the job ended %s (status %s)' % (name, expected[0], first.status))
    # Its pods in flight finish (a 5 s start at most here); a pause of 30 s ends at once.
    check(stopped.exited is not None and stopped.exited < EXIT_BOUND, '%s: the stopped job\'s modules exited within '
          '%ss of the stop (%s)' % (name, EXIT_BOUND, stopped.exited))
    check(not late, '%s: no pod\'s change started more than %ss after the stop: %s' % (name, BOUND, late))
    check(not drained, '%s: no pod left drained by the stopped job: %s' % (name, drained))
    check(second.status == 'successful' and second.rc == 0, '%s: relaunch successful (status %s, rc %s)' % (
        name, second.status, second.rc))
    check(all(p['image'] == image for p in after.values()) and
          {n: p['uid'] for n, p in after.items()} == {n: p['uid'] for n, p in before.items()},
          '%s: every pod runs %s in place (same UIDs, 0 recreated)' % (name, image))
    check(all(p['gate'] == 'True' and p['ready'] == 'True' for p in after.values()) and not unfinished(after),
          '%s: no pod drained or in progress, every pod Ready: %s' % (
              name, {n: (p['gate'], p['ready']) for n, p in after.items()}))
    return moment, second_events


def one_done_one_drained(image, verdict):
    def trigger(_ident, _events, view):
        pods = view().values()
        done = [p for p in pods if p['image'] == image and p['gate'] == 'True']
        return verdict if done and any(p['gate'] == 'False' for p in pods) else False
    return trigger


def main(argv):
    repo, namespace, gate, workdir = argv
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
    pdd = private_data_dir(repo, workdir)
    args = (repo, namespace, gate, envvars)
    before = pod_view(core, namespace, gate)
    failures, passed = [], []

    def check(ok, what):
        print('%s  %s' % ('ok  ' if ok else 'FAIL', what))
        (passed if ok else failures).append(what)

    one_call = {'rollout_window': 'true'}
    # A 5 s start: a pod stays drained about 5.5 s, long enough for the stop (asked every 0.25 s) to come while it
    # is, even on a loaded machine. The module's cancel watch looks every 0.25 s: its answer comes well within 2 s.
    # The plan: as the rollout's first module starts (job events come too late for this moment).
    scenario(core, pdd, args, 'plan', 'registry.example/web:2.0-slow1', one_call,
             lambda ident, _events, _view: bool(module_pids(ident, b'AnsiballZ_rollout_workload')), check, before)
    scenario(core, pdd, args, 'drained', 'registry.example/web:3.0-slow5', one_call,
             one_done_one_drained('registry.example/web:3.0-slow5', True), check, before)
    paused = scenario(core, pdd, args, 'pause', 'registry.example/web:4.0-slow1',
                      {'rollout_window': 'false', 'rollout_batch_size': '2', 'rollout_pause_seconds': 30},
                      lambda _ident, events, _view: in_pause(events), check, before)
    scenario(core, pdd, args, 'sigterm', 'registry.example/web:5.0-slow5', one_call,
             one_done_one_drained('registry.example/web:5.0-slow5', 'sigterm'), check, before)

    # The batched relaunch (after the pause): its job events and artifacts, as AWX shows them.
    events = paused[1] if paused else []
    lines = progress_lines(events)
    stats = [e for e in events if e.get('event') == 'playbook_on_stats']
    result = (stats[0]['event_data'].get('artifact_data', {}) if stats else {}).get('rollout_result', {})
    labels = sorted(set(line.split(':', 1)[0] for line in lines if line.startswith('batch ')))
    check(bool(labels) and len(labels) == int(result.get('batches_run', -1)),
          'live progress events for each batch run (%s; batches_run %s)' % (labels, result.get('batches_run')))
    check(any(line.startswith('plan: ') for line in lines) and all(
        ' pods done' in line for line in lines if line.startswith('batch ')),
        'progress events read "plan: ..." then "batch N of M: D/T pods done, ..." (%d lines)' % len(lines))
    check(result.get('failed_pods') == [] and int(result.get('pods', 0)) > 0 and not result.get('stopped'),
          'rollout_result in the artifacts (pods %s, failed %s, stopped %s)'
          % (result.get('pods'), result.get('failed_pods'), result.get('stopped')))

    hits = secret_hits(pdd, {'the API token': token})
    event_files = sum(len(files) for top, _d, files in os.walk(os.path.join(pdd, 'artifacts')) if top.endswith('job_events'))
    check(not hits, 'no secret in %d event files and the other artifacts%s' % (event_files, ': %s' % hits if hits else ''))
    check(not any(token in json.dumps(e) for e in EVENTS), 'no secret in the %d events handed to the callback'
          % len(EVENTS))
    idents = sorted(os.listdir(os.path.join(pdd, 'artifacts')))
    modes = set(oct(os.stat(os.path.join(pdd, 'artifacts', ident, 'command')).st_mode & 0o777) for ident in idents)
    check(modes == set(['0o600']), "ansible-runner's environment record (artifacts/IDENT/command) is private: mode %s"
          % sorted(modes))

    print('awx_job: %d passed, %d failed' % (len(passed), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
