# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout_analysis through its main(), against HTTP(S) servers on 127.0.0.1 and 127.0.0.2 (the other origin):
redirects, body and time bounds, TLS options, and secrets that never reach the result."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import ssl
import threading
import time
import zipimport
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible.module_utils import basic
from ansible_collections.inplace.k8s.plugins.module_utils.rollout import analysis_fetch
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.connection import certificates
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import module_args

pki = certificates.pki   # the CA and the certificate for 127.0.0.1 (a module-scoped fixture)

TOKEN = 'Bearer tok-4711-secret'


class Endpoint(object):
    """An HTTP(S) server on ``host``: /json answers {"ok": true}; /to?url=U&code=C redirects to U; /loop to
    itself; /big?n=N answers N bytes (?chunked=1 without Content-Length); /drip sends a byte every 0.2 s (for
    10 s at most); /echo answers what it was sent (path, Authorization). Each request is logged with its headers."""

    def __init__(self, host='127.0.0.1', tls=None):
        self.log = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def send(self, code, body, headers=(), chunked=False):
                self.send_response(code)
                for name, value in headers:
                    self.send_header(name, value)
                if chunked:
                    self.send_header('Transfer-Encoding', 'chunked')
                    self.end_headers()
                    for start in range(0, len(body), 4096):
                        piece = body[start:start + 4096]
                        self.wfile.write(b'%x\r\n%s\r\n' % (len(piece), piece))
                    self.wfile.write(b'0\r\n\r\n')
                    return
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                endpoint.log.append((self.path, dict(self.headers)))
                url = urlsplit(self.path)
                query = dict((k, v[0]) for k, v in parse_qs(url.query).items())
                if url.path == '/loop':
                    return self.send(302, b'', [('Location', '/loop')])
                if url.path == '/to':
                    return self.send(int(query.get('code', 302)), b'', [('Location', query['url'])])
                if url.path == '/big':
                    body = b'{"ok": "' + b'x' * (int(query['n']) - 10) + b'"}'
                    return self.send(200, body, chunked='chunked' in query)
                if url.path == '/drip':
                    self.send_response(200)
                    self.send_header('Content-Length', '100')
                    self.end_headers()
                    for _byte in range(50):
                        self.wfile.write(b' ')
                        self.wfile.flush()
                        time.sleep(0.2)
                    return None
                if url.path == '/echo' or url.path.startswith('/echo/'):
                    seen = {'ok': True, 'path': self.path, 'authorization': self.headers.get('Authorization')}
                    return self.send(200, json.dumps(seen).encode())
                return self.send(200, b'{"ok": true}')

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        if tls:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = '%s://%s:%d' % ('https' if tls else 'http', host, self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def paths(self):
        return [path for path, _headers in self.log]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints():
    started = []

    def start(host='127.0.0.1', tls=None):
        started.append(Endpoint(host, tls))
        return started[-1]
    yield start
    for endpoint in started:
        endpoint.close()


@pytest.fixture
def tls(pki):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki['dir'] / 'server.pem'))
    return context


def _import_the_module():
    """plugins/modules/rollout_analysis.py, imported with zipimport left as it was (its import patches zipimport,
    startup.compile_once, which test_startup.py must see unpatched)."""
    saved = zipimport._get_module_code
    try:
        from ansible_collections.inplace.k8s.plugins.modules import rollout_analysis
    finally:
        zipimport._get_module_code = saved
    return rollout_analysis


rollout_analysis = _import_the_module()


def module(checks, capsys):
    """rollout_analysis.main() with these checks: (its JSON answer, whether it failed). The answer holds the
    module's parameters (invocation) where ansible-core can be asked to (2.19+: INJECT_INVOCATION; always before)."""
    with module_args({'checks': checks}, invocation=True), pytest.raises(SystemExit) as exited:
        rollout_analysis.main()
    return json.loads(capsys.readouterr().out), exited.value.code != 0


def check(url, **extra):
    return dict({'name': 'ok', 'url': url, 'condition': 'ok', 'headers': {'Authorization': TOKEN,
                                                                          'Cookie': 'session=cookie-4711'}}, **extra)


