"""Certificates: what `gpu-admission certs` writes, and the serving certificate reloading from disk."""
from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from webhook.cli import certs as certs_cli
from webhook.tls import certs
from webhook.tls.reloader import CertificateReloader, server_context

SERVICE, NAMESPACE = "gpu-admission", "gpu-system"
SERVER_NAME = f"{SERVICE}.{NAMESPACE}.svc"


@pytest.fixture(scope="module")
def bundle():
    return certs.generate(SERVICE, NAMESPACE)


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def test_keys_are_ecdsa_p256(bundle):
    for pem in (bundle.ca_cert, bundle.cert):
        key = _cert(pem).public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


def test_serving_certificate_names_the_service(bundle):
    sans = _cert(bundle.cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        f"{SERVICE}.{NAMESPACE}.svc", f"{SERVICE}.{NAMESPACE}.svc.cluster.local", SERVICE, f"{SERVICE}.{NAMESPACE}",
        "localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_no_localhost_when_asked():
    sans = _cert(certs.generate(SERVICE, NAMESPACE, localhost=False).cert).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert "localhost" not in sans.get_values_for_type(x509.DNSName)
    assert sans.get_values_for_type(x509.IPAddress) == []


def test_chain_and_usages(bundle):
    ca, leaf = _cert(bundle.ca_cert), _cert(bundle.cert)
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH])
    now = dt.datetime.now(dt.UTC)
    assert leaf.not_valid_before_utc < now < leaf.not_valid_after_utc
    assert dt.timedelta(days=364) < leaf.not_valid_after_utc - now <= dt.timedelta(days=365)
    assert ca.not_valid_after_utc - now > dt.timedelta(days=3600)


@pytest.mark.parametrize(("service", "namespace"), [
    pytest.param("Bad_Name", "ns", id="service-not-dns"),
    pytest.param("svc", "ns.with.dots", id="namespace-dots"),
    pytest.param("x" * 64, "ns", id="too-long"),
])
def test_names_must_be_dns_labels(service, namespace):
    with pytest.raises(ValueError, match="is not a DNS label"):
        certs.generate(service, namespace)


