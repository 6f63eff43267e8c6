"""Class: the shapes the public GPU stacks' own manifests take, as compact cases written here (none copied):
NVIDIA's node agents (device plugin, feature discovery), the GPU Operator's validator pods, the DRA driver's and
the example driver's demos (MIG, VFIO, time-slicing and MPS configs, IMEX channels, shared and admin-access
claims, CEL selectors), KAI-Scheduler's GPU sharing and Volcano's vGPU resources and Job. Each comment names the
real-world shape a case mimics; the real manifests themselves are to come through the shared fixtures
(tests/policy/rules/test_real_manifests.py reads those that have). Each failing case sits beside its benign twin,
each is evaluated again in the shape the apiserver sends, and the messages are golden files."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from tests.policy.builders import (
    POLICIES,
    apiserver_shaped,
    claim_template,
    container,
    device_class,
    gpu_config,
    meta,
    named_claim,
    pod,
    pod_spec,
    request,
    resource_claim,
    template_claim,
    workload,
)
from tests.support import REPO
from webhook.config import parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.objects.kinds import BY_KIND, foreign_kind
from webhook.rules import Action

TEAM = "team-a"
ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


# ---- NVIDIA's node agents -----------------------------------------------------------------------------------

def node_agent(name, namespace, *, env=ALL, host_path=PLUGIN_DIR, privileged=True):
    """A DaemonSet shaped as NVIDIA's device plugin static deployments: privileged, the kubelet's device-plugin
    socket folder from the host, every GPU made visible by NVIDIA_* environment variables."""
    c = {"name": "agent", "image": "registry.example.invalid/nvidia/agent:1",
         "securityContext": {"privileged": privileged} if privileged else {"allowPrivilegeEscalation": False}}
    if env:
        c["env"] = copy.deepcopy(env)
    spec: dict = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                  "priorityClassName": "system-node-critical", "containers": [c]}
    if host_path:
        c["volumeMounts"] = [{"name": "host", "mountPath": host_path}]
        spec["volumes"] = [{"name": "host", "hostPath": {"path": host_path}}]
    return workload("DaemonSet", name, spec, namespace=namespace)


DEVICE_PLUGIN_ENV = [*ALL, {"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"},
                     {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]


# ---- the GPU Operator's validator pods ----------------------------------------------------------------------

def validator(name, namespace, *, env=ALL, cdi=True, gpus=None, account=None):
    """A Pod shaped as the GPU Operator's workload validators: a CUDA sample that sees every GPU through
    NVIDIA_VISIBLE_DEVICES and a CDI annotation (the CUDA validator), or one that asks the device plugin for a
    GPU (the plugin validator)."""
    c = {"name": "validate", "image": "registry.example.invalid/nvidia/cuda-sample:1", "command": ["vectorAdd"]}
    if env:
        c["env"] = copy.deepcopy(env)
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    spec: dict = {"restartPolicy": "OnFailure", "containers": [c],
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    if account:
        spec["serviceAccountName"] = account
    annotations = {"cdi.k8s.io/validator": "nvidia.com/gpu=all"} if cdi else None
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, namespace, annotations=annotations), "spec": spec}


# ---- DRA demos -------------------------------------------------------------------------------------------------

def dra_pod(name, *claims, namespace=TEAM, mounts=None, volumes=None):
    """A Pod of the DRA drivers' quickstart demos: one container consuming the listed pod-level claims."""
    spec = pod_spec(container("ctr", claims=[c["name"] for c in claims], mounts=mounts), claims=list(claims),
                    cohort="dra")
    if volumes:
        spec["volumes"] = volumes
    return pod(name, spec, namespace=namespace)


def with_selector(req, expression):
    body = req["exactly"]
    body["selectors"] = [{"cel": {"expression": expression}}]
    return req


H200_ONLY = "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h200')"
EXAMPLE_CLASS = device_class("gpu.example.com", driver="gpu.example.com", device_type=None)


