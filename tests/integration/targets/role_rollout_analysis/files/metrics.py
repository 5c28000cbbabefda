#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A metrics endpoint for the role_rollout_analysis integration target.

HTTP on --host (default 127.0.0.1; a port the OS picks, written to --port-file). Each request reads --metrics, a JSON
file the test rewrites between rollouts: {"queries": {PROMQL: number or "error"}, "json": {...}}.
GET /api/v1/query?query=Q answers in the Prometheus HTTP API format: a vector with one sample (the value
as a string, as Prometheus sends it) when Q is in "queries", an empty vector (no data) when it is not,
HTTP 400 with status "error" for "error". GET /json answers the "json" document. GET /redirect?to=URL
answers 302 with Location URL. Every request is
appended to --log (path and Authorization header, one line each). The server exits after --lifetime seconds whatever happens.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import os
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--metrics', required=True)
    parser.add_argument('--port-file', required=True)
    parser.add_argument('--log', required=True)
    parser.add_argument('--lifetime', type=int, default=600)
    parser.add_argument('--host', default='127.0.0.1')
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        def answer(self, code, document):
            body = json.dumps(document).encode()
            self.send_response(code)
            if code == 302:
                self.send_header('Location', document)
                document = {}
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            with open(args.log, 'a') as log:
                log.write('%s %s\n' % (self.path, self.headers.get('Authorization', '-')))
            with open(args.metrics) as f:
                metrics = json.load(f)
            url = urlsplit(self.path)
            if url.path == '/json':
                return self.answer(200, metrics.get('json', {}))
            if url.path == '/redirect':
                return self.answer(302, parse_qs(url.query)['to'][0])
            if url.path != '/api/v1/query':
                return self.answer(404, {'status': 'error', 'error': 'not found'})
            query = parse_qs(url.query).get('query', [''])[0]
            value = metrics.get('queries', {}).get(query)
            if value == 'error':
                return self.answer(400, {'status': 'error', 'errorType': 'bad_data', 'error': 'parse error'})
            result = [] if value is None else [{'metric': {'query': query}, 'value': [time.time(), str(value)]}]
            return self.answer(200, {'status': 'success', 'data': {'resultType': 'vector', 'result': result}})

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer((args.host, 0), Handler)
    timer = threading.Timer(args.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    with open(args.port_file + '.tmp', 'w') as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + '.tmp', args.port_file)
    server.serve_forever()


if __name__ == '__main__':
    main()