def _handshake(server: ssl.SSLContext, ca: Path, server_name: str) -> bytes:
    """One TLS handshake against a server using `server`, verified against `ca`: the certificate served (DER)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        try:
            with server.wrap_socket(conn, server_side=True) as s:
                s.recv(1)
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = ssl.create_default_context(cafile=str(ca))
    try:
        with socket.create_connection(("127.0.0.1", port)) as raw, \
                client.wrap_socket(raw, server_hostname=server_name) as s:
            der = s.getpeercert(binary_form=True)
            s.sendall(b"x")
            return der
    finally:
        thread.join(5)
        listener.close()


@pytest.fixture
def written(tmp_path, bundle):
    certs.write(bundle, tmp_path)
    return tmp_path


@pytest.mark.parametrize("server_name", [SERVER_NAME, f"{SERVER_NAME}.cluster.local", "localhost", "127.0.0.1"])
def test_clients_verify_it_against_the_ca(written, server_name):
    _handshake(server_context(written / "tls.crt", written / "tls.key"), written / "ca.crt", server_name)


def test_a_name_it_does_not_carry_fails_verification(written):
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        _handshake(server_context(written / "tls.crt", written / "tls.key"), written / "ca.crt",
                   f"other.{NAMESPACE}.svc")


def test_files_and_modes(written):
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in written.iterdir()}
    assert modes == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}


def test_existing_files_are_not_replaced_without_force(written):
    with pytest.raises(FileExistsError, match=r"ca\.crt"):
        certs.write(certs.generate(SERVICE, NAMESPACE), written)
    certs.write(certs.generate(SERVICE, NAMESPACE), written, force=True)
    assert sorted(p.name for p in written.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]  # no temp files


def test_private_keys_stay_0600_when_replaced_under_a_loose_umask(written):
    os.chmod(written / "tls.key", 0o644)
    old = os.umask(0)
    try:
        certs.write(certs.generate(SERVICE, NAMESPACE), written, force=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((written / "tls.key").stat().st_mode) == 0o600


def test_renewal_keeps_the_ca(written, bundle):
    certs.renew(written, SERVICE, NAMESPACE)
    assert (written / "ca.crt").read_bytes() == bundle.ca_cert
    assert (written / "tls.crt").read_bytes() != bundle.cert
    _cert((written / "tls.crt").read_bytes()).verify_directly_issued_by(_cert(bundle.ca_cert))


def test_dev_certs_are_made_once(tmp_path):
    cert, key, ca, created = certs.ensure_dev_certs(tmp_path / "certs")
    assert created and cert.exists() and key.exists() and ca.exists()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before = cert.read_bytes()
    assert certs.ensure_dev_certs(tmp_path / "certs")[3] is False
    assert cert.read_bytes() == before


def _cli(argv):
    parser = argparse.ArgumentParser(prog="gpu-admission")
    certs_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize(("argv", "code", "expect"), [
    pytest.param([], 0, "serving certificate for svc.team.svc, svc.team.svc.cluster.local", id="fresh"),
    pytest.param(["--no-localhost"], 0, "svc.team; valid 365 days", id="no-localhost"),
    pytest.param(["--days", "0"], 2, "--days must be at least 1", id="days-zero"),
    pytest.param(["--renew"], 2, "No such file", id="renew-without-ca"),
])
def test_certs_command(tmp_path, capsys, argv, code, expect):
    out = tmp_path / "out"
    assert _cli(["certs", "--out", str(out), "--service", "svc", "--namespace", "team", *argv]) == code
    captured = capsys.readouterr()
    assert expect in (captured.out if code == 0 else captured.err)


def test_certs_command_refuses_to_overwrite_then_renews(tmp_path, capsys):
    out = tmp_path / "out"
    assert _cli(["certs", "--out", str(out)]) == 0
    ca = (out / "ca.crt").read_bytes()
    assert _cli(["certs", "--out", str(out)]) == 2
    assert "pass --force to replace them" in capsys.readouterr().err
    assert _cli(["certs", "--out", str(out), "--renew"]) == 0
    assert (out / "ca.crt").read_bytes() == ca
    assert _cli(["certs", "--out", str(out), "--force"]) == 0
    assert (out / "ca.crt").read_bytes() != ca


# ---- reloading ----------------------------------------------------------------------------------


def _serial(der: bytes) -> int:
    return x509.load_der_x509_certificate(der).serial_number


def test_reloader_refuses_to_start_without_a_certificate(tmp_path):
    with pytest.raises(ssl.SSLError, match="cannot load the serving certificate"):
        CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")


def test_a_changed_pair_is_served_to_new_connections(written, bundle):
    reloader = CertificateReloader(written / "tls.crt", written / "tls.key")
    first = reloader.context()  # what a worker that took its context once keeps using
    assert _serial(_handshake(first, written / "ca.crt", SERVER_NAME)) == _cert(bundle.cert).serial_number
    certs.renew(written, SERVICE, NAMESPACE)
    assert reloader.refresh() is True
    new_serial = _cert((written / "tls.crt").read_bytes()).serial_number
    # The old context selects the current one during the handshake (OpenSSL's server-name callback).
    assert _serial(_handshake(first, written / "ca.crt", SERVER_NAME)) == new_serial
    assert _serial(_handshake(first, written / "ca.crt", "127.0.0.1")) == new_serial  # no SNI sent
    assert reloader.status.loaded and reloader.status.error == ""


def test_a_half_updated_pair_is_not_taken(written, bundle, caplog):
    reloader = CertificateReloader(written / "tls.crt", written / "tls.key")
    old_serial = _cert(bundle.cert).serial_number
    renewed = certs.issue(bundle.ca_cert, bundle.ca_key, SERVICE, NAMESPACE)
    (written / "tls.crt").write_bytes(renewed.cert)  # the certificate arrived, its key not yet
    assert reloader.refresh() is False
    assert reloader.status.loaded and "KEY_VALUES_MISMATCH" in reloader.status.error.upper().replace(" ", "_")
    assert _serial(_handshake(reloader.context(), written / "ca.crt", SERVER_NAME)) == old_serial
    (written / "tls.key").write_bytes(renewed.key)
    assert reloader.refresh() is True and reloader.status.error == ""
    assert _serial(_handshake(reloader.context(), written / "ca.crt", SERVER_NAME)) == \
        _cert(renewed.cert).serial_number
    refused = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "certificate-refused"]
    assert len(refused) == 1


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077], ids=["umask-000", "umask-022", "umask-077"])
def test_the_certificate_directory_is_never_world_writable(tmp_path, umask):
    previous = os.umask(umask)
    try:
        certs.ensure_dev_certs(tmp_path / "a" / "certs")
    finally:
        os.umask(previous)
    for directory in (tmp_path / "a", tmp_path / "a" / "certs"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755, directory
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "a" / "certs").iterdir()}
    assert modes == {"ca.crt": 0o644, "ca.key": 0o600, "tls.crt": 0o644, "tls.key": 0o600}
