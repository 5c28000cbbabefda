# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Connection to the API server: auth options -> configuration, JSON requests, typed errors, retries.

The kubernetes client loads kubeconfig / in-cluster credentials and builds the TLS/proxy connection
pool; requests are sent as plain JSON so that every patch type and subresource (pods/status,
pods/resize) and watch streams work the same on every client version, without model objects.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import functools
import json
import os
import random
import time

from urllib.parse import quote, urlencode

try:
    import urllib3
    from kubernetes import config as kube_config
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.client.rest import RESTClientObject
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - exercised by the sanity import test
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

from ansible_collections.inplace.k8s.plugins.module_utils.errors import (
    ApiError, ConfigError, ConflictError, ForbiddenError, NotFoundError, TransientError,
)

JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json'

PATCH_NOT_APPLIED = 'the server rejected our request due to an error in our request'
TRANSIENT_STATUSES = frozenset([429, 500, 502, 503, 504])
REQUEST_TIMEOUT = (10, 60)  # connect, read (seconds)
LIST_PAGE_SIZE = 500


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
    """Decorator: retry on TransientError (429, 5xx, connection errors) with backoff and jitter."""
    return _retrying(TransientError, attempts,
                     lambda attempt, exc: sleep(backoff_delay(attempt, base, cap, exc.retry_after)))


def retry_conflict(attempts=5, on_retry=None):
    """Decorator for a read-modify-write function: on ConflictError call it again, so it re-reads.

    ``on_retry(exc)`` is called before each new attempt (to re-read or count conflicts, for example).
    """
    return _retrying(ConflictError, attempts, lambda attempt, exc: on_retry(exc) if on_retry else None)


# --------------------------------------------------------------------------- configuration

def _default_kubeconfig():
    path = os.environ.get('KUBECONFIG') or '~/.kube/config'
    return any(os.path.exists(os.path.expanduser(p)) for p in path.split(os.pathsep) if p)


def configuration_from_params(params):
    """A kubernetes ``Configuration`` from the auth options (see args.AUTH_ARG_SPEC).

    Order: an explicit kubeconfig (path or dict) or context; else, without ``host``, the default
    kubeconfig, else the in-cluster service account; then explicit options override.
    """
    if not HAS_KUBERNETES:
        raise ConfigError('the kubernetes Python client is required: %s' % KUBERNETES_IMPORT_ERROR)
    cfg = Configuration()
    kubeconfig = params.get('kubeconfig')
    if kubeconfig is not None and not isinstance(kubeconfig, (dict, str)):
        raise ConfigError('kubeconfig must be a file path or a dict (the parsed kubeconfig), not %s'
                          % type(kubeconfig).__name__)
    try:
        if isinstance(kubeconfig, dict):
            kube_config.load_kube_config_from_dict(kubeconfig, context=params.get('context'),
                                                   client_configuration=cfg, persist_config=False)
        elif kubeconfig or params.get('context') or (not params.get('host') and _default_kubeconfig()):
            if kubeconfig and not os.path.exists(os.path.expanduser(kubeconfig)):
                raise ConfigError('kubeconfig %s does not exist' % kubeconfig)
            kube_config.load_kube_config(config_file=os.path.expanduser(kubeconfig) if kubeconfig else None,
                                         context=params.get('context'), client_configuration=cfg,
                                         persist_config=bool(params.get('persist_config')))
        elif not params.get('host'):
            kube_config.load_incluster_config(client_configuration=cfg)
    except (kube_config.ConfigException, TypeError, ValueError, AttributeError, KeyError, OSError) as exc:
        # Name the source, never its content (a kubeconfig holds tokens and keys).
        source = 'the kubeconfig dict' if isinstance(kubeconfig, dict) else 'kubeconfig %s' % (
            kubeconfig or 'from K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config')
        raise ConfigError('cannot load the Kubernetes configuration from %s (%s: %s); give a valid '
                          'kubeconfig file, or host with api_key or client_cert/client_key'
                          % (source, type(exc).__name__, exc))
    _apply_explicit_options(cfg, params)
    if not cfg.host or cfg.host == 'http://localhost':
        if not (params.get('host') or kubeconfig):
            raise ConfigError('no Kubernetes API server: set kubeconfig, host or K8S_AUTH_* variables')
    return cfg


def _apply_explicit_options(cfg, params):
    if params.get('host'):
        cfg.host = params['host']
    header = None
    if params.get('api_key'):
        header = 'Bearer %s' % params['api_key']
    elif params.get('username') and params.get('password'):
        header = urllib3.util.make_headers(basic_auth='%s:%s' % (params['username'], params['password']))['authorization']
    if header:
        # Client versions differ in the key they read (BearerToken or authorization): set both, and
        # drop a kubeconfig refresh hook that would put its own token back.
        cfg.api_key = {'BearerToken': header, 'authorization': header}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None
    if params.get('validate_certs') is not None:
        cfg.verify_ssl = params['validate_certs']
    proxy_headers = dict((k, v) for k, v in (params.get('proxy_headers') or {}).items() if v)
    if proxy_headers:
        cfg.proxy_headers = urllib3.util.make_headers(**proxy_headers)
    for option, attribute in (('ca_cert', 'ssl_ca_cert'), ('client_cert', 'cert_file'),
                              ('client_key', 'key_file'), ('proxy', 'proxy'), ('no_proxy', 'no_proxy')):
        if params.get(option):
            setattr(cfg, attribute, params[option])


# --------------------------------------------------------------------------- the client

def auth_headers(cfg):
    """The authentication header(s) of a configuration (refreshing expiring tokens), as the
    kubernetes client itself would send them."""
    headers = {}
    for setting in cfg.auth_settings().values():
        if setting.get('in') == 'header' and setting.get('value'):
            headers[setting['key']] = setting['value']
    return headers


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
    elif status == 403:
        message = '403 Forbidden: %s; grant it: rbac/inplace-k8s-rbac.yml lists what each module needs' % message
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


