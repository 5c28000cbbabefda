# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wire.Connections against a small HTTP server on loopback: kept-alive connections, the three ways a body
ends, connections the server closed while idle, the waits for a free connection, and the errors client.py
turns into ConfigError or TransientError (TLS is exercised by the integration tests, on the local cluster)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import socket
import threading
import time

import pytest
import urllib3

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, errors, wire
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError, TransientError


class Server(object):
    """Answers each request read on a loopback socket with ``answer(request_line, connection_number)``: raw
    bytes to send, or None to close the connection without an answer. Records the request heads."""

    def __init__(self, answer):
        self.answer = answer
        self.listener = socket.socket()
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.heads = []
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
        reader = conn.makefile('rb')
        conn.settimeout(10)
        try:
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
                if reply.startswith(b'HTTP/1.0') or b'Connection: close' in reply or b'0\r\n\r\n' not in reply and (
                        b'chunked' in reply):
                    return   # a body that the close ends, or a chunked body cut short
        except OSError:
            return
        finally:
            conn.close()

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

    def start(answer):
        servers.append(Server(answer))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def kube(port, path='', maxsize=4):
    settings = client.configuration_from_params({'host': 'http://127.0.0.1:%d%s' % (port, path), 'api_key': 'tok'})
    kube = client.Kube(settings, pool_size=maxsize)
    assert isinstance(kube._pool, wire.Connections)
    return kube


def test_requests_share_one_kept_alive_connection_and_send_the_prefix_and_headers(serve):
    server = serve(lambda line, number: ok(json.dumps({'line': line, 'connection': number}).encode()))
    api = kube(server.port, path='/k8s/clusters/c1')
    first = api.request('GET', '/api/v1/namespaces/a/pods/web-0', {'labelSelector': 'app=web'})
    second = api.request('PATCH', '/api/v1/namespaces/a/pods/web-0', body={'x': 1}, content_type=client.MERGE_PATCH)
    assert first == {'line': 'GET /k8s/clusters/c1/api/v1/namespaces/a/pods/web-0?labelSelector=app%3Dweb HTTP/1.1',
                     'connection': 1}
    assert second['connection'] == 1 and server.accepted == 1
    head, body = server.heads[1]
    assert json.loads(body) == {'x': 1}
    assert {'Host: 127.0.0.1:%d' % server.port, 'authorization: Bearer tok', 'Content-Type: ' + client.MERGE_PATCH,
            'Content-Length: 8', 'Accept: application/json'} <= set(head)


def test_chunked_bodies_are_read_whole_or_chunk_by_chunk(serve):
    events = [json.dumps({'type': 'ADDED', 'object': {'metadata': {'name': 'p%d' % i}}}).encode() + b'\n'
              for i in range(3)]
    server = serve(lambda line, number: chunked(*events) if 'watch=true' in line else chunked(b'{"a"', b': 1}'))
    api = kube(server.port)
    assert api.request('GET', '/x') == {'a': 1}
    names = [e['object']['metadata']['name'] for e in api.watch_pods('a', '5')]
    assert names == ['p0', 'p1', 'p2']
    assert api.request('GET', '/x') == {'a': 1} and server.accepted == 1   # both answers ended: kept


def test_a_body_that_ends_with_the_connection_is_read_and_the_connection_not_kept(serve):
    server = serve(lambda line, number: b'HTTP/1.0 200 OK\r\n\r\n{"n": %d}' % number)
    api = kube(server.port)
    assert api.request('GET', '/x') == {'n': 1}
    assert api.request('GET', '/x') == {'n': 2} and server.accepted == 2


def test_a_connection_the_server_closed_while_idle_is_not_used_again(serve):
    server = serve(lambda line, number: ok(b'{"connection": %d}' % number, 'Connection: keep-alive\r\n'))
    api = kube(server.port)
    assert api.request('GET', '/x') == {'connection': 1}
    idle = api._pool._idle[0]
    idle.sock.shutdown(socket.SHUT_RD)   # what a server's close looks like to an idle connection: readable
    assert api.request('GET', '/x') == {'connection': 2}


