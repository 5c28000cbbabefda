# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest
import urllib3

from ansible_collections.inplace.k8s.plugins.module_utils.connection import client, errors, settings
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    ApiError, ConfigError, ConflictError, ForbiddenError, NotFoundError, TransientError, ValidationError,
)
from ansible_collections.inplace.k8s.tests.unit.plugins.module_utils.conftest import pod


@pytest.mark.parametrize('attempt, retry_after, low, high', [
    (0, None, 0.25, 0.5), (1, None, 0.5, 1.0), (3, None, 2.0, 4.0), (10, None, 7.5, 15.0), (0, '7', 7.0, 7.0)])
def test_backoff_delay(attempt, retry_after, low, high):
    for rand in (0.0, 0.5, 1.0):
        assert low <= client.backoff_delay(attempt, retry_after=retry_after, rand=lambda r=rand: r) <= high


def test_retry_transient_retries_then_gives_up():
    sleeps, calls = [], []

    @client.retry_transient(attempts=3, sleep=sleeps.append)
    def flaky():
        calls.append(1)
        raise TransientError('busy', status=429, retry_after='2')
    with pytest.raises(TransientError):
        flaky()
    assert len(calls) == 3 and len(sleeps) == 2 and all(s >= 2 for s in sleeps)


def test_retry_transient_says_what_gave_up():
    class Api(object):
        calls = 0

        @client.retry_transient(attempts=2, sleep=lambda s: None)
        def request(self, method, path):
            self.calls += 1
            raise TransientError('injected', status=503)
    api = Api()
    with pytest.raises(TransientError) as info:
        api.request('PATCH', '/api/v1/namespaces/a/pods/b')
    assert api.calls == 2
    assert info.value.msg == 'injected (HTTP 503 to PATCH /api/v1/namespaces/a/pods/b; gave up after 2 attempts)'
    assert str(info.value) == info.value.msg


def test_retry_transient_passes_other_errors_at_once():
    calls = []

    @client.retry_transient(sleep=lambda s: None)
    def broken():
        calls.append(1)
        raise ApiError('forbidden', status=403)
    with pytest.raises(ApiError):
        broken()
    assert calls == [1]


def test_retry_conflict_calls_again_and_counts():
    seen, state = [], {'left': 2}

    @client.retry_conflict(on_retry=seen.append)
    def write():
        if state['left']:
            state['left'] -= 1
            raise ConflictError('changed', status=409)
        return 'written'
    assert write() == 'written' and len(seen) == 2


@pytest.mark.parametrize('status, body, kind', [
    (404, {'message': 'pods "x" not found', 'reason': 'NotFound'}, NotFoundError),
    (409, {'message': 'the object has been modified'}, ConflictError),
    (422, {'message': 'testing value /metadata/resourceVersion failed: test failed'}, ConflictError),
    (422, {'message': 'Pod "x" is invalid: spec: Forbidden: pod updates may not change fields'}, ApiError),
    (429, {'message': 'too many requests'}, TransientError),
    (503, 'upstream down', TransientError),
    (403, {'message': 'forbidden'}, ForbiddenError),
])
def test_error_mapping(status, body, kind):
    text = json.dumps(body) if isinstance(body, dict) else body
    error = client._error_from_response(status, text, {'Retry-After': '3'})
    assert error.__class__ is kind
    assert error.status == status and error.retry_after == '3'
    assert (body['message'] if isinstance(body, dict) else body) in error.msg


def test_auth_errors_say_what_to_fix():
    unauthorized = client._error_from_response(401, json.dumps({'message': 'Unauthorized'}), {})
    assert unauthorized.msg.startswith('401 Unauthorized: ') and 'renew the token' in unauthorized.msg
    denied = client._error_from_response(403, json.dumps({'message': 'pods "x" is forbidden: User "u" cannot '
                                                                     'patch resource "pods/status"'}), {})
    assert denied.msg.startswith('403 Forbidden: pods "x" is forbidden') and 'rbac/inplace-k8s-rbac.yml' in denied.msg


