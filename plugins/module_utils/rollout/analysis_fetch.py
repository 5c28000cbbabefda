# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The HTTP side of an analysis check (rollout_analysis): one bounded GET on top of Ansible's open_url, and
what of a check's URL and headers may be shown.

Trust: the endpoint's answer, and any redirect it sends, are the endpoint's claims. A measurement therefore

- follows no redirect unless the check opts in (``follow_redirects: same_origin``), and then only to the same
  origin (scheme, host and port equal): never https -> http, never out of http(s), at most MAX_REDIRECTS hops.
  Whatever the policy, a hop to another origin would carry none of the CREDENTIAL_HEADERS (``hop_headers``);
- reads at most ``max_body_bytes`` of the body (decompressed), and takes at most ``timeout`` seconds in all
  (connecting, every hop, the headers and the body), however slowly the endpoint drips its answer;
- shows its URL without user-info or credential-like query parameters (``shown_url``), and scrubs the check's
  secrets (URL credentials, header values) from every text it reports (``scrub``)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import threading
import time

from urllib.parse import unquote, urljoin, urlsplit

REDIRECT_CODES = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5
FOLLOW_REDIRECTS = ('none', 'same_origin')
# Sent to the check's own origin only.
CREDENTIAL_HEADERS = ('authorization', 'proxy-authorization', 'cookie')
# A query parameter whose name (any case) contains one of these, or is one of SECRET_PARAM_NAMES, is shown as ***.
SECRET_PARAM_PARTS = ('token', 'secret', 'passw', 'pwd', 'key', 'auth', 'credential', 'signature', 'session')
SECRET_PARAM_NAMES = ('sig', 'jwt', 'code')
MASK = '***'
# A path segment holding a run of this many letters and digits, both present, is taken for a token (webhook and
# API-key URLs put it in the path: /hooks/T0A1B2C3/4d5e6f7a8b9c0d1e2f3a4b5c) and shown as ***. Words and ids
# split by - or _ ("payments-api-v2", "node-7") have shorter runs and stay.
TOKEN_RUN = re.compile(r'[A-Za-z0-9]{16,}')
MIN_SCRUBBED = 4   # shorter header values and parts are not scrubbed from texts (they would shred every word)


class Refused(Exception):
    """The measurement stopped on our side (a redirect not followed, a body too large, the total time spent);
    the message is the reason as reported."""


def origin(url):
    """scheme://host:port of a URL, without user-info (the port explicit: http://a and http://a:80 are equal)."""
    parts = urlsplit(url)
    port = parts.port or {'http': 80, 'https': 443}.get(parts.scheme)
    host = parts.hostname or ''
    return '%s://%s:%s' % (parts.scheme, '[%s]' % host if ':' in host else host, port)


def _secret_param(name):
    name = unquote(name).lower()
    return name in SECRET_PARAM_NAMES or any(part in name for part in SECRET_PARAM_PARTS)


def _secret_segment(segment):
    """Whether a path segment looks like a token: a long run of letters and digits mixing both."""
    return any(re.search('[A-Za-z]', run) and re.search('[0-9]', run) for run in TOKEN_RUN.findall(unquote(segment)))


