# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which proxy reaches the API server, by kubectl's rules, and proxy URLs in messages without their credentials.

kubectl (client-go) takes a cluster's ``proxy-url`` for every request to that cluster: the environment does not
override it. Without one it reads the environment as Go's net/http does (golang.org/x/net/http/httpproxy):

- ``HTTPS_PROXY`` for an https server, ``HTTP_PROXY`` for an http one, the upper case name before the lower case
  one; ``ALL_PROXY`` is not read;
- a value without a scheme of http, https or socks5 is taken as ``http://<value>``;
- never for ``localhost`` or a loopback address (127.0.0.0/8, ::1);
- never for a host that ``NO_PROXY`` (or ``no_proxy``) lists: ``*`` (every host), an IP address (``10.0.0.1``,
  ``[2001:db8::1]:443``) or network (``10.0.0.0/8``), a domain (``example.com`` matches it and its subdomains,
  ``.example.com`` and ``*.example.com`` its subdomains only), each optionally with a port (the server's port, 443
  or 80 when its URL has none).

The ``proxy`` and ``no_proxy`` options (kubernetes.core's) are the same kind of choice as proxy-url: the proxy is
used for the server unless ``no_proxy`` lists it, by the same matching rules.
"""

import ipaddress

from urllib.parse import unquote, urlsplit

try:
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url
except ImportError:  # pragma: no cover - client.HAS_URLLIB3 reports it
    LocationParseError = ValueError
    parse_url = None

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

SOCKS_SCHEMES = frozenset(['socks4', 'socks4a', 'socks5', 'socks5h'])
PROXY_SCHEMES = frozenset(['http', 'https']) | SOCKS_SCHEMES
DEFAULT_PORTS = {'http': 80, 'https': 443}
ENVIRONMENT = {'https': ('HTTPS_PROXY', 'https_proxy'), 'http': ('HTTP_PROXY', 'http_proxy')}


# --------------------------------------------------------------------------- credentials in messages

def redact(url):
    """``url`` with its user-info (``user:password@``) replaced by ``***@``; never raises. Everything up to the
    last ``@`` goes, as a password may hold ``/``, ``?`` or ``#`` unencoded."""
    text = '%s' % (url,)
    scheme, separator, rest = text.partition('://')
    if not separator:
        scheme, rest = '', text
    if '@' in rest:
        rest = '***@' + rest.rpartition('@')[2]
    return scheme + separator + rest


def credentials(url):
    """The secret parts of a proxy URL's user-info (the password, raw and decoded), for masking."""
    text = '%s' % (url,)
    rest = text.partition('://')[2] or text
    if '@' not in rest:
        return set()
    userinfo = rest.rpartition('@')[0]
    found = {userinfo}
    password = userinfo.partition(':')[2]
    if password:
        found.add(password)
        found.add(unquote(password))
    return set(value for value in found if value)


def scrub(text, url):
    """``text`` (an error message) without the credentials of the proxy ``url``."""
    text = '%s' % (text,)
    if url:
        text = text.replace('%s' % (url,), redact(url))
        for secret in sorted(credentials(url), key=len, reverse=True):
            text = text.replace(secret, '***')
    return text


# --------------------------------------------------------------------------- checking a proxy URL

def check(url, field):
    """The proxy URL ``url`` of ``field`` (the option, kubeconfig field or variable that set it) when urllib3 can
    use it; else ValidationError naming ``field``, the URL without its credentials."""
    problem = None
    try:
        parsed = parse_url(url)
        scheme = (parsed.scheme or '').lower()
        if scheme not in PROXY_SCHEMES:
            problem = 'its scheme must be one of %s' % ', '.join(sorted(PROXY_SCHEMES))
        elif not parsed.host:
            problem = 'it names no host'
    except (LocationParseError, ValueError) as exc:
        problem = scrub(exc, url)
    if problem:
        raise ValidationError('%s: %s is not a usable proxy URL (%s); give scheme://[user:password@]host:port'
                              % (field, redact(url), problem))
    return url


# --------------------------------------------------------------------------- the environment

def _first(environ, names):
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return None, None


def normalize(value):
    """An environment proxy as Go reads it: without a scheme of http, https or socks5, ``http://`` + value."""
    scheme, separator, _rest = value.partition('://')
    if not separator or scheme.lower() not in ('http', 'https', 'socks5'):
        return 'http://' + value
    return value


def from_environment(server, environ):
    """(proxy URL, the variable that set it) for the API server ``server`` from the environment, or (None, None):
    HTTPS_PROXY / HTTP_PROXY by the server's scheme unless the server is loopback or NO_PROXY lists it."""
    scheme = urlsplit(server or '').scheme.lower() or 'https'
    name, value = _first(environ, ENVIRONMENT.get(scheme, ()))
    if not value:
        return None, None
    if bypasses(server, _first(environ, ('NO_PROXY', 'no_proxy'))[1], loopback=True):
        return None, None
    return normalize(value), name


# --------------------------------------------------------------------------- NO_PROXY

def _address(text):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _split_port(entry):
    """(host, port or None) of a NO_PROXY entry: ``host:port``, ``[v6]:port``, ``v6`` or ``host`` (a ``[v6]``
    without a port stays as it is, and matches no address, as in Go)."""
    if entry.startswith('[') and ']:' in entry:
        host, port = entry[1:].split(']:', 1)
        return host, port or None
    if entry.count(':') == 1:
        host, port = entry.split(':')
        return host, port or None
    return entry, None


def _idna(name):
    try:
        return name.encode('idna').decode('ascii') if not name.isascii() else name
    except UnicodeError:
        return name


def _server(url):
    """(host in lower case, its address or None, port as text) of the server ``url``."""
    parts = urlsplit(url or '')
    host = _idna((parts.hostname or '').lower())
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or DEFAULT_PORTS.get(parts.scheme.lower(), 443)
    return host, _address(host), str(port)


def _matches(entry, host, address, port):
    """Does one NO_PROXY entry (stripped, lower case, not empty, not ``*``) list the server?"""
    try:
        network = ipaddress.ip_network(entry, strict=False) if '/' in entry else None
    except ValueError:
        network = None   # not a network: read on as a host or domain, as Go does
    if network is not None:
        return address is not None and address in network
    name, wanted_port = _split_port(entry)
    if not name:
        return False
    if _address(name) is not None:
        return address is not None and address == _address(name) and wanted_port in (None, port)
    if name.startswith('*.'):
        name = name[1:]
    exact = not name.startswith('.')
    suffix = '.' + _idna(name.lstrip('.'))
    if host.endswith(suffix) or (exact and host == suffix[1:]):
        return wanted_port in (None, port)
    return False


def bypasses(server, no_proxy, loopback=False):
    """Is the API server ``server`` (URL) reached without the proxy: ``no_proxy`` (comma-separated) lists it, or,
    with ``loopback`` (the environment's rule), it is localhost or a loopback address?"""
    host, address, port = _server(server)
    if not host:
        return True
    if loopback and (host == 'localhost' or (address is not None and address.is_loopback)):
        return True
    entries = [e.strip().lower() for e in (no_proxy or '').split(',')]
    if '*' in entries:
        return True
    return any(_matches(entry, host, address, port) for entry in entries if entry)
