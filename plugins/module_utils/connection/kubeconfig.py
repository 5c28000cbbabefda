# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where the API server is and how to reach it, from the auth options (args.AUTH_ARG_SPEC), without the
kubernetes package: a kubeconfig (a file, several files in KUBECONFIG merged as kubectl merges them, or a
dict), the in-cluster service account, explicit options on top, into a settings.ConnectionSettings (transport.py
builds the TLS/proxy connection pool from it).

Importing the kubernetes package is a large part of a module's start-up (docs/performance.md). It is
imported only where it is needed: users whose credentials come from an ``exec`` plugin or an
``auth-provider`` (EKS, GKE, OIDC: the kubernetes loader runs them, loader.py), and pods/exec websockets
(settings.ConnectionSettings.kubernetes_configuration).

Messages name a kubeconfig by its path and its entries by name, never a value: a kubeconfig holds
tokens and keys. A kubeconfig given as text (``lookup('file', ...)``) is read as a dict; its text never appears in
a message.
"""

import base64
import binascii
import os

try:
    import urllib3
except ImportError:  # pragma: no cover - client.HAS_URLLIB3 reports it
    urllib3 = None

from ansible_collections.inplace.k8s.plugins.module_utils.connection import impersonation, loader, proxy
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError
from ansible_collections.inplace.k8s.plugins.module_utils.connection.settings import (
    ConnectionSettings, KubeconfigError, TokenFile, basic_auth, bearer, private_file, warn_once,
)

DEFAULT_SOURCE = 'kubeconfig from K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config'
IN_CLUSTER_SOURCE = 'the in-cluster service account'
TEXT_SOURCE = 'the kubeconfig text'
DICT_SOURCE = 'the kubeconfig dict'
INSECURE = ('TLS verification of the API server %s is off (%s): anyone on the path can read and change the '
            'traffic, credentials included; give the cluster CA (ca_cert, or certificate-authority-data in the '
            'kubeconfig) instead')
SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'
SECTIONS = (('clusters', 'cluster'), ('contexts', 'context'), ('users', 'user'))


# --------------------------------------------------------------------------- from the auth options

def is_text(kubeconfig):
    """Is the kubeconfig option the kubeconfig itself, as text (``lookup('file', ...)``): a string holding a line
    break or starting with ``{`` (JSON), where a path holds neither?"""
    return isinstance(kubeconfig, str) and ('\n' in kubeconfig or kubeconfig.lstrip().startswith('{'))


def parse_text(text):
    """The kubeconfig text as a dict; KubeconfigError naming the place of a syntax error, never the text."""
    document = _load_yaml(text, TEXT_SOURCE)
    if not isinstance(document, dict):
        raise KubeconfigError('%s must be a mapping, not %s' % (TEXT_SOURCE, type(document).__name__))
    return document


def settings_from_params(params, environ=None):
    """ConnectionSettings from the auth options (see args.AUTH_ARG_SPEC).

    Order: an explicit kubeconfig (path, text or dict) or context; else, without ``host``, the default
    kubeconfig (KUBECONFIG, several files merged, or ~/.kube/config), else the in-cluster service
    account; then explicit options override, and the environment's proxy applies if none is set (proxy.py).
    Warns once when TLS verification is off.
    """
    # Over 50 lines on purpose: the precedence of the sources (kubeconfig, in-cluster, options, proxy)
    # reads in order in one place.
    environ = os.environ if environ is None else environ
    kubeconfig, context = params.get('kubeconfig'), params.get('context')
    if kubeconfig is not None and not isinstance(kubeconfig, (dict, str)):
        raise ConfigError('kubeconfig must be a file path or a dict (the parsed kubeconfig), or the kubeconfig text, '
                          'not %s' % type(kubeconfig).__name__)
    source = None
    if is_text(kubeconfig):
        try:
            kubeconfig, source = parse_text(kubeconfig), TEXT_SOURCE
        except KubeconfigError as exc:
            raise cannot_load(TEXT_SOURCE, exc)
    elif kubeconfig and not isinstance(kubeconfig, dict) and not os.path.exists(os.path.expanduser(kubeconfig)):
        raise ConfigError('kubeconfig %s does not exist' % kubeconfig)
    default_paths = default_kubeconfig_paths(environ)
    if isinstance(kubeconfig, dict):
        source = source or DICT_SOURCE
    elif kubeconfig or context or (not params.get('host') and default_paths):
        source = 'kubeconfig %s' % kubeconfig if kubeconfig else DEFAULT_SOURCE
    elif not params.get('host') and in_cluster(environ):
        source = IN_CLUSTER_SOURCE
    try:
        if source is None:
            settings = ConnectionSettings()
        elif source == IN_CLUSTER_SOURCE:
            settings = in_cluster_settings(environ)
        else:
            documents = _documents(kubeconfig, default_paths, environ)
            settings = settings_from_kubeconfig(documents, context)
            if settings is None:    # exec / auth-provider credentials: the kubernetes loader runs them
                settings = _loader_settings(kubeconfig, context, params.get('persist_config'), source)
                settings.impersonation = kubeconfig_impersonation(documents, context)
                settings.proxy, settings.proxy_source = kubeconfig_proxy(documents, context)
    except (KubeconfigError, TypeError, ValueError, AttributeError, KeyError, OSError) as exc:
        raise cannot_load(source, exc)
    apply_explicit_options(settings, params)
    settings.impersonation = impersonation.merged(impersonation.from_options(params), settings.impersonation)
    if not settings.host:
        raise ConfigError('no Kubernetes API server: set kubeconfig, host or K8S_AUTH_* variables')
    if not settings.proxy:
        settings.proxy, settings.proxy_source = proxy.from_environment(settings.host, environ)
    if settings.proxy:
        proxy.check(settings.proxy, settings.proxy_source)
    if not settings.verify_ssl:
        warn_once(INSECURE % (settings.host, settings.verify_source))
    return settings


def _loader_settings(kubeconfig, context, persist_config, source):
    try:
        return loader.settings(kubeconfig, context, persist_config)
    except loader.LoaderError as exc:
        raise cannot_load(source, exc.cause)


def _documents(kubeconfig, default_paths, environ):
    """The kubeconfig(s) to merge: (parsed, base directory of relative paths, label for messages)."""
    if isinstance(kubeconfig, dict):
        return [(kubeconfig, None, None)]
    if kubeconfig:
        path = os.path.expanduser(kubeconfig)
        return [(read_kubeconfig(path), os.path.dirname(os.path.abspath(path)), None)]
    if not default_paths:
        raise KubeconfigError('no kubeconfig file: %s' % (environ.get('KUBECONFIG') or '~/.kube/config'))
    return [(read_kubeconfig(p), os.path.dirname(os.path.abspath(p)), p) for p in default_paths]


def cannot_load(source, exc):
    # Name the source, never its content (a kubeconfig holds tokens and keys).
    return ConfigError('cannot load the Kubernetes configuration from %s (%s: %s); give a valid kubeconfig '
                       'file, or host with api_key or client_cert/client_key' % (source, type(exc).__name__, exc))


def apply_explicit_options(settings, params):
    if params.get('host'):
        settings.host = params['host']
    if params.get('api_key'):
        header = bearer(params['api_key'])
        settings.authorization, settings.authorization_source = (lambda: header), 'api_key'
    elif params.get('username') and params.get('password'):
        header = basic_auth(params['username'], params['password'])
        settings.authorization, settings.authorization_source = (lambda: header), 'username/password'
    if params.get('validate_certs') is not None:
        settings.verify_ssl, settings.verify_source = params['validate_certs'], 'validate_certs=false'
    proxy_headers = {k: v for k, v in (params.get('proxy_headers') or {}).items() if v}
    if proxy_headers:
        settings.proxy_headers = urllib3.util.make_headers(**proxy_headers)
    if params.get('ca_cert'):
        settings.ssl_ca_cert, settings.ca_cert_data = params['ca_cert'], None
    for option, attribute in (('client_cert', 'cert_file'), ('client_key', 'key_file'), ('no_proxy', 'no_proxy')):
        if params.get(option):
            setattr(settings, attribute, params[option])
    if params.get('proxy'):
        settings.proxy, settings.proxy_source = params['proxy'], 'proxy'


# --------------------------------------------------------------------------- kubeconfig files

def default_kubeconfig_paths(environ=None):
    """The existing files of KUBECONFIG (os.pathsep-separated, each once), else ~/.kube/config."""
    environ = os.environ if environ is None else environ
    paths = []
    for path in (environ.get('KUBECONFIG') or '~/.kube/config').split(os.pathsep):
        path = os.path.expanduser(path) if path else path
        if path and path not in paths and os.path.exists(path):
            paths.append(path)
    return paths


def read_kubeconfig(path):
    """The parsed YAML of a kubeconfig file; KubeconfigError naming the place of a syntax error, not its text."""
    with open(path, 'rb') as stream:
        return _load_yaml(stream, path)


def _load_yaml(stream, label):
    import yaml
    loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
    try:
        return yaml.load(stream, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = ' (line %d, column %d)' % (mark.line + 1, mark.column + 1) if mark else ''
        problem = getattr(exc, 'problem', None) or type(exc).__name__
        raise KubeconfigError('%s is not valid YAML: %s%s' % (label, problem, where))


def _entries(document, section, kind, label):
    """{name: body} of one section (clusters, contexts, users) of one kubeconfig."""
    prefix = '%s: ' % label if label else ''
    items = document.get(section)
    if items is None:
        return {}
    if not isinstance(items, list):
        raise KubeconfigError('%s%s must be a list, not %s' % (prefix, section, type(items).__name__))
    found = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get('name'), str) or not item['name']:
            raise KubeconfigError('%s%s[%d] has no name' % (prefix, section, index))
        if item['name'] in found:
            raise KubeconfigError('%s%s %s is listed twice' % (prefix, kind, item['name']))
        body = item.get(kind)
        if body is not None and not isinstance(body, dict):
            raise KubeconfigError('%s%s %s must be a mapping, not %s' % (prefix, kind, item['name'],
                                                                         type(body).__name__))
        found[item['name']] = body or {}
    return found


def merge_kubeconfigs(documents):
    """Merge kubeconfigs as kubectl does: the first file that sets a cluster, context, user or the
    current-context wins. ``documents``: (parsed kubeconfig, base directory of its relative paths or
    None, label for messages or None). Returns (current-context, {section: {name: (body, base)}})."""
    current, merged = None, {section: {} for section, _kind in SECTIONS}
    for document, base, label in documents:
        if document is None:        # an empty file
            continue
        if not isinstance(document, dict):
            raise KubeconfigError('%sa kubeconfig must be a mapping, not %s'
                                  % ('%s: ' % label if label else '', type(document).__name__))
        for section, kind in SECTIONS:
            for name, body in _entries(document, section, kind, label).items():
                merged[section].setdefault(name, (body, base))
        if not current and document.get('current-context'):
            current = document['current-context']
            if not isinstance(current, str):
                raise KubeconfigError('current-context must be a string, not %s' % type(current).__name__)
    return current, merged


def settings_from_kubeconfig(documents, context=None):
    """ConnectionSettings of ``context`` (default: the current-context) of the merged ``documents`` (see
    merge_kubeconfigs), or None when its user's credentials come from an exec plugin or an auth-provider."""
    current, merged = merge_kubeconfigs(documents)
    name = context or current
    if not name:
        raise KubeconfigError('no current-context in the kubeconfig: set context')
    if name not in merged['contexts']:
        raise KubeconfigError('context %s not found (contexts: %s)' % (
            name, ', '.join(sorted(merged['contexts'])) or 'none'))
    selected = merged['contexts'][name][0]
    cluster_name = _string(selected, 'cluster', 'context', name)
    if not cluster_name:
        raise KubeconfigError('context %s names no cluster' % name)
    if cluster_name not in merged['clusters']:
        raise KubeconfigError('context %s: cluster %s not found' % (name, cluster_name))
    user_name = _string(selected, 'user', 'context', name)
    if user_name and user_name not in merged['users']:
        raise KubeconfigError('context %s: user %s not found' % (name, user_name))
    cluster, cluster_base = merged['clusters'][cluster_name]
    user, user_base = merged['users'][user_name] if user_name else ({}, None)
    if user.get('exec') or user.get('auth-provider'):
        return None
    settings = ConnectionSettings(_string(cluster, 'server', 'cluster', cluster_name))
    _load_cluster(settings, cluster, cluster_name, cluster_base)
    _load_user(settings, user, user_name, user_base)
    settings.impersonation = impersonation.from_kubeconfig_user(user, user_name)
    return settings


def _selected(documents, context):
    """(user, user name, cluster, cluster name) of ``context`` (checked by settings_from_kubeconfig)."""
    current, merged = merge_kubeconfigs(documents)
    selected = merged['contexts'][context or current][0]
    user_name, cluster_name = selected.get('user'), selected.get('cluster')
    return (merged['users'][user_name][0] if user_name else {}, user_name,
            merged['clusters'][cluster_name][0], cluster_name)


def kubeconfig_impersonation(documents, context=None):
    """Whom the user of ``context`` (checked by settings_from_kubeconfig) asks to act as (``as``, ``as-uid``,
    ``as-groups``, ``as-user-extra``): for users whose credentials the kubernetes loader makes, which ignores them."""
    user, user_name, _cluster, _name = _selected(documents, context)
    return impersonation.from_kubeconfig_user(user, user_name)


def kubeconfig_proxy(documents, context=None):
    """(proxy-url, its field for messages) of the cluster of ``context``, or (None, None): for users whose
    credentials the kubernetes loader makes, whose configuration takes the environment's proxy by other rules."""
    _user, _user_name, cluster, name = _selected(documents, context)
    url = _string(cluster, 'proxy-url', 'cluster', name)
    return (url, 'proxy-url of cluster %s' % name) if url else (None, None)


def _string(entry, key, kind, name):
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise KubeconfigError('%s of %s %s must be a string, not %s' % (key, kind, name, type(value).__name__))
    return value or None


def _file(entry, key, kind, name, base):
    """A file named by the kubeconfig, relative to the kubeconfig's directory; it must exist."""
    path = _string(entry, key, kind, name)
    if path is None:
        return None
    if base and not os.path.isabs(path):
        path = os.path.join(base, path)
    if not os.path.exists(path):
        raise KubeconfigError('%s of %s %s: %s does not exist' % (key, kind, name, path))
    return path


def _pem(entry, key, kind, name):
    """The decoded ``<key>`` (base64 PEM) of an entry, as bytes, or None."""
    text = _string(entry, key, kind, name)
    if text is None:
        return None
    try:
        data = base64.b64decode(''.join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError('%s of %s %s is not base64' % (key, kind, name))
    if b'-----BEGIN' not in data:
        raise KubeconfigError('%s of %s %s is not PEM' % (key, kind, name))
    return data


def _load_cluster(settings, cluster, name, base):
    ca_data = _pem(cluster, 'certificate-authority-data', 'cluster', name)
    if ca_data is not None:     # as kubectl: the data wins over the file
        settings.ca_cert_data = ca_data.decode('utf-8', 'replace')
    else:
        settings.ssl_ca_cert = _file(cluster, 'certificate-authority', 'cluster', name, base)
    insecure = cluster.get('insecure-skip-tls-verify')
    if insecure is not None:
        if not isinstance(insecure, bool):
            raise KubeconfigError('insecure-skip-tls-verify of cluster %s must be true or false' % name)
        settings.verify_ssl = not insecure
        settings.verify_source = 'insecure-skip-tls-verify of cluster %s' % name
    settings.tls_server_name = _string(cluster, 'tls-server-name', 'cluster', name)
    settings.proxy = _string(cluster, 'proxy-url', 'cluster', name)
    settings.proxy_source = 'proxy-url of cluster %s' % name if settings.proxy else None


def _load_user(settings, user, name, base):
    for data_key, file_key, attribute in (('client-certificate-data', 'client-certificate', 'cert_file'),
                                          ('client-key-data', 'client-key', 'key_file')):
        data = _pem(user, data_key, 'user', name)
        setattr(settings, attribute, private_file(data) if data is not None
                else _file(user, file_key, 'user', name, base))
    token = _string(user, 'token', 'user', name)
    token_path = _string(user, 'tokenFile', 'user', name)
    if token_path:
        if base and not os.path.isabs(token_path):
            token_path = os.path.join(base, token_path)
        settings.authorization = TokenFile(token_path, token)
        settings.authorization_source = 'tokenFile of user %s in the kubeconfig' % name
    elif token:
        header = bearer(token)
        settings.authorization = lambda: header
        settings.authorization_source = 'token of user %s in the kubeconfig' % name
    else:
        username, password = _string(user, 'username', 'user', name), _string(user, 'password', 'user', name)
        if username and password:
            header = basic_auth(username, password)
            settings.authorization = lambda: header
            settings.authorization_source = 'username/password of user %s in the kubeconfig' % name


# --------------------------------------------------------------------------- in-cluster

def in_cluster(environ):
    return bool(environ.get('KUBERNETES_SERVICE_HOST') and environ.get('KUBERNETES_SERVICE_PORT'))


def in_cluster_settings(environ):
    """The pod's service account: KUBERNETES_SERVICE_HOST/PORT, its token (read again as kubelet rotates
    it) and the cluster CA."""
    host = environ['KUBERNETES_SERVICE_HOST']
    if ':' in host:
        host = '[%s]' % host
    settings = ConnectionSettings('https://%s:%s' % (host, environ['KUBERNETES_SERVICE_PORT']))
    settings.authorization = TokenFile(os.path.join(SERVICE_ACCOUNT_DIR, 'token'))
    settings.authorization_source = 'the service account token %s' % os.path.join(SERVICE_ACCOUNT_DIR, 'token')
    settings.ssl_ca_cert = os.path.join(SERVICE_ACCOUNT_DIR, 'ca.crt')
    if not os.path.isfile(settings.ssl_ca_cert) or not os.path.getsize(settings.ssl_ca_cert):
        raise KubeconfigError('the service account CA %s is missing or empty' % settings.ssl_ca_cert)
    return settings
