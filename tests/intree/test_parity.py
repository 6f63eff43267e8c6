"""The exported policies decide as the engine does: every pod-bearing row of every rule's table
(tests/policy/rules/test_<rule>.py), as the apiserver hands it over, under the row's policy. For each
exported rule, the CEL coverage equals the engine's (webhook/policy/coverage.py); inside it, CEL denies,
warns or audits exactly when the engine's finding has that action, and the engine with `inTree` on leaves
the rule to the apiserver and keeps every other finding. Each in-tree message is one of the engine's lines for
that object, word for word, in the policy's language: English, Japanese, and a Japanese namespace override
(in the object's namespace, and in another one, where the policy's English holds)."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from tests.intree.vap import admit, matched, variable
from tests.policy.builders import (
    CONTAINER_SC,
    DEVICE_PLUGIN_SOCKETS,
    POLICIES,
    Case,
    all_cases,
    apiserver_shaped,
    container,
    pod,
    pod_spec,
    workload,
)
from tests.policy.conftest import evaluate_docs
from webhook.config.model import InTree, NamespaceOverride
from webhook.intree.export import RULE_LABEL, export
from webhook.objects.kinds import BY_KIND
from webhook.objects.podspec import view_of
from webhook.policy.coverage import ACTIONS, DRY_RUN, covered, exported_rules
from webhook.rules import Action, Rule

GPU = {"nvidia.com/gpu": 1}
ROOT = {**CONTAINER_SC, "runAsUser": 0}


def _own(id_: str, obj: dict) -> Case:
    return Case(id_, obj, ())


# The message's branches the rule tables do not reach, each beside its benign twin: the container words
# (init, sidecar), where a variable's value comes from, a host directory above the sensitive paths, and a
# capability list; the findings are the engine's (the table above compares them).
OWN = [
    # (in a GPU pod, hide-gpus sets NVIDIA_VISIBLE_DEVICES=void on the containers without GPUs first, and the
    # webhook keeps the rule there)
    _own("in-tree-init-container-sets-cuda", pod("etl", pod_spec(
        container(), init=[container("fetch", env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}])]))),
    _own("in-tree-init-container-sets-nothing-pass", pod("etl", pod_spec(
        container(), init=[container("fetch", env=[{"name": "MODEL", "value": "0"}])]))),
    _own("in-tree-sidecar-sets-nvidia", pod("train", pod_spec(
        container(gpus=GPU), init=[container("shipper", restart="Always", env=[
            {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])],
        cohort="device-plugin"))),
    _own("in-tree-sidecar-sets-nothing-pass", pod("train", pod_spec(
        container(gpus=GPU), init=[container("shipper", restart="Always", env=[
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])], cohort="device-plugin"))),
    _own("in-tree-resource-field-ref", workload("Deployment", "serve", pod_spec(container(gpus=GPU, env=[
        {"name": "CUDA_VISIBLE_DEVICES", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]),
        cohort="device-plugin"))),
    _own("in-tree-config-map-key-ref", workload("Deployment", "serve", pod_spec(container(gpus=GPU, env=[
        {"name": "CUDA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "gpus", "key": "list"}}}]),
        cohort="device-plugin"))),
    _own("in-tree-host-dev", pod("tools", pod_spec(container(mounts=[{"name": "dev", "mountPath": "/host/dev"}]),
                                                   volumes=[{"name": "dev", "hostPath": {"path": "/dev"}}]))),
    _own("in-tree-host-kubelet", workload("DaemonSet", "agent", pod_spec(
        container(), volumes=[{"name": "kubelet", "hostPath": {"path": "/var/lib/kubelet"}}]))),
    _own("in-tree-host-device-plugin-sockets", pod("agent", pod_spec(container(), volumes=[DEVICE_PLUGIN_SOCKETS]))),
    _own("in-tree-host-data-pass", pod("tools", pod_spec(container(), volumes=[
        {"name": "data", "hostPath": {"path": "/var/lib/data"}}]))),
    _own("in-tree-root-init-container", pod("train", pod_spec(
        container(gpus=GPU), init=[container("setup", sc=ROOT), container("proxy", restart="Always")],
        cohort="device-plugin"))),
    _own("in-tree-root-sidecar", pod("train", pod_spec(
        container(gpus=GPU), init=[container("setup"), container("proxy", sc=ROOT, restart="Always")],
        cohort="device-plugin"))),
    _own("in-tree-two-capabilities-in-a-sidecar", pod("train", pod_spec(
        container(gpus=GPU), init=[container("probe", restart="Always", sc={
            **CONTAINER_SC, "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN", "SYS_TIME"]}})],
        cohort="device-plugin"))),
    _own("in-tree-sidecar-non-root-pass", pod("train", pod_spec(
        container(gpus=GPU), init=[container("proxy", restart="Always")], cohort="device-plugin"))),
    _own("in-tree-file-key-ref", workload("Deployment", "serve", pod_spec(container(gpus=GPU, env=[
        {"name": "CUDA_VISIBLE_DEVICES", "valueFrom": {"fileKeyRef": {"volumeName": "config", "path": "gpus.env",
                                                                      "key": "CUDA"}}}]), cohort="device-plugin"))),
]
CASES = [c for c in [*all_cases(), *OWN] if BY_KIND.get(c.obj["kind"]) and BY_KIND[c.obj["kind"]].pod_spec_path]
MESSAGES: set[str] = set()
SEEN: Counter = Counter()


def agree(decisions, engine, ev, language: str, seen: Counter, messages: set[str]) -> None:
    """The in-tree policies' decisions against the engine's findings of the same rule: both or neither, the
    actions the rule's mode maps to, and each in-tree message one of the engine's lines."""
    assert bool(decisions) == bool(engine), (decisions, engine)
    if not engine:
        return
    seen[(language, "failing")] += 1
    table = DRY_RUN if ev.dry_run else ACTIONS
    assert {d.actions for d in decisions} == {tuple(table[engine[0].action])}
    lines = {v.message for v in engine}
    for d in decisions:
        assert d.message in lines, (d.message, lines)
        messages.add(d.message)


def _request(obj: dict, namespace: str, user: dict | None) -> dict:
    user = user or {}
    return {"operation": "CREATE", "namespace": namespace,
            "userInfo": {"username": user.get("username", ""), "groups": list(user.get("groups", []))}}


def _in_language(policy, language: str, namespace: str):
    """The policy with its messages in `language`: everywhere ("ja"), or by a namespace override, in the
    object's namespace ("ja-here") or in another one only ("ja-elsewhere")."""
    if language == "en":
        return policy
    if language == "ja":
        return dataclasses.replace(policy, language="ja")
    where = namespace if language == "ja-here" else namespace + "-other"
    return dataclasses.replace(policy, namespace_overrides=(
        *policy.namespace_overrides, NamespaceOverride(namespaces=(where,), language="ja")))


