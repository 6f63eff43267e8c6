"""The policy file reloads when it changes, the way a ConfigMap volume changes it (a `..data` symlink
swapped to a new directory); an invalid file is refused whole and the last good policy stays."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from webhook.app import create_app, runtime
from webhook.config import ConfigError
from webhook.config.store import SHIPPED_DEFAULT, PolicyStore
from webhook.server.reload import Watcher
from webhook.settings import Settings

from .apiserver import ApiServer
from .conftest import Volume, flask_transport, policy_text

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "peek", "namespace": "ml"},
       "spec": {"containers": [{"name": "c", "image": "cuda:12",
                                "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


class PolicyVolume(Volume):
    @property
    def path(self) -> Path:
        return self.root / "policy.yaml"

    def set(self, text: str | bytes) -> None:
        self.update({"policy.yaml": text})


@pytest.fixture
def volume(tmp_path):
    return PolicyVolume(tmp_path / "policy", {"policy.yaml": policy_text()})


def test_configmap_update_takes_effect(volume):
    app = create_app(Settings(policy_path=volume.path))
    api = ApiServer(flask_transport(app.test_client()))
    assert not api.admit(POD).allowed
    before = runtime(app).store.status
    volume.set(policy_text("mode: audit"))
    assert runtime(app).store.refresh() is True
    assert api.admit(POD).allowed
    status = app.test_client().get("/readyz").get_json()["policy"]
    assert status["inForce"] == "current file" and status["digest"] != before.digest
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    assert 'gpu_admission_policy_reloads_total{result="success"} 1.0' in metrics
    assert "gpu_admission_policy_reload_ok 1.0" in metrics


@pytest.mark.parametrize(("bad", "error"), [
    pytest.param("mode: sideways\ncohorts: []\n", "mode: must be one of", id="invalid-values"),
    pytest.param("cohorts: [\n", "not valid YAML", id="not-yaml"),
    pytest.param(b"mode: \xff\n", "not UTF-8", id="not-utf8"),
])
def test_an_invalid_update_is_refused_and_the_last_good_policy_stays(volume, caplog, bad, error):
    app = create_app(Settings(policy_path=volume.path))
    store = runtime(app).store
    api = ApiServer(flask_transport(app.test_client()))
    good = store.status
    volume.set(bad)
    assert store.refresh() is False
    assert not api.admit(POD).allowed  # still enforcing the last good policy
    ready = app.test_client().get("/readyz")
    assert ready.status_code == 200  # every replica refusing at once must not empty the Service
    body = ready.get_json()["policy"]
    assert body["inForce"] == "last good policy" and body["digest"] == good.digest
    assert any(error in e for e in body["refused"])
    metrics = app.test_client().get("/metrics").get_data(as_text=True)
    assert 'gpu_admission_policy_reloads_total{result="failure"} 1.0' in metrics
    assert "gpu_admission_policy_reload_ok 0.0" in metrics
    (refused,) = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "policy-refused"]
    assert any(error in e for e in refused["errors"])
    assert store.refresh() is False  # the same refused file is not reported again and again
    volume.set(policy_text("mode: audit"))  # fixed: taken, and the status clears
    assert store.refresh() is True
    assert app.test_client().get("/readyz").get_json()["policy"]["inForce"] == "current file"
    assert "gpu_admission_policy_reload_ok 1.0" in app.test_client().get("/metrics").get_data(as_text=True)


@pytest.mark.parametrize("change", [
    pytest.param(lambda p: os.utime(p, (time.time() + 5, time.time() + 5)), id="touched"),
    pytest.param(lambda p: None, id="nothing"),
])
def test_unchanged_content_is_not_reloaded(volume, change):
    reloads = []
    store = PolicyStore(volume.path, on_reload=lambda ok, at: reloads.append(ok))
    change(volume.root / "..data" / "policy.yaml")
    assert store.refresh() is False and reloads == []


def test_same_content_relinked_is_not_reloaded(volume):
    store = PolicyStore(volume.path)
    volume.set(policy_text())
    assert store.refresh() is False


def test_a_missing_file_serves_the_shipped_default_and_is_loaded_when_it_appears(tmp_path):
    path = tmp_path / "policy.yaml"
    store = PolicyStore(path)
    assert store.status.source == SHIPPED_DEFAULT and store.policy.mode == "enforce"
    assert store.refresh() is False
    path.write_text(policy_text("mode: audit"))
    assert store.refresh() is True
    assert store.policy.mode == "audit" and store.status.source == str(path)


def test_a_file_that_disappears_keeps_the_policy_in_force(volume):
    store = PolicyStore(volume.path)
    policy = store.policy
    os.remove(volume.root / "..data")
    assert store.refresh() is False and store.policy is policy


def test_an_invalid_file_at_startup_stops_the_app(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("cohorts: [{name: X}]\n")
    with pytest.raises(ConfigError) as exc:
        create_app(Settings(policy_path=path))
    assert any(e.startswith("cohorts[0].name:") for e in exc.value.errors)


def test_the_watcher_thread_reloads_by_itself(volume):
    store = PolicyStore(volume.path)
    watcher = Watcher(store.refresh, 0.05, "policy-watch").start()
    try:
        volume.set(policy_text("mode: audit"))
        deadline = time.monotonic() + 5
        while store.policy.mode != "audit" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.policy.mode == "audit"
    finally:
        watcher.stop()


def test_the_watcher_survives_a_failing_check(caplog):
    calls = []

    def check():
        calls.append(1)
        raise RuntimeError("disk on fire")

    watcher = Watcher(check, 0.01, "policy-watch").start()
    deadline = time.monotonic() + 5
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    watcher.stop()
    assert len(calls) >= 3
    errors = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "watch-error"]
    assert errors and errors[0]["error"] == "RuntimeError"
