"""A one-line progress bar on stderr, drawn only when stderr is a terminal (never in CI logs or pipes)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from webhook.lookups.resources import ApiResource

_WIDTH = 30
_INTERVAL = 0.1  # seconds between redraws: a bar must not cost more than the work it shows


class Progress:
    def __init__(self, stream: TextIO, *, enabled: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._clock = clock
        self._drawn_at = float("-inf")
        self._listed = 0
        self._shown = False

    def listed(self, resource: ApiResource, count: int) -> None:
        self._listed += count
        self._draw(f"listing {resource.qualified}: {self._listed} objects so far")

    def evaluated(self, done: int, total: int) -> None:
        filled = _WIDTH * done // total if total else _WIDTH
        self._draw(f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total} evaluated", force=done == total)

    def finish(self) -> None:
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._shown = False

    def _draw(self, text: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._drawn_at < _INTERVAL:
            return
        self._drawn_at = now
        self._stream.write(f"\r\033[K{text}")
        self._stream.flush()
        self._shown = True
