"""The gunicorn worker the webhook runs in: gunicorn's gevent worker with deadlines and a connection cap.

Every connection is a greenlet on one event loop, so a client that is slow, stalls or says nothing holds
a socket and its buffers, never a thread that other requests wait for (docs/server.md says why this
model). Each phase of a connection has its own deadline: the TLS handshake, the request's headers, the
whole body (read here, in full, before the app runs: the app never blocks on a client), and the idle
wait between two requests of a kept-alive connection. Past `max_connections` open connections a new one
is reset at once instead of waiting in the accept queue, and the bodies a worker holds (read, or waiting
for the app) are bounded in total by `max_buffered_bytes`: a body that would pass it gets a 503 and the
connection closes, so memory stays bounded however many clients send at once. HTTP parsing, the WSGI environ and the
response are gunicorn's; only the order in which the phases run and their deadlines are this module's."""
from __future__ import annotations

import errno
import io
import logging
import os
import resource
import socket
import ssl
import struct
import time
import warnings
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus

import gevent
import gevent.monkey
from gevent.server import StreamServer
from gevent.socket import wait_read
from gunicorn import http, util
from gunicorn.http import errors as http_errors
from gunicorn.http.body import LengthReader
from gunicorn.sock import ssl_context
from gunicorn.workers.ggevent import GeventWorker

from webhook.admission.http import status_body
from webhook.logs import LOGGER

log = logging.getLogger(f"{LOGGER}.server")
PLAIN_HTTP_LOG_INTERVAL = 60.0  # one line a minute at most for clients speaking HTTP to the HTTPS port
LINGER_SECONDS = 2.0  # after an answer to a body not read: keep reading (and dropping) this long
LINGER_BYTES = 4 * 1024 * 1024
# A body is read, and counted against the worker's budget, this much at a time: a read waits for the whole
# chunk, so what a stalled body holds uncounted stays below it.
BODY_CHUNK = 8 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    handshake_timeout: float
    header_timeout: float
    body_timeout: float
    idle_timeout: float
    max_connections: int
    max_body_bytes: int
    max_buffered_bytes: int  # all request bodies a worker holds at once
    health_port: int | None = None  # a plain-HTTP listener of its own for /healthz and /readyz


HEALTH_PATHS = frozenset({"/healthz", "/readyz"})
HEALTH_MAX_CONNECTIONS = 64  # the kubelet's probes: a few at a time


class _Deadline(Exception):
    """A phase of the connection ran past its deadline; its text names the phase."""


class _Full(Exception):
    """The worker's bodies budget cannot take the rest of a body: it was answered 503."""


class _Listener(StreamServer):
    """gevent's accept loop, refusing a connection past the listener's cap before anything runs for it."""

    def __init__(self, sock, worker: AdmissionWorker, context: ssl.SSLContext | None, *, cap: int, health: bool):
        super().__init__(sock, handle=partial(worker._connection, self, context))
        self.worker = worker
        self.cap = cap
        self.health = health  # the probes' own listener: plain HTTP, health paths only, its own cap
        self.open = 0

    def do_handle(self, client, address):
        if self.open >= self.cap:
            _reset(client)
            self.worker.refused_connection(self.cap)
            return
        super().do_handle(client, address)


