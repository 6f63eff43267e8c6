"""One table per validation rule, written from a user's point of view: realistic workloads of every
pod-bearing kind and the DRA objects, under the default policy and under the custom policies a rule needs.

Each case is evaluated as `gpu-admission check` evaluates it (`evaluate_object` with a `BundleResolver` over
the case's documents) and asserts exactly: the (rule, action, path) findings, whether the object is allowed,
the cohort it is bound for where the case is about cohort resolution, and the messages (golden files under
tests/golden/rules/<case id>.txt; `pytest --update-golden` rewrites them). Every case is evaluated a second
time in the shape the apiserver sends (quantities as strings, defaults filled in) and must get the same verdict.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.support import FIXTURES
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.objects.kinds import POD_BEARING
from webhook.rules import DEFAULT_ACTIONS, VALIDATIONS, Action, Rule

REPO = Path(__file__).resolve().parents[2]
GOLDEN_RULES = REPO / "tests" / "golden" / "rules"  # written by the `golden` fixture (conftest.py)
SEED = REPO / "tests" / "data" / "seed"
H200_LGIP = FIXTURES / "nvidia-smi-h200" / "mig-lgip.txt"

NS = "ai-workloads"
IMAGE = "registry.example.invalid/approved/trainer@sha256:" + "0" * 64
ALLOC = "workload.example.com/gpu-allocation"
HYBRID = {"eks.amazonaws.com/compute-type": "hybrid"}
DP_NODES = {**HYBRID, ALLOC: "device-plugin"}
DRA_NODES = {**HYBRID, ALLOC: "dra"}
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
POD_SC = {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SC = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
GPU_UUID = "GPU-8c2d1f4e-57a9-4b1e-9f3a-2e6d7c0b9a11"  # a value no message may ever repeat


# ---------------------------------------------------------------------------------------------- builders


def container(name="trainer", *, gpus=None, claims=(), env=None, env_from=None, sc=None, mounts=None, restart=None,
              image=IMAGE, cpu=True):
    """A container as a developer writes it: limits only, integers. `gpus` maps resource -> count."""
    c = {"name": name, "image": image}
    if env is not None:
        c["env"] = env
    if env_from is not None:
        c["envFrom"] = env_from
    limits = {"cpu": "2", "memory": "8Gi"} if cpu else {}
    limits.update(gpus or {})
    resources = {}
    if limits:
        resources["limits"] = limits
    if claims:
        resources["claims"] = [{"name": n} for n in claims]
    if resources:
        c["resources"] = resources
    c["securityContext"] = copy.deepcopy(CONTAINER_SC) if sc is None else sc
    if mounts is not None:
        c["volumeMounts"] = mounts
    if restart is not None:
        c["restartPolicy"] = restart
    return c


def pod_spec(*containers, cohort=None, init=(), ephemeral=(), claims=None, runtime=None, sc=None, **extra):
    """A pod spec bound for `cohort` the way the seed's smoke Jobs are (node labels, toleration, runtime class)."""
    spec: dict = {}
    if cohort == "device-plugin":
        spec.update(runtimeClassName="nvidia", nodeSelector=dict(DP_NODES), tolerations=copy.deepcopy(GPU_TOLERATION))
    elif cohort == "dra":
        spec.update(nodeSelector=dict(DRA_NODES), tolerations=copy.deepcopy(GPU_TOLERATION))
    if runtime is not None:
        spec["runtimeClassName"] = runtime
    spec["securityContext"] = copy.deepcopy(POD_SC) if sc is None else sc
    if init:
        spec["initContainers"] = list(init)
    spec["containers"] = list(containers)
    if ephemeral:
        spec["ephemeralContainers"] = list(ephemeral)
    if claims is not None:
        spec["resourceClaims"] = claims
    for key, value in extra.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return spec


def template_claim(name="gpu", template="single-large-gpu"):
    return {"name": name, "resourceClaimTemplateName": template}


def named_claim(name="gpu", claim="shared-a100"):
    return {"name": name, "resourceClaimName": claim}


def meta(name, namespace=NS, labels=None, annotations=None):
    m = {"name": name}
    if namespace is not None:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    return m


def pod(name, spec, *, namespace=NS, labels=None, annotations=None):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, namespace, labels, annotations), "spec": spec}


def workload(kind, name, spec, *, namespace=NS, labels=None, annotations=None):
    """`spec` wrapped in a pod template of `kind`; labels and annotations go on the pod template."""
    app = {"app": name, **(labels or {})}
    template = {"metadata": {"labels": app, **({"annotations": annotations} if annotations else {})}, "spec": spec}
    selector = {"matchLabels": {"app": name}}
    if kind == "Job":
        spec.setdefault("restartPolicy", "Never")
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name, namespace),
                "spec": {"backoffLimit": 0, "template": template}}
    if kind == "CronJob":
        spec.setdefault("restartPolicy", "OnFailure")
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta(name, namespace),
                "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template}}}}
    if kind in ("Deployment", "ReplicaSet"):
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name, namespace),
                "spec": {"replicas": 2, "selector": selector, "template": template}}
    if kind == "StatefulSet":
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name, namespace),
                "spec": {"serviceName": name, "replicas": 2, "selector": selector, "template": template}}
    if kind == "DaemonSet":
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name, namespace),
                "spec": {"selector": selector, "template": template}}
    if kind == "ReplicationController":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta(name, namespace),
                "spec": {"replicas": 1, "selector": {"app": name}, "template": template}}
    if kind == "PodTemplate":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta(name, namespace), "template": template}
    raise AssertionError(kind)


def device_class(name, *, driver="gpu.nvidia.com", device_type="gpu", extended=None, quote='"', api="resource.k8s.io/v1",
                 extra_cel=""):
    q = quote
    expression = f"device.driver == {q}{driver}{q}"
    if device_type:
        expression += f" && device.attributes[{q}{driver}{q}].type == {q}{device_type}{q}"
    spec: dict = {"selectors": [{"cel": {"expression": expression + extra_cel}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": api, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def request(name="gpu", device_class_name="hybrid-full-gpu", *, count=1, mode=None, admin=False, api="v1"):
    """One device request in the shape of `api` (v1/v1beta2: under `exactly`; v1beta1: on the request)."""
    body: dict = {"deviceClassName": device_class_name}
    if mode is not None:
        body["allocationMode"] = mode
    if count is not None:
        body["count"] = count
    if admin:
        body["adminAccess"] = True
    return {"name": name, **body} if api == "v1beta1" else {"name": name, "exactly": body}


def gpu_config(strategy, driver="gpu.nvidia.com"):
    return {"opaque": {"driver": driver, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
        "sharing": {"strategy": strategy, **({"timeSlicingConfig": {"interval": "Long"}} if strategy == "TimeSlicing"
                                             else {"mpsConfig": {"defaultActiveThreadPercentage": 50}})}}}}


def devices(*requests_, config=None):
    d: dict = {"requests": list(requests_)}
    if config:
        d["config"] = config
    return d


def claim_template(name, *requests_, namespace=NS, api="v1", config=None):
    return {"apiVersion": f"resource.k8s.io/{api}", "kind": "ResourceClaimTemplate", "metadata": meta(name, namespace),
            "spec": {"spec": {"devices": devices(*requests_, config=config)}}}


def resource_claim(name, *requests_, namespace=NS, api="v1", config=None):
    return {"apiVersion": f"resource.k8s.io/{api}", "kind": "ResourceClaim", "metadata": meta(name, namespace),
            "spec": {"devices": devices(*requests_, config=config)}}


def namespace(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels)}}


def config_map(name, *keys, namespace_=NS):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, namespace_),
            "data": {k: GPU_UUID for k in keys}}


