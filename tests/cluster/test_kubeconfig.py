"""Cluster configuration found as kubectl finds it: --kubeconfig, $KUBECONFIG (merged), ~/.kube/config,
--context, then the in-cluster service account."""
from __future__ import annotations

import os

import pytest

from webhook.lookups.apiserver import get
from webhook.lookups.kubeconfig import ClusterConfigError, load_api_client
from webhook.lookups.resources import DEVICE_CLASSES

from .conftest import seed_text, write_kubeconfig


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No kubeconfig anywhere and not in a cluster, until a test says otherwise."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return monkeypatch


def _reaches(client) -> bool:
    with client:
        return get(client, DEVICE_CLASSES, None, "hybrid-full-gpu", timeout=2)["metadata"]["name"] == "hybrid-full-gpu"


def _files(tmp_path, fake_api, certs):
    """A kubeconfig whose current context is broken, and a second file with the working context."""
    broken = write_kubeconfig(tmp_path / "broken", server="https://127.0.0.1:9", ca_file=certs.ca_file,
                              token="x", context="broken")
    good = write_kubeconfig(tmp_path / "good", server=fake_api.url, ca_file=certs.ca_file,
                            token=fake_api.token, context="fake")
    return broken, good


@pytest.mark.parametrize("setup, kwargs", [
    pytest.param(lambda b, g, env: None, lambda b, g: {"kubeconfig": str(g)}, id="flag"),
    pytest.param(lambda b, g, env: env.setenv("KUBECONFIG", str(g)), lambda b, g: {}, id="env"),
    pytest.param(lambda b, g, env: env.setenv("KUBECONFIG", os.pathsep.join([str(b), str(g)])),
                 lambda b, g: {"context": "fake"}, id="env-list-merged-with-context"),
    pytest.param(lambda b, g, env: env.setenv("KUBECONFIG", str(b)), lambda b, g: {"kubeconfig": str(g)},
                 id="flag-beats-env"),
    pytest.param(lambda b, g, env: (b.parent / "home" / ".kube").mkdir(parents=True)
                 or (b.parent / "home" / ".kube" / "config").write_text(g.read_text()), lambda b, g: {},
                 id="home-default"),
])
def test_kubeconfig_is_found_as_kubectl_finds_it(env, tmp_path, fake_api, certs, setup, kwargs):
    fake_api.load(seed_text("dra-manifests.yaml"))
    broken, good = _files(tmp_path, fake_api, certs)
    setup(broken, good, env)
    assert _reaches(load_api_client(**kwargs(broken, good)))


@pytest.mark.parametrize("setup, kwargs, message", [
    pytest.param(lambda env, tmp: None, {}, "no cluster configuration: no kubeconfig", id="nothing"),
    pytest.param(lambda env, tmp: None, {"context": "prod"}, "context 'prod' not found", id="context-without-file"),
    pytest.param(lambda env, tmp: env.setenv("KUBECONFIG", str(tmp / "missing")), {}, "cluster configuration",
                 id="missing-file"),
    pytest.param(lambda env, tmp: env.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1"), {},
                 "cluster configuration", id="in-cluster-without-service-account"),
])
def test_no_usable_configuration_is_a_clear_error(env, tmp_path, setup, kwargs, message):
    setup(env, tmp_path)
    with pytest.raises(ClusterConfigError) as caught:
        load_api_client(**kwargs)
    assert message in str(caught.value)


def test_an_unknown_context_is_refused(env, tmp_path, fake_api, certs):
    _, good = _files(tmp_path, fake_api, certs)
    with pytest.raises(ClusterConfigError) as caught:
        load_api_client(str(good), "staging")
    assert "staging" in str(caught.value)
