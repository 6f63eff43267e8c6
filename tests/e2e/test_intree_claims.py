"""device-config's exported policies in a real apiserver: the device-config rows of the unit parity
(tests/intree/test_claim_parity.py: the device-config table's broken twins and their benign twins, in
resource.k8s.io v1, v1beta1 and v1beta2) created with --dry-run=server against the policies alone, in English and
in Japanese. The apiserver converts each to v1 and hands `opaque.parameters` over as JSON (a map CEL lists the
keys of): a row inside the coverage is denied (or warned) exactly when the engine has a device-config finding,
with one of the engine's lines; a row outside it, and a passing one, draws nothing from the policies. A row the
apiserver's own validation refuses first (a config naming a request the claim does not have) is counted apart:
1.34's validation says that one itself, before any admission policy or webhook is asked."""
from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pytest
import yaml

from tests.e2e.conftest import wait_for
from tests.intree.test_claim_parity import CASES, listed
from tests.policy.builders import POLICIES, apiserver_shaped
from tests.policy.conftest import evaluate_docs
from webhook.intree.export import RULE_LABEL, export
from webhook.objects.claims import claim_spec
from webhook.policy.checks.device_config import claim_covered
from webhook.rules import Rule

pytestmark = pytest.mark.e2e

RULE = Rule.DEVICE_CONFIG
LINE = re.compile(r"ValidatingAdmissionPolicy 'gpu-admission\.device-config\.[a-z]+' with binding '[^']+'"
                  r"(?: denied request)?: (.+)$", re.M)
DENIED = re.compile(r"ValidatingAdmissionPolicy 'gpu-admission\.device-config\.[a-z]+' with binding '[^']+' "
                    r"denied request: ")
PROBE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "device-config-probe", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                              "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {
                                  "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfigs"}}}]}}}
TEMPLATE_PROBE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                  "metadata": {"name": "device-config-probe", "namespace": "default"}, "spec": {"spec": PROBE["spec"]}}


def _answered(kubectl) -> bool:
    """Both shapes' policies answer (each is in force once the apiserver's informer has it and its binding)."""
    return all(LINE.search(kubectl.create(p, "--dry-run=server", check=False).stderr) for p in (PROBE, TEMPLATE_PROBE))


def _silent(kubectl) -> bool:
    return not any(LINE.search(kubectl.create(p, "--dry-run=server", check=False).stderr)
                   for p in (PROBE, TEMPLATE_PROBE))


def _remove(kubectl) -> None:
    """Every device-config policy and binding gone, and no longer answering."""
    kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                f"{RULE_LABEL}={RULE.value}", "--wait=true", check=False)
    wait_for(lambda: _silent(kubectl), "the device-config policies to be gone")


def _policy(case, language: str):
    policy, _ = listed(POLICIES[case.policy], case.docs)
    return dataclasses.replace(policy, language=language)


def _groups(language: str) -> dict:
    out: dict = {}
    for case in CASES:
        if not case.id.startswith(("device-config-", "in-tree-")):
            continue  # other rules' claims: the unit parity runs them (no NVIDIA config, or one of theirs)
        classes = tuple(sorted(d["metadata"]["name"] for d in case.docs if d.get("kind") == "DeviceClass"))
        out.setdefault((case.policy, classes), []).append(case)
    return {k: (_policy(v[0], language), v) for k, v in out.items()}


