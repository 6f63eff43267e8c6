"""The served app builds the cluster resolver its policy's lookups ask for, and follows policy reloads
that turn lookups on or off: what the deployed webhook does with the chart's policy ConfigMap."""
from __future__ import annotations

import threading

import pytest

from webhook.app import create_app, runtime
from webhook.config.load import DEFAULT_PATH
from webhook.lookups.base import NoLookups
from webhook.lookups.cluster import ClusterResolver
from webhook.lookups.kubeconfig import ClusterConfigError
from webhook.settings import Settings

from .conftest import eventually, seed_text
from .test_webhook_lookups import BOTH, request_of

LOOKUPS_ON = "lookups: {resourceClaims: true, deviceClasses: true, timeoutSeconds: 0.5}\n"


def _policy(path, lookups: str = "") -> None:
    path.write_text(DEFAULT_PATH.read_text() + lookups)


def _denied_for(client) -> set[str]:
    body = client.post("/validate?timeout=10s", json={"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                                      "request": request_of(BOTH)}).get_json()
    return {line.rsplit("[", 1)[1].split("]")[0] for line in body["response"].get("status", {}).get("message",
                                                                                                    "").splitlines()
            if "[" in line}


def test_app_follows_the_policy_s_lookups_across_reloads(tmp_path, monkeypatch, kubeconfig, fake_api):
    fake_api.load(seed_text("dra-manifests.yaml"))  # the template lives only in the cluster
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    path = tmp_path / "policy.yaml"
    _policy(path)
    app = create_app(Settings(policy_path=path))
    admission = runtime(app).admission
    client = app.test_client()
    assert isinstance(admission.resolver, NoLookups)
    assert _denied_for(client) == set()  # the claim cannot be resolved: a warning, not a guess

    _policy(path, LOOKUPS_ON)  # a ConfigMap update turns claim lookups on
    assert runtime(app).store.refresh()
    assert isinstance(admission.resolver, ClusterResolver)
    eventually(lambda: admission.resolver.resource_claim_template("ai-workloads", "single-large-gpu").found)
    assert _denied_for(client) == {"double-mechanism"}

    informers = [t for t in threading.enumerate() if t.name.startswith("informer-")]
    assert {t.name for t in informers} == {"informer-resourceclaims", "informer-resourceclaimtemplates",
                                           "informer-deviceclasses"}
    _policy(path)  # and off again: the informers stop
    assert runtime(app).store.refresh()
    assert isinstance(admission.resolver, NoLookups)
    assert not any(t.is_alive() for t in informers)


def test_lookups_on_without_a_cluster_refuse_to_start(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = tmp_path / "policy.yaml"
    _policy(path, LOOKUPS_ON)
    with pytest.raises(ClusterConfigError):
        create_app(Settings(policy_path=path))


def _sample(app, name: str, **labels) -> float | None:
    metrics = runtime(app).metrics
    metrics.flush()
    return metrics.registry.get_sample_value(name, labels)


def test_lookup_requests_errors_and_health_are_metrics(tmp_path, monkeypatch, kubeconfig, fake_api):
    """What the alerts and the dashboard read of the lookups: list/watch/GET counts, errors, synced and up."""
    fake_api.load(seed_text("dra-manifests.yaml"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    path = tmp_path / "policy.yaml"
    _policy(path, LOOKUPS_ON)
    app = create_app(Settings(policy_path=path))
    resolver = runtime(app).admission.resolver
    try:
        assert resolver.wait_synced(10)
        kind = "resourceclaimtemplates"
        eventually(lambda: _sample(app, "gpu_admission_lookup_requests_total", kind=kind, verb="watch") == 1.0)
        assert _sample(app, "gpu_admission_lookup_requests_total", kind=kind, verb="list") == 1.0
        assert _sample(app, "gpu_admission_lookup_synced", kind=kind) == 1.0
        assert _sample(app, "gpu_admission_lookup_up", kind=kind) == 1.0
        assert _sample(app, "gpu_admission_lookup_objects", kind=kind) == 1.0
        assert resolver.resource_claim_template("ai-workloads", "single-large-gpu").found
        assert _sample(app, "gpu_admission_lookup_cache_total", kind=kind, result="hit") == 1.0
        assert _sample(app, "gpu_admission_lookup_requests_total", kind=kind, verb="get") in (None, 0.0)

        fake_api.fail(500, resource="resourceclaimtemplates", verb="get")
        assert not resolver.resource_claim_template("ai-workloads", "absent").found  # a miss costs one GET
        assert _sample(app, "gpu_admission_lookup_cache_total", kind=kind, result="miss") == 1.0
        assert _sample(app, "gpu_admission_lookup_requests_total", kind=kind, verb="get") == 1.0
        assert _sample(app, "gpu_admission_lookup_errors_total", kind=kind, verb="get") == 1.0
        # counted once: a second flush adds nothing
        assert _sample(app, "gpu_admission_lookup_requests_total", kind=kind, verb="get") == 1.0
    finally:
        resolver.close()


def test_a_failing_list_shows_as_errors_and_a_lookup_down(tmp_path, monkeypatch, kubeconfig, fake_api):
    fake_api.fail(403, resource="deviceclasses", verb="list")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    path = tmp_path / "policy.yaml"
    _policy(path, LOOKUPS_ON)
    app = create_app(Settings(policy_path=path))
    try:
        eventually(lambda: (_sample(app, "gpu_admission_lookup_errors_total", kind="deviceclasses", verb="list")
                            or 0) >= 1)
        assert _sample(app, "gpu_admission_lookup_up", kind="deviceclasses") == 0.0
        assert _sample(app, "gpu_admission_lookup_synced", kind="deviceclasses") == 0.0
        eventually(lambda: _sample(app, "gpu_admission_lookup_up", kind="resourceclaims") == 1.0)  # the others serve
    finally:
        runtime(app).admission.resolver.close()