@pytest.mark.parametrize('follow', [None, 'same_origin'])
@pytest.mark.parametrize('code', [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_not_followed_and_gets_no_token(endpoints, capsys, code, follow):
    home, other = endpoints(), endpoints('127.0.0.2')
    spec = check('%s/to?code=%d&url=%s/json' % (home.url, code, other.url))
    if follow:
        spec['follow_redirects'] = follow
    result, failed = module([spec], capsys)
    reason = result['checks'][0]['reason']
    assert not failed and result['outcome'] == 'inconclusive' and result['checks'][0]['status'] == 'inconclusive'
    assert 'redirected (HTTP %d) to %s, ' % (code, other.url) in reason
    assert other.log == [] and len(home.log) == 1
    assert ('another origin than %s' % home.url if follow else 'follow_redirects: same_origin') in reason


def test_same_origin_redirects_are_followed_when_asked_with_the_headers(endpoints, capsys):
    home = endpoints()
    spec = check('%s/to?url=/to%%3Furl%%3D/json' % home.url, follow_redirects='same_origin')
    result, _failed = module([spec], capsys)
    assert result['outcome'] == 'success', result
    assert home.paths()[-1] == '/json' and len(home.log) == 3
    assert all(headers['Authorization'] == TOKEN for _path, headers in home.log)
    refused, _failed = module([dict(spec, follow_redirects='none')], capsys)
    assert refused['outcome'] == 'inconclusive'
    reason = refused['checks'][0]['reason']
    assert 'redirected (HTTP 302) to %s, not followed (follow_redirects: none)' % home.url in reason


def test_redirects_are_bounded(endpoints, capsys):
    home = endpoints()
    result, _failed = module([check(home.url + '/loop', follow_redirects='same_origin')], capsys)
    assert result['checks'][0]['status'] == 'inconclusive'
    assert result['checks'][0]['reason'] == '%s/loop: more than 5 redirects, not followed' % home.url
    assert home.paths() == ['/loop'] * (analysis_fetch.MAX_REDIRECTS + 1)


def test_https_is_never_downgraded_to_http_nor_sent_out_of_http(endpoints, tls, pki, capsys):
    secure, plain = endpoints(tls=tls), endpoints()
    ca_path = str(pki['dir'] / 'ca.pem')
    result, _failed = module([
        check('%s/to?url=%s/json' % (secure.url, plain.url), follow_redirects='same_origin', ca_path=ca_path),
        check('%s/to?url=ftp://127.0.0.1/x.json' % plain.url, follow_redirects='same_origin'),
        check(secure.url + '/json', ca_path=ca_path, name='verified with ca_path')], capsys)
    reasons = [c['reason'] for c in result['checks']]
    assert 'never followed: https is never downgraded to http' in reasons[0]
    assert plain.paths() == ['/to?url=ftp://127.0.0.1/x.json']   # the second check's; the first never came
    assert 'to a ftp: URL, never followed (only http and https)' in reasons[1]
    assert result['checks'][2]['status'] == 'success'


def test_tls_verification_off_warns_once_and_a_missing_ca_path_is_refused(endpoints, tls, capsys, monkeypatch):
    secure = endpoints(tls=tls)
    warned = []   # AnsibleModule.warn's (in the result, or on the controller's display once a test loaded it)
    original = basic.AnsibleModule.warn
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, text, **kw: warned.append(text) or original(
        self, text, **kw))
    verified, _failed = module([check(secure.url + '/json', name='no CA')], capsys)
    assert verified['checks'][0]['status'] == 'inconclusive'
    assert 'CERTIFICATE_VERIFY_FAILED' in verified['checks'][0]['reason']
    result, _failed = module([check(secure.url + '/json', validate_certs=False, name='a'),
                              check(secure.url + '/json', validate_certs=False, name='b')], capsys)
    assert result['outcome'] == 'success'
    assert len(warned) == 1
    assert 'TLS verification is off (validate_certs: false) for a (%s), b (%s)' % (secure.url, secure.url) in warned[0]
    before = len(secure.log)
    refused, failed = module([check(secure.url + '/json', ca_path='/nonexistent/ca.pem')], capsys)
    assert failed and "rollout_analysis check 'ok': ca_path /nonexistent/ca.pem is not a file" in refused['msg']
    assert len(secure.log) == before


@pytest.mark.parametrize('chunked', ['', '&chunked=1'])
def test_bodies_are_bounded(endpoints, capsys, chunked):
    home = endpoints()
    result, _failed = module([check('%s/big?n=2000%s' % (home.url, chunked), max_body_bytes=1000),
                              check('%s/big?n=1000%s' % (home.url, chunked), max_body_bytes=1000),
                              check('%s/big?n=%d%s' % (home.url, 1024 * 1024 + 1, chunked))], capsys)
    assert [c['status'] for c in result['checks']] == ['inconclusive', 'success', 'inconclusive']
    assert 'more than max_body_bytes 1000' in result['checks'][0]['reason']
    assert 'more than max_body_bytes 1048576' in result['checks'][2]['reason']


def test_a_dripping_endpoint_is_bounded_by_the_total_timeout(endpoints, capsys):
    home = endpoints()
    started = time.monotonic()
    result, _failed = module([check(home.url + '/drip', timeout=1)], capsys)
    assert time.monotonic() - started < 2.5
    assert result['checks'][0]['status'] == 'inconclusive'
    assert 'no answer within timeout 1 s (connecting, redirects and the whole answer)' in result['checks'][0]['reason']


def test_url_credentials_and_header_values_never_reach_the_result(endpoints, capsys):
    home = endpoints()
    secrets = ['user-4711', 'pass-4711', 'key-4711', 'acc-4711', 'tok-4711-secret', 'cookie-4711']
    base = 'http://user-4711:pass-4711@%s' % home.url.split('//')[1]
    query = '?api_key=key-4711&x=1&access_token=acc-4711'
    result, _failed = module([
        check(base + '/echo' + query, value='[path, authorization]'),   # the endpoint echoes them
        check(base + '/to' + query + '&url=http://127.0.0.2:1/json'),
        check('http://user-4711:pass-4711@127.0.0.1:1/x' + query, timeout=2),
        check(base + '/echo' + query, condition='!ok', value='[path, authorization]')], capsys)
    text = json.dumps(result)
    assert 'api_key' in json.dumps(result['invocation'])
    assert [c['status'] for c in result['checks']] == ['success', 'inconclusive', 'inconclusive', 'failure']
    assert not [s for s in secrets if s in text], text
    assert result['checks'][0]['url'] == home.url.replace('//', '//***@') + '/echo?api_key=***&x=1&access_token=***'
    assert home.log[0][0] == '/echo' + query and home.log[0][1]['Authorization'] == TOKEN
    bad, failed = module([check('ftp://user-4711:pass-4711@127.0.0.1/x' + query)], capsys)
    assert failed and not [s for s in secrets if s in json.dumps(bad)]
    assert 'ftp://***@127.0.0.1/x?api_key=***&x=1&access_token=*** is not an http(s) URL' in bad['msg']


def test_a_token_in_the_url_path_never_reaches_the_result(endpoints, capsys):
    home = endpoints()
    token = 'T0A1B2C3D4E5F6G7H8'
    result, _failed = module([check(home.url + '/echo/payments-api-v2/%s/node-7' % token, value='path')], capsys)
    assert result['checks'][0]['status'] == 'success'
    assert token not in json.dumps(result), result   # the invocation too (Ansible masks url_secrets)
    assert result['checks'][0]['url'] == home.url + '/echo/payments-api-v2/***/node-7'
    assert home.log[-1][0] == '/echo/payments-api-v2/%s/node-7' % token   # sent as written


@pytest.mark.parametrize('segment, secret', [
    ('4d5e6f7a8b9c0d1e2f3a', True), ('eyJhbGciOiJIUzI1NiJ9', True), ('api%2Fxoxb12345678901234', True),
    ('payments-api-v2', False), ('abcdefghijklmnopqrstuvwxyz', False), ('12345678901234567890', False),
    ('query_range', False), ('a1b2c3d4e5f6', False)])
def test_which_path_segments_are_taken_for_tokens(segment, secret):
    assert analysis_fetch.shown_url('http://h/x/%s/y' % segment) == 'http://h/x/%s/y' % ('***' if secret else segment)
    assert (segment in analysis_fetch.secrets('http://h/x/%s' % segment, {})) is secret


def test_credential_headers_never_go_to_another_origin():
    headers = {'Authorization': 'a', 'cookie': 'c', 'Proxy-Authorization': 'p', 'Accept': 'application/json'}
    assert analysis_fetch.hop_headers(headers, 'http://a:80/x', 'http://a/y') == headers
    for other in ('https://a/y', 'http://b/y', 'http://a:81/y'):
        assert analysis_fetch.hop_headers(headers, 'http://a/x', other) == {'Accept': 'application/json'}
