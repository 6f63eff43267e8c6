"""The validating webhook's decisions with cluster lookups: what only the cluster knows changes the verdict,
and a cluster that cannot answer yields `unresolved-claim`, never a silent allow or a crash."""
from __future__ import annotations

import dataclasses

import pytest

from webhook.admission.codec import read_request
from webhook.admission.handlers import AdmissionRequest, validate
from webhook.config import default_policy
from webhook.config.model import Lookups
from webhook.lookups.cluster import ClusterResolver
from webhook.rules import Action, Rule

from .conftest import FAST, eventually, seed_text

ALL_ON = Lookups(resource_claims=True, device_classes=True, namespaces=True, config_maps=True, secrets=True,
                 timeout_seconds=0.3)
POLICY = dataclasses.replace(default_policy(), lookups=ALL_ON)


def review(pod: dict) -> AdmissionRequest:
    return read_request(request_of(pod))


def request_of(pod: dict) -> dict:
    """The AdmissionReview `request` the apiserver sends for creating `pod`."""
    return {"uid": "5d6f", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
            "namespace": pod["metadata"]["namespace"], "object": pod,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]}}


def pod(name: str, spec: dict, namespace: str = "ai-workloads") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# Asks for a GPU twice: a device-plugin limit, and a claim from the seed's template, which only the
# cluster holds.
BOTH = pod("trainer", {
    "containers": [{"name": "trainer", "image": "registry.example.invalid/train",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "claims": [{"name": "gpu"}]}}],
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-large-gpu"}],
})
PLAIN_GPU_ON_DRA = pod("plain", {
    "nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"},
    "containers": [{"name": "main", "image": "registry.example.invalid/cuda",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
})
EXTENDED_CLASS = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu-as-extended-resource"},
    "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression":
             "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]},
}


def rules(outcome) -> set[str]:
    return {v.rule.value for v in outcome.evaluation.violations}


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ai-workloads"}}


@pytest.fixture
def resolver(api_client, fake_api):
    fake_api.load(seed_text("dra-manifests.yaml"))
    fake_api.apply(NAMESPACE)
    r = ClusterResolver(ALL_ON, api_client, settings=FAST)
    assert r.wait_synced(5)
    eventually(lambda: len({c.plural for c in fake_api.calls_to(verb="watch")}) == 6)
    yield r
    r.close()


def test_a_template_only_in_the_cluster_makes_a_double_mechanism_denial(resolver, fake_api):
    calls = len(fake_api.calls)
    outcome = validate(review(BOTH), policy=POLICY, resolver=resolver)
    assert not outcome.allowed
    assert "[double-mechanism]" in outcome.message and 'template "single-large-gpu"' in outcome.message
    assert Rule.UNRESOLVED_CLAIM.value not in rules(outcome)
    assert len(fake_api.calls) == calls  # decided from the cache alone


@pytest.mark.parametrize("break_api, reason", [
    pytest.param(lambda api: api.fail(403, resource="resourceclaimtemplates", verb="get"), "forbidden",
                 id="forbidden"),
    pytest.param(lambda api: api.delay(2.0, resource="resourceclaimtemplates", verb="get"), "API timeout after 0.3s",
                 id="timeout"),
])
def test_a_template_the_api_will_not_give_is_unresolved(api_client, fake_api, break_api, reason):
    fake_api.load(seed_text("dra-manifests.yaml"))
    break_api(fake_api)
    r = ClusterResolver(ALL_ON, api_client, settings=FAST, start=False)  # nothing cached: it must ask
    try:
        outcome = validate(review(BOTH), policy=POLICY, resolver=r)
    finally:
        r.close()
    assert outcome.allowed  # unresolved-claim warns by default
    assert rules(outcome) >= {Rule.UNRESOLVED_CLAIM.value}
    assert Rule.DOUBLE_MECHANISM.value not in rules(outcome)
    assert any("[unresolved-claim]" in w and reason in w for w in outcome.warnings)


@pytest.mark.parametrize("action, allowed", [
    pytest.param(Action.WARN, True, id="warn-by-default"),
    pytest.param(Action.ENFORCE, False, id="configured-to-deny"),
])
def test_while_the_api_is_unreachable_the_claim_is_unresolved(unreachable_client, action, allowed):
    policy = dataclasses.replace(POLICY, actions={**POLICY.actions, Rule.UNRESOLVED_CLAIM: Action(action)})
    r = ClusterResolver(ALL_ON, unreachable_client, settings=FAST)
    try:
        outcome = validate(review(BOTH), policy=policy, resolver=r)
    finally:
        r.close()
    assert outcome.allowed is allowed
    assert Rule.UNRESOLVED_CLAIM.value in rules(outcome)
    assert Rule.DOUBLE_MECHANISM.value not in rules(outcome)
    text = outcome.message if not allowed else " ".join(outcome.warnings)
    assert "API unreachable: Connection refused" in text


