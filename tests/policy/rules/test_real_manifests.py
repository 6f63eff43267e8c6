"""Real manifests of public projects (tests/data/fixtures/real-manifests, copies of the shared fixtures;
PROVENANCE.md names repository, commit and path), each document's verdict under the default policy asserted
exactly, and again in the shape the apiserver sends."""
from __future__ import annotations

import pytest

from tests.policy.builders import POLICIES, apiserver_shaped
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
    # the DRA driver's demos of MIG slices, VFIO passthrough, time-slicing and MPS: refused where the default DRA
    # cohort (exclusive full GPUs, no sharing) does not offer them; under DEMOS' policy they all pass
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test4.yaml": [
        ("ResourceClaimTemplate", "mig-devices", False, {"resource-not-offered"}),
        ("Deployment", "pod", False, {"resource-not-offered"})],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test5.yaml": [
        ("ResourceClaimTemplate", "multiple-gpus", False, {"sharing-not-enabled"}),
        ("Pod", "pod0", False, {"sharing-not-enabled"})],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test6.yaml": [
        ("ResourceClaimTemplate", "a100", False, {"sharing-not-enabled"}),
        ("Deployment", "pod", False, {"sharing-not-enabled"})],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-mps.yaml": [
        ("ResourceClaimTemplate", "shared-gpu", False, {"sharing-not-enabled"}),
        ("Pod", "test-pod", False, {"sharing-not-enabled"})],
    # the demo's pod sits in another namespace than its template (gpu-test-vfiopci, gpu-test-vfio): unresolved
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-vfio-config.yaml": [
        ("ResourceClaimTemplate", "single-gpu-full-vfioconfig", False, {"resource-not-offered"}),
        ("Pod", "pod1-full-vfioconfig", True, {"unresolved-claim"})],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-vfiopci.yaml": [
        ("ResourceClaimTemplate", "single-gpu", False, {"resource-not-offered"}),
        ("Pod", "pod1", False, {"resource-not-offered"})],
    # IMEX channels of the driver's own non-GPU class beside a full-GPU template
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_imex-test1.yaml": [
        *[("ResourceClaim", f"deployment{i}-imex-channel", True, set()) for i in range(4)],
        ("ResourceClaimTemplate", "node-gpus", True, set()),
        *[("Deployment", f"deployment{i}", True, set()) for i in range(4)]],
    # Kyverno's "good" GPU workloads: allowed, as Kyverno's own policy allows them
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_podcontrollers-good.yaml": [
        ("Deployment", "gooddeployment01", True, set()), ("CronJob", "goodcronjob01", True, set())],
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_pods-good.yaml": [
        ("Pod", "goodpod01", True, set()), ("Pod", "goodpod02", True, set()), ("Pod", "goodpod03", True, set())],
}


# The DRA driver's demo specs under a policy whose DRA cohort enables what they use (full GPUs, MIG slices of an
# A100 40GB, VFIO passthrough, TimeSlicing and MPS: tests/policy/builders.py, "dra-demos"): every object passes,
# its opaque configs included (device-config), as the driver 0.5 reads them.
DEMOS = sorted(n for n in TABLE if n.startswith("kubernetes-sigs_dra-driver-nvidia-gpu__"))


@pytest.mark.parametrize("name", [pytest.param(n, id=n.split("_v1_")[1]) for n in DEMOS])
def test_dra_driver_demos_pass_where_the_cohort_enables_what_they_use(name):
    docs = load_docs(_file(name))
    for shape in (lambda d: d, _as_served):
        actual = _verdicts(docs, shape, POLICIES["dra-demos"])
        assert actual and all(verdict is True for _, _, verdict, _ in actual), actual
        # no refusal at all; the warnings are the demos' own: a pod in another namespace than its template, one
        # named claim for two pods
        assert {r for _, _, _, rules in actual for r in rules} <= {"unresolved-claim", "shared-claim"}, actual


def test_the_demos_cover_every_opaque_config_kind_of_the_gpu_driver():
    """The demos exercise what device-config reads: GpuConfig with TimeSlicing and MPS, VfioDeviceConfig."""
    kinds = {c["opaque"]["parameters"]["kind"] for n in DEMOS for d in load_docs(_file(n))
             if d.get("kind") in ("ResourceClaim", "ResourceClaimTemplate")
             for c in (d["spec"].get("spec", d["spec"])["devices"].get("config") or [])}
    assert kinds == {"GpuConfig", "VfioDeviceConfig"}


def _verdicts(docs, shape=lambda d: d, policy=None):
    policy = policy or POLICY
    docs = [shape(d) for d in docs]
    resolver = BundleResolver(docs)
    out = []
    for doc in docs:
        if doc.get("kind") in ("Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                               "ClusterRoleBinding"):
            continue
        ev = evaluate_object(doc, policy=policy, resolver=resolver, namespace="default")
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
