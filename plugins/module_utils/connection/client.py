# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Connection to the API server: auth options -> configuration, JSON requests, typed errors, retries.

Private to the collection: connection/ is not a public API (docs/architecture.md, "connection/ is private").
kubeconfig.py loads the kubeconfig / in-cluster credentials without importing the kubernetes package (only
exec / auth-provider credentials and pods/exec need it, and import it then: settings.kubernetes), transport.py
sends the requests through urllib3;
requests are sent as plain JSON so that every patch type and subresource (pods/status, pods/resize)
and watch streams work the same on every client version, without model objects.
"""

import functools
import json
import random
import time

from urllib.parse import urlencode

try:
    import urllib3
    URLLIB3_IMPORT_ERROR = None
    if int(urllib3.__version__.split('.')[0]) < 2:   # pragma: no cover - the requirement is urllib3 >= 2
        URLLIB3_IMPORT_ERROR = ImportError('urllib3 %s is installed, urllib3 >= 2 is required' % urllib3.__version__)
except ImportError as exc:  # pragma: no cover - exercised by the sanity import test
    URLLIB3_IMPORT_ERROR = exc

from ansible_collections.inplace.k8s.plugins.module_utils.connection import headers as request_headers
from ansible_collections.inplace.k8s.plugins.module_utils.connection import kubeconfig, paths, settings, transport
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import (
    REFUSALS, AdmissionDenied, ApiError, ConfigError, ConflictError, ForbiddenError, NotFoundError, TransientError,
    classify_refusal,
)

# urllib3 is the one hard requirement of the connection. The kubernetes package is not: the paths that need it
# (exec / auth-provider kubeconfig users: loader.py; pods/exec: Kube.api_client) import it when they run and
# fail with a ConfigError naming it when it is missing (settings.kubernetes).
HAS_URLLIB3 = URLLIB3_IMPORT_ERROR is None

JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json'

PATCH_NOT_APPLIED = 'the server rejected our request due to an error in our request'
TRANSIENT_STATUSES = frozenset([429, 500, 502, 503, 504])
REQUEST_TIMEOUT = (10, 60)  # connect, read (seconds)
LIST_PAGE_SIZE = 500
MAX_CONNECTIONS = 16
WATCH_DEFAULT_SECONDS = 60  # timeoutSeconds of a watch that does not say
WATCH_READ_MARGIN = 10      # seconds of silence beyond a watch's timeoutSeconds before it counts as stalled


# --------------------------------------------------------------------------- retries

def backoff_delay(attempt, base=0.5, cap=15.0, retry_after=None, rand=random.random):
    """Seconds to wait before retry number ``attempt`` (0-based): exponential with full jitter,
    never less than the server's Retry-After."""
    delay = min(cap, base * (2 ** attempt)) * (0.5 + rand() / 2)
    if retry_after:
        delay = max(delay, float(retry_after))
    return delay


def _retrying(error, attempts, before_retry):
    """Decorator factory: call again on ``error``, up to ``attempts`` calls, running
    ``before_retry(attempt, exc)`` in between."""
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for attempt in range(attempts):
                try:
                    return func(*args, **kwargs)
                except error as exc:
                    if attempt == attempts - 1:
                        raise
                    before_retry(attempt, exc)
        return wrapper
    return decorator