def required_affinity(*terms):
    """terms: lists of (key, operator, values) match expressions; terms are ORed."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": k, "operator": op, **({"values": v} if v is not None else {})}
                              for k, op, v in term]} for term in terms]}}}


def seed(name):
    docs = [d for d in yaml.safe_load_all((SEED / name).read_text(encoding="utf-8")) if d]
    return {d["metadata"]["name"]: d for d in docs}


SEED_DRA = seed("dra-manifests.yaml")
SEED_JOBS = seed("smoke-jobs.yaml")
SEED_DOCS = [*SEED_DRA.values(), *SEED_JOBS.values()]
SEED_TEMPLATE = SEED_DRA["single-large-gpu"]  # hybrid-large-gpu x1 in ai-workloads
SEED_CLASSES = [SEED_DRA["hybrid-full-gpu"], SEED_DRA["hybrid-large-gpu"]]
FULL_GPU_TEMPLATE = claim_template("full-gpu", request("gpu", "hybrid-full-gpu"))
MIG_TEMPLATE = claim_template("mig-slice", request("mig", "mig.nvidia.com"))
IMEX_CLASS = device_class("compute-domain-default-channel.nvidia.com", driver="compute-domain.nvidia.com",
                          device_type="channel")
IMEX_TEMPLATE = claim_template("imex-channel", request("channel", "compute-domain-default-channel.nvidia.com"))


# ---------------------------------------------------------------------------------------------- policies


def _policy(**changes):
    """The shipped default with `dp` / `dra` merged into the two cohorts and other top-level keys replaced."""
    data = yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))
    for cohort in data["cohorts"]:
        cohort.update(changes.pop(cohort["name"].replace("-", "_"), {}))
    data.update(changes)
    return parse_policy(yaml.safe_dump(data), source="test policy")


SEED_TIME_SLICING = {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                     "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
POLICIES = {
    "default": default_policy(),
    # the seed's time-slicing fragment, wired to the device-plugin cohort
    "time-slicing": _policy(device_plugin={"timeSlicing": SEED_TIME_SLICING}),
    # time-slicing that keeps the name and lets the plugin hand out several replicas
    "time-slicing-unrenamed": _policy(device_plugin={"timeSlicing": {
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}),
    "mps": _policy(device_plugin={"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}),
    "mig-single-a100": _policy(device_plugin={"migStrategy": "single", "mig": {"model": "A100-40GB"}}),
    "mig-mixed-a100": _policy(device_plugin={"migStrategy": "mixed", "mig": {"model": "A100-40GB"}}),
    "mig-mixed-h200": _policy(device_plugin={"migStrategy": "mixed", "mig": {"model": "H200-141GB"}}),
    # MIG mixed with the 1g.5gb slices time-sliced (renamed): exclusive and shared forms on one cohort
    "mig-mixed-shared": _policy(device_plugin={"migStrategy": "mixed", "mig": {"model": "A100-40GB"}, "timeSlicing": {
        "renameByDefault": True, "resources": [{"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]}}),
    "dra-sharing": _policy(dra={"sharingStrategies": ["TimeSlicing"], "adminAccessNamespaces": ["gpu-debug"]}),
    "dra-classes": _policy(dra={"deviceClasses": ["hybrid-large-gpu"], "maxDevicesPerClaim": 2}),
    "namespace-cohorts": _policy(namespaceCohorts={NS: "dra", "render": "device-plugin"}),
    "kai": _policy(exceptions=[{"name": "kai-scheduler", "schedulerNames": ["kai-scheduler"],
                                "rules": ["visible-devices-override"]}]),
    "exceptions": _policy(exceptions=[
        {"name": "validator", "serviceAccounts": ["gpu-validation/gpu-validator"], "rules": ["device-access-bypass"]},
        {"name": "profilers", "namespaces": ["perf"], "names": ["nsight-*"], "rules": ["run-as-root"]},
        {"name": "bench", "namespaces": ["gpu-bench"], "rules": ["runtime-class-conflict"]},
        {"name": "argo", "users": ["system:serviceaccount:argo:argo-workflow"], "rules": ["shared-claim"]},
        {"name": "sre", "groups": ["gpu-sre"], "rules": ["device-access-bypass", "run-as-root"]},
    ]),
    "dry-run": _policy(mode="dry-run"),
    "rollout": _policy(namespaceOverrides=[
        {"namespaces": ["team-a"], "mode": "audit"},
        {"namespaces": ["team-b"], "rules": {"visible-devices-override": "warn", "device-access-bypass": "audit"}},
    ]),
    "actions": _policy(rules={
        "shared-claim": "enforce", "run-as-root": "enforce", "runtime-class-conflict": "warn",
        "unresolved-claim": "enforce", "device-access-bypass": "audit", "visible-devices-override": "off",
        "double-mechanism": "warn", "claim-shape": "warn", "legacy-api": "audit"}),
    "variables": _policy(visibleDeviceVariables=["NVIDIA_VISIBLE_DEVICES"]),
    # a second DRA cohort (its own allocation label value): node selection can admit two cohorts, neither a device plugin's
    "two-dra": _policy(cohorts=[*yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))["cohorts"], {
        "name": "dra-b", "mechanism": "dra", "nodeLabels": {**HYBRID, ALLOC: "dra-b"}, "driver": "gpu.nvidia.com",
        "deviceTypes": ["gpu"]}]),
}


# ---------------------------------------------------------------------------------------------- cases

CASES: list = []  # every row of every table, in table order
TABLES: dict[str, list] = {r.value: [] for r in VALIDATIONS}  # rule id -> its table (ids start with the rule id)


def case(case_id, obj, *findings, docs=(), policy="default", allowed=None, cohort="?", user=None, namespace=None):
    """A table row. `findings`: (rule, path) with the rule's action under `policy`, or (rule, action, path).
    `allowed` defaults to: no enforce finding. `cohort` ("?" = not asserted) is the cohort the object is bound for."""
    rows = []
    for f in findings:
        rule, action, path = (f[0], None, f[1]) if len(f) == 2 else f
        rows.append((Rule(rule), Action(action) if action else None, path))
    param = pytest.param(obj, tuple(rows), tuple(docs), policy, allowed, cohort, user, namespace, id=case_id)
    table = max((r for r in TABLES if case_id.startswith(r + "-")), key=len)
    TABLES[table].append(param)
    CASES.append(param)


# ---- double-mechanism ------------------------------------------------------------------------------------

case("double-mechanism-seed-plugin-smoke-job", SEED_JOBS["hybrid-gpu-plugin-smoke"], docs=SEED_DOCS,
     cohort="device-plugin")
case("double-mechanism-seed-dra-smoke-job", SEED_JOBS["hybrid-gpu-dra-smoke"], docs=SEED_DOCS, cohort="dra")
case("double-mechanism-gpu-limit-and-imex-channel-claim-pass",
     pod("nccl-test", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]),
                               cohort="device-plugin", claims=[template_claim("channel", "imex-channel")])),
     docs=[IMEX_CLASS, IMEX_TEMPLATE], cohort="device-plugin")
case("double-mechanism-dra-extended-resource-and-claim-pass",
     workload("Deployment", "vllm", pod_spec(
         container("server", gpus={"nvidia.com/gpu": 1}),
         container("embedder", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE, device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="dra")
case("double-mechanism-limit-and-claim-in-one-container",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("double-mechanism-init-container-limit-main-claim",
     workload("Job", "finetune", pod_spec(
         container("finetune", claims=["gpu"]),
         init=[container("warmup-cache", gpus={"nvidia.com/gpu": 1})],
         cohort="dra", claims=[template_claim()])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     ("cohort-mismatch", "spec.template.spec.initContainers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("double-mechanism-sidecar-limit-and-implicit-class-resource",
     workload("StatefulSet", "embeddings", pod_spec(
         container("server", gpus={"deviceclass.resource.kubernetes.io/hybrid-full-gpu": 1}),
         init=[container("metrics-agent", gpus={"nvidia.com/gpu": 1}, restart="Always")])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     docs=SEED_CLASSES, cohort=None)
case("double-mechanism-action-warn",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "warn", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="actions")

# ---- cohort-mismatch (and cohort resolution) -------------------------------------------------------------

case("cohort-mismatch-node-selector-device-plugin-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")), cohort="device-plugin")
case("cohort-mismatch-affinity-in-dra-pass",
     workload("Deployment", "triton", pod_spec(
         container("triton", claims=["gpu"]), claims=[template_claim()],
         affinity=required_affinity([(ALLOC, "In", ["dra"]), ("eks.amazonaws.com/compute-type", "In", ["hybrid"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-in-both-notin-one-pass",
     workload("Job", "eval", pod_spec(
         container("eval", claims=["gpu"]), claims=[template_claim()],
         affinity=required_affinity([(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-notin-infers-allowed-cohort-pass",
     pod("eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                          affinity=required_affinity([(ALLOC, "NotIn", ["device-plugin"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-affinity-notin-excludes-only-device-plugin-cohort-pass",
     # nvidia.com/gpu with the device-plugin cohort ruled out: bound for GPU nodes outside the policy's cohorts
     pod("render", pod_spec(container("render", gpus={"nvidia.com/gpu": 1}),
                            affinity=required_affinity([(ALLOC, "NotIn", ["device-plugin"])]))), cohort=None)
case("cohort-mismatch-auto-mode-nodes-outside-cohorts-pass",
     pod("auto-mode-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 1}),
                                     nodeSelector={"eks.amazonaws.com/compute-type": "auto"})), cohort=None)
case("cohort-mismatch-selector-several-cohorts-satisfy-infers-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector=dict(HYBRID))),
     cohort="device-plugin")
case("cohort-mismatch-inferred-dra-from-claim-pass",
     workload("ReplicaSet", "llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-inferred-device-plugin-from-limit-pass",
     workload("PodTemplate", "cuda-batch", pod_spec(container(gpus={"nvidia.com/gpu": 2}))), cohort="device-plugin")
case("cohort-mismatch-namespace-default-pass",
     workload("Job", "batch-infer", pod_spec(container("infer", claims=["gpu"]), claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="namespace-cohorts", cohort="dra")
case("cohort-mismatch-namespace-label-pass",
     pod("blender", pod_spec(container("blender", gpus={"nvidia.com/gpu": 1})), namespace="render"),
     docs=[namespace("render", **{ALLOC: "device-plugin"})], cohort="device-plugin")
case("cohort-mismatch-dra-extended-resource-on-dra-cohort-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="dra")),
     docs=[device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="dra")
case("cohort-mismatch-extended-resource-name-outside-nvidia-pass",
     workload("Deployment", "embedder", pod_spec(container("embedder", gpus={"example.com/large-gpu": 1}))),
     docs=[device_class("large-gpu", extended="example.com/large-gpu")], cohort="dra")
case("cohort-mismatch-dra-extended-class-device-plugin-cohort-pass",
     # on the device-plugin cohort nvidia.com/gpu is the device plugin's, whatever a DeviceClass says
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")),
     docs=[device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="device-plugin")
case("cohort-mismatch-apiserver-pod-inferred-pass",
     # as the apiserver sent it: strings, defaults, token volume, not-ready tolerations; no node selection
     json.loads((REPO / "tests" / "data" / "pods" / "apiserver-gpu-pod.json").read_text(encoding="utf-8")),
     cohort="device-plugin")
case("cohort-mismatch-gpu-limit-on-dra-cohort",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="dra")),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-claim-on-device-plugin-cohort",
     workload("CronJob", "nightly-eval", pod_spec(
         container("eval", claims=["gpu"]), cohort="device-plugin", claims=[template_claim()])),
     ("cohort-mismatch", "spec.jobTemplate.spec.template.spec.resourceClaims[0]"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="device-plugin")
case("cohort-mismatch-implicit-class-resource-on-device-plugin-cohort",
     workload("ReplicaSet", "embedder", pod_spec(
         container("embedder", gpus={"deviceclass.resource.kubernetes.io/hybrid-full-gpu": 1}), cohort="device-plugin")),
     ("cohort-mismatch", "spec.template.spec.containers[0].resources.limits"), docs=SEED_CLASSES, cohort="device-plugin")
case("cohort-mismatch-selector-and-affinity-name-two-cohorts",
     pod("confused", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "dra"},
                              affinity=required_affinity([(ALLOC, "In", ["device-plugin"])]))),
     ("cohort-mismatch", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"), cohort=None)
case("cohort-mismatch-affinity-in-two-cohorts-pass",
     # one term admitting both cohorts excludes neither: the device plugin's cohort is still open to it
     workload("DaemonSet", "gpu-burn", pod_spec(
         container("burn", gpus={"nvidia.com/gpu": 1}),
         affinity=required_affinity([(ALLOC, "In", ["device-plugin", "dra"])]))),
     cohort="device-plugin")
case("cohort-mismatch-selector-contradicts-cohort-labels",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                                nodeSelector={ALLOC: "device-plugin", "eks.amazonaws.com/compute-type": "ec2"})),
     ("cohort-mismatch", "spec.nodeSelector"), cohort=None)
case("cohort-mismatch-namespace-default",
     workload("Job", "cuda-batch", pod_spec(container(gpus={"nvidia.com/gpu": 1}))),
     ("cohort-mismatch", "spec.template.spec.containers[0].resources.limits"), policy="namespace-cohorts", cohort="dra")
case("cohort-mismatch-namespace-label",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), docs=[namespace(NS, **{ALLOC: "dra"})], cohort="dra")
case("cohort-mismatch-namespace-default-overruled-by-affinity-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                                affinity=required_affinity([(ALLOC, "NotIn", ["dra"])]))),
     policy="namespace-cohorts", cohort="device-plugin")

# Class: required node affinity is an OR of terms (each ANDed with nodeSelector); a cohort is chosen only when
# every term admits its nodes alone, and cohort-mismatch fires only when every term excludes the cohort of the
# pod's mechanism. Each failing row sits beside its closest benign twin.
INSTANCE = "node.kubernetes.io/instance-type"
case("cohort-mismatch-terms-ored-dra-or-instance-type-device-plugin-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 8}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"])], [(INSTANCE, "In", ["p5.48xlarge"])]))), cohort="device-plugin")
case("cohort-mismatch-terms-ored-every-term-dra-device-plugin-request",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 8}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"])], [(ALLOC, "In", ["dra"]), (INSTANCE, "In", ["p5.48xlarge"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-terms-ored-device-plugin-or-instance-type-dra-claim-pass",
     workload("Job", "eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                                      affinity=required_affinity([(ALLOC, "In", ["device-plugin"])],
                                                                 [(INSTANCE, "In", ["p5.48xlarge"])]))),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("cohort-mismatch-terms-ored-every-term-device-plugin-dra-claim",
     workload("Job", "eval", pod_spec(container("eval", claims=["gpu"]), claims=[template_claim()],
                                      affinity=required_affinity([(ALLOC, "In", ["device-plugin"])],
                                                                 [(ALLOC, "In", ["device-plugin"]),
                                                                  (INSTANCE, "In", ["p5.48xlarge"])]))),
     ("cohort-mismatch", "spec.template.spec.resourceClaims[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="device-plugin")
case("cohort-mismatch-terms-ored-node-selector-anded-with-each-term",
     # nodeSelector dra ANDed with each term: the device-plugin term matches nothing, the other only dra nodes
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "dra"},
                           affinity=required_affinity([(ALLOC, "In", ["device-plugin"])], [(INSTANCE, "Exists", None)]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-terms-ored-node-selector-device-plugin-and-open-term-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "device-plugin"},
                           affinity=required_affinity([(ALLOC, "In", ["dra"])], [(INSTANCE, "Exists", None)]))),
     cohort="device-plugin")
case("cohort-mismatch-notin-in-every-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])],
         [(ALLOC, "In", ["dra"]), (INSTANCE, "NotIn", ["g5.xlarge"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-notin-in-one-term-only-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["device-plugin", "dra"]), (ALLOC, "NotIn", ["device-plugin"])],
         [(ALLOC, "NotIn", ["dra"])]))), cohort="device-plugin")
case("cohort-mismatch-exists-allocation-label-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity([(ALLOC, "Exists", None)]))),
     cohort="device-plugin")
case("cohort-mismatch-does-not-exist-allocation-label-pass",
     # no cohort's node lacks the label: bound for GPU nodes outside the policy's cohorts
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "DoesNotExist", None)]))), cohort=None)
case("cohort-mismatch-does-not-exist-with-dra-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [(ALLOC, "In", ["dra"]), ("example.com/pool", "DoesNotExist", None)]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-gt-lt-on-keys-cohorts-do-not-use-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [("nvidia.com/gpu.count", "Gt", ["4"]), ("nvidia.com/gpu.memory", "Lt", ["100000"])]))), cohort="device-plugin")
case("cohort-mismatch-gt-with-dra-term",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity=required_affinity(
         [("nvidia.com/gpu.count", "Gt", ["4"]), (ALLOC, "In", ["dra"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-empty-term-matches-nothing",
     # Kubernetes skips an empty term: what is left pins the DRA cohort
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {}, {"matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}})),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-empty-term-beside-device-plugin-term-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
             {}, {"matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["device-plugin"]}]}]}}})),
     cohort="device-plugin")
case("cohort-mismatch-empty-list-of-terms-matches-nothing-pass",
     # no node at all (the apiserver refuses it): no cohort, nothing placed, no cohort-mismatch to report
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})), cohort=None)
case("cohort-mismatch-empty-list-of-terms-beside-node-selector-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeSelector={ALLOC: "device-plugin"}, affinity={
         "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})), cohort=None)
case("cohort-mismatch-match-fields-named-node-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
             {"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}]}]}}})), cohort="device-plugin")
case("cohort-mismatch-match-fields-with-dra-expression",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), affinity={"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
             "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}],
             "matchExpressions": [{"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}})),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), cohort="dra")
case("cohort-mismatch-two-dra-cohorts-admitted-device-plugin-request",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "In", ["dra", "dra-b"])]))),
     ("cohort-mismatch", "spec.containers[0].resources.limits"), policy="two-dra", cohort=None)
case("cohort-mismatch-dra-and-device-plugin-cohorts-admitted-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           affinity=required_affinity([(ALLOC, "In", ["dra-b"])], [(ALLOC, "In", ["device-plugin"])]))),
     policy="two-dra", cohort="device-plugin")

# ---- resource-not-offered --------------------------------------------------------------------------------

case("resource-not-offered-time-sliced-shared-replica-pass",
     workload("Deployment", "notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}),
                                                 cohort="device-plugin")),
     policy="time-slicing", cohort="device-plugin")
case("resource-not-offered-mig-mixed-a100-pass",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-3g.20gb": 1}), cohort="device-plugin")),
     policy="mig-mixed-a100")
case("resource-not-offered-mig-mixed-h200-pass",
     workload("Deployment", "vllm-small", pod_spec(
         container("vllm", gpus={"nvidia.com/mig-3g.71gb": 1}),
         container("guard", gpus={"nvidia.com/mig-1g.18gb": 1}), cohort="device-plugin")),
     policy="mig-mixed-h200")
case("resource-not-offered-mig-single-whole-resource-pass",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")),
     policy="mig-single-a100")
case("resource-not-offered-first-available-falls-back-pass",
     pod("elastic", pod_spec(container("worker", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "mig-or-gpu")])),
     docs=[claim_template("mig-or-gpu", {"name": "gpu", "firstAvailable": [
         {"name": "slice", "deviceClassName": "mig.nvidia.com"},
         {"name": "whole", "deviceClassName": "hybrid-full-gpu"}]})], cohort="dra")
case("resource-not-offered-cohort-class-list-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="dra-classes")
case("resource-not-offered-v1beta2-template-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "beta2-gpu")])),
     docs=[claim_template("beta2-gpu", request("gpu", "hybrid-large-gpu", api="v1beta2"), api="v1beta2"), *SEED_CLASSES])
case("resource-not-offered-v1beta1-template-mig-class",
     pod("mig-infer", pod_spec(container("infer", claims=["mig"]), cohort="dra", claims=[template_claim("mig", "beta1-mig")])),
     ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[claim_template("beta1-mig", request("mig", "mig.nvidia.com", api="v1beta1"), api="v1beta1")])
case("resource-not-offered-mig-on-mig-none-cohort",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"))
case("resource-not-offered-mig-single",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="mig-single-a100")
case("resource-not-offered-a100-80gb-profile-on-a100-40gb",
     workload("Job", "mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-4g.40gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.template.spec.containers[0].resources.limits"), policy="mig-mixed-a100")
case("resource-not-offered-a100-profile-on-h200",
     pod("mig-infer", pod_spec(container("infer", gpus={"nvidia.com/mig-1g.5gb": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="mig-mixed-h200")
case("resource-not-offered-exclusive-gpu-on-renamed-time-slicing",
     # the seed: do not use the exclusive smoke request unchanged against the renamed shared resource
     workload("Job", "hybrid-gpu-plugin-smoke", pod_spec(container("gpu-check", gpus={"nvidia.com/gpu": 1}),
                                                         cohort="device-plugin")),
     ("resource-not-offered", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("resource-not-offered-shared-name-without-rename",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     ("resource-not-offered", "spec.containers[0].resources.limits"), policy="time-slicing-unrenamed")
case("resource-not-offered-mig-class-claim-on-dra-cohort",
     pod("mig-infer", pod_spec(container("infer", claims=["mig"]), cohort="dra",
                               claims=[template_claim("mig", "mig-slice")])),
     ("resource-not-offered", "spec.resourceClaims[0]"), docs=[MIG_TEMPLATE])
case("resource-not-offered-mig-class-template",
     MIG_TEMPLATE, ("resource-not-offered", "spec.spec.devices.requests[0].exactly.deviceClassName"), cohort="dra")
case("resource-not-offered-vfio-claim",
     resource_claim("passthrough", request("vm-gpu", "vfio.gpu.nvidia.com")),
     ("resource-not-offered", "spec.devices.requests[0].exactly.deviceClassName"))
case("resource-not-offered-class-outside-cohort-list",
     workload("StatefulSet", "llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra",
                                             claims=[template_claim("gpu", "full-gpu")])),
     ("resource-not-offered", "spec.template.spec.resourceClaims[0]"),
     docs=[*SEED_CLASSES, FULL_GPU_TEMPLATE], policy="dra-classes")
case("resource-not-offered-implicit-mig-class-resource",
     pod("mig-infer", pod_spec(container("infer", gpus={"deviceclass.resource.kubernetes.io/mig.nvidia.com": 1}),
                               cohort="dra")),
     ("resource-not-offered", "spec.containers[0].resources.limits"))
case("resource-not-offered-first-available-none-offered",
     pod("elastic", pod_spec(container("worker", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "slices")])),
     ("resource-not-offered", "spec.resourceClaims[0]"), ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[claim_template("slices", {"name": "gpu", "firstAvailable": [
         {"name": "small", "deviceClassName": "mig.nvidia.com"},
         {"name": "vm", "deviceClassName": "vfio.gpu.nvidia.com"}]})])

# ---- shared-request-count --------------------------------------------------------------------------------

case("shared-request-count-one-replica-pass",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     policy="time-slicing")
case("shared-request-count-one-replica-per-container-pass",
     pod("pipeline", pod_spec(container("decode", gpus={"nvidia.com/gpu.shared": 1}),
                              container("encode", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin")),
     policy="time-slicing")
case("shared-request-count-cohort-allows-several-pass",
     pod("notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu": 2}), cohort="device-plugin")),
     policy="time-slicing-unrenamed")
case("shared-request-count-two-replicas",
     workload("Job", "train-small", pod_spec(container("train", gpus={"nvidia.com/gpu.shared": 2}),
                                             cohort="device-plugin")),
     ("shared-request-count", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("shared-request-count-mps-two-replicas",
     pod("mps-infer", pod_spec(container("infer", gpus={"nvidia.com/gpu": 2}), cohort="device-plugin")),
     ("shared-request-count", "spec.containers[0].resources.limits"), policy="mps")
case("shared-request-count-init-container",
     workload("CronJob", "warm-cache", pod_spec(
         container("serve", gpus={"nvidia.com/gpu.shared": 1}),
         init=[container("compile-engines", gpus={"nvidia.com/gpu.shared": 4})], cohort="device-plugin")),
     ("shared-request-count", "spec.jobTemplate.spec.template.spec.initContainers[0].resources.limits"),
     policy="time-slicing")

# ---- shared-exclusive-mix --------------------------------------------------------------------------------

case("shared-exclusive-mix-separate-containers-pass",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1}),
                              container("preview", gpus={"nvidia.com/mig-1g.5gb.shared": 1}), cohort="device-plugin")),
     policy="mig-mixed-shared")
case("shared-exclusive-mix-exclusive-workload-whole-gpu-pass",
     workload("Job", "train", pod_spec(container("train", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin"),
              labels={"workload.example.com/gpu-exclusive": "true"}))
case("shared-exclusive-mix-one-container",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb.shared": 1}),
                              cohort="device-plugin")),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"), policy="mig-mixed-shared")
case("shared-exclusive-mix-shared-name-on-cohort-without-sharing",
     pod("pipeline", pod_spec(container("train", gpus={"nvidia.com/gpu": 1, "nvidia.com/gpu.shared": 1}),
                              cohort="device-plugin")),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"),
     ("sharing-not-enabled", "spec.containers[0].resources.limits"))
case("shared-exclusive-mix-exclusive-workload-shared-replica",
     workload("Deployment", "latency-critical", pod_spec(
         container("serve", gpus={"nvidia.com/gpu.shared": 1}), cohort="device-plugin"),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.template.spec.containers[0].resources.limits"), policy="time-slicing")
case("shared-exclusive-mix-exclusive-workload-unrenamed-time-slicing",
     pod("latency-critical", pod_spec(container("serve", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin"),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.containers[0].resources.limits"), policy="time-slicing-unrenamed")
case("shared-exclusive-mix-exclusive-workload-time-sliced-claim",
     pod("latency-critical", pod_spec(container("serve", claims=["gpu"]), cohort="dra",
                                      claims=[template_claim("gpu", "time-sliced-gpu")]),
         labels={"workload.example.com/gpu-exclusive": "true"}),
     ("shared-exclusive-mix", "spec.resourceClaims[0]"),
     docs=[claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")])], policy="dra-sharing")

# ---- sharing-not-enabled ---------------------------------------------------------------------------------

case("sharing-not-enabled-dra-time-slicing-enabled-pass",
     pod("notebook", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra",
                              claims=[template_claim("gpu", "time-sliced-gpu")])),
     docs=[claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")])], policy="dra-sharing")
case("sharing-not-enabled-dra-template-time-slicing-enabled-pass",
     claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")]), policy="dra-sharing")
case("sharing-not-enabled-shared-replica-without-time-slicing",
     workload("Deployment", "notebook", pod_spec(container("jupyter", gpus={"nvidia.com/gpu.shared": 1}),
                                                 cohort="device-plugin")),
     ("sharing-not-enabled", "spec.template.spec.containers[0].resources.limits"))
case("sharing-not-enabled-dra-mps-claim",
     pod("mps-infer", pod_spec(container("infer", claims=["gpu"]), cohort="dra",
                               claims=[template_claim("gpu", "mps-gpu")])),
     ("sharing-not-enabled", "spec.resourceClaims[0]"),
     docs=[claim_template("mps-gpu", request(), config=[gpu_config("MPS")])])
case("sharing-not-enabled-dra-template-time-slicing",
     claim_template("time-sliced-gpu", request(), config=[gpu_config("TimeSlicing")]),
     ("sharing-not-enabled", "spec.spec.devices.config[0].opaque.parameters.sharing.strategy"))
case("sharing-not-enabled-dra-mps-where-only-time-slicing",
     resource_claim("mps-gpu", request(), config=[gpu_config("MPS")]),
     ("sharing-not-enabled", "spec.devices.config[0].opaque.parameters.sharing.strategy"), policy="dra-sharing")

# ---- shared-claim ----------------------------------------------------------------------------------------

case("shared-claim-template-per-pod-pass",
     workload("Deployment", "triton", pod_spec(container("triton", claims=["gpu"]), cohort="dra",
                                               claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("shared-claim-named-non-gpu-claim-pass",
     pod("nccl-test", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                               claims=[named_claim("channel", "imex-channel-0")])),
     docs=[IMEX_CLASS, resource_claim("imex-channel-0", request("channel", "compute-domain-default-channel.nvidia.com"))])
case("shared-claim-named-gpu-claim",
     pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())])
case("shared-claim-deployment-replicas-share-one-claim",
     workload("Deployment", "api", pod_spec(container("api", claims=["gpu"]), claims=[named_claim()])),
     ("shared-claim", "spec.template.spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())],
     cohort="dra")
case("shared-claim-action-enforce",
     pod("notebook-1", pod_spec(container("jupyter", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "enforce", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())],
     policy="actions")
case("shared-claim-exception-by-user-pass",
     pod("step-1", pod_spec(container("step", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     docs=[resource_claim("shared-a100", request())], policy="exceptions",
     user={"username": "system:serviceaccount:argo:argo-workflow", "groups": ["system:serviceaccounts"]})
case("shared-claim-exception-other-user",
     pod("step-1", pod_spec(container("step", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("shared-claim", "spec.resourceClaims[0]"), docs=[resource_claim("shared-a100", request())], policy="exceptions",
     user={"username": "alice@example.com", "groups": ["developers"]})

# ---- visible-devices-override ----------------------------------------------------------------------------

CUDA_ALL = {"name": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3"}
NVIDIA_ALL = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}
VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
KAI_ENV = {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "kai-gpu-sharing", "key": "visible"}}}

case("visible-devices-override-plain-gpu-pod-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "MODEL_DIR", "value": "/models"}]),
                                cohort="device-plugin")))
case("visible-devices-override-void-on-sidecar-without-gpu-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           init=[container("log-shipper", env=[VOID], restart="Always")], cohort="device-plugin")))
case("visible-devices-override-kai-scheduler-exception-pass",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin",
                                     schedulerName="kai-scheduler")), policy="kai")
case("visible-devices-override-env-from-config-map-without-variables-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[{"configMapRef": {"name": "train-env"}}]),
                           cohort="device-plugin")), docs=[config_map("train-env", "MODEL_DIR", "BATCH_SIZE")])
case("visible-devices-override-variable-not-in-configured-list-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin")),
     policy="variables")
case("visible-devices-override-cuda-on-one-device-claim",
     workload("Job", "hybrid-gpu-dra-smoke", pod_spec(container("gpu-check", claims=["gpu-resource"], env=[CUDA_ALL]),
                                                      cohort="dra", claims=[template_claim("gpu-resource")])),
     ("visible-devices-override", "spec.template.spec.containers[0].env[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("visible-devices-override-nvidia-all-on-sidecar",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), container("exporter", env=[NVIDIA_ALL]),
                           cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[1].env[0]"))
case("visible-devices-override-void-on-gpu-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[VOID]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-cpu-workload",
     workload("ReplicationController", "legacy-etl", pod_spec(
         container("etl", env=[{"name": "GPU_DEVICE_ORDINAL", "value": "0"}]))),
     ("visible-devices-override", "spec.template.spec.containers[0].env[0]"), cohort=None)
case("visible-devices-override-ephemeral-debug-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                           ephemeral=[container("debugger", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": GPU_UUID}],
                                                cpu=False)])),
     ("visible-devices-override", "spec.ephemeralContainers[0].env[0]"))
case("visible-devices-override-value-from-secret",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "CUDA_VISIBLE_DEVICES", "valueFrom": {
         "secretKeyRef": {"name": "node-gpus", "key": "devices"}}}]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-env-from-config-map",
     workload("Deployment", "triton", pod_spec(container("triton", claims=["gpu"], env_from=[
         {"configMapRef": {"name": "cuda-env"}}]), cohort="dra", claims=[template_claim()])),
     ("visible-devices-override", "spec.template.spec.containers[0].envFrom[0]"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE, config_map("cuda-env", "CUDA_VISIBLE_DEVICES", "MODEL_DIR")])
case("visible-devices-override-env-from-prefixed-config-map",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[
         {"configMapRef": {"name": "device-env"}, "prefix": "NVIDIA_"}]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].envFrom[0]"),
     docs=[config_map("device-env", "VISIBLE_DEVICES", "DRIVER_CAPABILITIES")])
case("visible-devices-override-env-from-unreadable-secret",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[{"secretRef": {"name": "hf-token"}}]),
                           cohort="device-plugin")),
     ("visible-devices-override", "warn", "spec.containers[0].envFrom[0]"))
case("visible-devices-override-kai-env-without-exception",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin",
                                     schedulerName="kai-scheduler")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-kai-exception-needs-kai-scheduler",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="kai")
case("visible-devices-override-global-dry-run",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]))),
     ("visible-devices-override", "spec.containers[0].env[0]"),
     ("default-placement", "spec.nodeSelector"), ("default-placement", "spec.tolerations"),
     ("default-runtime-class", "spec.runtimeClassName"), policy="dry-run", allowed=True, cohort="device-plugin")
case("visible-devices-override-namespace-in-audit-mode",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-a"),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="rollout", allowed=True)
case("visible-devices-override-namespace-action-warn",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-b"),
     ("visible-devices-override", "warn", "spec.containers[0].env[0]"), policy="rollout")
case("visible-devices-override-other-namespace-still-enforced",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-c"),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="rollout")
case("visible-devices-override-action-off-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin")),
     policy="actions")

# ---- device-access-bypass --------------------------------------------------------------------------------

DEVICE_PLUGIN_SOCKETS = {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}

case("device-access-bypass-gpu-pod-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[{"name": "data", "mountPath": "/data"}]),
                                cohort="device-plugin", volumes=[{"name": "data", "emptyDir": {}}])))
case("device-access-bypass-log-host-path-pass",
     workload("DaemonSet", "log-agent", pod_spec(
         container("agent", mounts=[{"name": "logs", "mountPath": "/var/log", "readOnly": True}]),
         volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}]), namespace="logging"), cohort=None)
case("device-access-bypass-privileged-cpu-pod-pass",
     # privileged matters on GPU cohorts; a CPU DaemonSet is not this service's business
     workload("DaemonSet", "node-tuner", pod_spec(container("tuner", sc={"privileged": True})), namespace="ops"),
     cohort=None)
case("device-access-bypass-device-plugin-in-exempt-namespace-pass",
     workload("DaemonSet", "nvidia-device-plugin", pod_spec(
         container("plugin", sc={"privileged": True}, mounts=[{"name": "device-plugin",
                                                               "mountPath": "/var/lib/kubelet/device-plugins"}]),
         volumes=[DEVICE_PLUGIN_SOCKETS]), namespace="gpu-system"), cohort=None)
case("device-access-bypass-exception-by-service-account-pass",
     workload("Job", "gpu-validator", pod_spec(
         container("validate", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin",
         serviceAccountName="gpu-validator"), namespace="gpu-validation"), policy="exceptions")
case("device-access-bypass-exception-by-group-pass",
     pod("debug-node-gpu", pod_spec(container("debug", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}),
                                    cohort="device-plugin")),
     policy="exceptions", user={"username": "oncall@example.com", "groups": ["gpu-sre", "system:authenticated"]})
case("device-access-bypass-privileged-gpu-container",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin")),
     ("device-access-bypass", "spec.containers[0].securityContext.privileged"))
case("device-access-bypass-privileged-sidecar-in-dra-job",
     workload("Job", "train", pod_spec(
         container("train", claims=["gpu"]),
         init=[container("dcgm-exporter", sc={"privileged": True}, restart="Always")],
         cohort="dra", claims=[template_claim()])),
     ("device-access-bypass", "spec.template.spec.initContainers[0].securityContext.privileged"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("device-access-bypass-privileged-ephemeral-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                           ephemeral=[container("debugger", sc={"privileged": True}, cpu=False)])),
     ("device-access-bypass", "spec.ephemeralContainers[0].securityContext.privileged"))
case("device-access-bypass-dev-nvidia-host-path-cpu-pod",
     pod("sneaky", pod_spec(container("app", mounts=[{"name": "gpu0", "mountPath": "/dev/nvidia0"}]),
                            volumes=[{"name": "gpu0", "hostPath": {"path": "/dev/nvidia0", "type": "CharDevice"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-device-plugin-socket-daemon-set",
     workload("DaemonSet", "gpu-monitor", pod_spec(
         container("monitor", mounts=[{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]),
         volumes=[DEVICE_PLUGIN_SOCKETS]), namespace="monitoring"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-driver-root-and-dev",
     workload("StatefulSet", "driver-probe", pod_spec(
         container("probe"), volumes=[{"name": "driver", "hostPath": {"path": "/run/nvidia/driver"}},
                                      {"name": "dev", "hostPath": {"path": "/dev/"}}])),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"),
     ("device-access-bypass", "spec.template.spec.volumes[1].hostPath.path"), cohort=None)
case("device-access-bypass-device-list-volume-mount",
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "/var/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev/null"}}])),
     ("device-access-bypass", "spec.containers[0].volumeMounts[0].mountPath"))
case("device-access-bypass-cdi-annotation-on-template",
     workload("Deployment", "cdi-app", pod_spec(container("app")),
              annotations={"cdi.k8s.io/gpus": "nvidia.com/gpu=all"}),
     ("device-access-bypass", 'spec.template.metadata.annotations["cdi.k8s.io/gpus"]'), cohort=None)
case("device-access-bypass-nri-annotation-on-cron-job",
     workload("CronJob", "nightly", pod_spec(container("app")),
              annotations={"cdi-devices.nri.io/container.app": "nvidia.com/gpu=0"}),
     ("device-access-bypass",
      'spec.jobTemplate.spec.template.metadata.annotations["cdi-devices.nri.io/container.app"]'), cohort=None)
case("device-access-bypass-exception-other-service-account",
     workload("Job", "gpu-validator", pod_spec(
         container("validate", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin",
         serviceAccountName="default"), namespace="gpu-validation"),
     ("device-access-bypass", "spec.template.spec.containers[0].securityContext.privileged"), policy="exceptions")
case("device-access-bypass-action-audit",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin")),
     ("device-access-bypass", "audit", "spec.containers[0].securityContext.privileged"), policy="actions")

# ---- runtime-class-conflict ------------------------------------------------------------------------------

case("runtime-class-conflict-nvidia-pass",
     workload("Deployment", "cuda-api", pod_spec(container("api", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")))
case("runtime-class-conflict-pod-without-runtime-class-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtimeClassName=None)))
case("runtime-class-conflict-dra-pod-kata-pass",
     pod("sandboxed", pod_spec(container(claims=["gpu"]), cohort="dra", claims=[template_claim()], runtime="kata-qemu")),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("runtime-class-conflict-runc",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="runc")),
     ("runtime-class-conflict", "spec.runtimeClassName"))
case("runtime-class-conflict-kata-deployment",
     workload("Deployment", "sandboxed", pod_spec(container("app", gpus={"nvidia.com/gpu": 1}), runtime="kata-qemu")),
     ("runtime-class-conflict", "spec.template.spec.runtimeClassName"), cohort="device-plugin")
case("runtime-class-conflict-exception-by-namespace-pass",
     pod("bench", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="nvidia-cdi"),
         namespace="gpu-bench"), policy="exceptions")
case("runtime-class-conflict-action-warn",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", runtime="runc")),
     ("runtime-class-conflict", "warn", "spec.runtimeClassName"), policy="actions")

# ---- run-as-root -----------------------------------------------------------------------------------------

case("run-as-root-hardened-pass",
     workload("StatefulSet", "vector-db", pod_spec(container("db", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")))
case("run-as-root-cpu-pod-as-root-pass",
     pod("build", pod_spec(container("kaniko", sc={}), sc={"runAsUser": 0})), cohort=None)
case("run-as-root-exception-by-name-pass",
     pod("nsight-profile-1", pod_spec(container("nsight", gpus={"nvidia.com/gpu": 1}, sc={
         **CONTAINER_SC, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}), cohort="device-plugin"),
         namespace="perf"), policy="exceptions")
case("run-as-root-pod-run-as-user-zero",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                                sc={"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}})),
     ("run-as-root", "spec.securityContext.runAsUser"))
case("run-as-root-template-run-as-non-root-false",
     workload("Job", "train", pod_spec(container("train", claims=["gpu"]), cohort="dra", claims=[template_claim()],
                                       sc={"runAsNonRoot": False})),
     ("run-as-root", "spec.template.spec.securityContext.runAsNonRoot"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("run-as-root-container-escalation-and-capabilities",
     pod("profiler", pod_spec(container(gpus={"nvidia.com/gpu": 1}), container("nsight", sc={
         "allowPrivilegeEscalation": True, "capabilities": {"add": ["SYS_ADMIN", "SYS_PTRACE"]}}),
         cohort="device-plugin")),
     ("run-as-root", "spec.containers[1].securityContext.allowPrivilegeEscalation"),
     ("run-as-root", "spec.containers[1].securityContext.capabilities.add"))
case("run-as-root-exception-name-in-other-namespace",
     pod("nsight-profile-1", pod_spec(container("nsight", gpus={"nvidia.com/gpu": 1}, sc={
         **CONTAINER_SC, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}), cohort="device-plugin")),
     ("run-as-root", "spec.containers[0].securityContext.capabilities.add"), policy="exceptions")
case("run-as-root-action-enforce",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={**CONTAINER_SC, "runAsUser": 0}),
                                cohort="device-plugin")),
     ("run-as-root", "enforce", "spec.containers[0].securityContext.runAsUser"), policy="actions")

# ---- claim-shape -----------------------------------------------------------------------------------------

case("claim-shape-seed-template-pass", SEED_TEMPLATE, docs=SEED_CLASSES, cohort="dra")
case("claim-shape-eight-gpus-pass", resource_claim("full-node", request(count=8)))
case("claim-shape-first-available-pass",
     claim_template("mig-or-gpu", {"name": "gpu", "firstAvailable": [
         {"name": "large", "deviceClassName": "hybrid-large-gpu", "count": 2},
         {"name": "any", "deviceClassName": "hybrid-full-gpu", "count": 4}]}), docs=SEED_CLASSES)
case("claim-shape-admin-access-allowed-namespace-pass",
     resource_claim("gpu-health", request(admin=True), namespace="gpu-debug"), policy="dra-sharing")
case("claim-shape-non-gpu-class-all-pass",
     claim_template("imex-channels", request("channel", "compute-domain-default-channel.nvidia.com", mode="All",
                                             count=None)), docs=[IMEX_CLASS])
case("claim-shape-allocation-mode-all",
     claim_template("every-gpu", request(mode="All", count=None)),
     ("claim-shape", "spec.spec.devices.requests[0].exactly.allocationMode"))
case("claim-shape-count-above-limit",
     resource_claim("big-train", request(count=16)), ("claim-shape", "spec.devices.requests[0].exactly.count"))
case("claim-shape-requests-add-up-above-limit",
     claim_template("two-groups", request("large", "hybrid-large-gpu", count=4), request("rest", count=5)),
     ("claim-shape", "spec.spec.devices.requests"), docs=SEED_CLASSES)
case("claim-shape-admin-access",
     resource_claim("gpu-health", request(admin=True)), ("claim-shape", "spec.devices.requests[0].exactly.adminAccess"))
case("claim-shape-neither-exactly-nor-first-available",
     claim_template("flat", {"name": "gpu", "deviceClassName": "hybrid-full-gpu", "count": 1}),
     ("claim-shape", "spec.spec.devices.requests[0]"))
case("claim-shape-v1beta1-count-above-limit",
     claim_template("big-train", request(count=12, api="v1beta1"), api="v1beta1"),
     ("claim-shape", "spec.spec.devices.requests[0].count"))
case("claim-shape-v1beta2-all",
     resource_claim("every-gpu", request(mode="All", count=None, api="v1beta2"), api="v1beta2"),
     ("claim-shape", "spec.devices.requests[0].exactly.allocationMode"))
case("claim-shape-cohort-limit-two",
     claim_template("four-large", request("gpu", "hybrid-large-gpu", count=4)),
     ("claim-shape", "spec.spec.devices.requests[0].exactly.count"), docs=SEED_CLASSES, policy="dra-classes")
case("claim-shape-action-warn",
     claim_template("every-gpu", request(mode="All", count=None)),
     ("claim-shape", "warn", "spec.spec.devices.requests[0].exactly.allocationMode"), policy="actions")

# ---- legacy-api ------------------------------------------------------------------------------------------

case("legacy-api-seed-device-classes-pass", SEED_DRA["hybrid-large-gpu"], cohort=None)
case("legacy-api-v1beta1-template-pass",
     claim_template("single-gpu", request(api="v1beta1"), api="v1beta1"), docs=SEED_CLASSES)
case("legacy-api-v1beta2-claim-pass", resource_claim("single-gpu", request(api="v1beta2"), api="v1beta2"))
case("legacy-api-device-class-single-quotes-pass",
     device_class("h200", quote="'", extra_cel=" && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"))
case("legacy-api-pod-claim-source-wrapper",
     pod("old-dra", pod_spec(container(claims=["gpu"]), cohort="dra", claims=[
         {"name": "gpu", "source": {"resourceClaimTemplateName": "single-large-gpu"}}])),
     ("legacy-api", "spec.resourceClaims[0].source"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("legacy-api-job-claim-source-wrapper",
     workload("Job", "old-dra", pod_spec(container(claims=["gpu"]), claims=[
         {"name": "gpu", "source": {"resourceClaimName": "shared-a100"}}])),
     ("legacy-api", "spec.template.spec.resourceClaims[0].source"), ("shared-claim", "spec.template.spec.resourceClaims[0]"),
     docs=[resource_claim("shared-a100", request())], cohort="dra")
case("legacy-api-v1alpha2-claim-resource-class",
     {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClaim", "metadata": meta("old-gpu"),
      "spec": {"resourceClassName": "gpu.nvidia.com"}},
     ("legacy-api", "apiVersion"), ("legacy-api", "spec.resourceClassName"))
case("legacy-api-v1alpha3-device-class-suitable-nodes",
     {**device_class("old-gpu", api="resource.k8s.io/v1alpha3"),
      "spec": {"selectors": [], "suitableNodes": {"nodeSelectorTerms": [{"matchExpressions": [
          {"key": ALLOC, "operator": "In", "values": ["dra"]}]}]}}},
     ("legacy-api", "apiVersion"), ("legacy-api", "spec.suitableNodes"))
case("legacy-api-action-audit",
     {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaimTemplate", "metadata": meta("old-gpu"),
      "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}}}},
     ("legacy-api", "audit", "apiVersion"), policy="actions")

# ---- unresolved-claim ------------------------------------------------------------------------------------

case("unresolved-claim-template-in-bundle-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("unresolved-claim-default-namespace-pass",
     # documents without a namespace are in the CLI's --namespace, as kubectl apply would place them
     pod("llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim("gpu", "full-gpu")]), namespace=None),
     docs=[claim_template("full-gpu", request(), namespace=None)], cohort="dra")
case("unresolved-claim-template-missing",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     ("unresolved-claim", "spec.resourceClaims[0]"))
case("unresolved-claim-template-in-other-namespace",
     workload("Deployment", "llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim()]),
              namespace="team-a"),
     ("unresolved-claim", "spec.template.spec.resourceClaims[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("unresolved-claim-named-claim-missing",
     workload("StatefulSet", "llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[named_claim()])),
     ("unresolved-claim", "spec.template.spec.resourceClaims[0]"))
case("unresolved-claim-unknown-device-class",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), claims=[template_claim("gpu", "custom")])),
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=[claim_template("custom", request("gpu", "h200-nvl"))],
     cohort=None)
case("unresolved-claim-implicit-resource-unknown-class",
     workload("Job", "embed", pod_spec(container("embed", gpus={"deviceclass.resource.kubernetes.io/h200-nvl": 1}))),
     ("unresolved-claim", "spec.template.spec.containers[0].resources.limits"), cohort=None)
case("unresolved-claim-action-enforce",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     ("unresolved-claim", "enforce", "spec.resourceClaims[0]"), policy="actions")


# ---------------------------------------------------------------------------------------------- apiserver shape

# ---- issue 13: GPU semantics where real manifests differ from the easy case ---------------------------------
# Each class has its failing rows beside their closest benign twins (a false denial is the worst defect).

# Class: pods already bound to a node are validated like any other (their placement is in test_mutations.py).
case("visible-devices-override-bound-pod",
     pod("mirror", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]),
                            nodeName="gpu-node-7")),
     ("visible-devices-override", "spec.containers[0].env[0]"), cohort="device-plugin")
case("visible-devices-override-bound-pod-pass",
     pod("mirror", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeName="gpu-node-7")), cohort="device-plugin")

# Class: host paths after normalisation, as the kernel resolves them; device-list mounts as the toolkit reads them.
case("device-access-bypass-var-run-persistenced-host-path",
     workload("DaemonSet", "persistenced-probe", pod_spec(container("probe"), volumes=[
         {"name": "persistenced", "hostPath": {"path": "/var/run/nvidia-persistenced"}}]), namespace="monitoring"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-var-run-other-host-path-pass",
     workload("DaemonSet", "csi-node", pod_spec(container("driver"), volumes=[
         {"name": "csi", "hostPath": {"path": "/var/run/csi-example"}}]), namespace="storage"), cohort=None)
case("device-access-bypass-double-slash-mps-host-path",
     pod("mps-client", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", volumes=[
         {"name": "mps", "hostPath": {"path": "//var/run/nvidia/mps"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"))
case("device-access-bypass-proc-root-host-path",
     pod("escape", pod_spec(container("app"), volumes=[{"name": "dev", "hostPath": {"path": "/proc/1/root/dev"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-proc-host-path-pass",
     # node-exporter's /proc: reaching /proc/1/root through it needs ptrace rights the pod does not have
     workload("DaemonSet", "node-exporter", pod_spec(container("exporter"), volumes=[
         {"name": "proc", "hostPath": {"path": "/proc"}}]), namespace="monitoring"), cohort=None)
case("device-access-bypass-host-root-node-debug",
     # what `kubectl debug node/...` creates: the host's / at /host
     pod("node-debugger-gpu-node-7-x7k2p", pod_spec(container("debugger", mounts=[{"name": "host-root", "mountPath": "/host"}]),
                                                    nodeName="gpu-node-7",
                                                    volumes=[{"name": "host-root", "hostPath": {"path": "/"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-kubelet-dir-ancestor",
     workload("DaemonSet", "csi-plugin", pod_spec(container("plugin"), volumes=[
         {"name": "kubelet", "hostPath": {"path": "/var/lib/kubelet/"}}]), namespace="storage"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-kubelet-pods-dir-pass",
     workload("DaemonSet", "csi-plugin", pod_spec(container("plugin"), volumes=[
         {"name": "pods", "hostPath": {"path": "/var/lib/kubelet/pods"}}]), namespace="storage"), cohort=None)
case("device-access-bypass-device-list-double-slash-mount",
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "//var/run/nvidia-container-devices/./all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev//null"}}])),
     ("device-access-bypass", "spec.containers[0].volumeMounts[0].mountPath"))
case("device-access-bypass-device-list-under-run-pass",
     # the toolkit compares the literal /var/run/...: a mount under /run asks it for nothing
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev/null"}}])))
case("device-access-bypass-device-list-empty-dir-pass",
     # only a /dev/null mount is read as a request
     pod("scratch", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "scratch", "mountPath": "/var/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "scratch", "emptyDir": {}}])))

# Class: messages say what is true.
case("double-mechanism-requests-only-and-claim",
     pod("train-7f", pod_spec(dict(container(claims=["gpu"], cpu=False), resources={
         "requests": {"nvidia.com/gpu": 1}, "claims": [{"name": "gpu"}]}), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.requests"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("device-access-bypass-privileged-cpu-pod-on-gpu-cohort",
     pod("node-tuner", pod_spec(container("tuner", sc={"privileged": True}), nodeSelector=dict(DP_NODES))),
     ("device-access-bypass", "spec.containers[0].securityContext.privileged"), cohort="device-plugin")

# Class: DeviceClass CEL selectors are evaluated, not pattern-matched.
def _cel_class(name, expression, **extra):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}], **extra}}


def _limit_and_claim(cls):
    """A pod asking for a GPU by the device plugin, and for whatever `cls` selects by a claim."""
    tpl = claim_template("by-class", request("dev", cls["metadata"]["name"]))
    return (pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["dev"]),
                                  claims=[template_claim("dev", "by-class")])), [cls, tpl])


for _id, _expr, _gpu in [
    ("negated-driver-is-not-gpu-pass", '!(device.driver == "gpu.nvidia.com")', False),
    ("other-driver-is-not-gpu-pass", 'device.driver == "nic.example.com"', False),
    ("imex-channel-type-is-not-gpu-pass",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'", False),
    ("driver-on-the-right", '"gpu.nvidia.com" == device.driver', True),
    ("driver-in-list", 'device.driver in ["gpu.nvidia.com", "nic.example.com"]', True),
    ("gpu-or-nic", 'device.driver == "nic.example.com" || device.driver == "gpu.nvidia.com"', True),
    ("memory-quantity", 'device.driver == "gpu.nvidia.com" && '
                        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    ("product-name-string-functions", "device.driver == 'gpu.nvidia.com' && "
                                      "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')", True),
]:
    _obj, _docs = _limit_and_claim(_cel_class("by-cel", _expr))
    case(f"double-mechanism-cel-{_id}", _obj,
         *([("double-mechanism", "spec.containers[0].resources.limits")] if _gpu else []), docs=_docs)

_obj, _docs = _limit_and_claim(_cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && url('https://x').getHost() == 'x'"))
case("unresolved-claim-cel-selector-that-does-not-compile", _obj,
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=_docs, cohort="device-plugin")
_obj, _docs = _limit_and_claim(_cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].productName == 'Quadro RTX 8000'"))
case("unresolved-claim-cel-selector-on-attributes-no-probe-shows", _obj,
     ("unresolved-claim", "spec.resourceClaims[0]"), docs=_docs, cohort="device-plugin")
_obj, _docs = _limit_and_claim(_cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"))
case("unresolved-claim-cel-selector-on-a-known-product", _obj,
     ("double-mechanism", "spec.containers[0].resources.limits"), docs=_docs)
_obj, _docs = _limit_and_claim(_cel_class("by-cel", "device.driver == 'gpu.nvidia.com' && "
                                                    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))"))
case("unresolved-claim-cel-semver-resolves", _obj, ("double-mechanism", "spec.containers[0].resources.limits"), docs=_docs)
for _name in ("compute-domain-default-channel.nvidia.com", "compute-domain-daemon.nvidia.com", "imex.nvidia.com"):
    case(f"unresolved-claim-nvidia-{_name.split('.')[0]}-class-known-without-a-cluster-pass",
         pod("nccl", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                              claims=[template_claim("channel", "channel")])),
         docs=[claim_template("channel", request("channel", _name))], cohort="device-plugin")
case("unresolved-claim-unknown-channel-class",
     pod("nccl", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]), cohort="device-plugin",
                          claims=[template_claim("channel", "channel")])),
     ("unresolved-claim", "spec.resourceClaims[0]"),
     docs=[claim_template("channel", request("channel", "example-channel.example.com"))], cohort="device-plugin")
case("resource-not-offered-cel-mig-type-in-list",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "mig-by-cel")])),
     ("resource-not-offered", "spec.resourceClaims[0]"),
     docs=[_cel_class("mig-by-cel", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type in ['mig']"),
           claim_template("mig-by-cel", request("gpu", "mig-by-cel"))], cohort="dra")
case("resource-not-offered-cel-gpu-type-in-list-pass",
     pod("llm", pod_spec(container("llm", claims=["gpu"]), cohort="dra", claims=[template_claim("gpu", "gpu-by-cel")])),
     docs=[_cel_class("gpu-by-cel", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type in ['gpu']"),
           claim_template("gpu-by-cel", request("gpu", "gpu-by-cel"))], cohort="dra")


_POD_SPEC_PATHS = {k.kind: k.pod_spec_path for k in POD_BEARING}
_TOKEN_VOLUME = "kube-api-access-x7k2p"


def apiserver_shaped(obj: dict) -> dict:
    """`obj` as the apiserver hands it to a webhook: quantities as strings, extended-resource requests copied
    from limits, scheme defaults filled in, and for Pods what the in-tree admission plugins add."""
    obj = copy.deepcopy(obj)
    kind = obj.get("kind")
    if kind in _POD_SPEC_PATHS:
        spec = obj
        for key in _POD_SPEC_PATHS[kind]:
            spec = spec[key]
        _shape_pod_spec(spec, is_pod=kind == "Pod")
    elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
        spec = obj["spec"]["spec"] if kind == "ResourceClaimTemplate" else obj["spec"]
        beta1 = obj["apiVersion"].endswith("v1beta1")
        for req in spec.get("devices", {}).get("requests", []):
            bodies = [req] if beta1 and "firstAvailable" not in req else []
            bodies += [req["exactly"]] if "exactly" in req else []
            bodies += req.get("firstAvailable", [])
            for body in bodies:
                body.setdefault("allocationMode", "ExactCount")
                if body["allocationMode"] == "ExactCount":
                    body.setdefault("count", 1)
    return obj


def _shape_pod_spec(spec: dict, *, is_pod: bool) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    mount_token = is_pod and spec.get("automountServiceAccountToken") is not False
    for section in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(section, []):
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("imagePullPolicy", "IfNotPresent")
            resources = c.get("resources")
            if resources is not None:
                for part in ("limits", "requests"):
                    if part in resources:
                        resources[part] = {k: str(v) for k, v in resources[part].items()}
                for name, value in resources.get("limits", {}).items():
                    resources.setdefault("requests", {}).setdefault(name, value)
            mounts = c.setdefault("volumeMounts", []) if mount_token and section != "ephemeralContainers" else None
            if mounts is not None and not any(m.get("name", "").startswith("kube-api-access-") for m in mounts):
                mounts.append({"name": _TOKEN_VOLUME, "readOnly": True,
                               "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    if is_pod:
        spec.setdefault("serviceAccountName", "default")
        spec["serviceAccount"] = spec["serviceAccountName"]
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(t.get("key") == key for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
        volumes = spec.get("volumes", [])
        if mount_token and not any(v.get("name", "").startswith("kube-api-access-") for v in volumes):
            spec.setdefault("volumes", []).append({"name": _TOKEN_VOLUME, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})


# ---------------------------------------------------------------------------------------------- tests

SECRET_LIKE = ("0,1,2,3", GPU_UUID)  # env and ConfigMap values the cases use: never part of a message
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _expected(rows, policy):
    return sorted((rule.value, (action or policy.actions[rule]).value, path) for rule, action, path in rows)


def _actual(ev):
    return sorted((v.rule.value, v.action.value, v.path) for v in ev.violations)


def _assert_readable(ev, policy):
    subject = f'{ev.kind.lower()} "{ev.namespace + "/" if ev.namespace else ""}{ev.name}": '
    for v in ev.violations:
        m = v.message
        assert not _CONTROL.search(m), f"not one line: {m!r}"
        assert m.startswith(subject), f"message does not start by naming the object ({subject}): {m}"
        assert m.endswith(f"[{v.rule.value}] {policy.docs_url(v.rule)}"), f"no rule id and docs link at the end: {m}"
        assert v.path in m, f"message does not name its field path {v.path}: {m}"
        for value in SECRET_LIKE:
            assert value not in m, f"message repeats the value {value!r}: {m}"


ARGS = "obj, rows, docs, policy_name, allowed, cohort, user, namespace"


def check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    """Evaluate one row as the CLI does; assert findings, verdict, cohort and golden messages exactly."""
    policy = POLICIES[policy_name]
    ev = evaluate(obj, policy=policy, docs=docs, user=user, namespace=namespace)
    assert ev.errors == ()
    assert ev.skipped is None or not rows
    assert _actual(ev) == _expected(rows, policy)
    want_allowed = allowed if allowed is not None else not any(
        (action or policy.actions[rule]) is Action.ENFORCE and not rule.is_mutation for rule, action, _ in rows)
    assert ev.allowed is want_allowed
    if cohort != "?":
        assert ev.cohort == cohort
    _assert_readable(ev, policy)
    golden([v.message for v in ev.violations])


@pytest.mark.parametrize(ARGS, TABLES["double-mechanism"])
def test_double_mechanism(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["cohort-mismatch"])
def test_cohort_mismatch(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["resource-not-offered"])
def test_resource_not_offered(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["shared-request-count"])
def test_shared_request_count(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["shared-exclusive-mix"])
def test_shared_exclusive_mix(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["sharing-not-enabled"])
def test_sharing_not_enabled(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["shared-claim"])
def test_shared_claim(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["visible-devices-override"])
def test_visible_devices_override(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["device-access-bypass"])
def test_device_access_bypass(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["runtime-class-conflict"])
def test_runtime_class_conflict(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["run-as-root"])
def test_run_as_root(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["claim-shape"])
def test_claim_shape(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["legacy-api"])
def test_legacy_api(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, TABLES["unresolved-claim"])
def test_unresolved_claim(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden):
    check_case(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate, golden)


@pytest.mark.parametrize(ARGS, CASES)
def test_rule_apiserver_shape_same_verdict(obj, rows, docs, policy_name, allowed, cohort, user, namespace, evaluate):
    """What the CLI reads as written (integers, fields absent) and what the apiserver sends (strings, defaults)
    get one verdict: the same findings, actions, paths and messages."""
    policy = POLICIES[policy_name]
    shaped = apiserver_shaped(obj)
    written = evaluate(obj, policy=policy, docs=docs, user=user, namespace=namespace)
    served = evaluate(shaped, policy=policy, docs=[apiserver_shaped(d) for d in docs], user=user,
                           namespace=namespace)
    assert [(v.rule, v.action, v.path, v.message) for v in served.violations] == \
        [(v.rule, v.action, v.path, v.message) for v in written.violations]
    assert (served.allowed, served.cohort, served.errors) == (written.allowed, written.cohort, written.errors)


def test_seed_manifests_pass_under_default_policy(evaluate):
    """The seed's DeviceClasses, template and both smoke Jobs, applied together, draw no finding at all."""
    policy = POLICIES["default"]
    verdicts = {}
    for doc in SEED_DOCS:
        ev = evaluate(doc, policy=policy, docs=SEED_DOCS)
        verdicts[(doc["kind"], doc["metadata"]["name"])] = (ev.allowed, ev.violations, ev.errors, ev.cohort)
    assert verdicts == {
        ("DeviceClass", "hybrid-full-gpu"): (True, (), (), None),
        ("DeviceClass", "hybrid-large-gpu"): (True, (), (), None),
        ("ResourceClaimTemplate", "single-large-gpu"): (True, (), (), "dra"),
        ("Job", "hybrid-gpu-plugin-smoke"): (True, (), (), "device-plugin"),
        ("Job", "hybrid-gpu-dra-smoke"): (True, (), (), "dra"),
    }


