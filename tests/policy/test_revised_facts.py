"""The mutated Pod's facts are derived from the original's (gpu.revised, podspec.revised_view) instead of
reading the mutated Pod again: on every Pod the rule tables, the mutation table and the real manifests hold,
the derived view and facts equal what view_of and analyse make of the mutated Pod, and the derivation is taken
(not its fallback) where only the fields the mutations set have changed."""
from __future__ import annotations

import json

import pytest

import webhook.policy.engine as engine
import webhook.policy.gpu as gpu
from tests.policy.builders import DRA_NODES, POLICIES, all_cases, container, facts_of, pod, pod_spec
from tests.policy.conftest import evaluate_docs
from tests.policy.test_mutations import CASES as MUTATION_CASES
from tests.policy.test_mutations import _real_pods
from tests.support import DATA
from webhook.config import default_policy
from webhook.objects.podspec import revised_view, view_of
from webhook.policy.draft import Draft
from webhook.policy.gpu import analyse, revised

TABLE_PODS = [pytest.param(c.obj, c.docs, POLICIES[c.policy], c.namespace, c.user, id=c.id)
              for c in all_cases() if c.obj.get("kind") == "Pod"]
MUTATED_PODS = [pytest.param(p.values[0], (), default_policy(), None, None, id=f"mutations-{p.id}")
                for p in MUTATION_CASES]
REAL_PODS = [pytest.param(*p.values, default_policy(), None, None, id=f"real-{p.id}") for p in _real_pods()]


def _checked(monkeypatch) -> list:
    """Replaces the engine's derivation with one that also reads the mutated Pod from scratch and compares."""
    seen = []

    def derive_and_compare(facts, view, policy, context):
        got = revised(facts, view, policy, context)
        fresh = view_of(view.obj, view.kind, view.namespace)
        assert view == fresh
        assert got == analyse(fresh, policy, context)
        seen.append(got)
        return got

    monkeypatch.setattr(engine, "revised", derive_and_compare)
    return seen


@pytest.mark.parametrize("obj, docs, policy, namespace, user", TABLE_PODS + MUTATED_PODS + REAL_PODS)
def test_derived_facts_equal_the_mutated_pods(obj, docs, policy, namespace, user, monkeypatch):
    seen = _checked(monkeypatch)
    ev = evaluate_docs(obj, policy=policy, docs=docs, namespace=namespace, user=user)
    assert len(seen) == (1 if ev.patch else 0)


def test_the_bench_pod_is_not_analysed_again(monkeypatch):
    obj = json.loads((DATA / "pods" / "apiserver-gpu-pod.json").read_text())
    seen = _checked(monkeypatch)
    analysed = []

    def counting(*args):
        analysed.append(args)
        return analyse(*args)

    monkeypatch.setattr(gpu, "analyse", counting)
    ev = evaluate_docs(obj, policy=default_policy())
    assert ev.patch and len(seen) == 1
    assert analysed == [], "the mutated Pod was analysed again instead of derived"


def _set_runtime(d):
    d.node("spec")["runtimeClassName"] = "nvidia"


def _more_gpus(d):
    d.node("spec", "containers", 0, "resources", "limits")["nvidia.com/gpu"] = 2


def _add_claim(d):
    d.node("spec", "resourceClaims", create=list).append({"name": "gpu", "resourceClaimTemplateName": "t"})


def _place_on_dra(d):
    d.node("spec", "nodeSelector").update(DRA_NODES)


def _hide(d):
    d.node("spec", "containers", 1, "env", create=list).append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})


@pytest.mark.parametrize("policy, edit, derived", [
    pytest.param("default", _set_runtime, True, id="runtime-class-set"),
    pytest.param("default", _hide, True, id="env-added"),
    pytest.param("default", _place_on_dra, True, id="node-selection-changed"),
    pytest.param("default", _more_gpus, False, id="resources-changed"),
    pytest.param("default", _add_claim, False, id="claims-changed"),
    # nvidia.com/gpu that a DeviceClass also serves: its mechanism was read from the cohort chosen
    pytest.param("extended-class", _place_on_dra, False, id="mechanism-by-cohort"),
])
def test_revision_derived_or_analysed_again(policy, edit, derived, monkeypatch):
    obj = pod("p", pod_spec(container(gpus={"nvidia.com/gpu": 1}), container("sidecar")))
    policy = POLICIES[policy]
    facts, context = facts_of(obj, policy)
    draft = Draft(obj)
    edit(draft)
    analysed = []

    def counting(*args):
        analysed.append(args)
        return analyse(*args)

    monkeypatch.setattr(gpu, "analyse", counting)
    view = revised_view(facts.view, draft.root)
    got = revised(facts, view, policy, context)
    fresh = view_of(draft.root, view.kind, view.namespace)
    assert view == fresh
    assert got == analyse(fresh, policy, context)
    assert (analysed == []) is derived
    # the containers the revision did not touch are the original's objects; the others are read again
    for before, after in zip(facts.view.containers, view.containers):
        assert (after is before) is (after.raw is before.raw)
