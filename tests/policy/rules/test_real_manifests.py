"""Real manifests of public projects (tests/data/fixtures/real-manifests, copies of the shared fixtures;
PROVENANCE.md names repository, commit and path), each document's verdict under the default policy asserted
exactly, and again in the shape the apiserver sends."""
from __future__ import annotations

import copy

import pytest

from tests.policy.builders import POLICIES, apiserver_shaped
from tests.support import REAL_MANIFESTS, load_docs
from webhook.config import default_policy
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.objects.kinds import BY_KIND, foreign_kind

POLICY = default_policy()
EXEMPT = "exempt"


def _file(name):
    return REAL_MANIFESTS / name


# file -> [(kind, name, verdict, rules)]: verdict True allowed, False denied, EXEMPT or a skip reason's start;
# rules: the validating rules that spoke. Every file of the folder has its row (test_every_real_manifest_has_a_row).
TABLE = {
    # KAI-Scheduler: its ComputeDomain makes the IMEX claim's template, which no file holds (a warning); its GPU
    # sharing asks by annotations its own webhook reads: nothing to say
    "NVIDIA_KAI-Scheduler__docs_dra_gpu-imex-pod.yaml": [
        ("ComputeDomain", "imex-channel-injection", "kind ComputeDomain is not one", set()),
        ("Pod", "gpu-imex-pod", True, {"unresolved-claim"}),
    ],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-memory.yaml": [
        ("Pod", "gpu-sharing", True, set()),
    ],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-sharing-init-container.yaml": [
        ("Pod", "gpu-sharing-init-container", True, set()),
    ],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-sharing-non-default-container.yaml": [
        ("Pod", "gpu-sharing-non-default", True, set()),
    ],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_gpu-sharing.yaml": [
        ("Pod", "gpu-sharing", True, set()),
    ],
    "NVIDIA_KAI-Scheduler__docs_gpu-sharing_mps_gpu-sharing-with-mps.yaml": [
        ("Pod", "gpu-sharing-with-mps", True, set()),
    ],
    "NVIDIA_KAI-Scheduler__docs_quickstart_pods_gpu-pod.yaml": [
        ("Pod", "gpu-pod", True, set()),
    ],
    # the GPU Operator's test pods; its validator pods with the namespace placeholder left empty are what a workload
    # must never do (all GPUs by NVIDIA_VISIBLE_DEVICES and a CDI annotation); in the operator's namespace they are
    # exempt (test_nvidia_infrastructure_is_exempt_only_in_nvidia_s_namespaces)
    "NVIDIA_gpu-operator__tests_gpu-pod.yaml": [
        ("Pod", "gpu-operator-test", True, set()),
    ],
    "NVIDIA_gpu-operator__tests_plugin-test.yaml": [
        ("Deployment", "nvidia-plugin-test", True, set()),
    ],
    "NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml": [
        ("Pod", "nvidia-cuda-validator-*", False, {"device-access-bypass", "visible-devices-override"}),
    ],
    "NVIDIA_gpu-operator__validator_manifests_plugin-workload-validation.yaml": [
        ("Pod", "nvidia-device-plugin-validator-*", True, set()),
    ],
    # NVIDIA's static deployments: the plugin's namespace, nvidia-device-plugin, is exempt; GPU feature discovery
    # names none, and in a team's namespace a privileged container watching every MIG device
    # (NVIDIA_MIG_MONITOR_DEVICES=all) is refused
    "NVIDIA_k8s-device-plugin__deployments_static_gpu-feature-discovery-daemonset-with-mig-mixed.yaml": [
        ("DaemonSet", "gpu-feature-discovery", False, {"visible-devices-override"}),
    ],
    "NVIDIA_k8s-device-plugin__deployments_static_gpu-feature-discovery-daemonset-with-mig-single.yaml": [
        ("DaemonSet", "gpu-feature-discovery", False, {"visible-devices-override"}),
    ],
    "NVIDIA_k8s-device-plugin__deployments_static_gpu-feature-discovery-daemonset.yaml": [
        ("DaemonSet", "gpu-feature-discovery", True, set()),
    ],
    # the plugin's static DaemonSets select every node: beside the default policy's DRA cohort that makes a second
    # allocation owner, refused even in the plugin's exempt namespace (allocation-owner; the Helm chart with the
    # cohort's selector passes: test_nvidia_charts.py); confined to its cohort it is exempt
    # (test_nvidia_infrastructure_is_exempt_only_in_nvidia_s_namespaces)
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin-compat-with-cpumanager.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", False, {"allocation-owner"}),
    ],
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin-privileged-with-service-account.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", False, {"allocation-owner"}),
    ],
    "NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin.yml": [
        ("DaemonSet", "nvidia-device-plugin-daemonset", False, {"allocation-owner"}),
    ],
    "NVIDIA_k8s-device-plugin__testdata_job-1.yaml": [
        ("Job", "j-e2e-1", True, set()),
    ],
    # Volcano's vGPU device plugin: its resources (volcano.sh/vgpu-*) are not NVIDIA's
    "Project-HAMi_volcano-vgpu-device-plugin__examples_gpu-share.yml": [
        ("Pod", "pod1", True, set()),
    ],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-case01.yml": [
        ("Pod", "test1", True, set()),
    ],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-case02.yml": [
        ("Pod", "pod1", True, set()),
    ],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-case03.yml": [
        ("Pod", "gpu-pod12", True, set()),
    ],
    "Project-HAMi_volcano-vgpu-device-plugin__examples_vgpu-deployment.yaml": [
        ("Deployment", "resnet101-deployment", True, set()),
    ],
    # the DRA driver's quickstart: the default DRA cohort offers exclusive full GPUs, so MPS, time-sliced, MIG and
    # VFIO claims are refused; a pod whose template is refused in the same file is refused with it, except in vfio-config, whose  # noqa: E501
    # pod sits in another namespace than its template (gpu-test-vfiopci, gpu-test-vfio): unresolved, a warning; a named claim  # noqa: E501
    # two pods share warns; IMEX channels are the driver's own non-GPU class, known without a cluster
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-mps.yaml": [
        ("ResourceClaimTemplate", "shared-gpu", False, {"sharing-not-enabled"}),
        ("Pod", "test-pod", False, {"sharing-not-enabled"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-vfio-config.yaml": [
        ("ResourceClaimTemplate", "single-gpu-full-vfioconfig", False, {"resource-not-offered"}),
        ("Pod", "pod1-full-vfioconfig", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test-vfiopci.yaml": [
        ("ResourceClaimTemplate", "single-gpu", False, {"resource-not-offered"}),
        ("Pod", "pod1", False, {"resource-not-offered"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod1", True, set()),
        ("Pod", "pod2", True, set()),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test2.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod", True, set()),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test3.yaml": [
        ("ResourceClaim", "single-gpu", True, set()),
        ("Pod", "pod1", True, {"shared-claim"}),
        ("Pod", "pod2", True, {"shared-claim"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test4.yaml": [
        ("ResourceClaimTemplate", "mig-devices", False, {"resource-not-offered"}),
        ("Deployment", "pod", False, {"resource-not-offered"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test5.yaml": [
        ("ResourceClaimTemplate", "multiple-gpus", False, {"sharing-not-enabled"}),
        ("Pod", "pod0", False, {"sharing-not-enabled"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test6.yaml": [
        ("ResourceClaimTemplate", "a100", False, {"sharing-not-enabled"}),
        ("Deployment", "pod", False, {"sharing-not-enabled"}),
    ],
    "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_imex-test1.yaml": [
        ("ResourceClaim", "deployment0-imex-channel", True, set()),
        ("ResourceClaim", "deployment1-imex-channel", True, set()),
        ("ResourceClaim", "deployment2-imex-channel", True, set()),
        ("ResourceClaim", "deployment3-imex-channel", True, set()),
        ("ResourceClaimTemplate", "node-gpus", True, set()),
        ("Deployment", "deployment0", True, set()),
        ("Deployment", "deployment1", True, set()),
        ("Deployment", "deployment2", True, set()),
        ("Deployment", "deployment3", True, set()),
    ],
    # dra-example-driver: its DeviceClass (gpu.example.com) is not among the documents, so its pods' claims are
    # unresolved, a warning (test_example_driver_pods_resolve_once_its_device_class_is_known); its DeviceTaintRule and
    # PodGroup are kinds gpu-admission does not handle
    "kubernetes-sigs_dra-example-driver__demo_examples_admin-access_admin-access.yaml": [
        ("ResourceClaimTemplate", "multiple-gpus-admin", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-multiple-requests_basic-multiple-requests.yaml": [
        ("ResourceClaimTemplate", "multiple-gpus", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-resourceclaim-opaque-config_basic-resourceclaim-opaque-config.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "multiple-gpus", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-resourceclaimtemplate_basic-resourceclaimtemplate.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-shared-claim-across-containers_basic-shared-claim-across-containers.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_basic-shared-claim-across-pods_basic-shared-claim-across-pods.yaml": [  # noqa: E501
        ("ResourceClaim", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_binding-conditions_binding-conditions.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_cel-selector_cel-selector.yaml": [
        ("ResourceClaimTemplate", "single-gpu-cel", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-configurable-pod-eviction-time_1-basic-resourceclaimtemplate.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "single-gpu-without-toleration", True, set()),
        ("ResourceClaimTemplate", "single-gpu-with-toleration", True, set()),
        ("ResourceClaimTemplate", "single-gpu-with-300s-toleration", True, set()),
        ("Pod", "pod-no-toleration", True, {"unresolved-claim"}),
        ("Pod", "pod-with-toleration", True, {"unresolved-claim"}),
        ("Pod", "pod-with-300s-toleration", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-configurable-pod-eviction-time_2-device-taint-rule.yaml": [  # noqa: E501
        ("DeviceTaintRule", "example", "kind DeviceTaintRule is not one", set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noexecute_1-basic-resourceclaimtemplate.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "single-gpu", True, set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noexecute_2-pod-to-be-evicted.yaml": [  # noqa: E501
        ("Pod", "pod-to-be-evicted", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noexecute_3-device-taint-rule.yaml": [  # noqa: E501
        ("DeviceTaintRule", "example", "kind DeviceTaintRule is not one", set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noexecute_4-pod-no-execute.yaml": [  # noqa: E501
        ("Pod", "pod-no-execute", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noschedule_1-basic-resourceclaimtemplate.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "single-gpu", True, set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noschedule_2-pod-keeps-running.yaml": [  # noqa: E501
        ("Pod", "pod-keeps-running", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noschedule_3-device-taint-rule.yaml": [  # noqa: E501
        ("DeviceTaintRule", "example", "kind DeviceTaintRule is not one", set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noschedule_4-pod-not-scheduled.yaml": [  # noqa: E501
        ("Pod", "pod-no-schedule", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-toleration_1-device-taint-rule.yaml": [  # noqa: E501
        ("DeviceTaintRule", "example", "kind DeviceTaintRule is not one", set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-toleration_2-basic-resourceclaimtemplate.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "single-gpu-without-toleration", True, set()),
        ("ResourceClaimTemplate", "single-gpu-with-toleration", True, set()),
        ("Pod", "pod-without-toleration", True, {"unresolved-claim"}),
        ("Pod", "pod-with-toleration", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_extended-resource-request_extended-resource-request.yaml": [
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, set()),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_gpu-allow-multiple-allocations-partitionable_gpu-allow-multiple-allocations-partitionable.yaml": [  # noqa: E501
        ("ResourceClaim", "shared-partition-pod0", True, set()),
        ("ResourceClaim", "shared-partition-pod1", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_gpu-allow-multiple-allocations_gpu-allow-multiple-allocations.yaml": [  # noqa: E501
        ("ResourceClaim", "shared-gpu-pod0", True, set()),
        ("ResourceClaim", "shared-gpu-pod1", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_initcontainer-shared-gpu_initcontainer-shared-gpu.yaml": [
        ("ResourceClaimTemplate", "single-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_native-resource-request_native-resource-request.yaml": [
        ("ResourceClaimTemplate", "two-cpus", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_net-consumable-capacity_net-consumable-capacity.yaml": [
        ("ResourceClaimTemplate", "nic-10g-in-5g-out", True, set()),
        ("ResourceClaimTemplate", "nic-5g-in-5g-out", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_partitionable-devices_partitionable-devices.yaml": [
        ("ResourceClaimTemplate", "gpu-partitions", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_podgroup-resourceclaimtemplate_podgroup-resourceclaimtemplate.yaml": [  # noqa: E501
        ("ResourceClaimTemplate", "one-gpu", True, set()),
        ("PodGroup", "group-1", "kind PodGroup is not one", set()),
        ("Deployment", "group-1", True, {"unresolved-claim"}),
        ("PodGroup", "group-2", "kind PodGroup is not one", set()),
        ("Deployment", "group-2", True, {"unresolved-claim"}),
    ],
    "kubernetes-sigs_dra-example-driver__demo_examples_prioritized-alternatives_prioritized-alternatives.yaml": [
        ("ResourceClaimTemplate", "prioritized-gpu", True, set()),
        ("ResourceClaimTemplate", "preferred-gpu", True, set()),
        ("Pod", "pod0", True, {"unresolved-claim"}),
        ("Pod", "pod1", True, {"unresolved-claim"}),
    ],
    # Kyverno's "good" GPU workloads: allowed, as Kyverno's own policy allows them
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_podcontrollers-good.yaml": [
        ("Deployment", "gooddeployment01", True, set()),
        ("CronJob", "goodcronjob01", True, set()),
    ],
    "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_pods-good.yaml": [
        ("Pod", "goodpod01", True, set()),
        ("Pod", "goodpod02", True, set()),
        ("Pod", "goodpod03", True, set()),
    ],
    # Volcano's Job is not a batch/v1 Job
    "volcano-sh_volcano__example_MindSpore-example_mindspore_gpu_mindspore-gpu.yaml": [
        ("Job", "mindspore-gpu", "kind Job of API group batch.volcano.sh", set()),
    ],
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


@pytest.mark.parametrize("file, namespace", [
    pytest.param("NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml", "gpu-operator",
                 id="validator"),
    pytest.param("NVIDIA_k8s-device-plugin__deployments_static_nvidia-device-plugin.yml", "nvidia-device-plugin",
                 id="device-plugin"),
])
def test_nvidia_infrastructure_is_exempt_only_in_nvidia_s_namespaces(file, namespace):
    (doc,) = [d for d in load_docs(_file(file)) if d["kind"] in ("Pod", "DaemonSet")]
    there = copy.deepcopy(doc)
    there["metadata"]["namespace"] = namespace
    if doc["kind"] == "DaemonSet":  # an allocation owner, confined to its cohort as its chart's values confine it
        there["spec"]["template"]["spec"]["nodeSelector"] = dict(
            next(c for c in POLICY.cohorts if c.name == "device-plugin").node_labels)
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
