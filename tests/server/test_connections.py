"""What the server does with each kind of connection (issue 12), on the real server over TLS with short
deadlines and a small cap so that each shows in a fraction of a second: every phase of a connection has
its deadline, the cap refuses at once, a body over the limit gets its 413 and the connection does what the
answer says, malformed HTTP gets a JSON Status, pipelined requests are all answered, and plain HTTP on the
HTTPS port is logged once, not once per attempt."""
from __future__ import annotations

import json
import socket
import ssl
import threading
import time

import pytest

from .apiserver import ApiServer
from .served import SERVER_NAME, serve

pytestmark = pytest.mark.slow
# A small body limit too, so that an oversized body is quick to send on a busy machine (the default 3 MiB
# is what tests/server/test_attacks.py's slow bodies use).
MAX_BODY = 64 * 1024
# The body deadline is the longest: an oversized body must reach its limit (and its 413) within it even while
# the machine is busy.
LIMITS = {"HANDSHAKE_TIMEOUT": "1", "HEADER_TIMEOUT": "1", "BODY_TIMEOUT": "3", "IDLE_TIMEOUT": "2",
          "MAX_CONNECTIONS": "30", "MAX_BODY_BYTES": str(MAX_BODY)}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cpu", "namespace": "ml"},
       "spec": {"containers": [{"name": "app", "image": "busybox"}]}}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("connections"), WORKERS="1", **LIMITS) as s:
        yield s


def _request(body: bytes, *, path: str = "/validate?timeout=10s", extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {SERVER_NAME}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def _review(pad_to: int = 0) -> bytes:
    body = json.dumps(ApiServer(None).review(POD, namespace="ml")).encode()
    return body + b" " * (pad_to - len(body)) if pad_to else body


def _read_response(f) -> tuple[int, dict[str, str], bytes]:
    status = f.readline()
    assert status.startswith(b"HTTP/1.1 "), status
    headers = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status.split()[1]), headers, f.read(int(headers["content-length"]))


def _closed_after(sock: socket.socket, limit: float = 6.0) -> float:
    """Seconds until the server closes `sock` (EOF or reset); what it sent meanwhile is dropped."""
    started = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, ssl.SSLError, OSError):
        pass
    return time.monotonic() - started


def _silent(served):
    return socket.create_connection(("127.0.0.1", served.port))


def _one_byte(served):
    s = socket.create_connection(("127.0.0.1", served.port))
    s.sendall(b"\x16")
    return s


def _slowloris(served):
    s = served.tls_socket()
    s.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
    stop = time.monotonic() + 5

    def trickle():
        try:
            while time.monotonic() < stop:
                s.sendall(b"X")
                time.sleep(0.2)
        except OSError:
            pass

    threading.Thread(target=trickle, daemon=True).start()
    return s


def _stalled_body(served):
    s = served.tls_socket()
    s.sendall(_request(b"x" * 1000)[:-990])  # the headers and 10 bytes of the body, then nothing
    return s


def _idle(served):
    s = served.tls_socket()
    s.sendall(_request(_review()))
    status, _, _ = _read_response(s.makefile("rb"))
    assert status == 200
    return s


@pytest.mark.parametrize(("open_", "deadline"), [
    pytest.param(_silent, 1.0, id="silent-connect-handshake-deadline"),
    pytest.param(_one_byte, 1.0, id="one-byte-handshake-deadline"),
    pytest.param(_slowloris, 1.0, id="slowloris-header-deadline"),
    pytest.param(_stalled_body, 3.0, id="stalled-body-deadline"),
    pytest.param(_idle, 2.0, id="idle-keepalive-deadline"),
])
def test_every_phase_has_its_deadline(served, open_, deadline):
    # The server's clock for a phase starts somewhere between the client's connect and the end of
    # `open_` (on a loaded machine the client may be descheduled for most of a second in between), so
    # the close is bounded below from the connect and above from the end of `open_`.
    connecting = time.monotonic()
    sock = open_(served)
    opened = time.monotonic()
    try:
        took = _closed_after(sock)
    finally:
        sock.close()
    closed = opened + took
    assert closed - connecting >= deadline * 0.8, (closed - connecting, opened - connecting)
    assert took < deadline + 1.5, took


def test_a_stalled_body_is_answered_408_before_the_close(served):
    sock = _stalled_body(served)
    try:
        status, headers, body = _read_response(sock.makefile("rb"))
    finally:
        sock.close()
    assert status == 408 and headers["connection"] == "close"
    assert json.loads(body)["reason"] == "RequestTimeout"


