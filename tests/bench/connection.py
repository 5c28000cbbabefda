# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""connection/ against the official kubernetes client: what a module pays for each (docs/architecture.md,
"connection/ is private").

Each measure runs in a fresh Python process, REPEATS times, and the median is reported:
- import: wall and CPU seconds to import the client (ours: connection/client.py with options.py; official:
  kubernetes.client and kubernetes.config) and the process's peak RSS after it (MiB);
- requests: load the kubeconfig, then REQUESTS GETs of one namespace's pod list against a local API server (the
  kubeconfig given, loopback only): CPU seconds of the process per request and wall seconds per request; the
  official client both with its models (what its users get) and with _preload_content=False + json.loads (the raw
  JSON, as we use it).

    python tests/bench/connection.py --kubeconfig .cluster/kubeconfig [--requests 200] [--repeats 5]

prints one JSON object. Bounded: REQUESTS x REPEATS requests per client, each with a 10 s timeout.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRELUDE = '''
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
'''

IMPORTS = {
    'ours': 'from ansible_collections.inplace.k8s.plugins.module_utils.connection import client\n'
            'from ansible_collections.inplace.k8s.plugins.module_utils import options\n',
    'official': 'import kubernetes.client, kubernetes.config\n',
}

CONNECT = {
    'ours': 'kube = client.Kube.connect(options.Connection(kubeconfig=KUBECONFIG))\n'
            'get = lambda: kube.request("GET", PATH)\n',
    'official': 'kubernetes.config.load_kube_config(config_file=KUBECONFIG)\n'
                'api = kubernetes.client.CoreV1Api()\n'
                'get = lambda: api.list_namespaced_pod(NAMESPACE, _request_timeout=10)\n',
    'official_raw': 'kubernetes.config.load_kube_config(config_file=KUBECONFIG)\n'
                    'api = kubernetes.client.CoreV1Api()\n'
                    'get = lambda: json.loads(api.list_namespaced_pod(NAMESPACE, _preload_content=False,\n'
                    '                                                 _request_timeout=10).data)\n',
}

MEASURE_IMPORT = '''
print(json.dumps({'import_s': time.perf_counter() - t0, 'import_cpu_s': time.process_time() - c0,
                  'rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
'''

MEASURE_REQUESTS = '''
get()   # the connection, TLS handshake and first answer: not counted
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(REQUESTS):
    get()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({'cpu_ms_per_request': 1000 * cpu / REQUESTS, 'wall_ms_per_request': 1000 * wall / REQUESTS,
                  'rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
'''


def collections_path():
    """A directory holding ansible_collections/inplace/k8s -> this checkout."""
    path = os.path.join(ROOT, '.cache', 'collections')
    link = os.path.join(path, 'ansible_collections', 'inplace', 'k8s')
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if not os.path.exists(link):
        os.symlink(ROOT, link)
    return path


def run(script, env):
    out = subprocess.run([sys.executable, '-c', script], env=env, check=True, capture_output=True, text=True,
                         timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def median(rows, key):
    return round(statistics.median(r[key] for r in rows), 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--kubeconfig', help='a kubeconfig of a local cluster (without it: import only)')
    parser.add_argument('--namespace', default='kube-system')
    parser.add_argument('--requests', type=int, default=200)
    parser.add_argument('--repeats', type=int, default=5)
    args = parser.parse_args()
    requests, repeats = min(args.requests, 2000), min(args.repeats, 20)
    env = dict(os.environ, PYTHONPATH=collections_path())
    report = {'python': sys.version.split()[0], 'repeats': repeats}
    for name, imports in IMPORTS.items():
        rows = [run(PRELUDE + imports + MEASURE_IMPORT, env) for _repeat in range(repeats)]
        report['import_' + name] = {'seconds': median(rows, 'import_s'), 'cpu_seconds': median(rows, 'import_cpu_s'),
                                    'rss_mib': median(rows, 'rss_mib')}
    if args.kubeconfig:
        server = urlsplit(next(line.split('server:')[1].strip() for line in open(args.kubeconfig)
                               if 'server:' in line))
        if not server.hostname.startswith('127.') and server.hostname != 'localhost':
            raise SystemExit('the bench talks to a loopback API server only, not %s' % server.hostname)
        head = 'KUBECONFIG, NAMESPACE, REQUESTS = %r, %r, %d\nPATH = "/api/v1/namespaces/%%s/pods" %% NAMESPACE\n' % (
            os.path.abspath(args.kubeconfig), args.namespace, requests)
        report['requests'] = requests
        for name, connect in CONNECT.items():
            imports = IMPORTS['ours' if name == 'ours' else 'official']
            rows = [run(PRELUDE + head + imports + connect + MEASURE_REQUESTS, env) for _repeat in range(repeats)]
            report['requests_' + name] = {k: median(rows, k) for k in ('cpu_ms_per_request', 'wall_ms_per_request',
                                                                       'rss_mib')}
    print(json.dumps(report, indent=2, sort_keys=True))


if __name__ == '__main__':
    main()
