"""ClusterResolver: answers from the caches, one bounded GET on a miss, nothing at all for kinds that
are off, and no secret value ever kept."""
from __future__ import annotations

import base64
import dataclasses
import time

import pytest

from tests.support import DATA, load_docs
from webhook.config import default_policy
from webhook.config.model import Lookups
from webhook.lookups.base import NoLookups
from webhook.lookups.cluster import ClusterResolver, build_resolver

from .conftest import FAST, eventually, real_manifest, seed_text

INVENTORY = DATA / "inventory"

ALL_ON = Lookups(resource_claims=True, device_classes=True, namespaces=True, config_maps=True, secrets=True,
                 timeout_seconds=0.5)
TEST3 = "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test3.yaml"
SECRET_VALUE = "s3cr3t-value-that-must-never-be-kept"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _populate(api) -> None:
    api.load(seed_text("dra-manifests.yaml"))
    api.load(real_manifest(TEST3))
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "ai-workloads", "labels": {"workload.example.com/gpu-allocation": "dra"}}})
    api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cuda-env", "namespace": "ai-workloads"},
               "data": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, "binaryData": {"blob": _b64("x")}})
    api.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ai-workloads"},
               "type": "Opaque", "data": {"TOKEN": _b64(SECRET_VALUE), "NVIDIA_VISIBLE_DEVICES": _b64("all")}})