class FailingPool(object):
    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    def request(self, *args, **kwargs):
        self.calls += 1
        raise self.errors.pop(0) if len(self.errors) > 1 else self.errors[0]


def kube_with(pool):
    kube = client.Kube(client.configuration_from_params({'host': 'https://api.example:6443', 'api_key': 't'}))
    kube._transport.pool = pool
    return kube


def test_unreached_server_fails_at_once_without_retries():
    pool = FailingPool(urllib3.exceptions.NewConnectionError(None, 'Connection refused'))
    with pytest.raises(ConfigError) as caught:
        kube_with(pool).request('GET', '/version')
    assert pool.calls == 1 and 'cannot reach the API server https://api.example:6443' in caught.value.msg


def test_tls_failure_is_not_retried_and_names_the_fix():
    pool = FailingPool(urllib3.exceptions.SSLError('CERTIFICATE_VERIFY_FAILED'))
    with pytest.raises(ConfigError) as caught:
        kube_with(pool).request('GET', '/version')
    assert pool.calls == 1 and 'ca_cert' in caught.value.msg and 'validate_certs=false' in caught.value.msg


def test_connection_errors_after_an_answer_are_transient():
    kube = kube_with(FailingPool(urllib3.exceptions.ProtocolError('Connection reset')))
    kube.reached = True
    with pytest.raises(TransientError):
        kube._open('GET', '/version')


def test_invalid_kubeconfig_is_named_not_echoed(tmp_path):
    path = tmp_path / 'config'
    path.write_text('clusters: not a list\n')
    with pytest.raises(ConfigError) as caught:
        client.configuration_from_params({'kubeconfig': str(path)})
    assert str(path) in caught.value.msg
    broken = dict(KUBECONFIG, contexts=[], **{'current-context': 'nowhere'})
    with pytest.raises(ConfigError) as caught:
        client.configuration_from_params({'kubeconfig': broken})
    assert 'kubeconfig-token' not in caught.value.msg and 'the kubeconfig dict' in caught.value.msg
    with pytest.raises(ConfigError):
        client.configuration_from_params({'kubeconfig': 5})


KUBECONFIG = {
    'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'one',
    'clusters': [{'name': 'c1', 'cluster': {'server': 'https://one.example:6443', 'insecure-skip-tls-verify': True}},
                 {'name': 'c2', 'cluster': {'server': 'https://two.example:6443', 'insecure-skip-tls-verify': True}}],
    'users': [{'name': 'u', 'user': {'token': 'kubeconfig-token'}}],
    'contexts': [{'name': 'one', 'context': {'cluster': 'c1', 'user': 'u'}},
                 {'name': 'two', 'context': {'cluster': 'c2', 'user': 'u'}}],
}


def test_kubeconfig_dict_and_context():
    cfg = client.configuration_from_params({'kubeconfig': KUBECONFIG, 'context': 'two'})
    assert cfg.host == 'https://two.example:6443'
    assert client.auth_headers(cfg)['authorization'] == 'Bearer kubeconfig-token'


def test_kubeconfig_file(tmp_path):
    path = tmp_path / 'config'
    path.write_text(json.dumps(KUBECONFIG))
    cfg = client.configuration_from_params({'kubeconfig': str(path)})
    assert cfg.host == 'https://one.example:6443'


def test_missing_kubeconfig_file():
    with pytest.raises(ConfigError):
        client.configuration_from_params({'kubeconfig': '/nonexistent/config'})


def test_explicit_options_override(tmp_path):
    cfg = client.configuration_from_params({
        'kubeconfig': KUBECONFIG, 'host': 'https://three.example', 'api_key': 'tok', 'validate_certs': False,
        'ca_cert': '/ca.pem', 'client_cert': '/c.pem', 'client_key': '/k.pem', 'proxy': 'http://proxy:3128',
        'no_proxy': 'localhost'})
    assert (cfg.host, cfg.verify_ssl, cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file, cfg.proxy, cfg.no_proxy) == (
        'https://three.example', False, '/ca.pem', '/c.pem', '/k.pem', 'http://proxy:3128', 'localhost')
    assert client.auth_headers(cfg)['authorization'] == 'Bearer tok'


