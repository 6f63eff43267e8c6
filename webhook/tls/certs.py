"""A CA and a serving certificate for the webhook's Service (ECDSA P-256, with `cryptography`).

The apiserver verifies the serving certificate against the webhook configuration's `caBundle` with the
server name `<service>.<namespace>.svc`; `localhost` and `127.0.0.1` are added for development."""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVING_DAYS = 365
CLOCK_SKEW = dt.timedelta(minutes=5)  # valid from a little before now: tolerate clocks behind ours
FILES = ("ca.crt", "ca.key", "tls.crt", "tls.key")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Bundle:
    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def files(self) -> dict[str, tuple[bytes, int]]:
        """File name -> (PEM, mode): private keys are readable by their owner only."""
        return {"ca.crt": (self.ca_cert, 0o644), "ca.key": (self.ca_key, 0o600),
                "tls.crt": (self.cert, 0o644), "tls.key": (self.key, 0o600)}


def dns_names(service: str, namespace: str, *, localhost: bool = True) -> list[str]:
    for what, value in (("service", service), ("namespace", namespace)):
        if not _DNS_LABEL.match(value) or len(value) > 63:
            raise ValueError(f"{what} {value!r} is not a DNS label (lower-case letters, digits and '-')")
    names = [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", service,
             f"{service}.{namespace}"]
    return names + (["localhost"] if localhost else [])


def generate(service: str, namespace: str, *, localhost: bool = True, days: int = SERVING_DAYS,
             now: dt.datetime | None = None) -> Bundle:
    """A new CA, and a serving certificate from it."""
    dns_names(service, namespace)  # refuse bad names before making keys
    now = now or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gpu-admission CA for {service}.{namespace}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + dt.timedelta(days=max(CA_DAYS, days)))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return issue(_pem(ca), _key_pem(ca_key), service, namespace, localhost=localhost, days=days, now=now)


_SIGNING_KEYS = (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey, dsa.DSAPrivateKey, ed25519.Ed25519PrivateKey,
                 ed448.Ed448PrivateKey)


def issue(ca_cert: bytes, ca_key: bytes, service: str, namespace: str, *, localhost: bool = True,
          days: int = SERVING_DAYS, now: dt.datetime | None = None) -> Bundle:
    """A new serving certificate (and key) from an existing CA: a renewal keeps the caBundle valid."""
    names = dns_names(service, namespace, localhost=localhost)
    now = now or dt.datetime.now(dt.UTC)
    ca = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    if not isinstance(signer, _SIGNING_KEYS):  # a DH or X25519 key cannot sign a certificate
        raise ValueError(f"the CA key is a {type(signer).__name__}, which cannot sign certificates")
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    if localhost:
        sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False)
        .sign(signer, hashes.SHA256())
    )
    return Bundle(ca_cert, ca_key, _pem(cert), _key_pem(key))


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_cert_sign=cert_sign, crl_sign=cert_sign, content_commitment=False,
                         key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                         decipher_only=False)


def write(bundle: Bundle, out_dir: Path, *, force: bool = False) -> list[Path]:
    """Write the four files; refuses to replace a different existing one unless `force` (a CA key is
    not something to lose by accident). Each file is replaced atomically, private keys created 0600."""
    _make_dirs(out_dir)
    files = bundle.files()
    existing = [out_dir / n for n, (data, _) in files.items()
                if (out_dir / n).exists() and (out_dir / n).read_bytes() != data]
    if existing and not force:
        raise FileExistsError(f"{', '.join(map(str, existing))} already exist{'s' if len(existing) == 1 else ''}")
    # Keys first, certificates last: a reader watching tls.crt never finds it ahead of its key.
    for name in ("ca.key", "ca.crt", "tls.key", "tls.crt"):
        data, mode = files[name]
        _write_atomic(out_dir / name, data, mode)
    return [out_dir / n for n in FILES]


def renew(out_dir: Path, service: str, namespace: str, *, localhost: bool = True,
          days: int = SERVING_DAYS) -> list[Path]:
    """A new serving certificate from the CA already in `out_dir` (ca.crt and ca.key kept)."""
    bundle = issue((out_dir / "ca.crt").read_bytes(), (out_dir / "ca.key").read_bytes(), service, namespace,
                   localhost=localhost, days=days)
    return write(bundle, out_dir, force=True)


def ensure_dev_certs(out_dir: Path) -> tuple[Path, Path, Path, bool]:
    """(tls.crt, tls.key, ca.crt, created): development certificates, generated when any is missing."""
    cert, key, ca = out_dir / "tls.crt", out_dir / "tls.key", out_dir / "ca.crt"
    if cert.exists() and key.exists() and ca.exists():
        return cert, key, ca, False
    write(generate("gpu-admission", "gpu-admission"), out_dir, force=True)
    return cert, key, ca, True


def _make_dirs(out_dir: Path) -> None:
    """`out_dir` and any missing parent, mode 0755 whatever the umask: under umask 000 `mkdir` makes them
    world-writable, and anyone could then swap the serving key or the CA for their own."""
    missing = [d for d in (out_dir, *out_dir.parents) if not d.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o755, exist_ok=True)
        os.chmod(directory, 0o755)  # mkdir's mode goes through the umask


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, mode)  # O_CREAT's mode applies only to a new file, and through the umask
        f.write(data)
        f.flush()
        os.fsync(fd)
    os.replace(tmp, path)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
