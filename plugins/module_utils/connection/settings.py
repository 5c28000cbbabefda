# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a client needs to reach the API server (ConnectionSettings) and the credentials it holds: the bearer token
of a file read again as it rotates (TokenFile), the client certificate and key of a kubeconfig's data fields in
files in memory that end with the process (private_file: the ssl module reads them from files only), and the
warnings of the connection (warn_once: TLS verification off). kubeconfig.py fills the settings from the auth
options, transport.py builds the urllib3 pool from them.

Messages name files and fields, never a value: the settings hold tokens and keys.
"""

import atexit
import base64
import os
import tempfile
import threading
import time

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.inplace.k8s.plugins.module_utils.connection import impersonation
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError

TOKEN_REFRESH_SECONDS = 60     # bound service account tokens rotate; kubectl re-reads token files each minute


class KubeconfigError(ValueError):
    """A kubeconfig or service account that cannot be used. The message names files, fields and
    entries, never a value."""


# --------------------------------------------------------------------------- private files

MEMORY_FILE = '/proc/self/fd/%d'
_private_files = []   # (pid of the process that made it, path or None, descriptor or None)
_exit_hook = []       # [True] once remove_private_files is registered with atexit


def _memory_file(data):
    """A descriptor of an anonymous file in memory (Linux memfd) holding ``data``, readable by path as
    MEMORY_FILE; None where there is none (another system, no /proc)."""
    if not hasattr(os, 'memfd_create'):
        return None
    try:
        fd = os.memfd_create('inplace-k8s', os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if os.path.exists(MEMORY_FILE % fd):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def remove_private_files():
    """Remove the files of private_file that this process made, and those of a process that is gone (a module
    killed before its exit): a detached child (detach.py) calls it before it ends with os._exit, which runs
    no atexit handler. The in-memory ones go with their process."""
    me = os.getpid()
    for entry in list(_private_files):
        pid, path, _fd = entry
        if path is None or (pid != me and _alive(pid)):
            continue
        _private_files.remove(entry)
        try:
            os.remove(path)
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def private_file(data):
    """A path the ssl module can read ``data`` (bytes: a client certificate or key, a CA) from; it reads them from
    files only. On Linux an anonymous file in memory, open as long as this process (and a child it forks) lives:
    nothing on disk, nothing left after a kill. Elsewhere a file readable by this user only (0600), removed at
    the exit of the process that made it (remove_private_files)."""
    fd = _memory_file(data)
    if fd is not None:
        _private_files.append((os.getpid(), None, fd))
        return MEMORY_FILE % fd
    if not _exit_hook:
        atexit.register(remove_private_files)
        _exit_hook.append(True)
    handle, path = tempfile.mkstemp(prefix='inplace-k8s-')
    _private_files.append((os.getpid(), path, None))
    with os.fdopen(handle, 'wb') as stream:
        stream.write(data)
    return path


# --------------------------------------------------------------------------- warnings of the connection

_warned = set()
_pending = []


def start_warnings():
    """A new run (runner.execute): what earlier runs of this process said is forgotten."""
    _warned.clear()
    del _pending[:]


def warn_once(message):
    """Say ``message`` once in this run: runner.execute hands it to module.warn (take_warnings)."""
    if message not in _warned:
        _warned.add(message)
        _pending.append(message)


def take_warnings():
    """The warnings said since the last call."""
    taken = list(_pending)
    del _pending[:]
    return taken


# --------------------------------------------------------------------------- credentials

def bearer(token):
    return 'Bearer %s' % token


def basic_auth(username, password):
    return 'Basic %s' % base64.b64encode(('%s:%s' % (username, password)).encode('utf-8')).decode('ascii')


class TokenFile:
    """The bearer token in a file, read again when the file changes and at least every minute (kubelet
    rotates projected service account tokens); the last token read stays in use while a read fails.
    ``token``: the token to use while the file cannot be read (a kubeconfig's ``token`` beside its
    ``tokenFile``). A file that cannot be read at start and no ``token`` raise KubeconfigError."""

    def __init__(self, path, token=None, clock=time.monotonic):
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._token = token
        self._stamp = self._read_at = None
        try:
            self._read()
        except (OSError, UnicodeError) as exc:
            if not token:
                raise KubeconfigError('token file %s: %s' % (path, _reason(exc)))
        except KubeconfigError:
            if not token:
                raise

    def _read(self):
        self._read_at = self.clock()
        stat = os.stat(self.path)
        with open(self.path) as stream:
            token = stream.read().strip()
        if not token:
            raise KubeconfigError('token file %s is empty' % self.path)
        self._token, self._stamp = token, (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _stale(self):
        if self.clock() - self._read_at >= TOKEN_REFRESH_SECONDS:
            return True
        try:
            stat = os.stat(self.path)
        except OSError:
            return False
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size) != self._stamp

    def __call__(self):
        """The Authorization header value."""
        if self._stale():
            with self._lock:
                try:
                    self._read()
                except (OSError, UnicodeError, KubeconfigError):
                    pass
        return bearer(self._token)


def _reason(exc):
    """An OSError's reason without repeating the file name."""
    return getattr(exc, 'strerror', None) or str(exc)