def test_proxy_headers_like_kubernetes_core():
    cfg = client.configuration_from_params({
        'host': 'https://h', 'proxy': 'http://proxy:3128',
        'proxy_headers': {'proxy_basic_auth': 'pu:pp', 'basic_auth': None, 'user_agent': 'ansible'}})
    assert cfg.proxy_headers == {'proxy-authorization': 'Basic cHU6cHA=', 'user-agent': 'ansible'}


def test_persist_config_is_passed_to_the_kubeconfig_loader(tmp_path, monkeypatch):
    # Only kubeconfig users with an auth-provider or exec plugin go through the kubernetes loader.
    from kubernetes import config as kube_config
    path = tmp_path / 'config'
    path.write_text(json.dumps(dict(KUBECONFIG, users=[{'name': 'u', 'user': {'auth-provider': {'name': 'oidc'}}}])))
    seen = []

    def loader(**kwargs):
        seen.append(kwargs['persist_config'])
        kwargs['client_configuration'].host = 'https://one.example:6443'
    monkeypatch.setattr(kube_config, 'load_kube_config', loader)
    client.configuration_from_params({'kubeconfig': str(path), 'persist_config': True})
    client.configuration_from_params({'kubeconfig': str(path)})
    assert seen == [True, False]


def test_basic_auth():
    cfg = client.configuration_from_params({'host': 'https://h', 'username': 'u', 'password': 'p'})
    assert client.auth_headers(cfg)['authorization'] == 'Basic dTpw'


def test_no_configuration_at_all(monkeypatch, tmp_path):
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'none'))
    monkeypatch.delenv('KUBERNETES_SERVICE_HOST', raising=False)
    with pytest.raises(ConfigError):
        client.configuration_from_params({})


def test_pod_paths_refuse_what_the_api_would_not_accept():
    assert client.Kube.pod_path('ns', 'web-0', 'status') == '/api/v1/namespaces/ns/pods/web-0/status'
    for namespace, name in (('ns', 'a b'), ('ns', '..'), ('ns', 'x?watch=true'), ('a/b', 'web'), ('..', 'web')):
        with pytest.raises(ValidationError, match='nothing was requested'):
            client.Kube.pod_path(namespace, name)
    assert client.Kube.pod_path('ns') == '/api/v1/namespaces/ns/pods'


class Response(object):
    def __init__(self, chunks):
        self.chunks = chunks

    def stream(self, amt, decode_content=True):
        return iter(self.chunks)


def test_lines_reassembles_chunks():
    chunks = [b'{"type":"ADDED",', b'"object":{}}\n{"type"', b':"MODIFIED","object":{}}\n', b'\n']
    assert [json.loads(line)['type'] for line in client._lines(Response(chunks))] == ['ADDED', 'MODIFIED']


class ChunkedResponse(Response):
    chunked = True

    def supports_chunked_reads(self):
        return True

    def read_chunked(self, amt=None, decode_content=True):
        assert amt is None   # whole chunks, as the server sent them
        return iter(self.chunks)

    def stream(self, amt, decode_content=True):
        raise AssertionError('a chunked body is read by chunks')


def test_a_chunked_body_is_read_chunk_by_chunk():
    chunks = [b'{"type":"ADDED","object":{}}\n', b'{"type":"MODIFIED",', b'"object":{}}\n']
    assert [json.loads(line)['type'] for line in client._lines(ChunkedResponse(chunks))] == ['ADDED', 'MODIFIED']


