# -*- coding: utf-8 -*-
# Copyright (c) inplace.k8s contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""HTTP/1.1 to the API server over kept-alive TLS connections, for a client that talks to it directly.

A rollout of 1000 pods sends a thousand PATCHes and reads thousands of watch events. Through urllib3 and
http.client each request cost about 1.5 ms of CPU here (URL parsing, pool keys, header objects built by the
email package); the request itself, written and read as bytes, costs about 0.5 ms. ``Connections`` keeps
urllib3's interface where client.py uses it (``request(method, url, ...)`` answering a response with
``status``, ``headers``, ``read``, ``stream``, ``read_chunked``, ``release_conn``, ``close``) and raises
urllib3's exceptions, so that the errors keep their meaning (client.py turns them into ConfigError or
TransientError). The TLS settings are those of the urllib3 pool manager it replaces (its
``connection_pool_kw``): one place decides them (kubeconfig.ConnectionSettings.pool_manager). A client that
goes through a proxy keeps urllib3 (``direct`` is False).
"""

import select
import socket
import ssl
import threading

from urllib.parse import urlsplit

try:
    import urllib3
    from urllib3.exceptions import (ConnectTimeoutError, NewConnectionError, ProtocolError, ReadTimeoutError,
                                    SSLError)
except ImportError:  # pragma: no cover - client.py reports the missing library
    urllib3 = None

NO_BODY_STATUSES = frozenset([204, 304])
MAX_LINE = 65536       # bytes of a status, header or chunk-size line
MAX_HEADERS = 200


def direct(pool_manager, host):
    """True when ``pool_manager`` (kubeconfig.ConnectionSettings.pool_manager) connects without a proxy and
    ``host`` is a plain http(s)://host[:port][/prefix]: such a client can use Connections. Anything else (a host
    without a scheme, a port that is not a number) stays with urllib3, whose errors client.py words."""
    if urllib3 is None or type(pool_manager) is not urllib3.PoolManager:   # pylint: disable=unidiomatic-typecheck
        return False
    try:
        parts = urlsplit(host)
        return parts.scheme.lower() in ('http', 'https') and bool(parts.hostname) and parts.port != 0
    except ValueError:
        return False


def header_lines(headers):
    """(name, value) of each header line to write: ``headers`` is a list of (name, value) pairs, a urllib3
    HTTPHeaderDict or a dict; a name given several times (one Impersonate-Group per group) is written once per
    value, never joined into one line. The values were checked by the client (headers.py): none holds a CR or LF."""
    if not headers:
        return []
    if hasattr(headers, 'iteritems'):   # HTTPHeaderDict: every value of every name
        return list(headers.iteritems())
    if isinstance(headers, dict):
        return list(headers.items())
    return list(headers)


class Headers(dict):
    """Response headers by lower-case name (``get`` takes any case)."""

    def get(self, key, default=None):
        return dict.get(self, key.lower(), default)


class Connections:
    """A pool of kept-alive connections to one server (``host``: scheme://host[:port][/prefix]), with the TLS
    arguments of a urllib3 pool manager's ``connection_pool_kw`` (cert_reqs, ca_certs, ca_cert_data, cert_file,
    key_file, server_hostname, maxsize). At most ``maxsize`` connections are open; a request waits for a free
    one (urllib3's ``block=True``). Thread-safe."""

    def __init__(self, host, connection_pool_kw):
        self.connection_pool_kw = dict(connection_pool_kw)
        parts = urlsplit(host)
        self.tls = parts.scheme.lower() == 'https'
        self.hostname = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.origin = '%s://%s' % (parts.scheme.lower(), parts.netloc.lower())
        self.host_header = ('[%s]' % self.hostname if ':' in self.hostname else self.hostname) + (
            '' if parts.port is None else ':%d' % parts.port)
        self.label = 'connection to %s:%d' % (self.hostname, self.port)   # in errors
        self._context = None   # built at the first connection, as urllib3 does: a bad CA fails a request
        self._idle = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.connection_pool_kw.get('maxsize') or 10)

    def _tls_context(self):
        if self._context is not None:
            return self._context
        kw = self.connection_pool_kw
        if kw.get('cert_reqs') == 'CERT_NONE':
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=kw.get('ca_certs'), cadata=kw.get('ca_cert_data'))
        if kw.get('cert_file'):
            context.load_cert_chain(kw['cert_file'], kw.get('key_file'))
        self._context = context
        return context

    # ---- connections

    def _connect(self, timeout):
        try:
            sock = socket.create_connection((self.hostname, self.port), timeout=timeout)
        except socket.timeout as exc:
            raise ConnectTimeoutError('%s: timed out after %s s' % (self.label, timeout)) from exc
        except OSError as exc:
            raise NewConnectionError(self.label, str(exc)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            try:
                sock = self._tls_context().wrap_socket(
                    sock, server_hostname=self.connection_pool_kw.get('server_hostname') or self.hostname)
            except ssl.SSLError as exc:
                sock.close()
                raise SSLError(exc) from exc
            except OSError as exc:
                sock.close()
                raise NewConnectionError(self.label, 'TLS handshake failed: %s' % exc) from exc
        return _Connection(sock)

    def _take(self, timeout):
        """A connection: an idle one still open, else a new one (a slot is held)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(timeout)
            if conn.usable():
                return conn
            conn.close()

    def _give_back(self, conn, reusable):
        if reusable:
            with self._lock:
                self._idle.append(conn)
        else:
            conn.close()
        self._slots.release()

    def clear(self):
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ---- requests

    def request(self, method, url, body=None, headers=None, preload_content=False, timeout=None, retries=False):
        """Send one request (``url``: this server's origin + path?query; ``headers``: see header_lines) and read
        the status and headers; the body is read from the answer. The keyword arguments of urllib3's ``request``
        that client.py passes are taken as it passes them (no preloading, no retries); ``timeout``: a
        urllib3.Timeout."""
        del preload_content, retries  # always streamed, never retried here (client.py retries)
        if url[:len(self.origin)].lower() != self.origin:
            raise ValueError('%s is not on %s' % (url, self.origin))
        target = url[len(self.origin):] or '/'
        connect_timeout = getattr(timeout, 'connect_timeout', None)
        read_timeout = getattr(timeout, 'read_timeout', None)
        lines = ['%s %s HTTP/1.1' % (method, target), 'Host: ' + self.host_header]
        lines.extend('%s: %s' % item for item in header_lines(headers))
        if body is not None or method in ('POST', 'PUT', 'PATCH'):
            lines.append('Content-Length: %d' % len(body or b''))
        head = ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')
        self._slots.acquire()
        try:
            conn = self._take(connect_timeout)
        except BaseException:
            self._slots.release()
            raise
        try:
            conn.sock.settimeout(read_timeout)
            conn.sock.sendall(head + body if body else head)
            return Response(self, conn, method)
        except Exception as exc:
            self._give_back(conn, False)
            raise _broken(exc, 'Connection aborted', self.label, read_timeout)
        except BaseException:
            self._give_back(conn, False)
            raise


class _Connection:
    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile('rb')

    def usable(self):
        """Still open with nothing unread: a kept-alive connection that the server closed (or wrote to)
        while it was idle is readable and is not used again."""
        try:
            if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
                return False   # decrypted bytes nobody asked for
            if hasattr(select, 'poll'):
                poller = select.poll()
                poller.register(self.sock, select.POLLIN)
                return not poller.poll(0)
            return not select.select([self.sock], [], [], 0)[0]
        except (OSError, ValueError):
            return False

    def close(self):
        for item in (self.reader, self.sock):
            try:
                item.close()
            except OSError:
                pass


def _broken(exc, what, label, read_timeout):
    """The urllib3 exception for a failure on a connection: a time-out or a broken connection."""
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return exc
    if isinstance(exc, socket.timeout):
        return ReadTimeoutError(label, None, 'read timed out after %s s' % read_timeout)
    return ProtocolError('%s: %s' % (what, exc), exc)


class Response:
    """The answer to one request: ``status``, ``headers`` and the body, read once (``read``, ``stream`` or
    ``read_chunked``). ``release_conn`` gives the connection back when the body was read to its end, else
    closes it."""

    def __init__(self, pool, conn, method):
        self._pool = pool
        self._conn = conn
        self._released = False
        self._remaining = None
        self._done = False
        self.headers = Headers()
        self.reason = ''
        self._read_head()
        keep = self._version == 'HTTP/1.1' and 'close' not in self.headers.get('connection', '').lower()
        encoding = self.headers.get('transfer-encoding', '').lower()
        self.chunked = 'chunked' in encoding
        if method == 'HEAD' or self.status in NO_BODY_STATUSES or 100 <= self.status < 200:
            self._remaining, self._done = 0, True
        elif not self.chunked:
            length = self.headers.get('content-length')
            if length is not None:
                self._remaining = int(length)
                self._done = self._remaining == 0
            else:
                keep = False   # the body ends when the server closes the connection
        self._keep = keep

    def _failed(self, exc):
        """The urllib3 exception for a read of the body that failed (the connection is not kept)."""
        self._keep = False
        return _broken(exc, 'Connection broken', self._pool.label, self._conn.sock.gettimeout())

    def _line(self):
        line = self._conn.reader.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError('a line of the answer is longer than %d bytes' % MAX_LINE)
        return line

    def _read_head(self):
        while True:
            status = self._line()
            if not status:
                raise ProtocolError('Connection aborted: the server closed the connection without an answer')
            parts = status.decode('latin-1').rstrip('\r\n').split(None, 2)
            if len(parts) < 2 or not parts[0].startswith('HTTP/') or not parts[1].isdigit():
                raise ProtocolError('not an HTTP answer: %r' % status[:80])
            self._version, self.status = parts[0], int(parts[1])
            self.reason = parts[2] if len(parts) > 2 else ''
            self.headers.clear()
            for _count in range(MAX_HEADERS + 1):
                line = self._line()
                if line in (b'\r\n', b'\n', b''):
                    break
                name, sep, value = line.decode('latin-1').partition(':')
                if sep:
                    key = name.strip().lower()
                    value = value.strip()
                    self.headers[key] = self.headers[key] + ', ' + value if key in self.headers else value
            else:
                raise ProtocolError('more than %d header lines' % MAX_HEADERS)
            if self.status != 100:   # an interim answer (Continue) is followed by the real one
                return

    # ---- the body

    def supports_chunked_reads(self):
        return self.chunked

    def read_chunked(self, amt=None, decode_content=True):
        """The chunks of a chunked body as the server sends them (a watch sends an event per chunk)."""
        del amt, decode_content
        try:
            while not self._done:
                size_line = self._line()
                if not size_line:
                    raise ProtocolError('Connection broken: the chunked body ended early')
                size = int(size_line.split(b';', 1)[0].strip() or b'0', 16)
                if size == 0:
                    while self._line() not in (b'\r\n', b'\n', b''):
                        pass   # trailers
                    self._done = True
                    return
                data = self._conn.reader.read(size)
                if len(data) < size:
                    raise ProtocolError('Connection broken: %d of %d bytes of a chunk' % (len(data), size))
                self._conn.reader.readline(MAX_LINE)
                yield data
        except (OSError, ValueError) as exc:
            raise self._failed(exc)

    def stream(self, amt=4096, decode_content=True):
        """The body in pieces of at most ``amt`` bytes."""
        del decode_content
        if self.chunked:
            for chunk in self.read_chunked():
                for start in range(0, len(chunk), amt):
                    yield chunk[start:start + amt]
            return
        try:
            while not self._done:
                size = amt if self._remaining is None else min(amt, self._remaining)
                data = self._conn.reader.read1(size)
                if not data:
                    if self._remaining is not None:
                        raise ProtocolError('Connection broken: the body ended %d bytes early' % self._remaining)
                    self._done = True
                    return
                if self._remaining is not None:
                    self._remaining -= len(data)
                    self._done = self._remaining == 0
                yield data
        except (OSError, ValueError) as exc:
            raise self._failed(exc)

    def read(self, amt=None, decode_content=True):
        """The whole body (``amt`` is not supported: the callers read whole answers)."""
        del amt, decode_content
        if self.chunked:
            return b''.join(self.read_chunked())
        if self._remaining is not None:
            try:
                data = self._conn.reader.read(self._remaining) if self._remaining else b''
            except (OSError, ValueError) as exc:
                raise self._failed(exc)
            if len(data) < self._remaining:
                self._keep = False
                raise ProtocolError('Connection broken: %d of %d bytes of the body' % (len(data), self._remaining))
            self._remaining, self._done = 0, True
            return data
        return b''.join(self.stream(65536))

    # ---- the connection

    def release_conn(self):
        if not self._released:
            self._released = True
            self._pool._give_back(self._conn, self._keep and self._done)

    def close(self):
        self._keep = False
        self.release_conn()