def test_an_extended_resource_device_class_changes_the_verdict_on_the_dra_cohort(resolver, fake_api):
    before = validate(review(PLAIN_GPU_ON_DRA), policy=POLICY, resolver=resolver)
    assert not before.allowed and Rule.COHORT_MISMATCH.value in rules(before)
    fake_api.apply(EXTENDED_CLASS)
    eventually(lambda: "gpu-as-extended-resource" in {
        c["metadata"]["name"] for c in resolver.device_class_list().value})
    after = validate(review(PLAIN_GPU_ON_DRA), policy=POLICY, resolver=resolver)
    assert after.allowed and not rules(after) & {Rule.COHORT_MISMATCH.value, Rule.RESOURCE_NOT_OFFERED.value}


@pytest.mark.parametrize("source, obj", [
    pytest.param({"configMapRef": {"name": "cuda-env"}},
                 {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "cuda-env", "namespace": "ai-workloads"},
                  "data": {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "OTHER": "x"}}, id="configmap"),
    pytest.param({"secretRef": {"name": "cuda-env"}},
                 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cuda-env", "namespace": "ai-workloads"},
                  "data": {"CUDA_VISIBLE_DEVICES": "MCwxLDIsMw=="}}, id="secret"),
])
def test_a_visible_devices_key_behind_envfrom_is_found(resolver, fake_api, source, obj):
    fake_api.apply(obj)
    eventually(lambda: resolver.config_map_keys("ai-workloads", "cuda-env").found
               if obj["kind"] == "ConfigMap" else resolver.secret_keys("ai-workloads", "cuda-env").found)
    outcome = validate(review(pod("env", {"containers": [{"name": "app", "image": "x", "envFrom": [source]}]})),
                       policy=POLICY, resolver=resolver)
    assert not outcome.allowed
    assert "[visible-devices-override]" in outcome.message and "CUDA_VISIBLE_DEVICES" in outcome.message
    assert "0,1,2,3" not in outcome.message  # names the variable, never its value


CAPACITY = Lookups(resource_claims=True, device_classes=True, nodes=True, resource_slices=True, timeout_seconds=0.3)


# As the validating webhook sees them: after the mutating webhook's default-placement (labels, toleration).
_PLACED_DP = {"nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                               "workload.example.com/gpu-allocation": "device-plugin"},
              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
_PLACED_DRA = {**_PLACED_DP, "nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                                              "workload.example.com/gpu-allocation": "dra"}}


def _gpu_pod(count: str) -> dict:
    return pod("train", {**_PLACED_DP, "containers": [{"name": "trainer", "image": "registry.example.invalid/train",
                                         "resources": {"limits": {"nvidia.com/gpu": count}}}]})


def _llm() -> dict:
    return pod("llm", {**_PLACED_DRA, "containers": [{"name": "server", "image": "registry.example.invalid/llm",
                                       "resources": {"claims": [{"name": "gpu"}]}}],
                       "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-large-gpu"}]})


@pytest.mark.parametrize("obj, slices, warned", [
    pytest.param(_gpu_pod("8"), ("nvidia-dra-h200.yaml",), None, id="device-plugin-fits"),
    pytest.param(_gpu_pod("12"), ("nvidia-dra-h200.yaml",), 'is 8 (node "hybrid-dp-0")', id="device-plugin-too-many"),
    pytest.param(_llm(), ("nvidia-dra-h200.yaml",), None, id="dra-large-gpu-published"),
    pytest.param(_llm(), ("nvidia-dra-h200-mig.yaml",), "hybrid-dra-h200-mig/gpu-0-mig-3g71gb-0", id="dra-only-mig"),
])
def test_capacity_lookups_warn_of_a_request_that_never_fits(api_client, fake_api, obj, slices, warned):
    from tests.support import DATA, load_docs
    fake_api.load(seed_text("dra-manifests.yaml"))
    for doc in load_docs(DATA / "inventory" / "nodes.yaml")[0]["items"]:
        fake_api.apply(doc)
    for name in slices:
        for doc in load_docs(DATA / "inventory" / name):
            fake_api.apply(doc)
    r = ClusterResolver(CAPACITY, api_client, settings=FAST)
    try:
        assert r.wait_synced(5)
        eventually(lambda: len({c.plural for c in fake_api.calls_to(verb="watch")}) == 5)
        calls = len(fake_api.calls)
        outcome = validate(review(obj), policy=dataclasses.replace(default_policy(), lookups=CAPACITY), resolver=r)
        assert len(fake_api.calls) == calls  # decided from the caches alone
    finally:
        r.close()
    assert outcome.allowed  # warn by default
    said = [w for w in outcome.warnings if "[unsatisfiable-request]" in w]
    assert (said == []) if warned is None else (len(said) == 1 and warned in said[0]), outcome.warnings
