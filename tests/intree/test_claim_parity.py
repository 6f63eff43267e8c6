"""device-config in-tree decides as the engine does: every ResourceClaim and ResourceClaimTemplate row of every
rule's table (the device-config table's broken twins above all), as the apiserver hands it to a policy (converted
to resource.k8s.io/v1: matchPolicy Equivalent), under the row's policy, in English, Japanese and a Japanese
namespace override. The CEL coverage equals device_config.claim_covered; inside it the policy fails exactly
when the engine has a device-config finding, with the engine's action, each in-tree line one of the engine's
lines; the engine with `inTree` on leaves the rule to the apiserver there, and keeps it outside."""
from __future__ import annotations

import copy
import dataclasses
from collections import Counter

import pytest

from tests.intree.test_parity import LANGUAGES, _in_language, _request, agree
from tests.intree.vap import admit, matched, variable
from tests.policy.builders import (
    POLICIES,
    Case,
    all_cases,
    apiserver_shaped,
    claim_template,
    nvidia_config,
    request,
    resource_claim,
)
from tests.policy.conftest import evaluate_docs
from webhook.config.model import Exception_, InTree
from webhook.intree.export import RULE_LABEL, export
from webhook.objects.claims import claim_spec
from webhook.policy.checks.device_config import claim_covered
from webhook.policy.context import device_class_info
from webhook.policy.coverage import exported_rules
from webhook.rules import Rule

RULE = Rule.DEVICE_CONFIG
P = "spec.spec.devices.config[0].opaque.parameters"
MPS = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}
TWO = [request("gpu", "gpu.nvidia.com"), request("mig", "mig.nvidia.com"),
       {"name": "dev", "firstAvailable": [{"name": "slice", "deviceClassName": "mig.nvidia.com"},
                                          {"name": "whole", "deviceClassName": "gpu.nvidia.com"}]}]


def _own(id_: str, obj: dict, policy: str = "dra-demos") -> Case:
    return Case(id_, obj, (), policy=policy)


def _template(*config, requests=None) -> dict:
    return claim_template("shared-gpus", *(requests or [request("gpu", "gpu.nvidia.com", count=2)]),
                          config=list(config))


