"""Fixtures for the cluster tests: a fake apiserver over HTTPS, a kubeconfig pointing at it, the real
`kubernetes` client configured from that kubeconfig, informer settings with short timeouts."""
from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import yaml

from tests.support import REAL_MANIFESTS, SEED
from webhook.cli.main import main
from webhook.lookups.backoff import Backoff
from webhook.lookups.informer import InformerSettings
from webhook.lookups.kubeconfig import load_api_client

from .fakeapi import FakeApiServer, make_certificates

FAST = InformerSettings(page_size=2, list_timeout=2.0, connect_timeout=1.0, watch_seconds=30,
                        backoff=Backoff(initial=0.02, maximum=0.2, factor=2.0, jitter=0.5))


def eventually(predicate, timeout: float = 5.0, interval: float = 0.005):
    """Poll until `predicate()` is truthy; return its value or fail the test with what it last was."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            assert value, f"condition not met within {timeout}s"
            return value
        time.sleep(interval)


def seed_text(name: str) -> str:
    return (SEED / name).read_text(encoding="utf-8")


def real_manifest(name: str) -> str:
    return (REAL_MANIFESTS / name).read_text(encoding="utf-8")


def write_kubeconfig(path: Path, *, server: str, ca_file: str, token: str, context: str = "fake") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": context, "cluster": {"server": server, "certificate-authority": ca_file}}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
    }))
    return path


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def fake_api(certs):
    server = FakeApiServer(certs.server_context())
    yield server
    server.close()


@pytest.fixture
def kubeconfig(tmp_path, fake_api, certs) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", server=fake_api.url, ca_file=certs.ca_file,
                            token=fake_api.token)


@pytest.fixture
def api_client(kubeconfig):
    client = load_api_client(str(kubeconfig))
    yield client
    client.close()


@pytest.fixture
def unreachable_client(tmp_path, certs):
    """A client for an apiserver that is down: nothing listens on its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = write_kubeconfig(tmp_path / "down", server=f"https://127.0.0.1:{port}", ca_file=certs.ca_file,
                            token="test-token")
    client = load_api_client(str(path))
    yield client
    client.close()


@pytest.fixture
def audit(kubeconfig, capsys):
    """`gpu-admission audit` against the fake apiserver: exit code, stdout, stderr."""
    def run(*args: str) -> tuple[int, str, str]:
        rc = main(["audit", "--kubeconfig", str(kubeconfig), *args])
        out, err = capsys.readouterr()
        return rc, out, err
    return run