@pytest.fixture
def resolver(api_client):
    made = []

    def make(lookups=ALL_ON, **kwargs):
        kwargs.setdefault("settings", FAST)
        r = ClusterResolver(lookups, api_client, **kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


LOOKUPS = [
    pytest.param("resource_claim", ("gpu-test3", "single-gpu"),
                 lambda v: v["kind"] == "ResourceClaim" and v["spec"]["devices"]["requests"][0]["name"] == "gpu",
                 id="claim"),
    pytest.param("resource_claim_template", ("ai-workloads", "single-large-gpu"),
                 lambda v: v["apiVersion"] == "resource.k8s.io/v1"
                 and v["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "hybrid-large-gpu",
                 id="template"),
    pytest.param("device_class", ("hybrid-full-gpu",),
                 lambda v: 'device.driver == "gpu.nvidia.com"' in v["spec"]["selectors"][0]["cel"]["expression"],
                 id="device-class"),
    pytest.param("namespace_labels", ("ai-workloads",),
                 lambda v: v == {"workload.example.com/gpu-allocation": "dra"}, id="namespace"),
    pytest.param("config_map_keys", ("ai-workloads", "cuda-env"),
                 lambda v: v == frozenset({"CUDA_VISIBLE_DEVICES", "blob"}), id="configmap-data-and-binarydata"),
    pytest.param("secret_keys", ("ai-workloads", "creds"),
                 lambda v: v == frozenset({"TOKEN", "NVIDIA_VISIBLE_DEVICES"}), id="secret-keys-only"),
]


@pytest.mark.parametrize("method, args, check", LOOKUPS)
def test_synced_cache_answers_without_calling_the_api(fake_api, resolver, method, args, check):
    _populate(fake_api)
    r = resolver()
    assert r.wait_synced(5)
    before = len(fake_api.calls)
    found = getattr(r, method)(*args)
    assert found.found and check(found.value)
    assert len(fake_api.calls) == before


@pytest.mark.parametrize("method, args, check", LOOKUPS)
def test_before_sync_a_miss_makes_one_get(fake_api, resolver, method, args, check):
    _populate(fake_api)
    r = resolver(start=False)
    found = getattr(r, method)(*args)
    assert found.found and check(found.value)
    assert [(c.verb, c.name) for c in fake_api.calls] == [("get", args[-1])]


@pytest.mark.parametrize("lookups, watched", [
    pytest.param(Lookups(resource_claims=True), {"resourceclaims", "resourceclaimtemplates"}, id="claims-only"),
    pytest.param(Lookups(device_classes=True), {"deviceclasses"}, id="classes-only"),
    pytest.param(Lookups(namespaces=True, config_maps=True), {"namespaces", "configmaps"}, id="ns-and-configmaps"),
    pytest.param(Lookups(secrets=True), {"secrets"}, id="secrets-only"),
])
def test_kinds_that_are_off_cost_nothing(fake_api, resolver, lookups, watched):
    _populate(fake_api)
    r = resolver(lookups)
    assert r.wait_synced(5)
    answers = {
        "resourceclaims": r.resource_claim("gpu-test3", "single-gpu"),
        "resourceclaimtemplates": r.resource_claim_template("ai-workloads", "single-large-gpu"),
        "deviceclasses": r.device_class("hybrid-full-gpu"),
        "namespaces": r.namespace_labels("ai-workloads"),
        "configmaps": r.config_map_keys("ai-workloads", "cuda-env"),
        "secrets": r.secret_keys("ai-workloads", "creds"),
    }
    eventually(lambda: {c.plural for c in fake_api.calls_to(verb="watch")} == watched)
    assert {c.plural for c in fake_api.calls} == watched
    for plural, answer in answers.items():
        if plural in watched:
            assert answer.found
        else:
            assert not answer.found and answer.reason == f"lookups of {plural} are off"
    assert set(r.stats()) == watched


def test_an_object_missing_from_a_synced_cache_is_fetched_once(fake_api, resolver):
    _populate(fake_api)
    r = resolver()
    assert r.wait_synced(5)
    eventually(lambda: fake_api.open_watches("resourceclaimtemplates") == 1)
    with fake_api.hold_watches():  # no watch open: the new template can only be found by a GET
        fake_api.drop_watches()
        fake_api.load(real_manifest("kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml"))
        found = r.resource_claim_template("gpu-test1", "single-gpu")
        assert found.found and found.value["metadata"]["name"] == "single-gpu"
        assert [c.name for c in fake_api.calls_to("resourceclaimtemplates", "get")] == ["single-gpu"]
    stats = r.stats()["resourceclaimtemplates"]
    assert (stats.misses, stats.errors) == (1, 0)


def test_a_404_is_remembered_briefly(fake_api, resolver):
    _populate(fake_api)
    r = resolver(absent_ttl=0.3)
    assert r.wait_synced(5)
    for _ in range(3):
        missing = r.resource_claim_template("gpu-test1", "single-gpu")
        assert not missing.found and missing.reason == "not found"
    assert len(fake_api.calls_to("resourceclaimtemplates", "get")) == 1
    time.sleep(0.35)
    assert not r.resource_claim_template("gpu-test1", "single-gpu").found
    assert len(fake_api.calls_to("resourceclaimtemplates", "get")) == 2


def test_an_object_created_after_a_404_arrives_through_the_watch(fake_api, resolver):
    _populate(fake_api)
    r = resolver(absent_ttl=60.0)
    assert r.wait_synced(5)
    assert not r.resource_claim_template("gpu-test1", "single-gpu").found
    fake_api.load(real_manifest("kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml"))
    eventually(lambda: r.resource_claim_template("gpu-test1", "single-gpu").found)
    assert len(fake_api.calls_to("resourceclaimtemplates", "get")) == 1  # the remembered 404 asked nothing more


@pytest.mark.parametrize("fault, reason", [
    pytest.param(dict(code=403), 'forbidden: resourceclaimtemplates.resource.k8s.io is forbidden: User '
                 '"system:serviceaccount:gpu-admission:gpu-admission" cannot get resource', id="forbidden"),
    pytest.param(dict(code=500), "API error 500: injected failure 500", id="server-error"),
])
def test_a_failed_get_is_a_miss_with_its_reason(fake_api, resolver, fault, reason):
    _populate(fake_api)
    fake_api.fail(fault["code"], resource="resourceclaimtemplates", verb="get")
    r = resolver(start=False)
    found = r.resource_claim_template("ai-workloads", "single-large-gpu")
    assert not found.found and found.reason.startswith(reason)
    assert r.stats()["resourceclaimtemplates"].errors == 1


def test_a_slow_api_costs_one_bounded_get_then_a_holdoff(fake_api, resolver):
    _populate(fake_api)
    fake_api.delay(3.0, resource="resourceclaimtemplates", verb="get")
    r = resolver(Lookups(resource_claims=True, timeout_seconds=0.2), start=False)
    began = time.monotonic()
    found = r.resource_claim_template("ai-workloads", "single-large-gpu")
    took = time.monotonic() - began
    assert not found.found and found.reason == "API timeout after 0.2s"
    assert 0.2 <= took < 0.6
    assert len(fake_api.calls_to("resourceclaimtemplates", "get")) == 1  # no retry behind our back
    began = time.monotonic()
    again = r.resource_claim("gpu-test3", "single-gpu")
    assert time.monotonic() - began < 0.05 and again.reason == "API timeout after 0.2s"
    assert len(fake_api.calls) == 1


def test_an_unreachable_api_answers_misses_with_the_reason(unreachable_client):
    r = ClusterResolver(ALL_ON, unreachable_client, settings=FAST)
    try:
        found = r.resource_claim_template("ai-workloads", "single-large-gpu")
        assert not found.found and found.reason == "API unreachable: Connection refused"
        assert not r.synced
        eventually(lambda: r.stats()["deviceclasses"].informer.errors >= 2)
    finally:
        r.close()


def test_a_resource_the_cluster_does_not_serve_is_named_without_a_get(fake_api, resolver):
    fake_api.unserve("resourceclaims")
    r = resolver(Lookups(resource_claims=True))
    eventually(lambda: r.stats()["resourceclaims"].informer.last_error)
    gets = len(fake_api.calls_to("resourceclaims", "get"))
    found = r.resource_claim("gpu-test3", "single-gpu")
    assert not found.found
    assert found.reason == "resourceclaims.resource.k8s.io/v1: the API server does not serve this resource"
    assert len(fake_api.calls_to("resourceclaims", "get")) == gets


def test_device_class_list_follows_the_cache(fake_api, resolver):
    _populate(fake_api)
    r = resolver(Lookups(device_classes=True))
    assert r.wait_synced(5)
    first = r.device_class_list()
    assert sorted(c["metadata"]["name"] for c in first.value) == ["hybrid-full-gpu", "hybrid-large-gpu"]
    assert r.device_class_list() is first  # unchanged cache: the same answer, not rebuilt
    fake_api.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu-as-er"},
                    "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": []}})
    eventually(lambda: len(r.device_class_list().value) == 3)


