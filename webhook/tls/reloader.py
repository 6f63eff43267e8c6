"""The serving certificate, reloaded when its files change on disk (cert-manager renewals, Secret updates).

Every context the reloader builds selects, during each TLS handshake (OpenSSL's server-name callback,
called with or without SNI), the reloader's current context: so a new connection gets the newest
certificate however long ago the worker took its context, and connections already open keep theirs.
The check behind it is a stat of both files at most once a second. A changed pair that does not load
(the two files caught mid-update, a key that does not match) is not taken: the previous context keeps
serving and the next check tries again."""
from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from webhook.logs import LOGGER

log = logging.getLogger(f"{LOGGER}.tls")
CHECK_INTERVAL = 1.0


@dataclass(frozen=True, slots=True)
class CertificateStatus:
    loaded: bool
    not_after: float | None = None  # unix time the certificate in use expires
    error: str = ""  # why the files on disk are not the ones in use

    def as_dict(self) -> dict:
        out: dict = {"loaded": self.loaded}
        if self.not_after is not None:
            out["notAfter"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.not_after))
        if self.error:
            out["error"] = self.error
        return out


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    return context


class CertificateReloader:
    def __init__(self, cert: Path, key: Path):
        self.cert = Path(cert)
        self.key = Path(key)
        self._lock = threading.Lock()
        self._fingerprint: tuple | None = None
        self._checked = 0.0
        self._context: ssl.SSLContext | None = None
        self.status = CertificateStatus(False)
        self.refresh()
        if self._context is None:
            raise ssl.SSLError(f"cannot load the serving certificate {self.cert} with key {self.key}: "
                               f"{self.status.error}")

    def context(self) -> ssl.SSLContext:
        if time.monotonic() - self._checked >= CHECK_INTERVAL:
            self.refresh()
        return self._context  # type: ignore[return-value]

    def _select(self, sslobj, server_name, context) -> None:
        current = self.context()
        if current is not context:
            sslobj.context = current

    def refresh(self) -> bool:
        """Load the pair when either file changed; True when a new context took effect."""
        with self._lock:
            self._checked = time.monotonic()
            try:
                fingerprint = tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in map(os.stat, (self.cert, self.key)))
            except OSError as exc:
                self._failed(f"{exc.strerror}: {exc.filename}")
                return False
            if fingerprint == self._fingerprint:
                return False
            try:
                context = server_context(self.cert, self.key)
                context.sni_callback = self._select
                served = x509.load_pem_x509_certificate(self.cert.read_bytes())
            except (OSError, ssl.SSLError, ValueError) as exc:
                self._failed(str(exc) or type(exc).__name__)
                return False  # fingerprint not recorded: the next check retries the pair
            self._fingerprint = fingerprint
            replaced = self._context is not None
            self._context = context
            self.status = CertificateStatus(True, served.not_valid_after_utc.timestamp())
            log.info(f"serving certificate {'reloaded' if replaced else 'loaded'}", extra={"fields": {
                "event": "certificate-reloaded" if replaced else "certificate-loaded", "cert": str(self.cert),
                "serial": f"{served.serial_number:x}", "not_after": self.status.as_dict()["notAfter"]}})
            return True

    def _failed(self, error: str) -> None:
        if error != self.status.error:
            log.warning("serving certificate files not loaded; the previous certificate stays in use",
                        extra={"fields": {"event": "certificate-refused", "cert": str(self.cert), "error": error}})
        self.status = CertificateStatus(self._context is not None, self.status.not_after, error)


_reloaders: dict[tuple[str, str], CertificateReloader] = {}
_reloaders_lock = threading.Lock()


def reloader_for(cert: Path, key: Path) -> CertificateReloader:
    """The process's reloader for this pair: the gunicorn hook serves from it, /readyz reports it.
    Raises ssl.SSLError when the pair does not load the first time."""
    with _reloaders_lock:
        k = (str(cert), str(key))
        if k not in _reloaders:
            _reloaders[k] = CertificateReloader(Path(cert), Path(key))
        return _reloaders[k]
