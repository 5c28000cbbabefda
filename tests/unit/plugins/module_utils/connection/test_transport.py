# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The client's HTTP through urllib3 (transport.py) against a small HTTP(S) server on loopback: kept-alive
connections shared by threads, the three ways a body ends, bodies whose Content-Length lies, connections the server
closed while idle, TLS (CA data, client certificates, tls-server-name, no verification), proxies, and the errors
client.py turns into ConfigError or TransientError."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import json
import socket
import ssl
import threading
import time

import pytest
import urllib3

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, errors, transport
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError, TransientError
from ansible_collections.inplace.k8s.plugins.module_utils.connection.settings import ConnectionSettings
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.connection import certificates


class Server(object):
    """Answers each request read on a loopback socket with ``answer(request_line, connection_number)``: raw
    bytes to send, or None to close the connection without an answer. Records the request heads. ``tls``: an
    ssl.SSLContext that wraps each accepted connection; ``hang_up``: close each connection after its first answer
    without saying so."""

    def __init__(self, answer, tls=None, hang_up=False):
        self.answer, self.tls, self.hang_up = answer, tls, hang_up
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.closed = threading.Semaphore(0)   # released as each connection is closed
        self.heads = []
        self.failures = []
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            try:
                conn, _addr = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._handle, args=(conn, self.accepted), daemon=True).start()

    def _handle(self, conn, number):
        conn.settimeout(10)
        try:
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            reader = conn.makefile('rb')
            while True:
                head = []
                while True:
                    line = reader.readline()
                    if not line:
                        return
                    if line == b'\r\n':
                        break
                    head.append(line.decode('latin-1').rstrip('\r\n'))
                length = [int(h.split(':', 1)[1]) for h in head if h.lower().startswith('content-length:')]
                body = reader.read(length[0]) if length else b''
                self.heads.append((head, body))
                reply = self.answer(head[0], number)
                if reply is None:
                    return
                conn.sendall(reply)
                if self.hang_up or reply.startswith(b'HTTP/1.0') or b'Connection: close' in reply or (
                        b'0\r\n\r\n' not in reply and b'chunked' in reply):
                    return   # a body that the close ends, or a chunked body cut short
        except (OSError, ssl.SSLError) as exc:
            self.failures.append(exc)
            return
        finally:
            conn.close()
            self.closed.release()

    def close(self):
        self.stopped = True
        self.listener.close()


def ok(body, extra=''):
    return ('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n' % (
        len(body), extra)).encode() + body


def chunked(*pieces):
    return b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' + b''.join(
        b'%x\r\n%s\r\n' % (len(p), p) for p in pieces) + b'0\r\n\r\n'


@pytest.fixture
def serve():
    servers = []

    def start(answer, **kwargs):
        servers.append(Server(answer, **kwargs))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def kube(port, path='', maxsize=4, scheme='http', **params):
    params.setdefault('api_key', 'tok')
    settings = client.configuration_from_params(dict(params, host='%s://127.0.0.1:%d%s' % (scheme, port, path)))
    return client.Kube(settings, pool_size=maxsize)


def free_connections(api):
    """How many of the pool's slots are free (a connection given back, or none opened yet)."""
    return api._transport.pool.pool.qsize()


def test_requests_share_one_kept_alive_connection_and_send_the_prefix_and_headers(serve):
    server = serve(lambda line, number: ok(json.dumps({'line': line, 'connection': number}).encode()))
    api = kube(server.port, path='/k8s/clusters/c1')
    assert isinstance(api._transport.pool, urllib3.HTTPConnectionPool) and not api._transport.proxied
    first = api.request('GET', '/api/v1/namespaces/a/pods/web-0', {'labelSelector': 'app=web'})
    second = api.request('PATCH', '/api/v1/namespaces/a/pods/web-0', body={'x': 1}, content_type=client.MERGE_PATCH)
    assert first == {'line': 'GET /k8s/clusters/c1/api/v1/namespaces/a/pods/web-0?labelSelector=app%3Dweb HTTP/1.1',
                     'connection': 1}
    assert second['connection'] == 1 and server.accepted == 1
    head, body = server.heads[1]
    assert json.loads(body) == {'x': 1}
    assert {'Host: 127.0.0.1:%d' % server.port, 'authorization: Bearer tok', 'Content-Type: ' + client.MERGE_PATCH,
            'Content-Length: 8', 'Accept: application/json', 'User-Agent: inplace.k8s'} <= set(head)


