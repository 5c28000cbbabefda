#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Test helper (not part of the collection): moves the local cluster under a running rollout, at a moment the
rollout decides, not a sleep. It waits for the pod in flight (the first pod of --selector whose spec names an
image ending in --image and that is not terminating: its change has just started), then does one of:

  drain        kubectl drain of that pod's node (--ignore-daemonsets --delete-emptydir-data --force), uncordon after
               --hold s
  evict        the Eviction API on that pod
  scale        kubectl scale --replicas=--to of --workload, --hold s later --replicas=--back
  node-stop    SIGSTOP of that pod's node process (its kubelet and runtime) for --hold s, then SIGCONT (always)
  node-remove  another node, one whose pods of --selector are all still on the old image: SIGSTOP of its process and
               kubectl delete node (an autoscaler's scale-in); `restore` brings it back
  restore      SIGCONT of node --node, and if its Node object is gone, a restart of its process (the kubelet
               registers again); waits until it is Ready

Bounded: --patience s to see the pod in flight (0.2 s apart), each kubectl call 120 s. Prints what it did, ending
with a line `done` (or `failed: ...`). The node's process is found in the cluster's state.json beside the
kubeconfig and checked to be that cluster's (its environment marker) before it is signalled."""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import signal
import subprocess
import sys
import time


def kubectl(args, *more, **kwargs):
    cmd = ['kubectl', '--kubeconfig', args.kubeconfig] + list(more)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=kwargs.get('check', True),
                          input=kwargs.get('stdin'))


def say(text):
    print('%.1f %s' % (time.time(), text), flush=True)


def pods(args):
    out = kubectl(args, '-n', args.namespace, 'get', 'pods', '-l', args.selector, '-o', 'json')
    return json.loads(out.stdout)['items']


def on_target(pod, suffix):
    return any(c.get('image', '').endswith(suffix) for c in pod['spec']['containers'])


def in_flight(args):
    deadline = time.monotonic() + args.patience
    while time.monotonic() < deadline:
        for pod in pods(args):
            if on_target(pod, args.image) and not pod['metadata'].get('deletionTimestamp'):
                return pod
        time.sleep(0.2)
    raise RuntimeError('no pod of %s took an image ending in %s within %ss' % (
        args.selector, args.image, args.patience))


def node_pid(args, node):
    clusterdir = os.path.dirname(os.path.abspath(args.kubeconfig))
    with open(os.path.join(clusterdir, 'state.json')) as handle:
        pid = [c['pid'] for c in json.load(handle)['components'] if c['name'] == node][0]
    with open('/proc/%d/environ' % pid, 'rb') as handle:
        if ('INPLACE_LOCAL_CLUSTER_DIR=%s' % clusterdir).encode() not in handle.read().split(b'\0'):
            raise RuntimeError('pid %d is not %s of the cluster in %s' % (pid, node, clusterdir))
    return pid


def restore(args, node):
    os.kill(node_pid(args, node), signal.SIGCONT)
    if kubectl(args, 'get', 'node', node, check=False).returncode != 0:
        subprocess.run([args.cluster_bin, 'restart', '--dir', os.path.dirname(os.path.abspath(args.kubeconfig)),
                        node], check=True, timeout=120)
        say('restarted %s (its Node object was deleted)' % node)
    for _attempt in range(120):
        out = kubectl(args, 'get', 'node', node, '-o', 'json', check=False)
        if out.returncode == 0 and any(c['type'] == 'Ready' and c['status'] == 'True'
                                       for c in json.loads(out.stdout)['status']['conditions']):
            say('%s Ready' % node)
            return
        time.sleep(1)
    raise RuntimeError('%s did not turn Ready in 120 s' % node)


def move(args):
    if args.action == 'restore':
        return restore(args, args.node)
    pod = in_flight(args)
    name, node = pod['metadata']['name'], pod['spec'].get('nodeName')
    say('in flight: %s on %s' % (name, node))
    if args.action == 'evict':
        body = {'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': name, 'namespace': args.namespace}}
        kubectl(args, 'create', '--raw', '/api/v1/namespaces/%s/pods/%s/eviction' % (args.namespace, name), '-f', '-',
                stdin=json.dumps(body))
        say('evicted %s' % name)
    elif args.action == 'drain':
        out = kubectl(args, 'drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout=120s')
        say('drained %s: %s' % (node, ' '.join(out.stdout.split())))
        time.sleep(args.hold)
        kubectl(args, 'uncordon', node)
        say('uncordoned %s' % node)
    elif args.action == 'scale':
        kubectl(args, '-n', args.namespace, 'scale', args.workload, '--replicas=%d' % args.to)
        say('scaled %s to %d' % (args.workload, args.to))
        time.sleep(args.hold)
        kubectl(args, '-n', args.namespace, 'scale', args.workload, '--replicas=%d' % args.back)
        say('scaled %s to %d' % (args.workload, args.back))
    elif args.action == 'node-stop':
        pid = node_pid(args, node)
        os.kill(pid, signal.SIGSTOP)
        say('stopped %s (pid %d)' % (node, pid))
        try:
            time.sleep(args.hold)
        finally:
            try:   # the same process still (the test may have restored it, the cluster may be down)
                if node_pid(args, node) == pid:
                    os.kill(pid, signal.SIGCONT)
            except (OSError, IndexError, RuntimeError):
                pass
        say('continued %s' % node)
    elif args.action == 'node-remove':
        busy = set(p['spec'].get('nodeName') for p in pods(args) if on_target(p, args.image))
        other = sorted(set(p['spec'].get('nodeName') for p in pods(args)) - busy - set([node]))[-1]
        os.kill(node_pid(args, other), signal.SIGSTOP)
        kubectl(args, 'delete', 'node', other, '--wait=false')
        say('removed %s' % other)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('action', choices=['drain', 'evict', 'scale', 'node-stop', 'node-remove', 'restore'])
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--namespace', default='default')
    parser.add_argument('--selector', default='')
    parser.add_argument('--image', default='')
    parser.add_argument('--patience', type=float, default=120)
    parser.add_argument('--hold', type=float, default=5)
    parser.add_argument('--workload', default='')
    parser.add_argument('--to', type=int, default=0)
    parser.add_argument('--back', type=int, default=0)
    parser.add_argument('--node', default='')
    parser.add_argument('--cluster-bin', default='cluster')
    args = parser.parse_args()
    try:
        move(args)
    except (RuntimeError, OSError, IndexError, subprocess.SubprocessError) as exc:
        say('failed: %s %s' % (exc, getattr(exc, 'stderr', '') or ''))
        return 1
    say('done')
    return 0


if __name__ == '__main__':
    sys.exit(main())