@pytest.mark.parametrize("language", ["en", "ja"])
def test_device_config_in_tree_decides_as_the_engine(cluster, kubectl, language):
    # From a clean slate: a release that exported device-config (tests/e2e/test_intree_chart.py) may have left
    # its Deny binding in the apiserver's policy cache a moment after Helm deleted it.
    _remove(kubectl)
    seen: Counter = Counter()
    for (_, _), (policy, cases) in _groups(language).items():
        objects = [o for o in export(policy) if o["metadata"]["labels"][RULE_LABEL] == RULE.value]
        if not objects:
            continue
        for case in cases:
            cluster.namespace(case.obj["metadata"].get("namespace", "default"))
        kubectl.apply(yaml.safe_dump_all(objects))
        try:
            wait_for(lambda: _answered(kubectl), "the device-config policies to answer")
            for case in cases:
                shaped = apiserver_shaped(case.obj)
                docs = [apiserver_shaped(d) for d in listed(policy, case.docs)[1]]
                ev = evaluate_docs(shaped, policy=policy, docs=docs, user=case.user, namespace=case.namespace)
                engine = {v.message for v in ev.violations if v.rule is RULE}
                result = kubectl.create(shaped, "--dry-run=server", check=False)
                said = LINE.findall(result.stderr)
                if result.returncode != 0 and not said and "admission webhook" not in result.stderr:
                    # the apiserver's own validation refused it before admission (a config naming a request the
                    # claim does not have; other rules' rows: admin access outside a labelled namespace, ...)
                    assert "ValidatingAdmissionPolicy" not in result.stderr, (case.id, result.stderr)
                    seen["refused by the apiserver"] += 1
                    continue
                if not claim_covered(claim_spec(shaped, shaped["kind"]), policy) or not engine:
                    assert said == [], (case.id, result.stderr)
                    seen["uncovered" if engine else "passing"] += 1
                    continue
                assert said, (case.id, result.stderr, engine)
                assert all(line in engine for line in said), (case.id, said, engine)
                # the policies' own verdict: the session's webhook, when a module before this one installed the
                # chart, may deny the same claim in its own words
                denied = bool(DENIED.search(result.stderr))
                assert denied == any("[device-config]" in m and v.action.value == "enforce"
                                     for v in ev.violations if v.rule is RULE for m in [v.message]), case.id
                seen["decided"] += 1
        finally:
            _remove(kubectl)
    print(dict(seen))
    assert seen["decided"] >= 30 and seen["passing"] >= 15 and seen["uncovered"] >= 5, seen


def _crowded_template() -> dict:
    """A template at the API's limits (32 requests of 8 alternatives, 32 configs naming 31 or 32 requests each)
    and one finding at the very end: the last config's GpuConfig on a MIG alternative, so every expression
    walks everything."""
    requests = [{"name": f"r{i}", "firstAvailable": [{"name": f"a{j}", "deviceClassName": "gpu.nvidia.com"}
                                                   for j in range(8)]} for i in range(32)]
    requests[-1]["firstAvailable"][-1]["deviceClassName"] = "mig.nvidia.com"
    names = [f"r{i}" for i in range(31)] + ["r31/a7"]
    config = [{"requests": names, "opaque": {"driver": "gpu.nvidia.com", "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}}}} for _ in range(32)]
    for c in config[:-1]:
        c["requests"] = names[:-1]
    crowded = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
               "metadata": {"name": "crowded", "namespace": "default"},
               "spec": {"spec": {"devices": {"requests": requests, "config": config}}}}
    return crowded


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_crowded_template_is_evaluated_within_the_cost_budgets(cluster, kubectl, language):
    """With failurePolicy Fail (onError: deny), a CEL cost or evaluation error would deny with the apiserver's
    own message: the crowded template is denied by the rule's message, the device type one."""
    policy = dataclasses.replace(POLICIES["dra-demos"], language=language,
                                 on_error={**POLICIES["dra-demos"].on_error, RULE: "deny"})
    objects = [o for o in export(policy) if o["metadata"]["labels"][RULE_LABEL] == RULE.value]
    assert {o["spec"]["failurePolicy"] for o in objects if o["kind"] == "ValidatingAdmissionPolicy"} == {"Fail"}
    kubectl.apply(yaml.safe_dump_all(objects))
    try:
        wait_for(lambda: _answered(kubectl), "the device-config policies to answer")
        crowded = _crowded_template()
        engine = {v.message for v in evaluate_docs(crowded, policy=policy).violations if v.rule is RULE}
        result = kubectl.create(crowded, "--dry-run=server", check=False)
        assert "cost" not in result.stderr and "expression" not in result.stderr.lower(), result.stderr
        said = LINE.findall(result.stderr)
        assert result.returncode == 1 and len(said) == 1 and said[0] in engine, (result.stderr, engine)
        assert "config[31].requests[31]" in said[0] and '"a7"' in said[0], said
    finally:
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                    f"{RULE_LABEL}={RULE.value}", "--wait=true", check=False)
        wait_for(lambda: _silent(kubectl), "the device-config policies to be gone")