def test_device_class_list_before_sync_is_one_list(fake_api, resolver):
    _populate(fake_api)
    r = resolver(Lookups(device_classes=True), start=False)
    found = r.device_class_list()
    assert len(found.value) == 2 and all(c["kind"] == "DeviceClass" for c in found.value)
    assert [c.verb for c in fake_api.calls] == ["list"]


def _reachable_strings(root) -> set[str]:
    """Every str/bytes reachable from `root` through containers and webhook objects."""
    seen, out, stack = set(), set(), [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (str, bytes)):
            out.add(obj if isinstance(obj, str) else obj.decode("latin-1"))
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif type(obj).__module__.startswith("webhook."):
            stack.extend(getattr(obj, "__dict__", {}).values())
            stack.extend(getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if hasattr(obj, s))
    return out


def test_secret_values_are_never_kept(fake_api, resolver):
    _populate(fake_api)
    r = resolver(Lookups(secrets=True, config_maps=True))
    assert r.wait_synced(5)
    assert r.secret_keys("ai-workloads", "creds").found
    fake_api.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "later", "namespace": "ai-workloads"},
                    "data": {"K": _b64(SECRET_VALUE + "-2")}})
    eventually(lambda: r.stats()["secrets"].informer.objects == 2)  # through the watch, into the cache
    strings = _reachable_strings(r)
    assert {"TOKEN", "K", "CUDA_VISIBLE_DEVICES"} <= strings  # the walk does reach the caches
    for value in (SECRET_VALUE, _b64(SECRET_VALUE), _b64(SECRET_VALUE + "-2"), "0,1,2,3"):
        assert [s for s in strings if value in s] == []


def test_counters_add_up(fake_api, resolver):
    _populate(fake_api)
    r = resolver(Lookups(resource_claims=True))
    assert r.wait_synced(5)
    for _ in range(3):
        r.resource_claim("gpu-test3", "single-gpu")
    r.resource_claim("gpu-test3", "missing")
    stats = r.stats()["resourceclaims"]
    assert (stats.hits, stats.misses, stats.errors) == (3, 1, 0)
    assert stats.informer.synced and stats.informer.objects == 1


def test_build_resolver_without_lookups_reads_no_cluster_config(tmp_path):
    resolver = build_resolver(default_policy(), kubeconfig=str(tmp_path / "does-not-exist"))
    assert isinstance(resolver, NoLookups)