class AdmissionWorker(GeventWorker):
    """Configured through `configured(limits)`, which returns a subclass carrying them."""

    limits: Limits

    def patch(self):
        # gunicorn's master imported `ssl` (unpatched, as gunicorn's own gevent worker has it): gevent
        # warns, since a module that copied `ssl`'s names before would keep blocking ones. None of ours
        # does (the Kubernetes client is first imported in the worker, after this; tests/server checks).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gevent.monkey.MonkeyPatchWarning)
            super().patch()

    def init_process(self):
        self.listeners: list[_Listener] = []
        self._refused = 0
        self._plain_http = 0
        self._plain_http_logged = 0.0
        self._buffered = 0  # bytes of request bodies held now (read, or waiting for the app)
        self._full = 0
        _raise_open_file_limit()
        super().init_process()

    def run(self):
        context = ssl_context(self.cfg) if self.cfg.is_ssl else None
        for s in self.sockets:
            s.setblocking(1)
            health = s.getsockname()[1] == self.limits.health_port
            server = _Listener(s, self, None if health else context,
                               cap=HEALTH_MAX_CONNECTIONS if health else self.limits.max_connections, health=health)
            if self.cfg.workers > 1:
                server.max_accept = 1  # as gunicorn's gevent worker: let sibling workers take their share
            server.start()
            self.listeners.append(server)
        while self.alive:
            self.notify()
            gevent.sleep(1.0)
        for server in self.listeners:
            server.close()  # stop accepting; open connections finish their request, then close
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while self.open_connections and time.monotonic() < deadline:
            self.notify()
            gevent.sleep(0.2)
        if self.open_connections:
            self.log.warning("Worker graceful timeout (pid:%s)", self.pid)

    @property
    def open_connections(self) -> int:
        return sum(listener.open for listener in self.listeners)

    def refused_connection(self, cap: int) -> None:
        self._refused += 1
        if self._refused in (1, 10, 100) or self._refused % 1000 == 0:
            log.warning("connection refused: the worker holds as many connections as it may", extra={"fields": {
                "event": "connection-refused", "max_connections": cap, "refused": self._refused}})

    # One connection, from accept to close.
    def _connection(self, listener: _Listener, context: ssl.SSLContext | None, client, addr) -> None:
        listener.open += 1
        linger = False
        try:
            if context is not None:
                tls = self._handshake(context, client)
                if tls is None:
                    return
                client = tls
            linger = self._serve(listener, client, addr)
        except _Deadline:
            pass
        except (OSError, ssl.SSLError) as exc:  # the peer went away, or a broken TLS record
            if isinstance(exc, OSError) and exc.errno not in (None, errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN,
                                                               errno.EBADF, errno.ETIMEDOUT):
                self.log.debug("socket error: %s", type(exc).__name__)
        finally:
            listener.open -= 1
            if linger:
                _lingering_close(client)
            util.close(client)

    def _handshake(self, context: ssl.SSLContext, client):
        tls = context.wrap_socket(client, server_side=True, do_handshake_on_connect=False)
        try:
            with gevent.Timeout(self.limits.handshake_timeout, _Deadline("handshake")):
                tls.do_handshake()
        except ssl.SSLError as exc:
            if exc.reason == "HTTP_REQUEST":
                self._plain_http_attempt()
            util.close(tls)
            return None
        except (_Deadline, OSError):
            util.close(tls)
            return None
        return tls

    def _plain_http_attempt(self) -> None:
        self._plain_http += 1
        now = time.monotonic()
        if now - self._plain_http_logged >= PLAIN_HTTP_LOG_INTERVAL:
            log.warning("plain HTTP on the HTTPS port; the connection was closed (call https://)", extra={
                "fields": {"event": "plain-http", "attempts": self._plain_http,
                           "interval_s": PLAIN_HTTP_LOG_INTERVAL}})
            self._plain_http_logged = now
            self._plain_http = 0

    def _serve(self, listener, client, addr) -> bool:
        """The connection's requests, one after the other; True when it ends with a body left unread
        (the answer said `Connection: close`, and the close must not reset the answer away)."""
        parser = http.get_parser(self.cfg, client, addr)
        listener_name = listener.socket.getsockname()
        first = True
        while self.alive or first:
            req = None
            try:
                if not first and not _buffered(parser, client):
                    # Between two requests: idle until the client sends again, or closes. The first bytes
                    # are read here (at once when they are there already) and handed back to the parser.
                    try:
                        with gevent.Timeout(self.limits.idle_timeout, _Deadline("idle")):
                            data = client.recv(8192)
                    except _Deadline:
                        return False
                    if not data:
                        return False
                    parser.unreader.unread(data)
                with gevent.Timeout(self.limits.header_timeout, _Deadline("headers")):
                    req = next(parser)
            except (StopIteration, http_errors.NoMoreData, _Deadline):
                return False
            except (OSError, ssl.SSLError):
                raise
            except Exception as exc:  # a malformed request: answered, then closed
                self.handle_error(req, client, addr, exc)
                return False
            first = False
            try:
                unread, held = self._take_body(req, client)
            except (_Deadline, _Full):
                return True  # answered 408 or 503; the rest of the body may still be on its way
            try:
                if listener.health and req.path not in HEALTH_PATHS:
                    _write(client, http_status(404, "NotFound", "this port serves /healthz and /readyz only",
                                               close=True))
                    return unread
                try:
                    self.handle_request(listener_name, req, client, addr)
                except StopIteration:
                    return unread
                except (OSError, ssl.SSLError):
                    raise
                except Exception as exc:  # the app raised before it answered: a 500, never a silent close
                    self._app_failed(client, exc)
                    return True
            finally:
                self._buffered -= held
            if unread:  # never kept alive with a body left on the wire
                return True
        return False

    def _take_body(self, req, client) -> tuple[bool, int]:
        """Read the whole body under its deadline (at most the limit and one byte more), and hand the
        app a buffer of it. Returns whether the body is left unread (larger than the limit by its
        Content-Length: the app answers 413 from the length alone; or the connection then closes), and
        the bytes it holds of the worker's budget, which the caller gives back once answered."""
        limit = self.limits.max_body_bytes
        reader = req.body.reader
        if isinstance(reader, LengthReader) and reader.length > limit:
            req.must_close = True
            return True, 0
        chunks: list[bytes] = []
        held = 0
        try:
            with gevent.Timeout(self.limits.body_timeout, _Deadline("body")):
                while held <= limit:
                    chunk = req.body.read(min(BODY_CHUNK, limit + 1 - held))
                    if not chunk:
                        break
                    if self._buffered + len(chunk) > self.limits.max_buffered_bytes:
                        raise _Full()
                    self._buffered += len(chunk)
                    held += len(chunk)
                    chunks.append(chunk)
        except _Deadline:
            self._buffered -= held
            _write(client, http_status(408, "RequestTimeout", f"the request body did not arrive within "
                                       f"{self.limits.body_timeout:g} s", close=True))
            raise
        except _Full:
            self._buffered -= held
            self._bodies_full()
            _write(client, http_status(503, "ServiceUnavailable", "the server holds as many request bodies as it "
                                       "may at once; retry", close=True))
            raise
        if held > limit:  # a chunked body over the limit: the app says 413, and the rest is not read
            req.must_close = True
        req.body = io.BytesIO(b"".join(chunks))
        return held > limit, held

    def _bodies_full(self) -> None:
        self._full += 1
        if self._full in (1, 10, 100) or self._full % 1000 == 0:
            log.warning("request body refused: the worker holds as many request bodies as it may", extra={
                "fields": {"event": "bodies-full", "max_buffered_bytes": self.limits.max_buffered_bytes,
                           "refused": self._full}})

    def _app_failed(self, client, exc: Exception) -> None:
        log.error("the application raised before it answered; answered 500 and closed", extra={"fields": {
            "event": "internal-error", "error": type(exc).__name__}})
        try:
            _write(client, http_status(500, "InternalError", "the server failed to answer this request; see its log",
                                       close=True))
        except (OSError, ssl.SSLError):
            pass

    def handle_error(self, req, client, addr, exc):
        """A request gunicorn could not parse: a Kubernetes Status in JSON (gunicorn's own answer is an
        HTML page quoting the request line), and a log line naming the error's type only."""
        code, reason = _client_error(exc)
        log.warning("malformed HTTP request; answered and closed", extra={"fields": {
            "event": "bad-http", "status": code, "error": type(exc).__name__}})
        try:
            _write(client, http_status(code, reason, f"malformed HTTP request ({type(exc).__name__})", close=True))
        except (OSError, ssl.SSLError):
            pass