def test_a_busy_kept_alive_connection_outlives_the_idle_deadline(served):
    """The benign twin of the idle deadline: requests 0.5 s apart for longer than it, on one connection."""
    sock = served.tls_socket()
    f = sock.makefile("rb")
    try:
        started = time.monotonic()
        while time.monotonic() - started < 3.0:
            sock.sendall(_request(_review()))
            status, headers, _ = _read_response(f)
            assert status == 200 and headers.get("connection", "keep-alive") != "close"
            time.sleep(0.5)
    finally:
        sock.close()


def test_past_the_cap_a_connection_is_reset_at_once(served):
    held = [_silent(served) for _ in range(30)]
    try:
        time.sleep(0.3)  # accepted by the worker: it now holds its 30
        extra = _silent(served)
        took = _closed_after(extra)
        extra.close()
        assert took < 0.5  # refused, not queued until the others' handshake deadline (1 s)
    finally:
        for s in held:
            s.close()
    time.sleep(0.3)
    conn = served.connection()  # the benign twin: once they are gone, a connection is served again
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    conn.close()
    assert any(r.get("event") == "connection-refused" for r in served.records())


def _send_in_background(sock: ssl.SSLSocket, data: bytes) -> threading.Thread:
    def send():
        try:
            sock.sendall(data)
        except OSError:
            pass  # the server stopped reading (it said so): expected

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_an_oversized_body_gets_413_and_the_connection_closes_as_it_says(served, framing):
    body = b"{" + b" " * (MAX_BODY + 1024)
    if framing == "chunked":
        data = (f"POST /validate HTTP/1.1\r\nHost: {SERVER_NAME}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        data += b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 4096]), body[i:i + 4096])
                         for i in range(0, len(body), 4096)) + b"0\r\n\r\n"
    else:
        data = _request(body)
    for _ in range(3):  # every time, not mostly
        sock = served.tls_socket()
        sender = _send_in_background(sock, data)
        try:
            f = sock.makefile("rb")
            status, headers, answer = _read_response(f)
            assert status == 413 and headers["connection"] == "close"
            assert json.loads(answer)["reason"] == "RequestEntityTooLarge"
            assert f.read() == b""  # and closed, as it said
        finally:
            # Wake a sender still blocked in sendall before the descriptor is freed: closed first, its number
            # could be reused by the next connection, and the sender's TLS records would land on that one.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sender.join(5)
            assert not sender.is_alive()
            sock.close()


def test_a_body_at_the_limit_is_answered_and_the_connection_kept(served):
    """The benign twin of the 413: exactly the limit."""
    sock = served.tls_socket()
    f = sock.makefile("rb")
    try:
        for _ in range(2):
            sock.sendall(_request(_review(pad_to=MAX_BODY)))
            status, headers, _ = _read_response(f)
            assert status == 200 and headers.get("connection") != "close"
    finally:
        sock.close()


