"""The thread that watches for changes: the policy file (webhook.config.store) and the serving certificate."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from webhook.logs import LOGGER

log = logging.getLogger(f"{LOGGER}.policy")


class Watcher:
    """Calls `check` every `interval` seconds on a daemon thread until stopped."""

    def __init__(self, check: Callable[[], object], interval: float, name: str):
        self._check = check
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._check()
            except Exception as exc:  # a watcher that dies silently would freeze the policy forever
                log.error("watch check failed", extra={"fields": {"event": "watch-error", "watcher": self._thread.name,
                                                                  "error": type(exc).__name__}})
