"""The exported MutatingAdmissionPolicies mutate as the engine does: every Pod row of every rule's table
(tests/policy/rules/test_<rule>.py), as the apiserver hands it over, under the row's policy. The apiserver
runs the policies before the mutating webhook (kube-apiserver's plugin order), so the Pod the policies patch
and the webhook (inTree.mutation on) then mutates must equal the Pod the webhook alone makes, with the same
findings; the CEL coverage equals the engine's (webhook/policy/coverage.py), and a second run of the
policies (reinvocation) patches nothing."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from tests.intree.vap import matched, mutate
from tests.policy.builders import POLICIES, all_cases, apiserver_shaped
from tests.policy.conftest import evaluate_docs
from webhook.config.model import InTree
from webhook.intree.export import RULE_LABEL
from webhook.intree.mutations import api_version, export_mutations
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import view_of
from webhook.policy.coverage import covered, mutated_rules
from webhook.rules import Rule

DP = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
DRA = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"}
GPU = {"limits": {"nvidia.com/gpu": "1"}}


@dataclasses.dataclass(frozen=True)
class Row:
    """A Pod bound by its nodeSelector, under the default policy: the mutations' own table."""

    id: str
    obj: dict
    policy: str = "default"
    docs: tuple = ()
    user: dict | None = None
    namespace: str = "ai"


def _pod(name: str, containers: list, selector: dict | None = DP, **spec) -> Row:
    full = {"containers": containers, **spec}
    if selector is not None:
        full["nodeSelector"] = selector
    return Row(name, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ai"}, "spec": full})


def _c(name: str = "main", resources: dict | None = GPU, **extra) -> dict:
    out = {"name": name, "image": "registry.example.invalid/cuda:12", **extra}
    if resources is not None:
        out["resources"] = resources
    return out


OWN = [
    _pod("gpu-pod-nothing-set", [_c()]),
    _pod("gpu-pod-runtime-class-set", [_c()], runtimeClassName="kata"),
    _pod("gpu-requests-only", [_c(resources={"requests": {"nvidia.com/gpu": "1"}})]),
    _pod("gpu-zero", [_c(resources={"limits": {"nvidia.com/gpu": "0"}})]),
    _pod("mig-gpu", [_c(resources={"limits": {"nvidia.com/mig-1g.10gb": "1"}})]),
    _pod("cpu-pod-on-gpu-nodes", [_c(resources=None)]),
    _pod("pod-root-user", [_c()], securityContext={"runAsUser": 0}),
    _pod("pod-non-root-false", [_c()], securityContext={"runAsNonRoot": False}),
    _pod("pod-fields-set", [_c()], securityContext={"runAsNonRoot": True, "runAsUser": 1000,
                                                     "seccompProfile": {"type": "Unconfined"}}),
    _pod("container-root-user", [_c(securityContext={"runAsUser": 0})]),
    _pod("container-privileged", [_c(securityContext={"privileged": True})]),
    _pod("container-sys-admin", [_c(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})]),
    _pod("container-net-admin", [_c(securityContext={"capabilities": {"add": ["NET_ADMIN"]}})]),
    _pod("container-drop-set", [_c(securityContext={"capabilities": {"drop": ["NET_RAW"]}})]),
    _pod("container-escalation-true", [_c(securityContext={"allowPrivilegeEscalation": True,
                                                           "readOnlyRootFilesystem": False})]),
    _pod("init-and-sidecar", [_c(), _c("logger", resources=None, securityContext={})],
         initContainers=[_c("setup", resources=None), _c("proxy", resources=None, restartPolicy="Always")]),
    _pod("windows", [_c()], os={"name": "windows"}),
    _pod("dra-cohort-pod", [_c(resources=None)], selector=DRA),
    _pod("no-selector", [_c()], selector=None),
    _pod("partial-selector", [_c()], selector={"workload.example.com/gpu-allocation": "device-plugin"}),
    _pod("required-affinity", [_c()], affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In",
                                                     "values": ["linux"]}]}]}}}),
    Row("exempt-namespace", _pod("x", [_c()]).obj, namespace="kube-system"),
]
CASES = [*(c for c in all_cases() if c.obj.get("kind") == "Pod"), *OWN]
SEEN: Counter = Counter()


def _request(namespace: str, user: dict | None) -> dict:
    user = user or {}
    return {"operation": "CREATE", "namespace": namespace,
            "userInfo": {"username": user.get("username", ""), "groups": list(user.get("groups", []))}}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_in_tree_mutations_equal_the_engines(case):
    policy = POLICIES[case.policy]
    shaped = apiserver_shaped(case.obj)
    docs = [apiserver_shaped(d) for d in case.docs]
    alone = evaluate_docs(shaped, policy=policy, docs=docs, user=case.user, namespace=case.namespace)
    if alone.skipped:
        return
    request = _request(alone.namespace, case.user)
    objects = export_mutations(policy)
    view = view_of(shaped, BY_KIND["Pod"], alone.namespace)
    for rule in mutated_rules(policy):
        (pol,) = [o for o in objects if o["kind"] == "MutatingAdmissionPolicy"
                  and o["metadata"]["labels"][RULE_LABEL] == rule.value]
        first = {**pol, "spec": {**pol["spec"], "matchConditions": pol["spec"]["matchConditions"][:1]}}
        assert matched(first, shaped, request) == (rule in covered(frozenset({rule}), view, policy))
    patched, ops = mutate(objects, shaped, request)
    in_tree = dataclasses.replace(policy, in_tree=InTree(mutation=True))
    webhook = evaluate_docs(patched, policy=in_tree, docs=docs, user=case.user, namespace=case.namespace)
    assert (webhook.mutated or patched) == (alone.mutated or shaped)
    assert webhook.violations == alone.violations
    rules = {Rule.DEFAULT_RUNTIME_CLASS if op["path"] == "/spec/runtimeClassName" else Rule.DEFAULT_SECURITY_CONTEXT
             for op in ops}
    assert all(m.rule not in rules for m in webhook.mutations)  # the webhook did not set them again
    SEEN["patched" if ops else "unpatched"] += 1
    SEEN.update(r.value for r in rules)
    again, more = mutate(objects, patched, request)
    assert more == [] and again == patched  # reinvocation: nothing left to add


def test_the_tables_reach_both_sides():
    """Run after the table above: rows the policies patch (each rule) and rows they leave alone."""
    assert SEEN["patched"] >= 10 and SEEN["unpatched"] >= 10, SEEN
    assert SEEN["default-runtime-class"] >= 3 and SEEN["default-security-context"] >= 10, SEEN


@pytest.mark.parametrize(("version", "api"), [
    pytest.param((1, 33), None, id="1.33-alpha-only"),
    pytest.param((1, 34), "admissionregistration.k8s.io/v1beta1", id="1.34-beta"),
    pytest.param((1, 35), "admissionregistration.k8s.io/v1beta1", id="1.35-beta"),
    pytest.param((1, 36), "admissionregistration.k8s.io/v1", id="1.36-ga"),
    pytest.param((1, 37), "admissionregistration.k8s.io/v1", id="1.37-ga"),
])
def test_api_version_by_kubernetes_version(version, api):
    assert api_version(version) == api
    objects = export_mutations(POLICIES["default"], version)
    assert {o["apiVersion"] for o in objects} == ({api} if api else set())