def shown_url(url):
    """The URL as reported: user-info, token-like path segments and the values of credential-like query parameters
    replaced by ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if '@' in netloc:
        netloc = MASK + '@' + netloc.rpartition('@')[2]
    query = '&'.join(
        '%s=%s' % (piece.partition('=')[0], MASK) if '=' in piece and _secret_param(piece.partition('=')[0])
        else piece for piece in parts.query.split('&')) if parts.query else ''
    path = '/'.join(MASK if _secret_segment(segment) else segment for segment in parts.path.split('/'))
    text = '%s://%s%s' % (parts.scheme, netloc, path)
    return text + ('?' + query if parts.query else '') + ('#' + parts.fragment if parts.fragment else '')


def secrets(url, headers):
    """The texts no output may hold: the URL's user-info, token-like path segments and credential-like parameter
    values (as written and decoded), each header value and each long word of it (a token without its Bearer)."""
    parts = urlsplit(url)
    found = [parts.username, parts.password]
    found.extend(segment for segment in parts.path.split('/') if _secret_segment(segment))
    for piece in parts.query.split('&'):
        name, _eq, value = piece.partition('=')
        if _secret_param(name):
            found.append(value)
    for value in (headers or {}).values():
        value = str(value)
        found.extend([value] + [word for word in value.split() if len(word) >= 8])
    texts = set()
    for text in found:
        if text and len(text) >= MIN_SCRUBBED:
            texts.update((text, unquote(text)))
    return sorted(texts, key=len, reverse=True)


def url_secrets(checks):
    """The URL secrets (see ``secrets``) of the module's checks, as given: for Ansible's own masking of the module's
    parameters wherever it prints them."""
    texts = set()
    for spec in checks or []:
        for url in (spec.get('url'), (spec.get('prometheus') or {}).get('url')):
            try:
                texts.update(secrets(url, {}) if isinstance(url, str) else ())
            except ValueError:   # not a URL: refused by the check, without it
                pass
    return texts


def scrub(thing, texts):
    """``thing`` (a string, or lists and dicts of them) with each of ``texts`` replaced by ***."""
    if isinstance(thing, str):
        for text in texts:
            thing = thing.replace(text, MASK)
        return thing
    if isinstance(thing, list):
        return [scrub(item, texts) for item in thing]
    if isinstance(thing, dict):
        return dict((key, scrub(value, texts)) for key, value in thing.items())
    return thing


def hop_headers(headers, from_url, to_url):
    """The headers for a hop from ``from_url`` to ``to_url``: all of them on the same origin, none of the
    CREDENTIAL_HEADERS on another one."""
    if origin(from_url) == origin(to_url):
        return dict(headers)
    return dict((name, value) for name, value in headers.items() if name.lower() not in CREDENTIAL_HEADERS)


def redirect_refusal(from_url, to_url, code, follow):
    """Why a redirect from ``from_url`` to ``to_url`` is not followed, or None to follow it."""
    try:
        target = origin(to_url)
    except ValueError:
        return 'redirected (HTTP %d) to a URL that does not parse, not followed' % code
    scheme, source = urlsplit(to_url).scheme, urlsplit(from_url).scheme
    where = 'redirected (HTTP %d) to %s' % (code, target)
    if scheme not in ('http', 'https'):
        return 'redirected (HTTP %d) to a %s: URL, never followed (only http and https)' % (code, scheme or 'relative')
    if source == 'https' and scheme == 'http':
        return '%s, never followed: https is never downgraded to http' % where
    if follow != 'same_origin':
        return ('%s, not followed (follow_redirects: none): give the URL it redirects to, or follow_redirects: '
                'same_origin to follow redirects on the same origin' % where)
    if target != origin(from_url):
        return '%s, another origin than %s: not followed (follow_redirects: same_origin)' % (where, origin(from_url))
    return None


def _read(response, limit):
    """The body, at most ``limit`` bytes (decompressed); Refused past it."""
    length = response.headers.get('Content-Length') if getattr(response, 'headers', None) is not None else None
    if length and length.strip().isdigit() and int(length) > limit:
        raise Refused('the answer has %s bytes, more than max_body_bytes %d' % (length.strip(), limit))
    body = response.read(limit + 1)
    if len(body) > limit:
        raise Refused('the answer has more than max_body_bytes %d bytes' % limit)
    return body


def _one(open_url, url, headers, timeout, check):
    """One request, no redirect followed: (status code, headers, body)."""
    try:
        response = open_url(url, method='GET', headers=headers, timeout=timeout, validate_certs=check.validate_certs,
                            ca_path=check.ca_path, follow_redirects='none')
    except Exception as exc:
        code = getattr(exc, 'code', None)
        if not isinstance(code, int):
            raise
        if code in REDIRECT_CODES:
            return code, exc.headers, b''
        return code, exc.headers, _read(exc, check.max_body_bytes) if hasattr(exc, 'read') else str(exc)
    return response.getcode(), response.headers, _read(response, check.max_body_bytes)


def _hops(open_url, check, deadline, clock):
    url, headers = check.url, dict(check.headers)
    for _hop in range(MAX_REDIRECTS + 1):
        remaining = deadline - clock()
        if remaining <= 0:
            break
        code, answer_headers, body = _one(open_url, url, headers, remaining, check)
        location = answer_headers.get('Location') if answer_headers is not None else None
        if code not in REDIRECT_CODES or not location:
            return code, body
        target = urljoin(url, location.strip())
        refusal = redirect_refusal(url, target, code, check.follow_redirects)
        if refusal:
            raise Refused(refusal)
        if not urlsplit(target).username and urlsplit(url).username:   # the same origin: its user-info too
            parts = urlsplit(target)
            target = parts._replace(netloc=urlsplit(url).netloc).geturl()
        url, headers = target, hop_headers(headers, url, target)
    else:
        raise Refused('more than %d redirects, not followed' % MAX_REDIRECTS)
    raise Refused('no answer within timeout %s s (connecting, redirects and the whole answer)' % check.timeout)


def http_fetch(open_url, clock=time.monotonic):
    """fetch(check) -> (status code, body) on top of Ansible's open_url, bounded in time (check.timeout, the
    whole measurement) and size (check.max_body_bytes). An HTTP error answer is returned as its code and body;
    a refusal of ours raises Refused; the rest (unreachable, TLS...) raises as it came."""
    def fetch(check):
        deadline = clock() + check.timeout
        box = {}

        def work():
            try:
                box['answer'] = _hops(open_url, check, deadline, clock)
            except BaseException as exc:  # handed to the caller's thread
                box['error'] = exc
        worker = threading.Thread(target=work, name='rollout-analysis-fetch')
        worker.daemon = True   # a stalled endpoint's thread is left behind; it never starts another hop
        worker.start()
        worker.join(check.timeout)
        if worker.is_alive():
            raise Refused('no answer within timeout %s s (connecting, redirects and the whole answer)'
                          % check.timeout)
        if 'error' in box:
            raise box['error']
        return box['answer']
    return fetch