def test_build_resolver_with_lookups_uses_the_kubeconfig(fake_api, kubeconfig):
    _populate(fake_api)
    policy = dataclasses.replace(default_policy(), lookups=Lookups(device_classes=True))
    resolver = build_resolver(policy, kubeconfig=str(kubeconfig), context="fake", settings=FAST)
    try:
        assert isinstance(resolver, ClusterResolver)
        assert resolver.wait_synced(5)
        assert resolver.device_class("hybrid-large-gpu").found
    finally:
        resolver.close()


# -- the capacity snapshot: Nodes and ResourceSlices (unsatisfiable-request)

def _capacity(api) -> None:
    for doc in load_docs(INVENTORY / "nodes.yaml")[0]["items"]:
        api.apply(doc)
    for name in ("nvidia-dra-h200.yaml", "nvidia-dra-h200-mig.yaml"):
        for doc in load_docs(INVENTORY / name):
            api.apply(doc)


@pytest.mark.parametrize("lookups, nodes, devices", [
    pytest.param(Lookups(nodes=True), 6, None, id="nodes-only"),
    pytest.param(Lookups(resource_slices=True), None, 3, id="slices-only"),
    pytest.param(Lookups(nodes=True, resource_slices=True), 6, 3, id="both"),
])
def test_the_capacity_snapshot_holds_what_is_on(fake_api, resolver, lookups, nodes, devices):
    _capacity(fake_api)
    r = resolver(lookups)
    assert r.wait_synced(5)
    snapshot = r.inventory()
    assert (len(snapshot.nodes) if snapshot.nodes is not None else None) == nodes
    assert (len(snapshot.devices) if snapshot.devices is not None else None) == devices
    watched = {c.plural for c in fake_api.calls_to(verb="watch")} | {c.plural for c in fake_api.calls_to(verb="list")}
    assert watched == {p for p, on in (("nodes", nodes), ("resourceslices", devices)) if on is not None}
    before = len(fake_api.calls)
    assert r.inventory() is snapshot and len(fake_api.calls) == before  # unchanged caches: the same snapshot


def test_the_capacity_snapshot_is_unknown_while_off_or_unsynced(fake_api, resolver):
    _capacity(fake_api)
    assert resolver(Lookups(config_maps=True)).inventory() is None
    assert NoLookups().inventory() is None
    assert resolver(Lookups(nodes=True), start=False).inventory() is None  # not listed yet: nothing is known


def test_nodes_are_kept_as_labels_taints_and_allocatable_only(fake_api, resolver):
    _capacity(fake_api)
    r = resolver(Lookups(nodes=True))
    assert r.wait_synced(5)
    kept = r._slots["nodes"].informer.get(("", "hybrid-dp-0"))
    assert set(kept) == {"metadata", "spec", "status"}
    assert set(kept["status"]) == {"allocatable"} and set(kept["metadata"]) == {"name", "labels"}
    (node,) = [n for n in r.inventory().nodes if n.name == "hybrid-dp-0"]
    assert node.allocatable == {"nvidia.com/gpu": 8.0}
    assert [(t.key, t.effect) for t in node.taints] == [("nvidia.com/gpu", "NoSchedule")]


def test_a_changed_node_rebuilds_the_snapshot(fake_api, resolver):
    _capacity(fake_api)
    r = resolver(Lookups(nodes=True))
    assert r.wait_synced(5)
    first = r.inventory()
    grown = load_docs(INVENTORY / "nodes.yaml")[0]["items"][1]
    grown["status"]["allocatable"]["nvidia.com/gpu"] = "12"
    fake_api.apply(grown)
    eventually(lambda: r.inventory() is not first)
    assert {n.name: n.allocatable.get("nvidia.com/gpu") for n in r.inventory().nodes}["hybrid-dp-1"] == 12


def test_a_node_status_write_that_keeps_labels_taints_and_allocatable_keeps_the_snapshot(fake_api, resolver):
    _capacity(fake_api)
    r = resolver(Lookups(nodes=True))
    assert r.wait_synced(5)
    first = r.inventory()
    informer = r._slots["nodes"].informer
    version = informer.resource_version
    heartbeat = load_docs(INVENTORY / "nodes.yaml")[0]["items"][1]
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    fake_api.apply(heartbeat)
    eventually(lambda: informer.resource_version != version)  # the watch delivered the write
    assert r.inventory() is first