@pytest.mark.parametrize('status, message, causes, cls, reason, fix', [
    (403, 'pods "x" is forbidden: User "u" cannot patch resource "pods/resize" in API group ""', [],
     'RbacForbidden', 'RBAC', 'rbac/inplace-k8s-rbac.yml'),
    (403, 'pods "x" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=1, '
          'limited: requests.cpu=2', [], 'QuotaExceeded', 'QuotaExceeded', 'raise the quota'),
    (403, 'admission webhook "validate.example.com" denied the request: image not signed', [],
     'AdmissionDenied', 'AdmissionDenied', 'satisfy that policy'),
    (400, 'admission webhook "validate.example.com" denied the request: bad', [],
     'AdmissionDenied', 'AdmissionDenied', 'satisfy that policy'),
    (403, "pods \"x\" is forbidden: ValidatingAdmissionPolicy 'images' with binding 'b' denied request: no",
     [], 'AdmissionDenied', 'AdmissionDenied', 'satisfy that policy'),
    (403, 'pods "x" is forbidden: violates PodSecurity "restricted:latest": privileged', [],
     'PodSecurityViolation', 'PodSecurity', 'pod-security.kubernetes.io/enforce'),
    (403, "Pod \"x\" is forbidden: Node didn't have enough allocatable resources", ['NodeCapacity'],
     'NodeCapacityError', 'NodeCapacity', "node can hold"),
])
def test_refusals_are_told_apart(status, message, causes, cls, reason, fix):
    body = json.dumps({'message': message, 'reason': 'Forbidden',
                       'details': {'causes': [{'reason': c} for c in causes]}})
    error = client._error_from_response(status, body, {})
    assert type(error).__name__ == cls and error.reason == reason and error.status == status
    assert message in error.msg and fix in error.msg
    assert ('rbac/inplace-k8s-rbac.yml' in error.msg) == (reason == 'RBAC')
    if reason == 'AdmissionDenied':
        assert error.webhook in ('validate.example.com', 'images') and error.webhook in error.msg


def test_a_403_of_unknown_origin_is_not_blamed_on_rbac():
    error = client._error_from_response(403, json.dumps({'message': 'forbidden by something else'}), {})
    assert isinstance(error, errors.ForbiddenError) and 'rbac' not in error.msg


def test_a_half_open_watch_ends_within_its_read_timeout(monkeypatch):
    """A server that sends the headers and one event, then neither bytes nor FIN (a NAT that dropped
    the connection): the stream ends after timeoutSeconds + WATCH_READ_MARGIN instead of hanging."""
    import socket
    import threading
    import time
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    held = []

    def serve():
        conn, _addr = listener.accept()
        held.append(conn)
        conn.recv(65536)
        event = b'{"type":"ADDED","object":{"metadata":{"name":"web-0","resourceVersion":"1"}}}\n'
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
                     + b'%x\r\n' % len(event) + event + b'\r\n')   # ... and then silence
    thread = threading.Thread(target=serve)
    thread.daemon = True
    thread.start()
    monkeypatch.setattr(client, 'WATCH_READ_MARGIN', 0.5)
    kube = client.Kube(settings.ConnectionSettings('http://127.0.0.1:%d' % listener.getsockname()[1]))
    started = time.time()
    events = list(kube.watch_pods('shop', '1', timeout_seconds=1))
    elapsed = time.time() - started
    for conn in held:
        conn.close()
    listener.close()
    assert [e['type'] for e in events] == ['ADDED']
    assert 1.0 <= elapsed < 5, elapsed