LANGUAGES = ("en", "ja", "ja-here", "ja-elsewhere")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_in_tree_verdicts_equal_the_engines(case, language):
    base = POLICIES[case.policy]
    if any(d.get("kind") == "DeviceClass" for d in case.docs):
        # the row's DeviceClasses stand for what DeviceClass lookups return (the bundle resolves them as
        # the cluster would): the policy's own list is then not what the engine reads
        base = dataclasses.replace(base, lookups=dataclasses.replace(base.lookups, device_classes=True))
    shaped = apiserver_shaped(case.obj)
    docs = [apiserver_shaped(d) for d in case.docs]
    ev = evaluate_docs(shaped, policy=base, docs=docs, user=case.user, namespace=case.namespace)
    if ev.skipped:
        return
    policy = _in_language(base, language, ev.namespace)
    ev = evaluate_docs(shaped, policy=policy, docs=docs, user=case.user, namespace=case.namespace)
    assert ev.language == ("en" if language in ("en", "ja-elsewhere") else "ja")
    seen = ev.mutated or shaped  # what the validating phase sees, after the mutating webhook
    request = _request(seen, ev.namespace, case.user)
    objects = export(policy)
    view = view_of(seen, BY_KIND[seen["kind"]], ev.namespace)
    in_tree_policy = dataclasses.replace(policy, in_tree=InTree(validation=True))
    skipped = evaluate_docs(shaped, policy=in_tree_policy, docs=docs, user=case.user, namespace=case.namespace)
    for rule in exported_rules(policy) - {Rule.DEVICE_CONFIG}:  # claims' rule: tests/intree/test_claim_parity.py
        mine = [o for o in objects if o["metadata"]["labels"][RULE_LABEL] == rule.value]
        (vap,) = [o for o in mine if o["kind"] == "ValidatingAdmissionPolicy" and matched(
            {**o, "spec": {**o["spec"], "matchConditions": []}}, seen, request)]
        cel_covered = variable(vap, "covered", seen, request)  # the rule's coverage, which every validation reads
        is_covered = rule in covered(frozenset({rule}), view, policy)
        assert cel_covered == is_covered
        engine = [v for v in ev.violations if v.rule is rule]
        decisions = admit(mine, seen, request)
        if not is_covered:
            SEEN["uncovered"] += 1
            SEEN[(rule.value, "uncovered")] += 1
            assert [v for v in skipped.violations if v.rule is rule] == engine
            continue
        SEEN["covered-" + ("failing" if engine else "passing")] += 1
        SEEN[(rule.value, "failing" if engine else "passing")] += 1
        agree(decisions, engine, ev, language, SEEN, MESSAGES)
        if engine:
            if rule is Rule.DOUBLE_MECHANISM:  # one finding, in the engine's words
                assert [d.message for d in decisions] == [v.message for v in engine]
        # the webhook leaves the rule to the apiserver and keeps the rest
        assert [v for v in skipped.violations if v.rule is rule] == []
    kept = [v for v in skipped.violations if v.rule not in exported_rules(policy)]
    assert kept == [v for v in ev.violations if v.rule not in exported_rules(policy)]


