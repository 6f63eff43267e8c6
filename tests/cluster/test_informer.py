"""The list+watch cache against the fake apiserver, through the real kubernetes client."""
from __future__ import annotations

import itertools
import random
import time

import pytest

from webhook.lookups.backoff import Backoff
from webhook.lookups.informer import Informer
from webhook.lookups.resources import CONFIG_MAPS, DEVICE_CLASSES, RESOURCE_CLAIM_TEMPLATES

from .conftest import FAST, eventually, real_manifest, seed_text

TEST1 = "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml"
TEST2 = "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test2.yaml"


def _class(name: str, expression: str = 'device.driver == "gpu.nvidia.com"') -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


@pytest.fixture
def informer(api_client):
    made = []

    def make(resource=DEVICE_CLASSES, settings=FAST, transform=lambda o: o):
        inf = Informer(api_client, resource, transform=transform, settings=settings, rng=random.Random(7))
        made.append(inf)
        inf.start()
        return inf

    yield make
    for inf in made:
        inf.stop()


def test_first_list_is_paged_and_syncs_the_cache(fake_api, informer):
    fake_api.load(seed_text("dra-manifests.yaml"))
    fake_api.load(real_manifest(TEST1))
    fake_api.load(real_manifest(TEST2))
    inf = informer(RESOURCE_CLAIM_TEMPLATES)
    assert inf.synced.wait(5)
    lists = fake_api.calls_to("resourceclaimtemplates", "list")
    assert [c.query.get("limit") for c in lists] == ["2", "2"]
    assert "continue" not in lists[0].query and lists[1].query["continue"]
    stored = {(o["metadata"]["namespace"],
               o["metadata"]["name"]): o for o in fake_api.objects("resourceclaimtemplates")}
    assert set(stored) == {("ai-workloads", "single-large-gpu"), ("gpu-test1", "single-gpu"),
                           ("gpu-test2", "single-gpu")}
    for key, obj in stored.items():
        assert inf.get(key) == obj  # kind and apiVersion restored on list items, nothing else changed
    assert inf.resource_version == fake_api.resource_version


@pytest.mark.parametrize("change, key, expected", [
    pytest.param(lambda api: api.apply(_class("new-class")), ("", "new-class"), "present", id="added"),
    pytest.param(lambda api: api.apply(_class("hybrid-full-gpu", 'device.driver == "other.example.com"')),
                 ("", "hybrid-full-gpu"), "other.example.com", id="modified"),
    pytest.param(lambda api: api.delete("resource.k8s.io/v1", "DeviceClass", None, "hybrid-large-gpu"),
                 ("", "hybrid-large-gpu"), None, id="deleted"),
])
def test_watch_events_reach_the_cache(fake_api, informer, change, key, expected):
    fake_api.load(seed_text("dra-manifests.yaml"))
    inf = informer()
    assert inf.synced.wait(5)
    eventually(lambda: fake_api.open_watches("deviceclasses") == 1)
    change(fake_api)

    def seen():
        value = inf.get(key)
        if expected is None:
            return value is None
        if expected == "present":
            return value is not None
        return value is not None and expected in value["spec"]["selectors"][0]["cel"]["expression"]

    eventually(seen)
    assert inf.resource_version == fake_api.resource_version
    assert inf.lists == 1  # events, not re-lists


def test_bookmarks_advance_the_version_so_a_reconnect_needs_no_relist(fake_api, informer):
    fake_api.load(seed_text("dra-manifests.yaml"))
    inf = informer()
    assert inf.synced.wait(5)
    eventually(lambda: fake_api.open_watches("deviceclasses") == 1)
    listed_at = inf.resource_version
    for i in range(3):  # other resources move the global resourceVersion on
        fake_api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}", "namespace": "a"}})
    fake_api.bookmark()
    eventually(lambda: inf.resource_version == fake_api.resource_version)
    assert int(inf.resource_version) > int(listed_at)
    fake_api.compact()  # the list's version is gone; the bookmark's is not
    fake_api.drop_watches()
    eventually(lambda: fake_api.watching("deviceclasses") >= 2)
    fake_api.apply(_class("after-reconnect"))
    eventually(lambda: inf.get(("", "after-reconnect")) is not None)
    assert inf.lists == 1
    assert fake_api.calls_to("deviceclasses", "watch")[-1].query["resourceVersion"] == str(int(listed_at) + 3)


# 410 Gone after a compaction, and the re-list that reveals a delete made meanwhile: against the real
# apiserver and etcd in tests/e2e/test_informer.py.


def test_list_errors_back_off_exponentially_then_sync(fake_api, informer):
    fake_api.load(seed_text("dra-manifests.yaml"))
    fake_api.fail(500, resource="deviceclasses", verb="list", times=4)
    inf = informer()
    assert inf.synced.wait(5)
    starts = [c.at for c in fake_api.calls_to("deviceclasses", "list")]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) >= 4
    for attempt, gap in enumerate(gaps[:4]):
        assert gap >= FAST.backoff.initial * FAST.backoff.factor ** attempt
    assert inf.errors == 4 and inf.last_error is None


@pytest.mark.parametrize("code, reason", [
    pytest.param(403, "forbidden: deviceclasses.resource.k8s.io is forbidden", id="forbidden"),
    pytest.param(503, "API error 503", id="unavailable"),
])
def test_a_failing_list_is_reported_and_retried(fake_api, informer, code, reason):
    fake_api.fail(code, resource="deviceclasses", verb="list")
    inf = informer()
    eventually(lambda: len(fake_api.calls_to("deviceclasses", "list")) >= 3)
    assert not inf.synced.is_set()
    assert inf.stats().last_error.startswith(reason)
    fake_api.clear_faults()
    assert inf.synced.wait(5)
    assert inf.stats().last_error is None


def test_an_unexpected_failure_does_not_kill_the_informer(fake_api, informer):
    fake_api.load(seed_text("dra-manifests.yaml"))
    failures = iter([ValueError("unexpected shape")])

    def transform(obj):
        error = next(failures, None)
        if error is not None:
            raise error
        return obj

    inf = informer(transform=transform)
    assert inf.synced.wait(5)
    assert inf.errors == 1 and inf.lists == 1 and inf.get(("", "hybrid-full-gpu")) is not None


def test_stop_ends_an_open_watch_promptly(fake_api, informer):
    inf = informer(CONFIG_MAPS)
    assert inf.synced.wait(5)
    eventually(lambda: fake_api.open_watches("configmaps") == 1)
    time.sleep(0.05)  # let the watch block in its read
    began = time.monotonic()
    inf.stop()
    assert time.monotonic() - began < 1.0
    calls = len(fake_api.calls)
    time.sleep(0.1)
    assert len(fake_api.calls) == calls


@pytest.mark.parametrize("attempt, base", [
    pytest.param(0, 0.8, id="first"), pytest.param(1, 1.6, id="second"), pytest.param(5, 25.6, id="sixth"),
    pytest.param(6, 30.0, id="capped"), pytest.param(1000, 30.0, id="huge"),
])
def test_backoff_grows_and_jitters_within_bounds(attempt, base):
    assert Backoff(jitter=0.0).delay(attempt) == pytest.approx(base)
    delays = {Backoff().delay(attempt, random.Random(seed)) for seed in range(20)}
    assert all(base <= d <= base * 1.5 for d in delays)
    assert len(delays) > 1  # jittered