# --------------------------------------------------------------------------- the settings

class ConnectionSettings:
    """The API server (``host``), TLS (verify_ssl, ssl_ca_cert or ca_cert_data, cert_file/key_file,
    tls_server_name), proxy (proxy, no_proxy, proxy_headers) and ``authorization``: a callable giving
    the Authorization header value (refreshing expiring tokens), or None, set by ``authorization_source`` (an
    option or a kubeconfig field, for messages). The attribute names are the kubernetes ``Configuration``'s.
    ``impersonation``: whom to act as (impersonation.Impersonation: the options over the kubeconfig user's)."""

    def __init__(self, host=None):
        self.host = host
        self.verify_ssl = True
        self.verify_source = None     # what turned verification off, for the warning
        self.ssl_ca_cert = None       # a CA file ...
        self.ca_cert_data = None      # ... or PEM text (a kubeconfig's certificate-authority-data)
        self.cert_file = None
        self.key_file = None
        self.tls_server_name = None
        self.proxy = None
        self.proxy_source = None      # the option, kubeconfig field or variable that set the proxy, for messages
        self.no_proxy = None
        self.proxy_headers = None
        self.authorization = None
        self.authorization_source = None
        self.impersonation = impersonation.Impersonation()
        self.connection_pool_maxsize = None

    def auth_headers(self):
        value = self.authorization() if self.authorization else None
        return {'authorization': value} if value else {}

    def kubernetes_configuration(self):
        """An equivalent kubernetes ``Configuration`` (imports the kubernetes package), for what needs the
        client's own machinery: pods/exec over a websocket."""
        Configuration = kubernetes('client').Configuration
        cfg = Configuration()
        cfg.host = self.host
        cfg.verify_ssl = self.verify_ssl
        cfg.ssl_ca_cert = self.ssl_ca_cert
        if not cfg.ssl_ca_cert and self.ca_cert_data:
            cfg.ssl_ca_cert = private_file(self.ca_cert_data.encode('utf-8'))
        cfg.cert_file, cfg.key_file, cfg.tls_server_name = self.cert_file, self.key_file, self.tls_server_name
        cfg.proxy, cfg.no_proxy, cfg.proxy_headers = self.proxy, self.no_proxy, self.proxy_headers
        if self.connection_pool_maxsize:
            cfg.connection_pool_maxsize = self.connection_pool_maxsize

        def refresh(configuration):
            # Client versions differ in the key they read (BearerToken or authorization): set both.
            value = self.auth_headers().get('authorization')
            configuration.api_key = {'BearerToken': value, 'authorization': value} if value else {}
        cfg.api_key_prefix = {}
        refresh(cfg)
        cfg.refresh_api_key_hook = refresh
        return cfg


# --------------------------------------------------------------------------- the kubernetes package

def kubernetes(part):
    """kubernetes.<part> (``config``, ``client``), imported on first use."""
    try:
        module = __import__('kubernetes.%s' % part)
    except ImportError as exc:
        raise ConfigError('%s (%s)' % (missing_required_lib('kubernetes'), exc))
    return getattr(module, part)
