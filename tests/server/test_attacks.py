"""Slow, stalled and silent clients do not stop the webhook (issue 12): the real server, with the settings
`gpu-admission serve` and the chart use (TLS, two workers, the default deadlines and cap), holding 1,000
connections of each kind at once, answers reviews on a fresh connection and on a kept-alive one within 1 s,
and its health endpoint too; and again once they are gone.

The attackers are asyncio coroutines in a thread of their own; each keeps one connection of its kind open
the whole time, opening a new one when the server's deadline closes it (as an attacker would)."""
from __future__ import annotations

import asyncio
import ssl
import threading
import time

import pytest

from .served import SERVER_NAME, serve

pytestmark = pytest.mark.slow
PER_KIND = 1000
BODY = 3 * 1024 * 1024
HEAD = (b"POST /validate?timeout=10s HTTP/1.1\r\nHost: " + SERVER_NAME.encode() +
        b"\r\nContent-Type: application/json\r\n")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
       "spec": {"containers": [{"name": "trainer", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                                "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}],
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


class Attack:
    """PER_KIND connections of each kind, kept open until `stop()`."""

    KINDS = ("one-byte", "slowloris", "slow-body", "silent")

    def __init__(self, port: int, context: ssl.SSLContext):
        self.port = port
        self.context = context
        self.open = dict.fromkeys(self.KINDS, 0)
        self.opened = dict.fromkeys(self.KINDS, 0)
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = threading.Event()

    def start(self) -> Attack:
        self._thread.start()
        self._started.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(60)
        assert not self._thread.is_alive(), "the attackers did not stop"

    def held(self) -> int:
        return sum(self.open.values())

    def _run(self) -> None:
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        # Connects in flight at once, per kind: the listen queues hold them, and a slow TLS handshake of one
        # kind does not hold up the others.
        gates = {kind: asyncio.Semaphore(128) for kind in self.KINDS}
        tasks = [asyncio.create_task(self._attacker(kind, gates[kind])) for _ in range(PER_KIND) for kind in self.KINDS]
        self._started.set()
        await self._stopping.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _attacker(self, kind: str, gate: asyncio.Semaphore) -> None:
        while not self._stopping.is_set():
            writer = None
            try:
                async with gate:
                    tls = kind in ("slowloris", "slow-body")
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(
                        "127.0.0.1", self.port, ssl=self.context if tls else None,
                        server_hostname=SERVER_NAME if tls else None), 30)
                self.open[kind] += 1
                self.opened[kind] += 1
                try:
                    await self._hold(kind, reader, writer)
                finally:
                    self.open[kind] -= 1
            except (TimeoutError, OSError, ssl.SSLError):
                await asyncio.sleep(0.05)
            finally:
                if writer is not None:
                    writer.transport.abort()

    async def _hold(self, kind: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if kind == "one-byte":
            writer.write(b"\x16")  # the first byte of a TLS handshake record, then nothing
        elif kind == "slow-body":
            writer.write(HEAD + f"Content-Length: {BODY}\r\n\r\n".encode() + b"{")
        elif kind == "slowloris":
            writer.write(HEAD[:20])
        trickle = {"slowloris": b"X", "slow-body": b" " * 64}.get(kind)
        if trickle is None:
            await reader.read(1)  # returns when the server closes the connection (a deadline)
            return
        while not reader.at_eof():  # EOF is seen without a read waiting: no timer per connection but the sleep
            await asyncio.sleep(1.0)
            writer.write(trickle)
            await writer.drain()


def _timed(call) -> tuple[float, object]:
    started = time.monotonic()
    result = call()
    return time.monotonic() - started, result


def _probe(served, kept) -> dict[str, float]:
    """Seconds each call took: a review on the kept-alive connection, one on a fresh connection, /healthz."""
    times = {}
    times["kept-alive review"], answer = _timed(lambda: served.api(kept).admit(POD, namespace="ml"))
    assert not answer.allowed and "[visible-devices-override]" in answer.validate.message

    def fresh_review():
        conn = served.connection(timeout=5)
        try:
            return served.api(conn).send("/validate", served.api(conn).review(POD, namespace="ml"))
        finally:
            conn.close()

    times["fresh review"], answer = _timed(fresh_review)
    assert not answer.allowed

    def fresh_health():
        conn = served.connection(timeout=5)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        finally:
            conn.close()

    times["fresh /healthz"], status = _timed(fresh_health)
    assert status == 200
    return times


def test_slow_stalled_and_silent_clients_do_not_stop_the_answers(tmp_path):
    with serve(tmp_path) as served:
        kept = served.connection()
        assert _probe(served, kept)  # the kept-alive connection exists before the attack
        attack = Attack(served.port, served.context()).start()
        try:
            for _ in range(3):
                # Each kind is renewed as the server's deadlines close it, so at times a share of one kind is
                # reconnecting: probe at a moment when the server holds them all.
                deadline = time.monotonic() + 60
                while min(attack.open.values()) < PER_KIND * 0.95 or served.established() < 4 * PER_KIND * 0.95:
                    assert time.monotonic() < deadline, f"the attack did not get its connections: {attack.open}"
                    time.sleep(0.05)
                times = _probe(served, kept)
                assert max(times.values()) < 1.0, (times, attack.open)
        finally:
            attack.stop()
        # Closed: by the server too (it sees 4,000 resets at once, and takes them in turn).
        deadline = time.monotonic() + 20
        while served.established() > 1:
            assert time.monotonic() < deadline, served.established()
            time.sleep(0.1)
        times = _probe(served, kept)
        assert max(times.values()) < 1.0, times
        kept.close()
        assert served.proc.poll() is None
        # No worker died or was restarted by its heartbeat meanwhile: the two booted at start, no more.
        messages = [r["message"] for r in served.records()]
        assert sum(m.startswith("Booting worker") for m in messages) == 2
        assert not any("WORKER TIMEOUT" in m for m in messages)
