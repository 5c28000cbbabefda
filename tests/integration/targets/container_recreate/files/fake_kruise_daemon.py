#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Test helper: plays kruise-daemon for ContainerRecreateRequests in one namespace of the local cluster.

Not OpenKruise and not part of the collection. It watches the requests, and for each new one stops
the named containers through the CRI socket of the pod's node (the local cluster's ``cluster cri``
client), waits until the kubelet runs them again (started, ready, up ``minStartedSeconds``) and
writes the request's status the way OpenKruise does: ``phase`` Recreating -> Completed and one
``containerRecreateStates`` entry per container (Pending, Recreating, Succeeded or Failed).
A pod labelled ``fake-kruise/fail=true`` gets its first container marked Failed, so that tests can
follow a request to failure.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time

from kubernetes import client, config, watch

GROUP, VERSION, PLURAL = 'apps.kruise.io', 'v1alpha1', 'containerrecreaterequests'
FAIL_LABEL = 'fake-kruise/fail'


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def log(*parts):
    print(now(), *parts)
    sys.stdout.flush()


class Daemon(object):

    def __init__(self, args):
        config.load_kube_config(args.kubeconfig)
        self.core = client.CoreV1Api()
        self.custom = client.CustomObjectsApi()
        self.namespace = args.namespace
        self.cluster_bin = args.cluster_bin
        with open(args.state) as handle:
            state = json.load(handle)
        self.sockets = dict((c['name'], c['criSocket']) for c in state['components'] if c.get('criSocket'))
        self.seen = set()

    def status(self, name, phase, states, message=None):
        body = {'status': {'phase': phase, 'containerRecreateStates': states}}
        if message:
            body['status']['message'] = message
        if phase == 'Completed':
            body['status']['completionTime'] = now()
        self.custom.patch_namespaced_custom_object_status(GROUP, VERSION, self.namespace, PLURAL, name, body)
        log(name, phase, json.dumps(states))

    def container_status(self, pod_name, container):
        pod = self.core.read_namespaced_pod(pod_name, self.namespace)
        for item in pod.status.container_statuses or []:
            if item.name == container:
                return pod, item
        return pod, None

    def recreate(self, request, pod, container, states, index):
        name = request['metadata']['name']
        strategy = request['spec'].get('strategy') or {}
        deadline = time.time() + (request['spec'].get('activeDeadlineSeconds') or 300)
        _pod, before = self.container_status(pod.metadata.name, container)
        states[index] = {'name': container, 'phase': 'Recreating'}
        self.status(name, 'Recreating', states)
        runtime_id = before.container_id.split('://', 1)[-1]
        grace = strategy.get('terminationGracePeriodSeconds', pod.spec.termination_grace_period_seconds or 30)
        socket = self.sockets[pod.spec.node_name]
        subprocess.check_call([self.cluster_bin, 'cri', '--socket', socket, 'stop', '--timeout', str(grace),
                               runtime_id])
        ready_since = None
        while time.time() < deadline:
            _pod, current = self.container_status(pod.metadata.name, container)
            up = (current is not None and current.container_id != before.container_id and current.ready
                  and current.started and current.state.running is not None)
            if up:
                ready_since = ready_since or time.time()
                if time.time() - ready_since >= (strategy.get('minStartedSeconds') or 0):
                    states[index] = {'name': container, 'phase': 'Succeeded'}
                    return True
            else:
                ready_since = None
            time.sleep(0.5)
        states[index] = {'name': container, 'phase': 'Failed', 'message': 'not ready before the active deadline'}
        return False

    def handle(self, request):
        name = request['metadata']['name']
        try:
            pod = self.core.read_namespaced_pod(request['spec']['podName'], self.namespace)
            containers = [c['name'] for c in request['spec']['containers']]
            states = [{'name': c, 'phase': 'Pending'} for c in containers]
            self.status(name, 'Recreating', states)
            if (pod.metadata.labels or {}).get(FAIL_LABEL) == 'true':
                states[0] = {'name': containers[0], 'phase': 'Failed',
                             'message': 'fake kruise-daemon: failing as the pod label %s asks' % FAIL_LABEL}
                self.status(name, 'Completed', states, message='recreate failed for container %s' % containers[0])
                return
            ordered = (request['spec'].get('strategy') or {}).get('orderedRecreate')
            if ordered:
                for index, container in enumerate(containers):
                    if not self.recreate(request, pod, container, states, index):
                        break
            else:
                threads = [threading.Thread(target=self.recreate, args=(request, pod, c, states, i))
                           for i, c in enumerate(containers)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            failed = [s['name'] for s in states if s['phase'] != 'Succeeded']
            self.status(name, 'Completed', states,
                        message='recreate failed for container %s' % failed[0] if failed else None)
        except Exception as exc:  # a test helper: report and carry on
            log(name, 'error', repr(exc))

    def run(self, lifetime):
        end = time.time() + lifetime
        while time.time() < end:
            stream = watch.Watch().stream(self.custom.list_namespaced_custom_object, GROUP, VERSION, self.namespace,
                                          PLURAL, timeout_seconds=30)
            for event in stream:
                request = event['object']
                name = request['metadata']['name']
                if event['type'] == 'ADDED' and name not in self.seen and not (request.get('status') or {}).get('phase'):
                    self.seen.add(name)
                    log(name, 'new request for pod', request['spec']['podName'])
                    threading.Thread(target=self.handle, args=(request,), daemon=True).start()
                if time.time() >= end:
                    break


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--namespace', required=True)
    parser.add_argument('--state', required=True, help="the local cluster's state.json (node -> CRI socket)")
    parser.add_argument('--cluster-bin', required=True, help='the local cluster binary (cluster cri ...)')
    parser.add_argument('--lifetime', type=int, default=900, help='exit after this many seconds')
    args = parser.parse_args()
    log('fake kruise-daemon pid', os.getpid(), 'namespace', args.namespace)
    Daemon(args).run(args.lifetime)


if __name__ == '__main__':
    main()