def test_chunked_bodies_are_read_whole_or_chunk_by_chunk(serve):
    events = [json.dumps({'type': 'ADDED', 'object': {'metadata': {'name': 'p%d' % i}}}).encode() + b'\n'
              for i in range(3)]
    server = serve(lambda line, number: chunked(*events) if 'watch=true' in line else chunked(b'{"a"', b': 1}'))
    api = kube(server.port)
    assert api.request('GET', '/x') == {'a': 1}
    names = [e['object']['metadata']['name'] for e in api.watch_pods('a', '5')]
    assert names == ['p0', 'p1', 'p2']
    assert api.request('GET', '/x') == {'a': 1} and server.accepted == 1   # both answers ended: kept


def test_a_watch_left_early_does_not_give_its_connection_back_for_reuse(serve):
    events = [b'{"type": "ADDED", "object": {}}\n'] * 3
    server = serve(lambda line, number: chunked(*events) if 'watch=true' in line else ok(b'{"n": %d}' % number))
    api = kube(server.port)
    watch = api.watch_pods('a', '5')
    next(watch)
    watch.close()
    assert api.request('GET', '/x') == {'n': 2}   # a new connection: the watch's had unread events


def test_a_body_that_ends_with_the_connection_is_read_and_the_connection_not_kept(serve):
    server = serve(lambda line, number: b'HTTP/1.0 200 OK\r\n\r\n{"n": %d}' % number)
    api = kube(server.port)
    assert api.request('GET', '/x') == {'n': 1}
    assert api.request('GET', '/x') == {'n': 2} and server.accepted == 2


def test_a_connection_the_server_closed_while_idle_is_not_used_again(serve):
    server = serve(lambda line, number: ok(b'{"connection": %d}' % number), hang_up=True)
    api = kube(server.port)
    assert api.request('GET', '/x') == {'connection': 1}
    assert server.closed.acquire(timeout=5)
    assert api.request('GET', '/x') == {'connection': 2}


def test_connection_close_from_the_server_is_honoured(serve):
    server = serve(lambda line, number: ok(b'{"connection": %d}' % number, 'Connection: close\r\n'))
    api = kube(server.port)
    assert [api.request('GET', '/x')['connection'] for _round in range(2)] == [1, 2]


# --------------------------------------------------------------------------- bodies whose length lies

def test_an_unparsable_content_length_is_read_to_the_close(serve):
    server = serve(lambda line, number: b'HTTP/1.1 200 OK\r\nContent-Length: twelve\r\nConnection: close\r\n\r\n{"n": 1}')
    assert kube(server.port).request('GET', '/x') == {'n': 1}


def test_content_lengths_that_disagree_are_refused_as_a_broken_answer(serve):
    server = serve(lambda line, number: ok(b'{}', 'Connection: close\r\n') if number == 1 else
                   b'HTTP/1.1 200 OK\r\nContent-Length: 2, 7\r\n\r\n{}')
    api = kube(server.port)
    api.request('GET', '/x')   # the server was reached; the next request opens connection 2
    with pytest.raises(TransientError, match='Content-Length contained multiple unmatching values'):
        api._open('GET', '/x')