def retry_transient(attempts=6, base=0.5, cap=15.0, sleep=time.sleep):
    """Decorator: retry on TransientError (429, 5xx, connection errors) with backoff and jitter. When the
    attempts run out, the error says so: the last status, the request (a method's ``method, path``
    arguments) and how many attempts were made."""
    def decorator(func):
        retried = _retrying(TransientError, attempts,
                            lambda attempt, exc: sleep(backoff_delay(attempt, base, cap, exc.retry_after)))(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return retried(*args, **kwargs)
            except TransientError as exc:
                request = ' '.join(a for a in args[1:3] if isinstance(a, str))
                exc.msg = '%s (%s%s; gave up after %d attempts)' % (
                    exc.msg, 'HTTP %s' % exc.status if exc.status else 'no answer',
                    ' to ' + request if request else '', attempts)
                exc.args = (exc.msg,)
                raise
        return wrapper
    return decorator


def retry_conflict(attempts=5, on_retry=None):
    """Decorator for a read-modify-write function: on ConflictError call it again, so it re-reads.

    ``on_retry(exc)`` is called before each new attempt (to re-read or count conflicts, for example).
    """
    return _retrying(ConflictError, attempts, lambda attempt, exc: on_retry(exc) if on_retry else None)


# --------------------------------------------------------------------------- configuration

def configuration_from_params(params):
    """settings.ConnectionSettings from the auth options (see args.AUTH_ARG_SPEC and
    kubeconfig.settings_from_params)."""
    if not HAS_URLLIB3:
        raise ConfigError('urllib3 >= 2 is required: %s' % URLLIB3_IMPORT_ERROR)
    return kubeconfig.settings_from_params(params)


# --------------------------------------------------------------------------- the client

def auth_headers(cfg):
    """The authentication header(s) of a configuration (refreshing expiring tokens)."""
    return cfg.auth_headers()


def _error_from_response(status, body, headers):
    causes = []
    try:
        payload = json.loads(body)
        message = payload.get('message') or body
        reason = payload.get('reason')
        causes = [c.get('reason') for c in (payload.get('details') or {}).get('causes') or [] if c.get('reason')]
    except (ValueError, AttributeError):
        message, reason = (body or '').strip(), None
    message = message or 'HTTP %s' % status
    if status == 401:
        message = ('401 Unauthorized: the API server rejected the credentials (api_key/token invalid or '
                   'expired, or a client certificate it does not trust); renew the token or fix the user '
                   'of the kubeconfig')
    refusal, webhook = classify_refusal(status, message, causes)
    if refusal:
        cls, why, fix = REFUSALS[refusal]
        extra = {'webhook': webhook} if cls is AdmissionDenied else {}
        return cls('%s %s%s: %s; %s' % (status, why, ' (%s)' % webhook if webhook else '', message, fix),
                   status=status, reason=refusal, causes=causes, **extra)
    if status == 403:
        message = '403 Forbidden: %s' % message
    retry_after = headers.get('Retry-After') if headers else None
    if status == 404:
        cls = NotFoundError
    elif status == 403:
        cls = ForbiddenError
    elif status == 409 or (status == 422 and ('test failed' in message or message == PATCH_NOT_APPLIED)):
        # JSON-patch `test` failures: 422 "testing value ... failed: test failed" on older servers,
        # 1.36 answers every patch it cannot apply with the generic PATCH_NOT_APPLIED message.
        cls = ConflictError
    elif status in TRANSIENT_STATUSES:
        cls = TransientError
    else:
        cls = ApiError
    return cls(message, status=status, reason=reason, retry_after=retry_after, causes=causes)


class Kube:
    """JSON access to the API server over one connection pool (thread-safe)."""

    def __init__(self, cfg, pool_size=10):
        """``cfg``: settings.ConnectionSettings (whom to act as included: its ``impersonation``). Every header
        value is checked here and in ``_open`` (headers.py), so a bad one is refused before any request."""
        # Workers share at most MAX_CONNECTIONS connections (+2 for the watches), waiting for a free one:
        # 100 workers would otherwise open up to 100 TLS connections, each a handshake on both sides.
        cfg.connection_pool_maxsize = min(max(pool_size, 4), MAX_CONNECTIONS) + 2
        self._cfg = cfg
        self._headers = request_headers.static(cfg)   # [(name, value)]: a name given twice is sent twice
        self._identity = getattr(cfg, 'impersonation', None)
        self._transport = transport.Transport(cfg, cfg.connection_pool_maxsize)
        self.host = self._transport.host
        request_headers.refuse_joined(self._transport, self._headers)
        request_headers.authorization(cfg)
        self.reached = False  # an answer came from the server once: connection errors are then transient

    @classmethod
    def connect(cls, connection, pool_size=10):
        """The client of an options.Connection."""
        return cls(configuration_from_params(connection.settings()), pool_size)

    @property
    def impersonating(self):
        return bool(self._identity)

    def _open(self, method, path, query=None, body=None, content_type=None, timeout=REQUEST_TIMEOUT):
        headers = urllib3.HTTPHeaderDict()   # each value of a name given twice goes on its own line
        for name, value in self._headers + request_headers.authorization(self._cfg):
            headers.add(name, value)
        target = path
        query = [(k, v) for k, v in (query or {}).items() if v not in (None, '')]
        if query:
            target += '?' + urlencode(query)
        data = None
        if body is not None:
            data = json.dumps(body).encode('utf-8')
            headers.add('Content-Type', content_type or 'application/json')
        try:
            response = self._transport.send(method, target, body=data, headers=headers, timeout=timeout)
        except urllib3.exceptions.SSLError as exc:
            raise ConfigError('TLS verification of the API server %s failed: %s; give the CA of the cluster '
                              '(ca_cert, or certificate-authority in the kubeconfig), or validate_certs=false '
                              'to skip the verification (insecure)' % (self.host, self._transport.reason(exc)))
        except urllib3.exceptions.HTTPError as exc:
            if not self.reached:
                # Never answered: a wrong host, port or proxy fails at once instead of after the retries.
                raise transport.unreachable(self.host, self._transport.reason(exc))
            raise TransientError('cannot reach the API server %s: %s' % (self.host, self._transport.reason(exc)))
        self.reached = True
        if response.status >= 400:
            body_text = self._body(response).decode('utf-8', 'replace')
            raise _error_from_response(response.status, body_text, response.headers)
        return response

    def _body(self, response):
        """The whole body of ``response``, its connection given back; a body cut short (fewer bytes than its
        Content-Length, a broken chunk) or a read that times out is a TransientError."""
        try:
            return response.read()
        except urllib3.exceptions.HTTPError as exc:
            raise TransientError('the answer of the API server %s broke off: %s'
                                 % (self.host, self._transport.reason(exc)))
        finally:
            response.release_conn()

    @retry_transient()
    def request(self, method, path, query=None, body=None, content_type=None):
        """One JSON request; the decoded answer. Transient errors are retried."""
        return _decode(self._body(self._open(method, path, query, body, content_type)))

    @retry_transient()
    def get_managed(self, path):
        """GET one object with its metadata.managedFields, which request() drops: who manages which field
        (owners/found.py reads them)."""
        return json.loads(self._body(self._open('GET', path)))

    def request_once(self, method, path, query=None, body=None, content_type=None):
        """One JSON request, not retried: for best-effort writes (operations/events.py) that must not hold a run up."""
        return _decode(self._body(self._open(method, path, query, body, content_type)))

    def stream(self, path, query):
        """Yield the JSON lines of a watch. Opening is retried; a broken stream just ends, and so does
        a silent one: the read timeout is the watch's ``timeoutSeconds`` (after which the server ends
        it) + WATCH_READ_MARGIN, so a half-open connection (no bytes, no FIN) is given up in bounded time."""
        read = float(query.get('timeoutSeconds') or WATCH_DEFAULT_SECONDS) + WATCH_READ_MARGIN
        response = retry_transient()(self._open)('GET', path, query, timeout=(10, read))
        ended = False
        try:
            for line in _lines(response):
                yield _decode(line)
            ended = True
        except (urllib3.exceptions.HTTPError, ValueError, OSError):
            return
        finally:
            if not ended:
                response.close()   # a stalled, broken or abandoned stream: its connection is not used again
            response.release_conn()

    def api_client(self):
        """A kubernetes ``ApiClient`` with the same configuration and impersonation, for what needs the
        client's own machinery (pods/exec over a websocket)."""
        identity = [(name, value) for name, value in self._headers if name.startswith('Impersonate-')]
        if request_headers.repeated(identity):
            raise ConfigError('the kubernetes client sends one value per header: it cannot act as several groups '
                              'or with several values of an extra key; drop impersonate_groups/impersonate_extra')
        api = settings.kubernetes('client').ApiClient(self._cfg.kubernetes_configuration())
        for name, value in identity:
            api.set_default_header(name, value)
        return api

    # ---- pods

    @staticmethod
    def pod_path(namespace, name=None, subresource=None):
        return paths.api_path('v1', 'pods', namespace, name, subresource)

    def get_pod(self, namespace, name):
        return self.request('GET', self.pod_path(namespace, name))

    def list_collection(self, path, label_selector=None, field_selector=None):
        """(items, resourceVersion) of a whole collection (``path``: pods, ContainerRecreateRequests, ...),
        page by page."""
        items, token = [], None
        while True:
            page = self.request('GET', path, {
                'labelSelector': label_selector, 'fieldSelector': field_selector,
                'limit': LIST_PAGE_SIZE, 'continue': token})
            items.extend(page.get('items') or [])
            token = (page.get('metadata') or {}).get('continue')
            if not token:
                return items, (page.get('metadata') or {}).get('resourceVersion')

    def list_pods(self, namespace, label_selector=None, field_selector=None):
        """(pods, resourceVersion) of the whole list, page by page."""
        return self.list_collection(self.pod_path(namespace), label_selector, field_selector)

    def patch_pod(self, namespace, name, body, content_type=JSON_PATCH, subresource=None, dry_run=False):
        """PATCH a pod or one of its subresources ('status', 'resize'); the pod after the write (with
        ``dry_run``: as the server would store it, admission included, nothing stored)."""
        return self.request('PATCH', self.pod_path(namespace, name, subresource),
                            {'dryRun': 'All'} if dry_run else None, body=body, content_type=content_type)

    def watch_collection(self, path, resource_version, label_selector=None, field_selector=None,
                         timeout_seconds=60):
        """Watch events ({'type', 'object'}) of a collection from resource_version until the server ends
        the watch."""
        return self.stream(path, {
            'watch': 'true', 'allowWatchBookmarks': 'true', 'resourceVersion': resource_version,
            'labelSelector': label_selector, 'fieldSelector': field_selector,
            'timeoutSeconds': timeout_seconds})

    def watch_pods(self, namespace, resource_version, label_selector=None, field_selector=None,
                   timeout_seconds=60):
        """Watch events ({'type', 'object'}) of the pods from resource_version until the server ends the watch."""
        return self.watch_collection(self.pod_path(namespace), resource_version, label_selector, field_selector,
                                     timeout_seconds)


_MANAGED_FIELDS = b',"managedFields":['
_METADATA_END = b'},"spec":'


def without_managed_fields(data):
    """The API server's JSON answer ``data`` (bytes) without the metadata.managedFields of its objects, cut out
    before the answer is decoded: nothing here reads them, and they are about a third of a pod's JSON and more of
    the time to decode it (a watch event of a pod: 107 us, 57 us without them).

    An array is cut only when the first ']' after its start is followed by the end of the metadata and the spec:
    the array then holds no ']' of its own (no nested array, no string with one), so exactly that array goes, the
    last field of the metadata as the API server writes it. A '"' inside a JSON string is escaped, so none of these
    markers can come from a value. Anything else is left to the decoder, and ``_decode`` drops the field after it."""
    parts, copied, search = [], 0, 0
    while True:
        begin = data.find(_MANAGED_FIELDS, search)
        if begin < 0:
            break
        end = data.find(b']', begin + len(_MANAGED_FIELDS))
        if end < 0:
            break
        if data.startswith(_METADATA_END, end + 1):
            parts.append(data[copied:begin])
            copied = end + 1
        search = end + 1
    if not parts:
        return data
    parts.append(data[copied:])
    return b''.join(parts)


def _decode(data):
    """A JSON answer or watch event (bytes), decoded; no object in it (the answer, its items, an event's object)
    keeps metadata.managedFields: cut from the bytes where that is certain, dropped after decoding where not."""
    answer = json.loads(without_managed_fields(data))
    if isinstance(answer, dict):
        for obj in [answer, answer.get('object')] + list(answer.get('items') or []):
            if isinstance(obj, dict):
                _slim(obj)
    return answer


def _slim(obj):
    """``obj`` without metadata.managedFields: nothing here reads them, and in a list or a watch of many pods
    they are a large part of what is held (an update that leaves them out keeps them on the server)."""
    (obj.get('metadata') or {}).pop('managedFields', None)
    return obj


def _chunks(response):
    """The body of a response as it arrives: chunk by chunk when it is chunked (the API server sends a watch event
    in a chunk and flushes it: reading a watch 4 KiB at a time costs CPU at every event, docs/performance.md), else
    4 KiB at a time."""
    if getattr(response, 'chunked', False) and response.supports_chunked_reads():
        return response.read_chunked(decode_content=True)
    return response.stream(4096, decode_content=True)


def _lines(response):
    """Complete lines of a (chunked) HTTP response."""
    buffered = b''
    for chunk in _chunks(response):
        buffered += chunk
        while b'\n' in buffered:
            line, buffered = buffered.split(b'\n', 1)
            if line.strip():
                yield line
    if buffered.strip():
        yield buffered