@pytest.mark.parametrize(("raw", "code"), [
    pytest.param(b"GET /<script>alert(1)</script> HTTP/1.1 extra\r\n\r\n", 400, id="bad-request-line"),
    pytest.param(b"GET /" + b"a" * 8000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, id="request-line-too-long"),
    pytest.param(b"POST /validate HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400, id="bad-header-name"),
])
def test_malformed_http_gets_a_json_status_not_an_html_page(served, raw, code):
    sock = served.tls_socket()
    try:
        sock.sendall(raw)
        status, headers, body = _read_response(sock.makefile("rb"))
    finally:
        sock.close()
    assert status == code and headers["content-type"] == "application/json"
    answer = json.loads(body)
    assert answer["kind"] == "Status" and answer["code"] == code and answer["message"].startswith("malformed HTTP")
    assert b"<" not in body and b"script" not in body and b"aaaa" not in body  # nothing of the request echoed


def test_pipelined_requests_are_all_answered_whatever_the_first_one_s_size(served):
    second = _request(_review())
    for size in (8191, 8192, 8193, 16384):
        first = next(r for n in range(size - 200, size) if len(r := _request(_review(pad_to=n))) == size)
        sock = served.tls_socket()
        f = sock.makefile("rb")
        try:
            sock.sendall(first + second)
            assert _read_response(f)[0] == 200
            assert _read_response(f)[0] == 200
        finally:
            sock.close()


def test_plain_http_on_the_https_port_is_logged_once_a_minute(served):
    before = sum(r.get("event") == "plain-http" for r in served.records())
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", served.port)) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            _closed_after(s, 3)
    time.sleep(0.2)
    assert sum(r.get("event") == "plain-http" for r in served.records()) - before <= 1
    assert sum(r.get("event") == "plain-http" for r in served.records()) >= 1


def test_the_probes_listener_answers_while_the_admission_port_is_full(tmp_path):
    """The chart's probes go to a plain-HTTP listener of their own (GPU_ADMISSION_HEALTH_BIND), with its own
    cap: a flood that fills the admission port's cap does not fail them, and it serves nothing else."""
    import http.client

    from tests.support import free_port

    health = free_port()
    with serve(tmp_path, WORKERS="1", MAX_CONNECTIONS="20", HEALTH_BIND=f"127.0.0.1:{health}") as s:
        held = [_silent(s) for _ in range(20)]
        try:
            time.sleep(0.3)
            extra = _silent(s)
            assert _closed_after(extra) < 0.5  # the admission port is full
            extra.close()
            for path, code in (("/healthz", 200), ("/readyz", 200), ("/validate", 404), ("/metrics", 404)):
                conn = http.client.HTTPConnection("127.0.0.1", health, timeout=2)
                conn.request("GET", path)
                response = conn.getresponse()
                assert response.status == code, path
                if code == 404:
                    assert json.loads(response.read())["kind"] == "Status"
                conn.close()
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crashed_worker_never_leaves_the_port_refusing_connections(tmp_path, workers):
    """With two workers (serve's and the chart's default) the other keeps the port answering; with one, the
    master holds the listening socket and a connection waits in its backlog until the new worker is up.
    (With two, connections already queued on the dead worker's own socket are reset with it: docs/server.md.)"""
    import os
    import signal

    from tests.support import group_pids

    with serve(tmp_path, WORKERS=workers) as s:
        victim = max(p for p in group_pids(s.proc.pid) if p != s.proc.pid)
        os.kill(victim, signal.SIGKILL)
        started = time.monotonic()
        while _alive(victim):  # dead, its sockets closed (a zombie until the master reaps it)
            time.sleep(0.01)
        for _ in range(10):
            conn = s.connection(timeout=15)  # ConnectionRefusedError here is the failure
            conn.request("GET", "/healthz")
            assert conn.getresponse().status == 200
            conn.close()
        assert time.monotonic() - started < 15


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:
        return False


def test_the_bodies_a_worker_holds_are_bounded_in_total(tmp_path):
    """Many clients sending bodies at once cannot take unbounded memory: past the worker's budget a body
    gets 503 and its connection closes, while a request that fits is answered; once the held bodies are
    gone (their deadline), the budget is whole again."""
    part = 56 * 1024  # what each held connection sends of its 64 KiB body before it stalls
    budget = 3 * part + 8 * 1024  # three held bodies fit, with room for a review; a fourth does not
    with serve(tmp_path, WORKERS="1", BODY_TIMEOUT="3", MAX_BODY_BYTES=str(MAX_BODY),
               MAX_BUFFERED_BYTES=str(budget)) as server:
        head = (f"POST /validate HTTP/1.1\r\nHost: {SERVER_NAME}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {MAX_BODY}\r\n\r\n").encode()
        held = []
        try:
            for _ in range(3):
                sock = server.tls_socket()
                sock.sendall(head + b" " * part)
                held.append(sock)
            time.sleep(0.3)  # the server has read what they sent
            review = server.tls_socket()
            f = review.makefile("rb")
            review.sendall(_request(_review()))  # a review of a few hundred bytes still fits
            assert _read_response(f)[0] == 200
            review.close()
            over = server.tls_socket()
            over.sendall(head + b" " * part)
            status, headers, body = _read_response(over.makefile("rb"))
            over.close()
            assert status == 503 and headers["connection"] == "close"
            assert json.loads(body)["reason"] == "ServiceUnavailable"
            assert any(r.get("event") == "bodies-full" for r in server.records())
            for sock in held:  # their deadline: 408, and what they held is given back
                assert _read_response(sock.makefile("rb"))[0] == 408
        finally:
            for sock in held:
                sock.close()
        again = server.tls_socket()
        again.sendall(head + b" " * MAX_BODY)  # a whole body of the largest size: answered (400: not JSON)
        status, _, _ = _read_response(again.makefile("rb"))
        again.close()
        assert status == 400


RAISING_APP = '''
def app(environ, start_response):
    if environ["PATH_INFO"] == "/readyz":
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]
    raise RuntimeError("a secret the answer must not carry")
'''


def test_an_app_that_raises_gets_a_500_status_not_a_silent_close(tmp_path):
    """The webhook's own app answers every error itself; a WSGI app that raises anyway (a bug) still gets its
    client an answer, a Kubernetes Status without the exception's text, rather than a closed connection."""
    (tmp_path / "raising.py").write_text(RAISING_APP)
    with serve(tmp_path, app="raising:app", WORKERS="1") as server:
        sock = server.tls_socket()
        try:
            sock.sendall(_request(_review()))
            status, headers, body = _read_response(sock.makefile("rb"))
        finally:
            sock.close()
        assert status == 500 and headers["connection"] == "close"
        assert json.loads(body)["reason"] == "InternalError" and b"secret" not in body
        assert any(r.get("event") == "internal-error" and r.get("error") == "RuntimeError" for r in server.records())
