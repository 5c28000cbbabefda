#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A mutating + validating admission webhook server for the admission integration target.

HTTPS on 127.0.0.1 (a port the OS picks, written to --port-file), with the certificate of a test CA.
POST /mutate pins every container image that names a tag and no digest to that tag's digest as the
local cluster's fake runtime reports it (sha256 of the normalised reference), like an image
verification policy. POST /validate denies every image whose tag ends in -denied. The server exits
after --lifetime seconds whatever happens (a test that dies cannot leave it behind for long).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import base64
import hashlib
import json
import os
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def normalise(ref):
    """The reference the way the local cluster's runtime reports it (docker.io/library/, :latest)."""
    name, rest = ref, ''
    if '@' in ref:
        name, rest = ref.split('@', 1)
        rest = '@' + rest
    tag = ''
    if name.rfind(':') > name.rfind('/'):
        name, tag = name[:name.rfind(':')], name[name.rfind(':'):]
    first = name.split('/', 1)[0]
    if '/' not in name or not (any(c in first for c in '.:') or first == 'localhost'):
        if '/' not in name:
            name = 'library/' + name
        name = 'docker.io/' + name
    if not tag and not rest:
        tag = ':latest'
    return name + tag + rest


def has_tag_only(ref):
    name = ref.split('@', 1)[0]
    return '@' not in ref and name.rfind(':') > name.rfind('/')


def containers(pod):
    spec = pod.get('spec') or {}
    for field in ('initContainers', 'containers'):
        for index, item in enumerate(spec.get(field) or []):
            yield field, index, item


def mutate(pod):
    ops = []
    for field, index, item in containers(pod):
        image = item.get('image') or ''
        if has_tag_only(image):
            digest = hashlib.sha256(normalise(image).encode('utf-8')).hexdigest()
            ops.append({'op': 'replace', 'path': '/spec/%s/%d/image' % (field, index),
                        'value': '%s@sha256:%s' % (image, digest)})
    return ops


def validate(pod):
    for _field, _index, item in containers(pod):
        image = item.get('image') or ''
        if image.split('@', 1)[0].endswith('-denied'):
            return 'image %s is not allowed by the inplace test policy' % image
    return None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)) or b'{}')
        request = review.get('request') or {}
        pod = request.get('object') or {}
        response = {'uid': request.get('uid'), 'allowed': True}
        path = self.path.split('?', 1)[0]   # the API server adds ?timeout=5s
        if path == '/mutate':
            ops = mutate(pod)
            if ops:
                response['patchType'] = 'JSONPatch'
                response['patch'] = base64.b64encode(json.dumps(ops).encode('utf-8')).decode('ascii')
        elif path == '/validate':
            denied = validate(pod)
            if denied:
                response['allowed'] = False
                response['status'] = {'code': 403, 'message': denied}
        body = json.dumps({'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
                           'response': response}).encode('utf-8')
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with open(self.server.log, 'a') as log:
            log.write('%s %s %s %s\n' % (self.path, request.get('operation'), request.get('name'),
                                         json.dumps(response.get('patch') and mutate(pod) or response['allowed'])))

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--cert', required=True)
    parser.add_argument('--key', required=True)
    parser.add_argument('--port-file', required=True)
    parser.add_argument('--log', required=True)
    parser.add_argument('--lifetime', type=float, default=600)
    args = parser.parse_args()
    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    server.log = args.log
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    timer = threading.Timer(args.lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    with open(args.port_file + '.tmp', 'w') as handle:
        handle.write(str(server.server_address[1]))
    os.rename(args.port_file + '.tmp', args.port_file)
    server.serve_forever()


if __name__ == '__main__':
    main()