def _case_values():
    for param in CASES:
        obj, rows, docs, policy_name, *_ = param.values
        yield param.id, obj, rows, docs, POLICIES[policy_name]


def test_every_rule_has_a_table_with_passing_and_failing_cases():
    module = globals()
    for rule in VALIDATIONS:
        assert callable(module.get("test_" + rule.value.replace("-", "_"))), f"no table test for {rule.value}"
        table = TABLES[rule.value]
        failing = [p.id for p in table if any(r is rule for r, _, _ in p.values[1])]
        passing = [p.id for p in table if not any(r is rule for r, _, _ in p.values[1])]
        assert passing and failing, f"{rule.value}: passing {passing}, failing {failing}"
    assert sum(len(t) for t in TABLES.values()) == len(CASES)


def test_cases_cover_every_kind_container_section_and_action():
    kinds, sections, actions = set(), set(), set()
    for _, obj, rows, _, policy in _case_values():
        kinds.add(obj["kind"])
        if obj["kind"] in _POD_SPEC_PATHS:
            spec = obj
            for key in _POD_SPEC_PATHS[obj["kind"]]:
                spec = spec[key]
            sections.update(s for s in ("initContainers", "ephemeralContainers") if spec.get(s))
            if any(c.get("restartPolicy") == "Always" for c in spec.get("initContainers", [])):
                sections.add("sidecar")
        actions.update((a or policy.actions[r]) for r, a, _ in rows)
    assert kinds >= {*_POD_SPEC_PATHS, "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
    assert sections == {"initContainers", "ephemeralContainers", "sidecar"}
    assert actions == {Action.ENFORCE, Action.WARN, Action.AUDIT}


def test_case_ids_are_unique_and_every_golden_file_has_a_case():
    ids = [param.id for param in CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids)
    orphans = sorted(p.name for p in GOLDEN_RULES.glob("*.txt") if p.stem not in set(ids))
    assert orphans == []


def test_the_shipped_policy_gives_every_rule_its_default_action():
    # The defaults themselves are webhook/rules.py's; tests/test_rule_docs.py holds each rule's page to them.
    assert {r: POLICIES["default"].actions[r] for r in Rule} == DEFAULT_ACTIONS


def test_h200_profile_table_is_the_real_hosts():
    """The H200 MIG table the policy ships is the one `nvidia-smi mig -lgip` printed on a real H200 host."""
    rows = re.findall(r"MIG\s+(\S+)\s+\d+\s+\d+/(\d+)", H200_LGIP.read_text(encoding="utf-8"))
    assert rows, f"no profile rows in {H200_LGIP}"
    assert {name: int(total) for name, total in rows} == dict(MIG_PROFILE_TABLES["H200-141GB"])
    assert dict(POLICIES["mig-mixed-h200"].cohort("device-plugin").mig_profiles) == dict(MIG_PROFILE_TABLES["H200-141GB"])