class Kube(object):
    """JSON access to the API server over one connection pool (thread-safe)."""

    def __init__(self, cfg, pool_size=10, impersonate_user=None, impersonate_groups=None):
        cfg.connection_pool_maxsize = max(pool_size, 4) + 2  # workers + the watches
        self.host = cfg.host.rstrip('/')
        self._cfg = cfg
        self._pool = RESTClientObject(cfg).pool_manager
        self._headers = {'Accept': 'application/json', 'User-Agent': 'inplace.k8s'}
        if impersonate_user:
            self._headers['Impersonate-User'] = impersonate_user
        self._groups = list(impersonate_groups or [])
        self.reached = False  # an answer came from the server once: connection errors are then transient

    @classmethod
    def from_params(cls, params, pool_size=10):
        return cls(configuration_from_params(params), pool_size,
                   params.get('impersonate_user'), params.get('impersonate_groups'))

    def _open(self, method, path, query=None, body=None, content_type=None, timeout=REQUEST_TIMEOUT):
        headers = dict(self._headers)
        headers.update(auth_headers(self._cfg))
        url = self.host + path
        query = [(k, v) for k, v in (query or {}).items() if v not in (None, '')]
        if query:
            url += '?' + urlencode(query)
        data = None
        if body is not None:
            data = json.dumps(body).encode('utf-8')
            headers['Content-Type'] = content_type or 'application/json'
        if self._groups:
            headers['Impersonate-Group'] = ','.join(self._groups)
        try:
            response = self._pool.request(method, url, body=data, headers=headers, preload_content=False,
                                          timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                                          retries=False)
        except urllib3.exceptions.SSLError as exc:
            raise ConfigError('TLS verification of the API server %s failed: %s; give the CA of the cluster '
                              '(ca_cert, or certificate-authority in the kubeconfig), or validate_certs=false '
                              'to skip the verification (insecure)' % (self.host, exc))
        except urllib3.exceptions.HTTPError as exc:
            if not self.reached:
                # Never answered: a wrong host, port or proxy fails at once instead of after the retries.
                raise ConfigError('cannot reach the API server %s: %s; check host / the kubeconfig server '
                                  'and that the API server is running' % (self.host, exc))
            raise TransientError('cannot reach the API server %s: %s' % (self.host, exc))
        self.reached = True
        if response.status >= 400:
            body_text = response.read().decode('utf-8', 'replace')
            response.release_conn()
            raise _error_from_response(response.status, body_text, response.headers)
        return response

    @retry_transient()
    def request(self, method, path, query=None, body=None, content_type=None):
        """One JSON request; the decoded answer. Transient errors are retried."""
        response = self._open(method, path, query, body, content_type)
        try:
            return json.loads(response.read().decode('utf-8'))
        finally:
            response.release_conn()

    def stream(self, path, query):
        """Yield the JSON lines of a watch. Opening is retried; a broken stream just ends."""
        response = retry_transient()(self._open)('GET', path, query, timeout=(10, None))
        try:
            for line in _lines(response):
                yield json.loads(line)
        except (urllib3.exceptions.HTTPError, ValueError):
            return
        finally:
            response.release_conn()

    def api_client(self):
        """A kubernetes ``ApiClient`` with the same configuration and impersonation, for what needs the
        client's own machinery (pods/exec over a websocket)."""
        api = ApiClient(self._cfg)
        for key, value in self._headers.items():
            if key.startswith('Impersonate-'):
                api.set_default_header(key, value)
        if self._groups:
            api.set_default_header('Impersonate-Group', ','.join(self._groups))
        return api

    # ---- pods

    @staticmethod
    def pod_path(namespace, name=None, subresource=None):
        path = '/api/v1/namespaces/%s/pods' % quote(namespace, safe='')
        if name:
            path += '/' + quote(name, safe='')
        if subresource:
            path += '/' + subresource
        return path

    def get_pod(self, namespace, name):
        return self.request('GET', self.pod_path(namespace, name))

    def list_pods(self, namespace, label_selector=None, field_selector=None):
        """(pods, resourceVersion) of the whole list, page by page."""
        items, token = [], None
        while True:
            page = self.request('GET', self.pod_path(namespace), {
                'labelSelector': label_selector, 'fieldSelector': field_selector,
                'limit': LIST_PAGE_SIZE, 'continue': token})
            items.extend(page.get('items') or [])
            token = (page.get('metadata') or {}).get('continue')
            if not token:
                return items, (page.get('metadata') or {}).get('resourceVersion')

    def patch_pod(self, namespace, name, body, content_type=JSON_PATCH, subresource=None):
        """PATCH a pod or one of its subresources ('status', 'resize'); the pod after the write."""
        return self.request('PATCH', self.pod_path(namespace, name, subresource), body=body,
                            content_type=content_type)

    def watch_pods(self, namespace, resource_version, label_selector=None, field_selector=None,
                   timeout_seconds=60):
        """Watch events ({'type', 'object'}) from resource_version until the server ends the watch."""
        return self.stream(self.pod_path(namespace), {
            'watch': 'true', 'allowWatchBookmarks': 'true', 'resourceVersion': resource_version,
            'labelSelector': label_selector, 'fieldSelector': field_selector,
            'timeoutSeconds': timeout_seconds})


def _lines(response):
    """Complete lines of a chunked HTTP response."""
    buffered = b''
    for chunk in response.stream(4096, decode_content=True):
        buffered += chunk
        while b'\n' in buffered:
            line, buffered = buffered.split(b'\n', 1)
            if line.strip():
                yield line
    if buffered.strip():
        yield buffered
