"""Real manifests of public projects (tests/data/fixtures/real-manifests, PROVENANCE.md names repository,
commit and path), each document's verdict under the default policy asserted exactly, and again in the shape the
apiserver sends. NVIDIA's own infrastructure is exempt where NVIDIA installs it, and denied (a benign twin the
other way round) where it would be a workload's trick."""
from __future__ import annotations

import copy

import pytest

from tests.policy.test_rules import apiserver_shaped
from tests.support import REAL_MANIFESTS, load_docs
from webhook.config import default_policy
from webhook.handlers.evaluate import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.objects.kinds import BY_KIND, foreign_kind

POLICY = default_policy()
EXEMPT = "exempt"


def _file(name):
    return REAL_MANIFESTS / name


# file -> [(kind, name, verdict, rules)]: verdict True allowed, False denied, EXEMPT or a skip reason's start
TABLE = {
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", EXEMPT, set())],
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin-compat-with-cpumanager.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", EXEMPT, set())],
    # the plugin's own namespace, nvidia-device-plugin, is exempt (it was denied before: privileged, plugin sockets)
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin-privileged-with-service-account.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", EXEMPT, set())],
    "NVIDIA_k8s-device-plugin__deployments_static_gpu-feature-discovery-daemonset.yaml": [
        ("DaemonSet", "gpu-feature-discovery", True, set())],
    "NVIDIA_gpu-operator__tests_gpu-pod.yaml": [("Pod", "gpu-operator-test", True, set())],
    # the validator's pods with their namespace as the operator fills it in are exempt (tested below); with the
    # placeholder they are what a workload must never do: all GPUs by NVIDIA_VISIBLE_DEVICES and a CDI annotation
    "NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml": [
        ("Pod", "nvidia-cuda-validator-*", False, {"visible-devices-override", "device-access-bypass"})],
    "NVIDIA_gpu-operator__validator_manifests_plugin-workload-validation.yaml": [
        ("Pod", "nvidia-device-plugin-validator-*", True, set())],
    # the default policy's DRA cohort offers exclusive full GPUs: MIG, VFIO and shared GPUs are refused there
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
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-vfiopci.yaml": [
        ("ResourceClaimTemplate", "single-gpu", False, {"resource-not-offered"}),
        ("Pod", "pod1", False, {"resource-not-offered"})],
    # IMEX channels: the DRA driver's own non-GPU classes are known without a cluster, never unresolved
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_imex-test1.yaml": [
        *(("ResourceClaim", f"deployment{i}-imex-channel", True, set()) for i in range(4)),
        ("ResourceClaimTemplate", "node-gpus", True, set()),
        *(("Deployment", f"deployment{i}", True, set()) for i in range(4))],
    # the example driver's DeviceClass (gpu.example.com) is not among the documents: unresolved, a warning
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-resourceclaimtemplate_basic-resourceclaimtemplate.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}), ("Pod", "pod1", True, {"unresolved-claim"})],
    "kubernetes-sigs_dra-example-driver__demo_examples_cel-selector_cel-selector.yaml": [
        ("ResourceClaimTemplate", "single-gpu-cel", True, set()), ("Pod", "pod0", True, {"unresolved-claim"})],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-shared-claim-across-pods_basic-shared-claim-across-pods.yaml": [
        ("ResourceClaim", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}), ("Pod", "pod1", True, {"unresolved-claim"})],
    "kubernetes-sigs_dra-example-driver__demo_examples_admin-access_admin-access.yaml": [
        ("ResourceClaimTemplate", "multiple-gpus-admin", True, set()), ("Pod", "pod0", True, {"unresolved-claim"})],
    # KAI-Scheduler's GPU sharing asks by annotations its own webhook reads: nothing to say
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-sharing.yaml": [("Pod", "gpu-sharing", True, set())],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-memory.yaml": [("Pod", "gpu-sharing", True, set())],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-sharing-init-container.yaml": [
        ("Pod", "gpu-sharing-init-container", True, set())],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_mps_gpu-sharing-with-mps.yaml": [("Pod", "gpu-sharing-with-mps", True, set())],
    # its claim's template is made by the ComputeDomain's controller: not resolvable from the file, a warning
    "NVIDIA_KAI-Scheduler__docs_dra_gpu-imex-pod.yaml": [
        ("ComputeDomain", "imex-channel-injection", "kind ComputeDomain is not one", set()),
        ("Pod", "gpu-imex-pod", True, {"unresolved-claim"})],
    # Volcano: its Job is not a batch/v1 Job; its vGPU device plugin's resources are not NVIDIA's
    "volcano-sh_volcano__example_MindSpore-example_mindspore_gpu_mindspore-gpu.yaml": [
        ("Job", "mindspore-gpu", "kind Job of API group batch.volcano.sh is not the batch Job", set())],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_gpu-share.yml": [("Pod", "pod1", True, set())],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-case01.yml": [("Pod", "test1", True, set())],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-deployment.yaml": [
        ("Deployment", "resnet101-deployment", True, set())],
}


