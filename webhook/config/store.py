"""The policy in force, reloaded when its file changes (webhook.server.reload watches for changes).

A ConfigMap volume updates by swapping the `..data` symlink to a new directory: the file's path stays,
its resolved inode changes. So the watch compares the resolved file's identity, size and mtime, then
the content's digest. A file that does not load is refused whole: the previous policy stays in force
and the status (hence /readyz and a metric) says so until a good file replaces it."""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from webhook.config.load import ConfigError, default_policy, parse_policy
from webhook.config.model import Policy

# A child of the server's logger (webhook.logs.LOGGER), named here so that config imports no server code.
log = logging.getLogger("gpu_admission.policy")
SHIPPED_DEFAULT = "shipped default"


@dataclass(frozen=True, slots=True)
class PolicyStatus:
    source: str  # the file in force, or the shipped default
    digest: str  # sha256 of the text in force ("" for the shipped default)
    loaded_at: float  # unix time
    refused: tuple[str, ...] = ()  # why the file now on disk was refused; () when it is in force

    def as_dict(self) -> dict:
        out = {"source": self.source, "digest": self.digest, "loadedAt": self.loaded_at,
               "inForce": "last good policy" if self.refused else "current file"}
        if self.refused:
            out["refused"] = list(self.refused)
        return out


class PolicyStore:
    """Readers take `.policy` (one attribute read, atomic); `refresh()` swaps in a new one and calls
    `on_reload(ok, loaded_at)` after each reload it attempted."""

    def __init__(self, path: Path | None, *, on_reload: Callable[[bool, float | None], None] | None = None):
        self.path = path
        self._on_reload = on_reload or (lambda ok, loaded_at: None)
        self._lock = threading.Lock()
        self._fingerprint: tuple | None = None
        raw = self._changed_bytes()
        if raw is None:
            # The deployed default path without a mounted file: run the shipped default, keep watching.
            self._digest = ""
            self.policy: Policy = default_policy()
            self.status = PolicyStatus(SHIPPED_DEFAULT, "", time.time())
        else:
            self._digest = _digest(raw)
            self.policy = _parse(raw, path)  # ConfigError: a server never starts half-configured
            self.status = PolicyStatus(str(path), self._digest, time.time())

    def refresh(self) -> bool:
        """Reload when the file's content changed; True when a new policy took effect."""
        with self._lock:
            raw = self._changed_bytes()
            if raw is None or _digest(raw) == self._digest:
                return False  # unchanged, missing, or touched/re-linked with the same content
            self._digest = _digest(raw)
            try:
                policy = _parse(raw, self.path)
            except ConfigError as exc:
                self.status = PolicyStatus(self.status.source, self.status.digest, self.status.loaded_at,
                                           tuple(exc.errors))
                log.error("policy file refused; the previous policy stays in force",
                          extra={"fields": {"event": "policy-refused", "path": str(self.path), "errors": exc.errors,
                                            "refused_digest": self._digest, "in_force": self.status.digest}})
                self._on_reload(False, None)
                return False
            self.policy = policy
            self.status = PolicyStatus(str(self.path), self._digest, time.time())
            log.info("policy reloaded", extra={"fields": {"event": "policy-reloaded", "path": str(self.path),
                                                          "digest": self._digest}})
            self._on_reload(True, self.status.loaded_at)
            return True

    def _changed_bytes(self) -> bytes | None:
        """The file's bytes when its identity, size or mtime changed since the last read, else None."""
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)  # follows the ..data symlink to the file now in place
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == self._fingerprint:
                return None
            raw = self.path.read_bytes()
        except OSError:
            return None  # not mounted (yet), or caught mid-swap: keep what is in force, look again later
        self._fingerprint = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        return raw


def _digest(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _parse(raw: bytes, path: Path | None) -> Policy:  # the store's path: never None when there are bytes
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(["not UTF-8 text"], str(path)) from None
    return parse_policy(text, str(path))