def test_connection_close_from_the_server_is_honoured(serve):
    server = serve(lambda line, number: ok(b'{"connection": %d}' % number, 'Connection: close\r\n'))
    api = kube(server.port)
    assert [api.request('GET', '/x')['connection'] for _round in range(2)] == [1, 2]
    assert api._pool._idle == []


def test_error_answers_keep_their_status_and_retry_after(serve):
    body = json.dumps({'message': 'pods "web-0" not found', 'reason': 'NotFound'}).encode()
    server = serve(lambda line, number: (b'HTTP/1.1 404 Not Found\r\nRetry-After: 3\r\nContent-Length: %d\r\n\r\n'
                                         % len(body)) + body)
    api = kube(server.port)
    with pytest.raises(client.NotFoundError) as caught:
        api.get_pod('a', 'web-0')
    assert caught.value.status == 404 and 'not found' in caught.value.msg and server.accepted == 1
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
    server = serve(lambda line, number: ok(b'{}') if number == 1 else None)
    api = kube(server.port)
    api.request('GET', '/x')
    api._pool.clear()
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


def test_requests_wait_for_a_free_connection(serve):
    server = serve(lambda line, number: ok(b'{}'))
    pool = wire.Connections('http://127.0.0.1:%d' % server.port, {'maxsize': 1})
    held = pool.request('GET', 'http://127.0.0.1:%d/x' % server.port)
    done = []
    waiter = threading.Thread(target=lambda: done.append(pool.request('GET', 'http://127.0.0.1:%d/y' % server.port)))
    waiter.start()
    time.sleep(0.3)
    assert done == []   # the only connection is held
    held.read()
    held.release_conn()
    waiter.join(5)
    assert len(done) == 1 and done[0].read() == b'{}' and server.accepted == 1
    done[0].release_conn()


def test_a_broken_chunked_body_ends_the_watch_and_frees_the_connection(serve):
    server = serve(lambda line, number: b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'
                                        b'10\r\n{"type": "ADDED"')
    api = kube(server.port, maxsize=1)
    assert list(api.watch_pods('a', '1', timeout_seconds=1)) == []
    slots = api._pool.connection_pool_kw['maxsize']
    assert api._pool._idle == [] and all(api._pool._slots.acquire(timeout=1) for _slot in range(slots))


def test_other_urls_and_proxies_are_not_for_it():
    pool = wire.Connections('https://api.example:6443', {})
    with pytest.raises(ValueError):
        pool.request('GET', 'https://other.example/x')
    assert wire.direct(urllib3.PoolManager(), 'https://api.example:6443/k8s')
    assert not wire.direct(urllib3.ProxyManager('http://proxy:3128'), 'https://api.example:6443')


@pytest.mark.parametrize('host', ['api.example:6443', 'https://:6443', 'ftp://api.example'])
def test_a_host_it_cannot_read_stays_with_urllib3(host):
    assert not wire.direct(urllib3.PoolManager(), host)


@pytest.mark.parametrize('host', ['https://127.0.0.1:16443x', 'https://127.0.0.1:99999'])
def test_a_host_with_a_bad_port_gets_urllib3s_clear_error(host):
    assert not wire.direct(urllib3.PoolManager(), host)
    kube = client.Kube(client.configuration_from_params({'host': host, 'api_key': 't'}))
    assert not isinstance(kube._pool, wire.Connections)
    with pytest.raises(ConfigError) as caught:
        kube.request('GET', '/version')
    assert 'cannot reach the API server' in caught.value.msg
    assert wire.Connections('https://[fd00::1]:6443/p', {}).host_header == '[fd00::1]:6443'