def _verdicts(docs, shape=lambda d: d):
    docs = [shape(d) for d in docs]
    resolver = BundleResolver(docs)
    out = []
    for doc in docs:
        if doc.get("kind") in ("Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"):
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


def test_every_added_real_manifest_has_a_row():
    listed = set(TABLE)
    rows = (REAL_MANIFESTS / "PROVENANCE.md").read_text(encoding="utf-8")
    assert all(f"| {n} |" in rows for n in listed)


@pytest.mark.parametrize("file, namespace", [
    pytest.param("NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml", "gpu-operator", id="validator"),
    pytest.param("NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin.yml", "nvidia-device-plugin",
                 id="device-plugin"),
])
def test_nvidia_infrastructure_is_exempt_only_in_nvidia_s_namespaces(file, namespace):
    (doc,) = [d for d in load_docs(_file(file)) if d["kind"] in ("Pod", "DaemonSet")]
    there = copy.deepcopy(doc)
    there["metadata"]["namespace"] = namespace
    ev = evaluate_object(there, policy=POLICY, resolver=BundleResolver([there]))
    assert ev.skipped == f'namespace "{namespace}" is exempt'
    # the benign twin the other way round: the same object in a team's namespace is refused
    elsewhere = copy.deepcopy(doc)
    elsewhere["metadata"]["namespace"] = "team-a"
    ev = evaluate_object(elsewhere, policy=POLICY, resolver=BundleResolver([elsewhere]))
    assert not ev.allowed and "device-access-bypass" in {v.rule.value for v in ev.denials}


def test_example_driver_pods_resolve_once_its_device_class_is_known():
    """With the example driver's DeviceClass (its chart's selector, `device.driver == 'gpu.example.com'`, written
    here as the chart renders it) the claims resolve: not NVIDIA GPUs, so nothing is said."""
    docs = load_docs(_file("kubernetes-sigs_dra-example-driver__demo_examples_basic-resourceclaimtemplate_"
                           "basic-resourceclaimtemplate.yaml"))
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
                 "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}})
    assert [v for v in _verdicts(docs) if v[0] == "Pod"] == [("Pod", "pod0", True, set()), ("Pod", "pod1", True, set())]


def _narrowing_policy():
    """The policy docs/deployment.md gives for exempting NVIDIA's service accounts rather than namespaces."""
    import re

    import yaml

    from webhook.config import parse_policy
    from webhook.config.load import DEFAULT_PATH

    text = (REAL_MANIFESTS.parents[3] / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = text.split("#### Narrowing exemptions to NVIDIA's service accounts", 1)[1]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1))["policy"]
    data = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    data.update(block)
    return parse_policy(yaml.safe_dump(data), source="docs/deployment.md")


@pytest.mark.parametrize("account, allowed", [
    pytest.param("nvidia-operator-validator", True, id="the-operator-s-validator-account"),
    pytest.param("default", False, id="another-account-in-the-same-namespace"),
])
def test_exemption_narrowed_to_nvidia_service_accounts(account, allowed):
    (pod,) = load_docs(_file("NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml"))
    pod = copy.deepcopy(pod)
    pod["metadata"]["namespace"] = "gpu-operator"
    pod["spec"]["serviceAccountName"] = account
    ev = evaluate_object(pod, policy=_narrowing_policy(), resolver=BundleResolver([pod]))
    assert ev.skipped is None  # gpu-operator is no longer exempt as a whole
    assert ev.allowed is allowed
