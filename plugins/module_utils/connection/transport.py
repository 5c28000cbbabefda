# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""HTTP to the API server through urllib3, the transport of the kubernetes client itself.

One pool of kept-alive connections per client, with the TLS settings of a settings.ConnectionSettings (the CA as a
file or as PEM data, the client certificate and key, tls-server-name, or no verification at all), shared by the
worker threads of a rollout: at most ``maxsize`` connections are open and a request waits for a free one
(``block=True``), so no connection is opened for one request and thrown away. Without a proxy the client talks to
urllib3's HTTP(S)ConnectionPool of the API server directly (a PoolManager would parse every URL and look its pool
up by key on each request); through a proxy (the cluster's proxy-url, the proxy option unless no_proxy lists the
server, HTTPS_PROXY by kubectl's rules: proxy.py) it goes through urllib3's ProxyManager (or SOCKSProxyManager).
This module decides the TLS and proxy arguments: the one place where they are read.
"""

import warnings

from urllib.parse import urlsplit

try:
    import urllib3
    from urllib3.exceptions import LocationValueError
except ImportError:  # pragma: no cover - client.HAS_URLLIB3 reports it
    urllib3 = None
    LocationValueError = ValueError

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.inplace.k8s.plugins.module_utils.connection import proxy
from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ConfigError

SCHEMES = ('https', 'http')


def tls_arguments(settings):
    """The TLS keyword arguments of a urllib3 pool for ``settings`` (settings.ConnectionSettings): the CA file wins
    over the CA data (as kubectl: a ca_cert option replaces the kubeconfig's data), tls-server-name is the name the
    server's certificate is checked against (and the SNI)."""
    args = {'cert_reqs': 'CERT_REQUIRED' if settings.verify_ssl else 'CERT_NONE',
            'ca_certs': settings.ssl_ca_cert, 'ca_cert_data': None if settings.ssl_ca_cert else settings.ca_cert_data,
            'cert_file': settings.cert_file, 'key_file': settings.key_file}
    if settings.tls_server_name:
        args['server_hostname'] = settings.tls_server_name
    return args


def proxy_manager(settings, args):
    """urllib3's manager of ``settings.proxy`` (a SOCKS proxy needs PySocks)."""
    url = proxy.check(settings.proxy, settings.proxy_source or 'proxy')
    if urlsplit(url).scheme.lower() in proxy.SOCKS_SCHEMES:
        try:
            from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError:
            raise ConfigError('%s %s: %s' % (settings.proxy_source or 'proxy', proxy.redact(url),
                                             missing_required_lib('PySocks')))
        return SOCKSProxyManager(url, **args)
    return urllib3.ProxyManager(url, proxy_headers=settings.proxy_headers, **args)


def unreachable(host, exc):
    """The error of an API server that never answered: a wrong host, port or proxy fails at once."""
    return ConfigError('cannot reach the API server %s: %s; check host / the kubeconfig server and that the API '
                       'server is running' % (host, exc))


class Transport:
    """Requests to the API server of ``settings`` (settings.ConnectionSettings; ``host``: scheme://host[:port]
    [/prefix]) over at most ``maxsize`` kept-alive connections. ``pool``: the urllib3 pool or proxy manager;
    ``proxied``: True when it goes through a proxy."""

    def __init__(self, settings, maxsize):
        self.host = settings.host.rstrip('/')
        args = dict(tls_arguments(settings), maxsize=maxsize, block=True)   # block: wait for a free connection
        if not settings.verify_ssl:   # asked for (validate_certs=false, insecure-skip-tls-verify): warned of once
            warnings.filterwarnings('ignore', category=urllib3.exceptions.InsecureRequestWarning)  # (kubeconfig.py)
        self.proxied = bool(settings.proxy) and not proxy.bypasses(self.host, settings.no_proxy)
        self.proxy = settings.proxy if self.proxied else None
        self.proxy_source = settings.proxy_source
        if self.proxied:
            self.pool, self.prefix = proxy_manager(settings, args), self.host   # a proxy takes whole URLs
            return
        try:
            parts = urlsplit(self.host)
            # parts.port raises ValueError for a port that is not a number from 1 to 65535
            if parts.scheme.lower() not in SCHEMES or not parts.hostname or parts.port == 0:
                raise LocationValueError('the server must be https://host[:port] (or http://)')
            if parts.scheme.lower() == 'http':   # no TLS: urllib3's HTTPConnectionPool takes no TLS argument
                args = {'maxsize': maxsize, 'block': True}
            self.pool = urllib3.connection_from_url(self.host, **args)
        except (LocationValueError, ValueError) as exc:
            raise unreachable(self.host, exc)
        self.prefix = parts.path.rstrip('/')   # the path of a server behind a gateway (/k8s/clusters/c1)

    def reason(self, exc):
        """What went wrong in ``exc`` (an error of send), naming the proxy in use without its credentials."""
        text = proxy.scrub(exc, self.proxy)
        if self.proxy:
            text += ' (through the proxy %s, from %s)' % (proxy.redact(self.proxy), self.proxy_source or 'proxy')
        return text

    def send(self, method, target, body=None, headers=None, timeout=(10, 60)):
        """Send one request (``target``: path?query on the server; ``headers``: urllib3.HTTPHeaderDict, a name
        given several times is sent once per value) and read the status and headers; the body is left to read
        (``read``, ``stream``, ``read_chunked``), then ``release_conn``. Never retried, never redirected here
        (client.py retries); ``timeout``: (connect, read) seconds, the read one per read of the socket."""
        return self.pool.request(method, self.prefix + target, body=body, headers=headers, preload_content=False,
                                 timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]), retries=False,
                                 redirect=False)
