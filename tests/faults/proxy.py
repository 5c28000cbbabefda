#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A fault-injecting HTTPS reverse proxy in front of a local cluster's API server (tests only).

It listens on 127.0.0.1 with the API server's own certificate (SAN 127.0.0.1, so clients keep the
cluster CA), forwards every request with the admin client certificate, and answers the first
``--count`` requests whose "METHOD path" matches ``--match`` (a regular expression) itself with
``--status`` (429 with ``Retry-After: --retry-after``, or a 5xx) instead of forwarding them.
Watches and other streamed answers are relayed chunk by chunk. One line per request goes to
``--log`` ("injected 429 GET /api/..." or "forwarded 200 GET /api/..."), so a test can count retries.
With ``--stall-watches N`` the first N watch requests (``watch=true``) are answered with the headers
of a 200 and then nothing: no bytes and no FIN, the connection held for ``--stall-seconds`` (a
half-open watch, as after a NAT or load-balancer timeout); logged as "stalled 200 GET ...".
With ``--after S`` neither faults nor stalls start before S seconds after the proxy started (a burst at a
chosen moment of a run that goes through the proxy from its start: tests/soak/soak.py).

    python tests/faults/proxy.py --clusterdir .cluster --port 26999 --match 'PATCH .*/pods/' \\
        --status 429 --count 3 --log /tmp/proxy.log
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import http.client
import http.server
import json
import os
import re
import socketserver
import ssl
import threading
import time

HOP_HEADERS = frozenset(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade',
                         'proxy-authorization', 'proxy-authenticate', 'host', 'content-length'])


class Faults(object):
    """Which requests fail, and how many are left to fail (thread-safe)."""

    def __init__(self, pattern, status, count, retry_after, start=0.0):
        self.start = start
        self.pattern = re.compile(pattern)
        self.status = status
        self.left = count
        self.retry_after = retry_after
        self.lock = threading.Lock()

    def take(self, line):
        with self.lock:
            if self.left > 0 and time.monotonic() >= self.start and self.pattern.search(line):
                self.left -= 1
                return True
            return False


def upstream_context(clusterdir):
    context = ssl.create_default_context(cafile=os.path.join(clusterdir, 'pki', 'ca.crt'))
    context.load_cert_chain(os.path.join(clusterdir, 'pki', 'admin.crt'), os.path.join(clusterdir, 'pki', 'admin.key'))
    return context


def make_handler(upstream, context, faults, log, stalls=None):
    host, port = upstream
    stalls = stalls or {'take': lambda: False, 'seconds': 0, 'done': threading.Event()}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, fmt, *args):  # quiet: one line per request goes to the log file instead
            return

        def record(self, what):
            with log['lock']:
                log['file'].write('%s %s %s\n' % (what, self.command, self.path))
                log['file'].flush()

        def inject(self):
            body = json.dumps({'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'code': faults.status,
                               'reason': 'TooManyRequests' if faults.status == 429 else 'ServiceUnavailable',
                               'message': 'injected by tests/faults/proxy.py'}).encode()
            self.send_response(faults.status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            if faults.status == 429 or faults.retry_after:
                self.send_header('Retry-After', str(faults.retry_after))
            self.end_headers()
            self.wfile.write(body)
            self.record('injected %d' % faults.status)

        def forward(self):
            length = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(length) if length else None
            headers = dict((k, v) for k, v in self.headers.items() if k.lower() not in HOP_HEADERS)
            connection = http.client.HTTPSConnection(host, port, context=context, timeout=300)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header('Transfer-Encoding', 'chunked')
                self.end_headers()
                self.record('forwarded %d' % answer.status)
                while True:
                    chunk = answer.read1(65536)
                    if not chunk:
                        break
                    self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b'0\r\n\r\n')
            finally:
                connection.close()

        def stall(self):
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            self.wfile.flush()
            self.record('stalled 200')
            stalls['done'].wait(stalls['seconds'])   # bounded: then the connection is closed
            self.close_connection = True

        def handle_one(self):
            if 'watch=true' in self.path and stalls['take']():
                self.stall()
            elif faults.take('%s %s' % (self.command, self.path)):
                length = int(self.headers.get('Content-Length') or 0)
                if length:
                    self.rfile.read(length)
                self.inject()
            else:
                self.forward()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main(argv=None):
    parser = argparse.ArgumentParser(description='A fault-injecting HTTPS reverse proxy for the API server (tests only)')
    parser.add_argument('--clusterdir', required=True)
    parser.add_argument('--upstream', help='host:port of the API server (default: from the cluster kubeconfig)')
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--match', default='.', help='regular expression on "METHOD path"')
    parser.add_argument('--status', type=int, default=429)
    parser.add_argument('--count', type=int, default=3)
    parser.add_argument('--retry-after', type=int, default=1)
    parser.add_argument('--log', required=True)
    parser.add_argument('--stall-watches', type=int, default=0, help='hold the first N watches silent')
    parser.add_argument('--stall-seconds', type=int, default=300)
    parser.add_argument('--after', type=float, default=0.0, help='no fault and no stall before this many seconds')
    options = parser.parse_args(argv)
    left = {'n': options.stall_watches}
    lock = threading.Lock()
    start = time.monotonic() + options.after

    def take():
        with lock:
            if left['n'] > 0 and time.monotonic() >= start:
                left['n'] -= 1
                return True
            return False
    upstream = options.upstream
    if not upstream:
        with open(os.path.join(options.clusterdir, 'state.json')) as handle:
            upstream = json.load(handle)['server'].split('://', 1)[1]
    host, port = upstream.rsplit(':', 1)
    server = Server(('127.0.0.1', options.port), make_handler(
        (host, int(port)), upstream_context(options.clusterdir),
        Faults(options.match, options.status, options.count, options.retry_after, start),
        {'file': open(options.log, 'a'), 'lock': threading.Lock()},
        {'take': take, 'seconds': options.stall_seconds, 'done': threading.Event()}))
    listener = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    listener.load_cert_chain(os.path.join(options.clusterdir, 'pki', 'apiserver.crt'),
                             os.path.join(options.clusterdir, 'pki', 'apiserver.key'))
    server.socket = listener.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == '__main__':
    main()