# What the tables do not reach: the names a missing request's fix lists (one, two, several with alternatives),
# each level's unknown field, a second config failing after a first that passes, the ways the coverage
# hands an object back to the webhook (pinned memory, a wrong JSON type, null, an unprintable value).
OWN = [
    _own("in-tree-missing-request-one-name", _template(nvidia_config("GpuConfig", requests=["gpus"], sharing=MPS))),
    _own("in-tree-missing-request-names-alternatives", claim_template("many", *TWO, config=[
        nvidia_config("GpuConfig", requests=["dev/piece"], sharing=MPS)])),
    _own("in-tree-missing-request-no-request", claim_template("none", config=[
        nvidia_config("GpuConfig", requests=["gpu"], sharing=MPS)])),
    _own("in-tree-second-config-fails", claim_template("many", *TWO, config=[
        nvidia_config("GpuConfig", requests=["gpu"], sharing=MPS),
        nvidia_config("MigDeviceConfig", requests=["mig"], sharing={"strategy": "MPS", "mpsConfig": {
            "defaultActiveThreadPercentage": 50, "clients": 4}})])),
    _own("in-tree-mig-config-on-whole-alternative", claim_template("many", *TWO, config=[
        nvidia_config("MigDeviceConfig", requests=["dev"], sharing=MPS)])),
    _own("in-tree-gpu-config-on-slice-alternative", claim_template("many", *TWO, config=[
        nvidia_config("GpuConfig", requests=["dev/slice"], sharing=MPS)])),
    _own("in-tree-unknown-time-slicing-field", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short", "Interval": "Long"}}))),
    _own("in-tree-unknown-iommu-field", claim_template("vfio", request("gpu", "vfio.gpu.nvidia.com"), config=[
        nvidia_config("VfioDeviceConfig", iommu={"backendPolicy": "LegacyOnly", "apiDevice": True})])),
    _own("in-tree-vfio-sharing-is-unknown", claim_template("vfio", request("gpu", "vfio.gpu.nvidia.com"), config=[
        nvidia_config("VfioDeviceConfig", sharing=MPS)])),
    _own("in-tree-daemon-allocation-mode-is-unknown", resource_claim(
        "daemon", request("daemon", "compute-domain-daemon.nvidia.com"), config=[nvidia_config(
            "ComputeDomainDaemonConfig", driver="compute-domain.nvidia.com", domainID="d", allocationMode="All")])),
    _own("in-tree-cluster-kind", _template(nvidia_config("ComputeDomain"))),
    _own("in-tree-gpu-kind-given-to-compute-domain", resource_claim(
        "channel", request("channel", "compute-domain-default-channel.nvidia.com"), config=[nvidia_config(
            "GpuConfig", driver="compute-domain.nvidia.com", sharing=MPS)])),
    _own("in-tree-kind-unknown-to-compute-domain", resource_claim(
        "channel", request("channel", "compute-domain-default-channel.nvidia.com"), config=[nvidia_config(
            "ComputeDomainConfig", driver="compute-domain.nvidia.com")])),
    _own("in-tree-api-version-empty", _template(nvidia_config("GpuConfig", api_version="", sharing=MPS))),
    _own("in-tree-strategy-empty", _template(nvidia_config("GpuConfig", sharing={"strategy": ""}))),
    _own("in-tree-interval-empty-pass", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "TimeSlicing", "timeSlicingConfig": {"interval": ""}}))),
    _own("in-tree-backend-policy-empty-pass", claim_template("vfio", request("gpu", "vfio.gpu.nvidia.com"), config=[
        nvidia_config("VfioDeviceConfig", iommu={"backendPolicy": ""})])),
    # outside the coverage: the webhook keeps the rule
    _own("in-tree-uncovered-pinned-memory", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "MPS", "mpsConfig": {"defaultPinnedDeviceMemoryLimit": "10Gi"}}))),
    _own("in-tree-uncovered-null-sharing", _template(nvidia_config("GpuConfig", sharing=None))),
    _own("in-tree-uncovered-percentage-as-text", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": "50"}}))),
    _own("in-tree-uncovered-unprintable-strategy", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "MPS\u2028[ok]"}))),
    _own("in-tree-uncovered-strategy-newline", _template(nvidia_config("GpuConfig", sharing={"strategy": "MPS\n"}))),
    _own("in-tree-uncovered-percentage-fraction", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50.0}}))),
    _own("in-tree-uncovered-percentage-beyond-int64", _template(nvidia_config("GpuConfig", sharing={
        "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 10**20}}))),
    _own("in-tree-uncovered-unprintable-key", _template(nvidia_config("GpuConfig", sharing=MPS, **{"x\u202e": 1}))),
    _own("in-tree-other-driver-anything-pass", _template(
        {"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": None, "x\u202e": 1}}})),
]
CASES = [c for c in [*all_cases(), *OWN] if c.obj.get("kind") in ("ResourceClaim", "ResourceClaimTemplate")]
SEEN: Counter = Counter()
MESSAGES: set[str] = set()


def listed(policy, docs) -> tuple:
    """(the policy, the documents): the row's DeviceClasses listed in the policy's `deviceClasses` instead, as
    the policy the export reads (with DeviceClass lookups on, device-config is not exported)."""
    classes = {d["metadata"]["name"]: device_class_info(d, policy) for d in docs if d.get("kind") == "DeviceClass"}
    if not classes:
        return policy, list(docs)
    return (dataclasses.replace(policy, device_classes={**policy.device_classes, **classes}),
            [d for d in docs if d.get("kind") != "DeviceClass"])


def _json_numbers(value):
    """JSON as the apiserver decodes it for CEL: an integer beyond int64 becomes a double."""
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    if type(value) is int and not -(2**63) <= value < 2**63:
        return float(value)
    return value


def as_v1(obj: dict) -> dict:
    """The claim as a policy sees it: converted to resource.k8s.io/v1 (a v1beta1 request's fields move under
    `exactly`; v1beta2 has v1's shape), its numbers as the apiserver decodes them."""
    obj = _json_numbers(copy.deepcopy(obj))
    version = obj.get("apiVersion", "")
    obj["apiVersion"] = "resource.k8s.io/v1"
    if version.endswith("/v1beta1"):
        spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
        for req in spec.get("devices", {}).get("requests", []):
            if "firstAvailable" not in req:
                name = req.pop("name")
                body = dict(req)
                req.clear()
                req.update({"name": name, "exactly": body})
    return obj


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_in_tree_device_config_equals_the_engines(case, language):
    base, docs = listed(POLICIES[case.policy], case.docs)
    shaped = apiserver_shaped(case.obj)
    docs = [apiserver_shaped(d) for d in docs]
    ev = evaluate_docs(shaped, policy=base, docs=docs, user=case.user, namespace=case.namespace)
    policy = _in_language(base, language, ev.namespace)
    ev = evaluate_docs(shaped, policy=policy, docs=docs, user=case.user, namespace=case.namespace)
    if RULE not in exported_rules(policy):
        return
    seen = as_v1(shaped)
    request_ = _request(seen, ev.namespace, case.user)
    mine = [o for o in export(policy) if o["metadata"]["labels"][RULE_LABEL] == RULE.value]
    (vap,) = [o for o in mine if o["kind"] == "ValidatingAdmissionPolicy" and matched(
        {**o, "spec": {**o["spec"], "matchConditions": []}}, seen, request_)]
    cel_covered = variable(vap, "covered", seen, request_)  # the rule's coverage, which every validation reads
    is_covered = claim_covered(claim_spec(shaped, shaped["kind"]), policy)
    assert cel_covered == is_covered
    engine = [v for v in ev.violations if v.rule is RULE]
    skipped = evaluate_docs(shaped, policy=dataclasses.replace(policy, in_tree=InTree(validation=True)), docs=docs,
                            user=case.user, namespace=case.namespace)
    assert [v for v in skipped.violations if v.rule is not RULE] == [v for v in ev.violations if v.rule is not RULE]
    if not is_covered:
        SEEN["uncovered"] += 1
        assert [v for v in skipped.violations if v.rule is RULE] == engine
        return
    decisions = admit(mine, seen, request_)
    SEEN["covered-" + ("failing" if engine else "passing")] += 1
    agree(decisions, engine, ev, language, SEEN, MESSAGES)
    assert [v for v in skipped.violations if v.rule is RULE] == []


def test_the_rows_reach_every_side_of_the_coverage():
    """Run after the table above (pytest's order): failing and passing claims inside the coverage, in every
    language, and claims outside it."""
    assert SEEN["covered-failing"] >= 4 * 30 and SEEN["covered-passing"] >= 4 * 20 and SEEN["uncovered"] >= 4 * 6, \
        SEEN
    assert all(SEEN[(language, "failing")] >= 30 for language in LANGUAGES), SEEN


@pytest.mark.parametrize("part", [
    pytest.param('names request "gpus", which the claim does not have', id="missing-request"),
    pytest.param('name one of "gpu"', id="one-name"),
    pytest.param('name one of "gpu", "mig", "dev", "dev/slice" and "dev/whole"', id="names"),
    pytest.param("remove the config's requests", id="no-request"),
    pytest.param("requests[0] names request", id="missing-request-path"),
    pytest.param('config[1].opaque.parameters.sharing.mpsConfig.clients is not a field of MpsConfig', id="second"),
    pytest.param('applies to request "whole", whose DeviceClass "gpu.nvidia.com" gives gpu devices', id="alternative"),
    pytest.param('GpuConfig (spec.spec.devices.config[0].requests[0]) applies to request "slice", whose DeviceClass '
                 '"mig.nvidia.com" gives mig devices', id="sub-request"),
    pytest.param(f"{P}.sharing.timeSlicingConfig.Interval is not a field of TimeSlicingConfig", id="time-slicing"),
    pytest.param(f"{P}.iommu.apiDevice is not a field of IOMMUConfig", id="iommu"),
    pytest.param(f"{P}.sharing is not a field of VfioDeviceConfig", id="vfio-sharing"),
    pytest.param("allocationMode is not a field of ComputeDomainDaemonConfig", id="daemon"),
    pytest.param("ComputeDomain is an object of the cluster, not a device config", id="cluster-kind"),
    pytest.param("only gpu.nvidia.com prepares GpuConfig; compute-domain.nvidia.com fails the claim", id="other"),
    pytest.param("the driver compute-domain.nvidia.com knows only the config kinds", id="unknown-kind"),
    pytest.param(f"{P}.apiVersion is missing", id="api-version-empty"),
    pytest.param(f"{P}.sharing.strategy is missing", id="strategy-empty"),
    pytest.param("、", id="japanese"),
])
def test_the_messages_reach_their_branches(part):
    """Run after the table: the in-tree lines include each branch of the messages."""
    assert any(part in m for m in MESSAGES), part


BROKEN = _template(nvidia_config("GpuConfig", sharing={"strategy": "timeslicing"}))
CI = {"username": "system:serviceaccount:ci:deployer", "groups": ["ci"]}


@pytest.mark.parametrize(("exception", "user", "lifted"), [
    pytest.param({"names": ("shared-*",)}, None, True, id="name"),
    pytest.param({"names": ("other-*",)}, None, False, id="other-name"),
    pytest.param({"namespaces": ("ai-workloads",), "users": (CI["username"],)}, CI, True, id="namespace-and-user"),
    pytest.param({"service_accounts": ("ci/deployer",)}, CI, True, id="author-service-account"),
    pytest.param({"service_accounts": ("ai-workloads/default",)}, None, False, id="no-pod-service-account"),
    pytest.param({"groups": ("ci",)}, CI, True, id="group"),
    pytest.param({"scheduler_names": ("default-scheduler",)}, None, False, id="no-scheduler"),
])
def test_exceptions_lift_device_config_as_the_engine_does(exception, user, lifted):
    """A claim has no pod spec: an exception by service account lifts only for its author's account, and one
    by scheduler never (engine._lifted reads an empty spec); the policy's matchCondition says the same."""
    policy = dataclasses.replace(POLICIES["default"], exceptions=(
        Exception_(name="claims", rules=frozenset({RULE}), **exception),))
    shaped = apiserver_shaped(BROKEN)
    ev = evaluate_docs(shaped, policy=policy, user=user)
    assert bool([v for v in ev.violations if v.rule is RULE]) != lifted
    request_ = _request(shaped, ev.namespace, user)
    mine = [o for o in export(policy) if o["metadata"]["labels"][RULE_LABEL] == RULE.value]
    assert bool(admit(mine, as_v1(shaped), request_)) != lifted
