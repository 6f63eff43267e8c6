"""Real manifests of public projects (tests/data/fixtures/real-manifests, copies of the shared fixtures;
PROVENANCE.md names repository, commit and path), each document's verdict under the default policy asserted
exactly, and again in the shape the apiserver sends."""
from __future__ import annotations

import pytest

from tests.policy.builders import apiserver_shaped
from tests.support import REAL_MANIFESTS, load_docs
from webhook.config import default_policy
from webhook.handlers.evaluate import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.objects.kinds import BY_KIND, foreign_kind

POLICY = default_policy()
EXEMPT = "exempt"


def _file(name):
    return REAL_MANIFESTS / name


# file -> [(kind, name, verdict, rules)]: verdict True allowed, False denied, EXEMPT or a skip reason's start.
# The files are those of the shared fixtures; the shapes of the public GPU stacks not among them yet (NVIDIA's
# node agents, the GPU Operator's validators, the DRA demos' MIG, VFIO, sharing and IMEX claims, KAI-Scheduler,
# Volcano) are cases written here in tests/policy/rules/test_gpu_stack_shapes.py.
TABLE = {
    # a GPU pod of KAI-Scheduler's quickstart and the device plugin's e2e Job: nothing to refuse
    "NVIDIA_KAI-Scheduler__docs_quickstart_pods_gpu-pod.yaml": [("Pod", "gpu-pod", True, set())],
    "NVIDIA_k8s-device-plugin__testdata_job-1.yaml": [("Job", "j-e2e-1", True, set())],
    # the DRA driver's quickstart: exclusive full GPUs from templates; one named claim shared by two pods warns
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()), ("Pod", "pod1", True, set()),
        ("Pod", "pod2", True, set())],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test2.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()), ("Pod", "pod", True, set())],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test3.yaml": [
        ("ResourceClaim", "single-gpu", True, set()),
        ("Pod", "pod1", True, {"shared-claim"}), ("Pod", "pod2", True, {"shared-claim"})],
    # Kyverno's "good" GPU workloads: allowed, as Kyverno's own policy allows them
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_podcontrollers-good.yaml": [
        ("Deployment", "gooddeployment01", True, set()), ("CronJob", "goodcronjob01", True, set())],
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_pods-good.yaml": [
        ("Pod", "goodpod01", True, set()), ("Pod", "goodpod02", True, set()), ("Pod", "goodpod03", True, set())],
}


def _verdicts(docs, shape=lambda d: d):
    docs = [shape(d) for d in docs]
    resolver = BundleResolver(docs)
    out = []
    for doc in docs:
        if doc.get("kind") in ("Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                               "ClusterRoleBinding"):
            continue
        ev = evaluate_object(doc, policy=POLICY, resolver=resolver, namespace="default")
        assert ev.errors == ()
        verdict = EXEMPT if ev.skipped and "is exempt" in ev.skipped else ev.skipped or ev.allowed
        out.append((ev.kind, ev.name, verdict, {v.rule.value for v in ev.violations if not v.rule.is_mutation}))
    return out


def _matches(actual, expected):
    return [(k, n, v if not isinstance(e, str) or e == EXEMPT else (v.startswith(e) and e), r)
            for (k, n, v, r), (_, _, e, _) in zip(actual, expected)]


@pytest.mark.parametrize("name, expected", [pytest.param(n, e, id=n.split("__")[1][:60]) for n, e in TABLE.items()])
def test_real_manifest_verdicts(name, expected):
    docs = load_docs(_file(name))
    actual = _verdicts(docs)
    assert _matches(actual, expected) == expected
    # as the apiserver sends the same objects: the same verdicts
    assert _verdicts(docs, _as_served) == actual


def _as_served(doc):
    """apiserver_shaped knows our kinds' defaults; another group's kind goes as written."""
    return doc if foreign_kind(doc, doc.get("kind", "")) or doc.get("kind") not in BY_KIND else apiserver_shaped(doc)


def test_every_real_manifest_has_a_row():
    """The table covers exactly the folder's manifests, each listed in its PROVENANCE.md."""
    rows = (REAL_MANIFESTS / "PROVENANCE.md").read_text(encoding="utf-8")
    files = {p.name for p in REAL_MANIFESTS.iterdir() if p.suffix in (".yaml", ".yml")}
    assert set(TABLE) == files
    assert all(f"| {n} |" in rows for n in files)