def configured(limits: Limits) -> type[AdmissionWorker]:
    """The worker class gunicorn is given: AdmissionWorker with these limits."""
    return type("AdmissionWorker", (AdmissionWorker,), {"limits": limits, "__module__": __name__})


_CLIENT_ERRORS = {
    "LimitRequestLine": (414, "RequestURITooLong"),
    "LimitRequestHeaders": (431, "RequestHeaderFieldsTooLarge"),
    "UnsupportedTransferCoding": (501, "NotImplemented"),
    "ExpectationFailed": (417, "ExpectationFailed"),
}


def _client_error(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, http_errors.ParseException):
        return _CLIENT_ERRORS.get(type(exc).__name__, (400, "BadRequest"))
    return 500, "InternalError"


def _buffered(parser, client) -> bool:
    """Bytes of a next request already read (pipelined), in gunicorn's buffer or in TLS's."""
    unreader = getattr(parser, "unreader", None)
    if unreader is not None and unreader.buf.getbuffer().nbytes:
        return True
    return isinstance(client, ssl.SSLSocket) and client.pending() > 0


def _write(client, data: bytes) -> None:
    util.write(client, data)


def http_status(code: int, reason: str, message: str, *, close: bool) -> bytes:
    """A whole HTTP/1.1 answer whose body is a Kubernetes Status."""
    body = status_body(code, reason, message)
    head = (f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{'Connection: close' if close else 'Connection: keep-alive'}\r\n\r\n")
    return head.encode("latin-1") + body


def _reset(client) -> None:
    """Close with a reset (SO_LINGER 0): the client learns at once, and no TIME_WAIT is left."""
    try:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    util.close(client)


def _lingering_close(client) -> None:
    """Half-close, then read and drop what the client still sends, for a little while: closing a socket
    with unread bytes resets the connection, and a reset can discard the answer before the client
    read it (what nginx calls a lingering close)."""
    raw = socket.socket(fileno=os.dup(client.fileno()))
    try:
        raw.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + LINGER_SECONDS
        dropped = 0
        while dropped < LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            wait_read(raw.fileno(), timeout=left, timeout_exc=_Deadline("linger"))
            chunk = raw.recv(65536)
            if not chunk:
                break
            dropped += len(chunk)
    except (_Deadline, OSError):
        pass
    finally:
        raw.close()


def _raise_open_file_limit() -> None:
    """Every connection is a file descriptor: take the hard limit, as Go's runtime does at start."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