def gpu_template(name="gpu", cls="gpu.nvidia.com", *, config=None, selector=None, count=1, admin=False):
    req = request("gpu", cls, count=count, admin=admin)
    if selector:
        with_selector(req, selector)
    return claim_template(name, req, namespace=TEAM, config=[config] if config else None)


# ---- KAI-Scheduler's GPU sharing ----------------------------------------------------------------------------

def kai_pod(name, *, annotations, env=None, init=False, host_path=None):
    """A Pod shaped as KAI-Scheduler's GPU-sharing docs: its scheduler and queue label, the GPU fraction or
    memory as an annotation its own admission webhook reads, no nvidia.com/gpu request."""
    c = {"name": "cuda", "image": "registry.example.invalid/cuda:12", "command": ["sleep", "infinity"]}
    if env:
        c["env"] = env
    spec: dict = {"schedulerName": "kai-scheduler", "containers": [c]}
    if init:
        spec["initContainers"] = [{"name": "warmup", "image": "registry.example.invalid/busybox:1",
                                   "command": ["true"]}]
    if host_path:
        c["volumeMounts"] = [{"name": "mps", "mountPath": "/mps"}]
        spec["volumes"] = [{"name": "mps", "hostPath": {"path": host_path}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": meta(name, TEAM, labels={"kai.scheduler/queue": "team-a"}, annotations=annotations),
            "spec": spec}


# ---- Volcano ---------------------------------------------------------------------------------------------------

VGPU = {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 3000}


def vgpu_spec(env=None):
    """A pod spec shaped as the Volcano vGPU device plugin's examples: its own vgpu-number and vgpu-memory
    resources, scheduled by Volcano."""
    c = {"name": "cuda", "image": "registry.example.invalid/cuda:12", "command": ["sleep", "infinity"],
         "resources": {"limits": dict(VGPU)}}
    if env:
        c["env"] = env
    return {"schedulerName": "volcano", "containers": [c]}


def volcano_job(api="batch.volcano.sh/v1alpha1"):
    """A Job shaped as Volcano's MindSpore GPU example: Volcano's own Job kind, tasks with pod templates."""
    template = {"spec": {"restartPolicy": "OnFailure", "containers": [
        {"name": "worker", "image": "registry.example.invalid/mindspore-gpu:1", "env": copy.deepcopy(ALL),
         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    if api.startswith("batch.volcano.sh"):
        return {"apiVersion": api, "kind": "Job", "metadata": meta("mindspore", TEAM),
                "spec": {"minAvailable": 1, "schedulerName": "volcano",
                         "tasks": [{"replicas": 1, "name": "worker", "template": template}]}}
    return {"apiVersion": api, "kind": "Job", "metadata": meta("mindspore", TEAM),
            "spec": {"backoffLimit": 0, "template": template}}


# ---- the table ---------------------------------------------------------------------------------------------------

EXEMPT_PLUGIN = 'namespace "nvidia-device-plugin" is exempt'
EXEMPT_OPERATOR = 'namespace "gpu-operator" is exempt'
ENV0 = "spec.template.spec.containers[0].env[0]"
ENV1 = "spec.template.spec.containers[0].env[1]"
ENV2 = "spec.template.spec.containers[0].env[2]"
HOST0 = "spec.template.spec.volumes[0].hostPath.path"
MIG_TEMPLATE = gpu_template("mig", "mig.nvidia.com")
VFIO_TEMPLATE = gpu_template("vfio", "vfio.gpu.nvidia.com")
GPU_TEMPLATE = gpu_template("gpu")
TIME_SLICED = gpu_template("time-sliced", config=gpu_config("TimeSlicing"))
MPS = gpu_template("mps-shared", config=gpu_config("MPS"))
CHANNEL = resource_claim("imex-channel", request("channel", "compute-domain-default-channel.nvidia.com"),
                         namespace=TEAM)
LEGACY_CHANNEL = resource_claim("legacy-imex-channel", request("channel", "imex.nvidia.com"), namespace=TEAM)
EXAMPLE_TEMPLATE = claim_template("example-gpu", request("gpu", "gpu.example.com"), namespace=TEAM)
EXAMPLE_ADMIN = claim_template("example-admin", request("gpu", "gpu.example.com", count=None, mode="All", admin=True),
                               namespace=TEAM)
EXAMPLE_CEL = claim_template("example-cel", with_selector(request("gpu", "gpu.example.com"),
                                                          "device.attributes['gpu.example.com'].model == "
                                                          "'LATEST-GPU-MODEL'"),
                             namespace=TEAM)
SHARED_CLAIM = resource_claim("shared-gpu", request("gpu", "gpu.nvidia.com"), namespace=TEAM)


def shape(case_id, obj, verdict, *findings, docs=(), policy="default"):
    """verdict: True allowed, False denied, or the start of the skip reason; findings: (rule, action, path) of
    the validation rules (the mutations' patches are tests/policy/test_mutations.py's)."""
    return pytest.param(obj, tuple(docs), policy, verdict, tuple(sorted(findings)), id=f"shape-{case_id}")


SHAPES = [
    # NVIDIA device plugin's static DaemonSet (privileged, plugin sockets, NVIDIA_* env): exempt where NVIDIA
    # installs it, the same object in a team's namespace is a workload reaching every GPU past the scheduler
    shape("device-plugin-daemonset-in-its-namespace", node_agent("nvdp", "nvidia-device-plugin", env=DEVICE_PLUGIN_ENV),
          EXEMPT_PLUGIN),
    shape("device-plugin-daemonset-in-the-operator-namespace",
          node_agent("nvdp", "gpu-operator", env=DEVICE_PLUGIN_ENV),
          EXEMPT_OPERATOR),
    shape("device-plugin-daemonset-in-a-team-namespace", node_agent("nvdp", TEAM, env=DEVICE_PLUGIN_ENV), False,
          ("visible-devices-override", "enforce", ENV0), ("visible-devices-override", "enforce", ENV1),
          ("visible-devices-override", "enforce", ENV2), ("device-access-bypass", "enforce", HOST0)),
    # twins: only the socket folder, only the env; then GPU feature discovery's shape (privileged, labels
    # written to a features.d folder of the host, no GPU visible): nothing to say
    shape("device-plugin-daemonset-socket-folder-only", node_agent("nvdp", TEAM, env=None), False,
          ("device-access-bypass", "enforce", HOST0)),
    shape("device-plugin-daemonset-env-only", node_agent("nvdp", TEAM, env=ALL, host_path=None), False,
          ("visible-devices-override", "enforce", ENV0)),
    shape("feature-discovery-daemonset", node_agent("gfd", TEAM, env=None,
                                                    host_path="/etc/kubernetes/node-feature-discovery/features.d"),
          True),
    # GPU Operator: its CUDA validator sees all GPUs by env and CDI annotation; the operator's namespace is
    # exempt, a team's is not; its plugin validator asks the device plugin for one GPU: allowed anywhere
    shape("operator-cuda-validator-in-the-operator-namespace", validator("cuda-validator", "gpu-operator"),
          EXEMPT_OPERATOR),
    shape("operator-cuda-validator-in-a-team-namespace", validator("cuda-validator", TEAM), False,
          ("visible-devices-override", "enforce", "spec.containers[0].env[0]"),
          ("device-access-bypass", "enforce", 'metadata.annotations["cdi.k8s.io/validator"]')),
    shape("operator-plugin-validator", validator("plugin-validator", TEAM, env=None, cdi=False, gpus=1), True),
    # the operator's test pod: a CUDA sample asking for one GPU
    shape("operator-test-pod", pod("gpu-operator-test", {"restartPolicy": "OnFailure", "containers": [
        {"name": "cuda", "image": "registry.example.invalid/cuda-sample:1",
         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}, namespace=TEAM), True),
    # DRA driver quickstart: a MIG template and its Deployment, a VFIO passthrough claim, on a cohort of exclusive
    # full GPUs; the twin asks the full-GPU class
    shape("dra-mig-template", MIG_TEMPLATE, False,
          ("resource-not-offered", "enforce", "spec.spec.devices.requests[0].exactly.deviceClassName")),
    shape("dra-mig-deployment", workload("Deployment", "mig-consumer", pod_spec(
        container("ctr", claims=["mig"]), claims=[template_claim("mig", "mig")], cohort="dra"), namespace=TEAM),
        False, ("resource-not-offered", "enforce", "spec.template.spec.resourceClaims[0]"), docs=[MIG_TEMPLATE]),
    shape("dra-vfio-pod", dra_pod("vfio", template_claim("gpu", "vfio")), False,
          ("resource-not-offered", "enforce", "spec.resourceClaims[0]"), docs=[VFIO_TEMPLATE]),
    shape("dra-full-gpu-pod", dra_pod("full", template_claim("gpu", "gpu")), True, docs=[GPU_TEMPLATE]),
    # DRA driver quickstart: time-sliced and MPS-shared GPUs by an opaque GpuConfig; the default cohort shares
    # nothing, a cohort that enables TimeSlicing admits the first and still refuses MPS
    shape("dra-time-sliced-template", TIME_SLICED, False,
          ("sharing-not-enabled", "enforce", "spec.spec.devices.config[0].opaque.parameters.sharing.strategy")),
    shape("dra-time-sliced-pod", dra_pod("ts", template_claim("gpu", "time-sliced")), False,
          ("sharing-not-enabled", "enforce", "spec.resourceClaims[0]"), docs=[TIME_SLICED]),
    shape("dra-time-sliced-template-where-enabled", TIME_SLICED, True, policy="dra-sharing"),
    shape("dra-mps-template", MPS, False,
          ("sharing-not-enabled", "enforce", "spec.spec.devices.config[0].opaque.parameters.sharing.strategy")),
    shape("dra-mps-template-where-only-time-slicing-is-enabled", MPS, False,
          ("sharing-not-enabled", "enforce", "spec.spec.devices.config[0].opaque.parameters.sharing.strategy"),
          policy="dra-sharing"),
    # DRA driver IMEX demo: channel claims of the driver's own non-GPU classes beside a GPU template; the
    # failing twin takes the IMEX channel devices from the host instead
    shape("dra-imex-channel-claim", CHANNEL, True),
    shape("dra-imex-legacy-channel-claim", LEGACY_CHANNEL, True),
    shape("dra-imex-pod", dra_pod("imex", named_claim("channel", "imex-channel"), template_claim("gpu", "gpu")), True,
          docs=[CHANNEL, GPU_TEMPLATE]),
    shape("dra-imex-pod-host-channels", dra_pod(
        "imex", template_claim("gpu", "gpu"), mounts=[{"name": "caps", "mountPath": "/dev/nvidia-caps-imex-channels"}],
        volumes=[{"name": "caps", "hostPath": {"path": "/dev/nvidia-caps-imex-channels"}}]), False,
        ("device-access-bypass", "enforce", "spec.volumes[0].hostPath.path"), docs=[GPU_TEMPLATE]),
    # ComputeDomain, the DRA driver's own kind (KAI-Scheduler's IMEX doc): not ours; its pod's claim template is
    # made by the ComputeDomain's controller, so from the file alone it is unresolved
    shape("compute-domain", {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                             "metadata": meta("domain", TEAM), "spec": {"numNodes": 2, "channel": {
                                 "resourceClaimTemplate": {"name": "domain-channel"}}}},
          "kind ComputeDomain is not one"),
    shape("compute-domain-pod", dra_pod("imex", template_claim("channel", "domain-channel")), True,
          ("unresolved-claim", "warn", "spec.resourceClaims[0]")),
    shape("compute-domain-pod-once-its-template-is-known", dra_pod("imex", template_claim("channel", "domain-channel")),
          True, docs=[claim_template("domain-channel", request("channel", "compute-domain-default-channel.nvidia.com"),
                                     namespace=TEAM)]),
    # one named claim shared by two pods (DRA example driver's shared-claim demo) draws a warning per pod; the
    # twin gives each pod its own claim from a template
    shape("dra-shared-named-claim", dra_pod("first", named_claim("gpu", "shared-gpu")), True,
          ("shared-claim", "warn", "spec.resourceClaims[0]"),
          docs=[SHARED_CLAIM, dra_pod("second", named_claim("gpu", "shared-gpu"))]),
    shape("dra-claim-per-pod-from-a-template", dra_pod("first", template_claim("gpu", "gpu")), True,
          docs=[GPU_TEMPLATE, dra_pod("second", template_claim("gpu", "gpu"))]),
    # admin access to NVIDIA GPUs outside the admin namespaces is refused, allowed in one; the example driver's
    # admin-access demo asks its own class, which is no GPU class of the policy
    shape("dra-admin-access-gpu", gpu_template("admin", admin=True), False,
          ("claim-shape", "enforce", "spec.spec.devices.requests[0].exactly.adminAccess")),
    shape("dra-admin-access-example-driver", EXAMPLE_ADMIN, True, docs=[EXAMPLE_CLASS]),
    # CEL selectors on a request (the example driver's cel-selector demo, here on NVIDIA classes): the selector
    # does not change what the class offers
    shape("dra-cel-selector-full-gpu", gpu_template("h200", selector=H200_ONLY), True),
    shape("dra-cel-selector-mig", gpu_template("h200-mig", "mig.nvidia.com", selector=H200_ONLY), False,
          ("resource-not-offered", "enforce", "spec.spec.devices.requests[0].exactly.deviceClassName")),
    shape("dra-cel-selector-example-driver", EXAMPLE_CEL, True, docs=[EXAMPLE_CLASS]),
    # the example driver's pods: its DeviceClass not among the documents is unresolved (a warning), resolved
    # once it is, and not an NVIDIA GPU: nothing to say
    shape("dra-example-driver-pod-class-unknown", dra_pod("ex", template_claim("gpu", "example-gpu")), True,
          ("unresolved-claim", "warn", "spec.resourceClaims[0]"), docs=[EXAMPLE_TEMPLATE]),
    shape("dra-example-driver-pod-class-known", dra_pod("ex", template_claim("gpu", "example-gpu")), True,
          docs=[EXAMPLE_TEMPLATE, EXAMPLE_CLASS]),
    # KAI-Scheduler GPU sharing: fraction or memory by annotation, with an init container, and its MPS variant;
    # the failing twins set the GPU visibility themselves or take the MPS pipe folder from the host
    shape("kai-gpu-fraction", kai_pod("frac", annotations={"gpu-fraction": "0.5"}), True),
    shape("kai-gpu-memory", kai_pod("mem", annotations={"gpu-memory": "2000"}), True),
    shape("kai-gpu-fraction-init-container", kai_pod("init", annotations={"gpu-fraction": "0.5"}, init=True), True),
    shape("kai-gpu-fraction-mps", kai_pod("mps", annotations={"gpu-fraction": "0.5"},
                                          env=[{"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": "50"}]), True),
    shape("kai-gpu-fraction-visible-devices", kai_pod("frac", annotations={"gpu-fraction": "0.5"}, env=ALL), False,
          ("visible-devices-override", "enforce", "spec.containers[0].env[0]")),
    shape("kai-gpu-fraction-mps-host-pipe", kai_pod("mps", annotations={"gpu-fraction": "0.5"},
                                                    host_path="/run/nvidia/mps"), False,
          ("device-access-bypass", "enforce", "spec.volumes[0].hostPath.path")),
    # Volcano vGPU device plugin: its own resources are not NVIDIA's, as a Pod or a Deployment; the failing twin
    # adds the visibility override
    shape("volcano-vgpu-pod", pod("vgpu", vgpu_spec(), namespace=TEAM), True),
    shape("volcano-vgpu-deployment", workload("Deployment", "vgpu", vgpu_spec(), namespace=TEAM), True),
    shape("volcano-vgpu-pod-visible-devices", pod("vgpu", vgpu_spec(env=ALL), namespace=TEAM), False,
          ("visible-devices-override", "enforce", "spec.containers[0].env[0]")),
    # Volcano's Job kind is not the batch Job: not evaluated; the same pod template as a batch/v1 Job is
    shape("volcano-job", volcano_job(), "kind Job of API group batch.volcano.sh is not the batch Job"),
    shape("volcano-job-as-batch-job", volcano_job("batch/v1"), False,
          ("visible-devices-override", "enforce", ENV0)),
]


GOLDEN = "gpu-stack-shapes"  # under tests/golden/rules/, one file per case with findings


def test_every_golden_file_has_a_case():
    folder = Path(__file__).resolve().parents[2] / "golden" / "rules" / GOLDEN
    ids = {p.id.removeprefix("shape-") for p in SHAPES if p.values[4]}
    assert sorted(p.stem for p in folder.glob("*.txt")) == sorted(ids)


def _evaluate(obj, docs, policy, evaluate):
    ev = evaluate(obj, policy=policy, docs=docs, namespace=obj["metadata"].get("namespace"))
    assert ev.errors == ()
    verdict = ev.skipped or ev.allowed
    findings = tuple(sorted((v.rule.value, v.action.value, v.path) for v in ev.violations if not v.rule.is_mutation))
    return ev, verdict, findings


def _as_served(doc):
    return doc if foreign_kind(doc, doc.get("kind", "")) or doc.get("kind") not in BY_KIND else apiserver_shaped(doc)


@pytest.mark.parametrize("obj, docs, policy_name, verdict, findings", SHAPES)
def test_gpu_stack_shapes(obj, docs, policy_name, verdict, findings, evaluate, golden, request):
    policy = POLICIES[policy_name]
    ev, actual, actual_findings = _evaluate(obj, docs, policy, evaluate)
    if isinstance(verdict, str):
        assert isinstance(actual, str) and actual.startswith(verdict), actual
    else:
        assert actual is verdict
    assert actual_findings == findings
    assert ev.allowed is not (any(a == Action.ENFORCE.value for _, a, _ in findings) and not ev.skipped)
    if findings:
        golden([v.message for v in ev.violations if not v.rule.is_mutation],
               name=f"{GOLDEN}/{request.node.callspec.id.removeprefix('shape-')}")
    # as the apiserver sends the same objects: the same verdict and findings
    served = _evaluate(_as_served(obj), [_as_served(d) for d in docs], policy, evaluate)
    assert served[1:] == (actual, actual_findings)


def _narrowing_policy():
    """The policy docs/deployment.md gives for exempting NVIDIA's service accounts rather than namespaces."""
    text = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = text.split("#### Narrowing exemptions to NVIDIA's service accounts", 1)[1]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.DOTALL).group(1))["policy"]
    data = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    data.update(block)
    return parse_policy(yaml.safe_dump(data), source="docs/deployment.md")


@pytest.mark.parametrize("account, allowed", [
    pytest.param("nvidia-operator-validator", True, id="the-operator-s-validator-account"),
    pytest.param("default", False, id="another-account-in-the-same-namespace"),
])
def test_exemption_narrowed_to_nvidia_service_accounts(account, allowed, evaluate):
    """The CUDA validator's shape in the operator's namespace under docs/deployment.md's narrowed exemption:
    only the operator's validator account passes."""
    obj = validator("cuda-validator", "gpu-operator", account=account)
    ev = evaluate(obj, policy=_narrowing_policy(), namespace="gpu-operator")
    assert ev.skipped is None  # gpu-operator is no longer exempt as a whole
    assert ev.allowed is allowed