def test_lists_and_watches_drop_managed_fields(monkeypatch):
    """Pods of a list, a watch or a single answer are held without metadata.managedFields (nothing reads them; at
    N=1000 they were a large part of the module's memory). Written with spaces, as the API server does not write
    them, so that the bytes are not cut and the field is dropped after decoding."""
    pod = {'metadata': {'name': 'web-0', 'managedFields': [{'manager': 'kubelet'}]}, 'spec': {}}
    kube = client.Kube.__new__(client.Kube)
    answers = [{'items': [pod], 'metadata': {'continue': 'x'}}, {'items': [pod], 'metadata': {'resourceVersion': '7'}},
               pod]

    class Answer(object):
        def __init__(self):
            self.body = json.dumps(answers.pop(0)).encode('utf-8')

        def read(self):
            return self.body

        def release_conn(self):
            pass
    monkeypatch.setattr(client.Kube, '_open', lambda self, *args, **kwargs: Answer())
    items, version = kube.list_pods('shop')
    assert version == '7' and [item['metadata'] for item in items] == [{'name': 'web-0'}] * 2
    assert kube.get_pod('shop', 'web-0') == {'metadata': {'name': 'web-0'}, 'spec': {}}
    line = json.dumps({'type': 'MODIFIED', 'object': pod}).encode('utf-8') + b'\n'

    class Stream(object):
        def stream(self, size, decode_content=True):
            return iter([line])

        def release_conn(self):
            pass
    monkeypatch.setattr(client.Kube, '_open', lambda self, *args, **kwargs: Stream())
    events = list(kube.watch_pods('shop', '1'))
    assert events == [{'type': 'MODIFIED', 'object': {'metadata': {'name': 'web-0'}, 'spec': {}}}]


def _wire(obj):
    """``obj`` as the API server writes it: compact, fields in their order (metadata.managedFields last)."""
    return json.dumps(obj, separators=(',', ':')).encode('utf-8')


def _pod(name, managed):
    """A pod whose metadata ends with ``managed`` as managedFields, after an annotation that looks like JSON."""
    return pod(name, phase='Running', metadata={'annotations': {'note': 'a "quoted" ],"x":[ value'},
                                                'managedFields': managed})


MANAGED = [{'manager': 'kubelet', 'operation': 'Update', 'subresource': 'status',
            'fieldsV1': {'f:status': {'f:conditions': {'k:{"type":"Ready"}': {'.': {}}}}}},
           {'manager': 'inplace.k8s', 'operation': 'Update', 'fieldsV1': {'f:spec': {}}}]


def test_managed_fields_are_cut_before_decoding():
    """A pod, a list of pods and a watch event decode as they would whole, without managedFields, and the bytes
    cut are exactly the array (what is left is shorter by its length)."""
    pod = _pod('web-0', MANAGED)
    bare = json.loads(json.dumps(pod))
    del bare['metadata']['managedFields']
    data = _wire(pod)
    cut = client.without_managed_fields(data)
    assert json.loads(cut) == bare
    assert len(data) - len(cut) == len(b',"managedFields":') + len(_wire(MANAGED))
    listed = {'kind': 'PodList', 'metadata': {'resourceVersion': '9'},
              'items': [_pod('web-%d' % i, MANAGED) for i in range(3)] + [_pod('web-3', [])]}
    decoded = json.loads(client.without_managed_fields(_wire(listed)))
    assert [item['metadata'] for item in decoded['items']] == [
        dict((key, value) for key, value in _pod('web-%d' % i, []).get('metadata').items() if key != 'managedFields')
        for i in range(4)]
    event = json.loads(client.without_managed_fields(_wire({'type': 'MODIFIED', 'object': pod})))
    assert event == {'type': 'MODIFIED', 'object': bare}


def test_managed_fields_left_to_the_decoder_when_the_cut_is_not_certain():
    """Not cut (the same bytes come back): no managedFields; an array with a ']' of its own (here in a string); an
    array that is not the last field of the metadata; an object without a spec after its metadata."""
    odd = [{'manager': 'tool [v2]', 'operation': 'Update'}]
    not_last = {'metadata': {'name': 'x', 'managedFields': MANAGED, 'finalizers': ['a']}, 'spec': {}}
    revision = {'metadata': {'name': 'r', 'managedFields': MANAGED}, 'data': {}, 'revision': 1}
    for obj in ({'metadata': {'name': 'x'}, 'spec': {}}, _pod('web-0', odd), not_last, revision):
        data = _wire(obj)
        assert client.without_managed_fields(data) is data
    # in a list, the items that can be cut are, the others are left whole
    mixed = _wire({'items': [_pod('a', odd), _pod('b', MANAGED)]})
    items = json.loads(client.without_managed_fields(mixed))['items']
    assert 'managedFields' in items[0]['metadata'] and 'managedFields' not in items[1]['metadata']