def test_the_tables_reach_every_side_of_the_coverage():
    """Run after the table above (same module, pytest's order): failing and passing rows inside the coverage,
    and rows outside it, for the parity above to mean something."""
    assert SEEN["covered-failing"] >= 10 and SEEN["covered-passing"] >= 50 and SEEN["uncovered"] >= 10, SEEN
    for rule in ("visible-devices-override", "device-access-bypass", "run-as-root", "runtime-class-conflict",
                 "double-mechanism"):
        assert SEEN[(rule, "failing")] >= 2 and SEEN[(rule, "passing")] >= 10 and SEEN[(rule, "uncovered")] >= 2, SEEN
    assert all(SEEN[(language, "failing")] >= 10 for language in LANGUAGES), SEEN


def test_action_mapping():
    assert ACTIONS == {Action.ENFORCE: ["Deny"], Action.WARN: ["Warn"], Action.AUDIT: ["Audit"]}
    assert DRY_RUN[Action.ENFORCE] == ["Warn", "Audit"]


@pytest.mark.parametrize("part", [
    pytest.param('init container "fetch" sets CUDA_VISIBLE_DEVICES', id="init-container"),
    pytest.param('sidecar container "shipper" sets NVIDIA_VISIBLE_DEVICES', id="sidecar"),
    pytest.param("from a field of the pod", id="field-ref"),
    pytest.param("with valueFrom", id="other-value-from"),
    pytest.param('from key list of ConfigMap "gpus"', id="key-ref"),
    pytest.param("with a literal value", id="literal"),
    pytest.param("the pod is allocated no GPU", id="no-gpu"),
    pytest.param(", a directory above /dev/nvidia*", id="above-dev"),
    pytest.param(", a directory above /var/lib/kubelet/device-plugins, /var/lib/kubelet/plugins", id="above-kubelet"),
    pytest.param('sidecar container "proxy" sets runAsUser: 0', id="root-sidecar"),
    pytest.param("capabilities.add: [NET_ADMIN, SYS_TIME]", id="capabilities"),
    pytest.param("the pod template sets", id="pod-template"),
    pytest.param("ephemeral container", id="ephemeral"),
    pytest.param("(spec.template.metadata.annotations[", id="annotation"),
    pytest.param('runtimeClassName is "', id="runtime-class"),
    pytest.param("(DRA, DeviceClass", id="double-mechanism"),
    pytest.param('while container "server" requests deviceclass', id="double-mechanism-two-containers"),
    pytest.param('sidecar container "metrics-agent" requests nvidia.com/gpu', id="double-mechanism-sidecar"),
    pytest.param("Pod template が", id="ja-pod-template"),
    pytest.param('sidecar container "proxy" が runAsUser: 0 を設定しています', id="ja-sidecar"),
    pytest.param("。対処: ", id="ja-line"),
    pytest.param("/docs/rules/ja/", id="ja-docs"),
])
def test_the_rows_reach_every_branch_of_the_messages(part):
    """Run after the table above: each branch of the messages was written by CEL, and equalled the engine's."""
    assert any(part in m for m in MESSAGES), part


def test_double_mechanism_is_left_to_the_webhook_with_class_lookups():
    """With DeviceClass lookups on, the cluster's classes replace the policy's list the export would decide
    by: the rule is not exported, and the engine's coverage is empty (a pod of the corner is its own again)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"limits": {
            "nvidia.com/gpu": "1", "deviceclass.resource.kubernetes.io/hybrid-full-gpu": "1"}}}]}}
    view = view_of(pod, BY_KIND["Pod"], "ml")
    on, off = POLICIES["class-lookups"], POLICIES["default"]
    assert Rule.DOUBLE_MECHANISM in exported_rules(off) and covered(frozenset({Rule.DOUBLE_MECHANISM}), view, off)
    assert Rule.DOUBLE_MECHANISM not in exported_rules(on)
    assert not covered(frozenset({Rule.DOUBLE_MECHANISM}), view, on)
    assert not [o for o in export(on) if o["metadata"]["labels"][RULE_LABEL] == "double-mechanism"]
    # device-config decides device types by the policy's classes too (tests/intree/test_claim_parity.py)
    assert exported_rules(on) == exported_rules(off) - {Rule.DOUBLE_MECHANISM, Rule.DEVICE_CONFIG}
