"""Connections held open beside a load benchmark (bench/load.py --hostile): idle kept-alive connections
and slowloris clients, as an attacker inside the cluster would hold them.

- idle: a TLS connection that made one request and then says nothing (the server keeps it up to its idle
  timeout, 120 s);
- slowloris: a TLS connection sending its request headers a byte a second (the server's header deadline,
  5 s, closes it; it reconnects at once, as an attacker would).

They run as asyncio tasks on a thread of their own; `held()` says how many are open now."""
from __future__ import annotations

import asyncio
import ssl
import threading

SERVER_NAME = "gpu-admission.gpu-admission.svc"
_REQUEST = (b"GET /healthz HTTP/1.1\r\nHost: " + SERVER_NAME.encode() + b"\r\n\r\n")
_SLOW_HEAD = b"POST /validate?timeout=10s HTTP/1.1\r\nHost: " + SERVER_NAME.encode() + b"\r\n"


class Hostile:
    def __init__(self, port: int, ca: str, *, idle: int, slowloris: int):
        self.port = port
        self.context = ssl.create_default_context(cafile=ca)
        self.counts = {"idle": idle, "slowloris": slowloris}
        self.open = {"idle": 0, "slowloris": 0}
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: self._loop.run_until_complete(self._main()), daemon=True)

    def __enter__(self) -> Hostile:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(60)

    def held(self) -> int:
        return sum(self.open.values())

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        gate = asyncio.Semaphore(64)
        tasks = [asyncio.create_task(self._client(kind, gate)) for kind, n in self.counts.items() for _ in range(n)]
        self._ready.set()
        await self._stopping.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _client(self, kind: str, gate: asyncio.Semaphore) -> None:
        while not self._stopping.is_set():
            writer = None
            try:
                async with gate:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(
                        "127.0.0.1", self.port, ssl=self.context, server_hostname=SERVER_NAME), 30)
                    if kind == "idle":
                        writer.write(_REQUEST)
                        await reader.readuntil(b"\r\n\r\n")
                self.open[kind] += 1
                try:
                    if kind == "idle":
                        await reader.read()  # the answer's body, then nothing until the server closes
                    else:
                        writer.write(_SLOW_HEAD)
                        while not reader.at_eof():
                            await asyncio.sleep(1.0)
                            writer.write(b"X")
                            await writer.drain()
                finally:
                    self.open[kind] -= 1
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ssl.SSLError):
                await asyncio.sleep(0.1)
            finally:
                if writer is not None:
                    writer.transport.abort()