def test_a_body_shorter_than_its_content_length_is_transient(serve):
    server = serve(lambda line, number: b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"n"')
    api = kube(server.port)
    with pytest.raises(TransientError, match='broke off.*IncompleteRead'):
        api._body(api._open('GET', '/x'))
    assert free_connections(api) == api._transport.pool.pool.maxsize


# --------------------------------------------------------------------------- errors

def test_error_answers_keep_their_status_and_retry_after(serve):
    body = json.dumps({'message': 'pods "web-0" not found', 'reason': 'NotFound'}).encode()
    server = serve(lambda line, number: (b'HTTP/1.1 404 Not Found\r\nRetry-After: 3\r\nContent-Length: %d\r\n\r\n'
                                         % len(body)) + body)
    api = kube(server.port)
    with pytest.raises(client.NotFoundError) as caught:
        api.get_pod('a', 'web-0')
    assert caught.value.status == 404 and 'not found' in caught.value.msg and server.accepted == 1
    assert caught.value.retry_after == '3'
    with pytest.raises(client.NotFoundError):
        api.get_pod('a', 'web-0')
    assert server.accepted == 1   # the error's body was read: the connection was kept


def test_no_server_fails_at_once_as_unreachable():
    probe = socket.socket()
    probe.bind(('127.0.0.1', 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(ConfigError) as caught:
        kube(port).request('GET', '/version')
    assert 'cannot reach the API server http://127.0.0.1:%d' % port in caught.value.msg


def test_an_answer_that_never_comes_is_transient_once_the_server_was_reached(serve):
    server = serve(lambda line, number: ok(b'{}') if len(server.heads) == 1 else None)
    api = kube(server.port)
    api.request('GET', '/x')
    with pytest.raises(TransientError) as caught:
        api._open('GET', '/x')
    assert 'cannot reach the API server' in caught.value.msg and 'Connection aborted' in caught.value.msg


def test_a_silent_server_times_out(serve):
    server = serve(lambda line, number: (time.sleep(2), ok(b'{}'))[1])
    api = kube(server.port)
    api.reached = True
    with pytest.raises(TransientError) as caught:
        api._open('GET', '/x', timeout=(5, 0.3))
    assert 'timed out' in caught.value.msg


def test_a_broken_chunked_body_ends_the_watch_and_frees_the_connection(serve):
    server = serve(lambda line, number: b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
                                        b'10\r\n{"type": "ADDED"')
    api = kube(server.port, maxsize=1)
    assert list(api.watch_pods('a', '1', timeout_seconds=1)) == []
    assert free_connections(api) == api._transport.pool.pool.maxsize


def test_an_interrupt_is_not_turned_into_a_connection_error(serve, monkeypatch):
    server = serve(lambda line, number: ok(b'{}'))
    api = kube(server.port)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt()
    monkeypatch.setattr(urllib3.connection.HTTPConnection, 'getresponse', interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.request('GET', '/x')
    assert free_connections(api) == api._transport.pool.pool.maxsize


# --------------------------------------------------------------------------- the pool

def test_threads_wait_for_a_free_connection_and_share_it(serve):
    server = serve(lambda line, number: ok(b'{}'))
    settings = ConnectionSettings('http://127.0.0.1:%d' % server.port)
    pool = transport.Transport(settings, maxsize=1)
    held = pool.send('GET', '/x')
    assert pool.pool.pool.qsize() == 0   # the only slot is taken
    done = []
    waiter = threading.Thread(target=lambda: done.append(pool.send('GET', '/y')))
    waiter.start()
    held.read()
    held.release_conn()
    waiter.join(5)
    assert len(done) == 1 and done[0].read() == b'{}' and server.accepted == 1 and pool.pool.num_connections == 1
    done[0].release_conn()


def test_workers_share_at_most_eighteen_connections(serve):
    assert kube(1, maxsize=100)._transport.pool.pool.maxsize == client.MAX_CONNECTIONS + 2
    assert kube(1, maxsize=1)._transport.pool.pool.maxsize == 6


@pytest.mark.parametrize('host', ['api.example:6443', 'https://:6443', 'ftp://api.example',
                                  'https://127.0.0.1:16443x', 'https://127.0.0.1:99999'])
def test_a_host_it_cannot_read_is_refused_with_the_fix(host):
    with pytest.raises(ConfigError) as caught:
        client.Kube(client.configuration_from_params({'host': host, 'api_key': 't'}))
    assert 'cannot reach the API server %s' % host in caught.value.msg and 'check host' in caught.value.msg


def test_an_ipv6_server_behind_a_prefix():
    api = client.Kube(client.configuration_from_params({'host': 'https://[fd00::1]:6443/p/', 'api_key': 't'}))
    pool = api._transport.pool
    assert (pool.host, pool.port, api._transport.prefix, api.host) == ('fd00::1', 6443, '/p', 'https://[fd00::1]:6443/p')


def test_the_scheme_and_host_match_in_any_case(serve):
    server = serve(lambda line, number: ok(json.dumps({'line': line}).encode()))
    api = client.Kube(client.configuration_from_params({'host': 'HTTP://127.0.0.1:%d' % server.port}))
    assert api.request('GET', '/x') == {'line': 'GET /x HTTP/1.1'}


# --------------------------------------------------------------------------- proxies

def test_a_proxy_gets_the_whole_url_and_its_headers(serve):
    server = serve(lambda line, number: ok(json.dumps({'line': line}).encode()))
    api = client.Kube(client.configuration_from_params({
        'host': 'http://api.example:8080/gw', 'api_key': 't', 'proxy': 'http://127.0.0.1:%d' % server.port,
        'proxy_headers': {'proxy_basic_auth': 'a:b'}}))
    assert api._transport.proxied and isinstance(api._transport.pool, urllib3.ProxyManager)
    assert api.request('GET', '/version') == {'line': 'GET http://api.example:8080/gw/version HTTP/1.1'}
    head = {line.lower() for line in server.heads[0][0]}
    assert 'proxy-authorization: basic %s' % base64.b64encode(b'a:b').decode().lower() in head


def test_the_environment_proxy_and_no_proxy(serve, monkeypatch):
    server = serve(lambda line, number: ok(json.dumps({'line': line}).encode()))
    monkeypatch.setenv('HTTP_PROXY', 'http://127.0.0.1:%d' % server.port)
    monkeypatch.delenv('http_proxy', raising=False)
    monkeypatch.setenv('NO_PROXY', 'internal.example')
    monkeypatch.setenv('KUBECONFIG', '/nonexistent/kubeconfig')
    proxied = client.Kube(client.configuration_from_params({'host': 'http://api.example:8080', 'api_key': 't'}))
    assert proxied.request('GET', '/x') == {'line': 'GET http://api.example:8080/x HTTP/1.1'}
    direct = client.Kube(client.configuration_from_params({'host': 'http://api.internal.example:8080', 'api_key': 't'}))
    assert not direct._transport.proxied and isinstance(direct._transport.pool, urllib3.HTTPConnectionPool)


def test_a_socks_proxy_without_pysocks_names_the_library(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_socks(name, *args, **kwargs):
        if name == 'urllib3.contrib.socks':
            raise ImportError('No module named socks')
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_socks)
    settings = client.configuration_from_params({'host': 'https://api.example', 'proxy': 'socks5h://127.0.0.1:1080'})
    with pytest.raises(ConfigError, match='proxy socks5h://127.0.0.1:1080: .*PySocks'):
        client.Kube(settings)


# --------------------------------------------------------------------------- TLS

pki = certificates.pki   # the CA and the certificates (a module-scoped fixture)


def _tls_server(serve, pki, client_certificates=False):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki['dir'] / 'server.pem'))
    if client_certificates:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(str(pki['dir'] / 'ca.pem'))
    return serve(lambda line, number: ok(b'{"tls": true}'), tls=context)


def _kubeconfig(port, cluster=None, user=None):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
            'clusters': [{'name': 'c', 'cluster': dict({'server': 'https://127.0.0.1:%d' % port}, **(cluster or {}))}],
            'users': [{'name': 'me', 'user': dict({'token': 'tok'}, **(user or {}))}],
            'contexts': [{'name': 'c', 'context': {'cluster': 'c', 'user': 'me'}}]}


def _b64(data):
    return base64.b64encode(data).decode()


def test_tls_with_the_kubeconfigs_ca_data_and_client_certificate(serve, pki):
    server = _tls_server(serve, pki, client_certificates=True)
    document = _kubeconfig(server.port, {'certificate-authority-data': _b64(pki['ca'])},
                           {'client-certificate-data': _b64(pki['cert']), 'client-key-data': _b64(pki['key'])})
    assert client.Kube(client.configuration_from_params({'kubeconfig': document})).request('GET', '/x') == {'tls': True}


def test_tls_with_a_ca_file_and_the_tls_server_name(serve, pki, monkeypatch):
    server = _tls_server(serve, pki)
    document = _kubeconfig(server.port, {'certificate-authority': str(pki['dir'] / 'ca.pem'),
                                         'tls-server-name': 'kubernetes.default'})
    document['clusters'][0]['cluster']['server'] = 'https://localhost:%d' % server.port   # not in the certificate
    assert client.Kube(client.configuration_from_params({'kubeconfig': document})).request('GET', '/x') == {'tls': True}
    document['clusters'][0]['cluster']['tls-server-name'] = 'other.example'
    with pytest.raises(ConfigError, match='TLS verification of the API server .* failed'):
        client.Kube(client.configuration_from_params({'kubeconfig': document})).request('GET', '/x')


def test_tls_without_the_ca_fails_with_the_fix_and_insecure_skip_tls_verify_connects(serve, pki):
    server = _tls_server(serve, pki)
    with pytest.raises(ConfigError) as caught:
        client.Kube(client.configuration_from_params({'kubeconfig': _kubeconfig(server.port)})).request('GET', '/x')
    assert 'CERTIFICATE_VERIFY_FAILED' in caught.value.msg and 'validate_certs=false' in caught.value.msg
    insecure = _kubeconfig(server.port, {'insecure-skip-tls-verify': True})
    assert client.Kube(client.configuration_from_params({'kubeconfig': insecure})).request('GET', '/x') == {'tls': True}
    option = client.configuration_from_params({'kubeconfig': _kubeconfig(server.port), 'validate_certs': False})
    assert client.Kube(option).request('GET', '/x') == {'tls': True}


def test_a_server_that_wants_a_client_certificate_refuses_none(serve, pki):
    server = _tls_server(serve, pki, client_certificates=True)
    document = _kubeconfig(server.port, {'certificate-authority-data': _b64(pki['ca'])})
    with pytest.raises((ConfigError, TransientError)) as caught:
        client.Kube(client.configuration_from_params({'kubeconfig': document})).request('GET', '/x')
    assert 'tok' not in caught.value.msg.replace('token', '')
    assert server.closed.acquire(timeout=5) and server.failures   # the server refused the handshake


# --------------------------------------------------------------------------- impersonation headers

IMPERSONATING = {'impersonate_user': 'u', 'impersonate_groups': ['g1', 'g2'],
                 'impersonate_extra': {'scopes': ['view', 'edit'], 'acme.com/project': ['shop']}}
EXPECTED_LINES = ['Impersonate-User: u', 'Impersonate-Group: g1', 'Impersonate-Group: g2',
                  'Impersonate-Extra-scopes: view', 'Impersonate-Extra-scopes: edit',
                  'Impersonate-Extra-acme.com%2Fproject: shop']


def _identity_lines(head):
    return [line for line in head if line.lower().startswith('impersonate-')]


def test_two_groups_are_two_header_lines(serve):
    """One line per group and per extra value, as kubectl sends them: the API server reads
    'Impersonate-Group: g1,g2' as one group named "g1,g2"."""
    server = serve(lambda line, number: ok(b'{}'))
    settings = client.configuration_from_params(dict(IMPERSONATING, host='http://127.0.0.1:%d' % server.port))
    api = client.Kube(settings)
    api.request('GET', '/x')
    assert _identity_lines(server.heads[0][0]) == EXPECTED_LINES
    assert api.impersonating


def test_a_proxy_that_would_join_the_values_is_refused_before_any_request(serve):
    server = serve(lambda line, number: ok(b'{}'))
    settings = client.configuration_from_params(dict(IMPERSONATING, host='http://api.example:8080',
                                                     proxy='http://127.0.0.1:%d' % server.port))
    with pytest.raises(errors.ValidationError, match='Impersonate-Group.*one header line per value.*https'):
        client.Kube(settings)
    assert server.accepted == 0
    one = client.configuration_from_params({'host': 'http://api.example:8080', 'impersonate_user': 'u',
                                            'impersonate_groups': ['g1'], 'proxy': 'http://127.0.0.1:1'})
    client.Kube(one)   # one value per name: nothing to join


@pytest.mark.parametrize('params, named', [
    ({'impersonate_user': 'u\r\nImpersonate-Group: system:masters'}, 'impersonate_user holds a carriage return'),
    ({'impersonate_user': 'u', 'impersonate_groups': ['g1', 'g2\n']}, 'impersonate_groups holds a line feed'),
    ({'impersonate_user': 'u', 'impersonate_uid': 'x\x00'}, 'impersonate_uid holds a NUL'),
    ({'impersonate_user': 'u', 'impersonate_extra': {'k': ['a\x1b']}}, r'impersonate_extra \(key k\) holds a control'),
    ({'api_key': 'secret-token\r\nX: y'}, 'api_key holds a carriage return'),
    ({'proxy_headers': {'user_agent': 'agent\n'}, 'proxy': 'http://127.0.0.1:1'}, 'proxy_headers holds a line feed'),
])
def test_a_control_character_in_any_header_value_is_refused_before_any_request(serve, params, named):
    server = serve(lambda line, number: ok(b'{}'))
    settings = client.configuration_from_params(dict(params, host='http://127.0.0.1:%d' % server.port))
    with pytest.raises(errors.ValidationError, match=named) as caught:
        client.Kube(settings).request('GET', '/x')
    assert server.accepted == 0 and 'nothing was sent' in caught.value.msg
    assert 'secret-token' not in caught.value.msg and 'system:masters' not in caught.value.msg


def test_a_token_that_turns_bad_later_is_refused_before_its_request(serve, tmp_path):
    """A token file read again (rotated) is checked at each request, in the same place; its path is named."""
    server = serve(lambda line, number: ok(b'{}'))
    token = tmp_path / 'token'
    token.write_text('good')
    kubeconfig = _kubeconfig(0)
    kubeconfig['clusters'][0]['cluster']['server'] = 'http://127.0.0.1:%d' % server.port
    kubeconfig['users'][0]['user'] = {'tokenFile': str(token)}
    api = client.Kube(client.configuration_from_params({'kubeconfig': kubeconfig}))
    api.request('GET', '/x')
    token.write_text('bad\x07token-value')
    api._cfg.authorization._read_at = -1e9   # due for a new read
    with pytest.raises(errors.ValidationError, match='tokenFile of user me in the kubeconfig holds a control') as caught:
        api.request('GET', '/y')
    assert len(server.heads) == 1 and 'token-value' not in caught.value.msg


def test_utf8_values_go_as_kubectl_sends_them(serve):
    server = serve(lambda line, number: ok(b'{}'))
    api = client.Kube(client.configuration_from_params({'host': 'http://127.0.0.1:%d' % server.port,
                                                        'impersonate_user': 'j\u00fcrgen', 'impersonate_groups': ['\u30c1\u30fc\u30e0']}))
    api.request('GET', '/x')
    lines = _identity_lines(server.heads[0][0])   # the test server decodes bytes as latin-1
    assert [line.encode('latin-1').decode('utf-8') for line in lines] == [
        'Impersonate-User: j\u00fcrgen', 'Impersonate-Group: \u30c1\u30fc\u30e0']