def test_the_scheme_and_host_match_in_any_case(serve):
    server = serve(lambda line, number: ok(json.dumps({'line': line}).encode()))
    api = kube(server.port)
    api.host = 'HTTP://127.0.0.1:%d' % server.port
    assert api.request('GET', '/x') == {'line': 'GET /x HTTP/1.1'}


def test_an_interrupt_is_not_turned_into_a_connection_error(serve, monkeypatch):
    server = serve(lambda line, number: ok(b'{}'))
    api = kube(server.port)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt()
    monkeypatch.setattr(wire, 'Response', interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.request('GET', '/x')
    slots = api._pool.connection_pool_kw['maxsize']
    assert all(api._pool._slots.acquire(timeout=1) for _slot in range(slots))


# --------------------------------------------------------------------------- impersonation headers

IMPERSONATING = {'impersonate_user': 'u', 'impersonate_groups': ['g1', 'g2'],
                 'impersonate_extra': {'scopes': ['view', 'edit'], 'acme.com/project': ['shop']}}
EXPECTED_LINES = ['Impersonate-User: u', 'Impersonate-Group: g1', 'Impersonate-Group: g2',
                  'Impersonate-Extra-scopes: view', 'Impersonate-Extra-scopes: edit',
                  'Impersonate-Extra-acme.com%2Fproject: shop']


def _identity_lines(head):
    return [line for line in head if line.lower().startswith('impersonate-')]


def test_two_groups_are_two_header_lines_on_our_wire(serve):
    """wire.py writes one line per group and per extra value, as kubectl sends them: the API server reads
    'Impersonate-Group: g1,g2' as one group named "g1,g2"."""
    server = serve(lambda line, number: ok(b'{}'))
    settings = client.configuration_from_params(dict(IMPERSONATING, host='http://127.0.0.1:%d' % server.port))
    api = client.Kube(settings)
    assert isinstance(api._pool, wire.Connections)
    api.request('GET', '/x')
    assert _identity_lines(server.heads[0][0]) == EXPECTED_LINES
    assert api.impersonating


def test_header_lines_from_every_shape_of_headers():
    pairs = [('A', '1'), ('A', '2')]
    both = urllib3.HTTPHeaderDict()
    both.add('A', '1')
    both.add('A', '2')
    assert wire.header_lines(pairs) == wire.header_lines(both) == pairs
    assert wire.header_lines({'A': '1'}) == [('A', '1')] and wire.header_lines(None) == []


class RecordingPoolManager(urllib3.PoolManager):
    """urllib3 itself (not wire.py: the client keeps urllib3 for any other pool manager, as for a proxy's),
    recording the headers it is given."""
    given = []

    def request(self, method, url, *args, **kwargs):
        self.given.append(kwargs.get('headers'))
        return super().request(method, url, *args, **kwargs)


def test_two_groups_are_two_header_lines_through_urllib3(serve, monkeypatch):
    server = serve(lambda line, number: ok(b'{}'))
    settings = client.configuration_from_params(dict(IMPERSONATING, host='http://127.0.0.1:%d' % server.port))
    monkeypatch.setattr(settings, 'pool_manager', RecordingPoolManager)
    RecordingPoolManager.given = []
    api = client.Kube(settings)
    assert not isinstance(api._pool, wire.Connections)
    api.request('GET', '/x')
    given = RecordingPoolManager.given[0]
    assert isinstance(given, urllib3.HTTPHeaderDict) and given.getlist('Impersonate-Group') == ['g1', 'g2']
    assert _identity_lines(server.heads[0][0]) == EXPECTED_LINES


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
    kubeconfig = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'c',
                  'clusters': [{'name': 'c', 'cluster': {'server': 'http://127.0.0.1:%d' % server.port}}],
                  'users': [{'name': 'me', 'user': {'tokenFile': str(token)}}],
                  'contexts': [{'name': 'c', 'context': {'cluster': 'c', 'user': 'me'}}]}
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
