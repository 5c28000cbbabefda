# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The headers of every request to the API server, checked in one place before anything is sent.

A header value with a CR, LF or another control character would end its line and start another header (or another
request) that nobody asked for: whatever the value comes from (impersonation options or kubeconfig fields, a token,
a proxy header), it is refused with a ValidationError that names where it came from, never the value (a token must
not be printed). urllib3 (transport.py) then writes a name given several times (one Impersonate-Group per group) as
several lines.
"""

import re

from ansible_collections.inplace.k8s.plugins.module_utils.connection.errors import ValidationError

_UNSAFE = re.compile('[\x00-\x08\x0a-\x1f\x7f]')   # control characters but TAB, which a header value may hold
_NAMED = {'\r': 'a carriage return (CR)', '\n': 'a line feed (LF)', '\x00': 'a NUL character'}
USER_AGENT = 'inplace.k8s'


def checked(name, value, source):
    """``value`` ready for the header ``name``, or ValidationError naming ``source`` (an option, a kubeconfig
    field) when it holds a control character. Each character goes as one byte (latin-1) on the wire (http.client),
    so the result holds the value's UTF-8 bytes: the API server reads back the value, as kubectl sends it."""
    if not isinstance(value, str):
        raise ValidationError('%s (header %s) must be a string, not %s' % (source, name, type(value).__name__))
    found = _UNSAFE.search(value)
    if found:
        raise ValidationError('%s holds %s: a header value (%s) may hold no line break or other control '
                              'character, so nothing was sent to the API server; remove it from %s'
                              % (source, _NAMED.get(found.group(), 'a control character'), name, source))
    return value.encode('utf-8').decode('latin-1')


def static(cfg):
    """[(name, value)]: the headers of every request of the client of ``cfg`` (kubeconfig.ConnectionSettings)
    but the Authorization one (a token can be refreshed: ``authorization``); the proxy headers are checked too."""
    for name, value in (getattr(cfg, 'proxy_headers', None) or {}).items():
        checked(name, value, 'proxy_headers')
    found = [('Accept', 'application/json'), ('User-Agent', USER_AGENT)]
    identity = getattr(cfg, 'impersonation', None)
    if identity:
        found.extend((name, checked(name, value, source)) for name, value, source in identity.headers())
    return found


def authorization(cfg):
    """[(name, value)] of the credentials of ``cfg`` as they are now (a token file is read again when it
    changes), checked (the message names the option or kubeconfig field, never the token)."""
    source = getattr(cfg, 'authorization_source', None) or 'the credentials (api_key or the kubeconfig user)'
    return [(name, checked(name, value, source)) for name, value in cfg.auth_headers().items()]


def repeated(headers):
    """The names given more than once in ``headers`` ([(name, value)])."""
    seen, found = set(), []
    for name, _value in headers:
        key = name.lower()
        if key in seen and name not in found:
            found.append(name)
        seen.add(key)
    return found


def refuse_joined(transport, headers):
    """ValidationError when urllib3 would join the values of a repeated header into one line (the API server would
    read "g1, g2" as one group): through a proxy to a plain http:// server, urllib3's ProxyManager copies the
    headers into a dict. (urllib3 >= 2 sends every value of an HTTPHeaderDict on its own line otherwise.)"""
    names = repeated(headers)
    if names and transport.proxied and transport.host.lower().startswith('http://'):
        raise ValidationError('%s must go as one header line per value (several impersonate_groups or '
                              'impersonate_extra values), which a proxy to a plain http:// API server cannot send; '
                              'reach the API server over https' % ', '.join(names))
