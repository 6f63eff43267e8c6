"""What the rule tables share: the builders of realistic workloads and DRA objects, the seed's manifests,
the policies the cases name, the Case row and its Table, and check_case, which evaluates a row as
`gpu-admission check` does (`evaluate_object` with a `BundleResolver` over the case's documents) and
asserts exactly: the (rule, action, path) findings, whether the object is allowed, the cohort it is bound
for where the case is about cohort resolution, and the messages (golden files under
tests/golden/rules/<case id>.txt; a case without findings has none; `pytest --update-golden` rewrites them).
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import SEED
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation.context import build_context
from webhook.lookups.bundle import BundleResolver
from webhook.objects.kinds import POD_BEARING
from webhook.objects.podspec import pod_view
from webhook.policy.gpu import analyse
from webhook.rules import VALIDATIONS, Action, Rule

RULE_TESTS = Path(__file__).parent / "rules"


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


def device_class(name, *, driver="gpu.nvidia.com", device_type="gpu", extended=None, quote='"',
                 api="resource.k8s.io/v1",
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


def nvidia_config(kind, *, requests=None, driver="gpu.nvidia.com", api_version="resource.nvidia.com/v1beta1",
                  **fields):
    """An opaque config of the NVIDIA DRA drivers (kubernetes-sigs/dra-driver-nvidia-gpu,
    api/nvidia.com/resource/v1beta1): `fields` beside apiVersion and kind, as written."""
    parameters = {**({"apiVersion": api_version} if api_version is not None else {}),
                  **({"kind": kind} if kind is not None else {}), **fields}
    return {**({"requests": list(requests)} if requests is not None else {}),
            "opaque": {"driver": driver, "parameters": parameters}}


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
    # the device-plugin cohort's nodes come from an autoscaler, 8 GPUs at most per node; the DRA cohort's too
    "autoscaled": _policy(device_plugin={"autoscaling": {"allocatable": {"nvidia.com/gpu": 8}}},
                          dra={"autoscaling": {}}),
    "dra-sharing": _policy(dra={"sharingStrategies": ["TimeSlicing"], "adminAccessNamespaces": ["gpu-debug"]}),
    "dra-classes": _policy(dra={"deviceClasses": ["hybrid-large-gpu"], "maxDevicesPerClaim": 2}),
    # what the NVIDIA DRA driver's quickstart demos use: full GPUs, MIG slices of an A100 40GB, VFIO passthrough,
    # time-slicing and MPS (the driver's feature gates on)
    "dra-demos": _policy(dra={"deviceTypes": ["gpu", "mig", "vfio"], "mig": {"model": "A100-40GB"},
                              "sharingStrategies": ["TimeSlicing", "MPS"]}),
    # MIG slices of H200s through DRA (the H200's profile table, read from a real host)
    "dra-mig-h200": _policy(dra={"deviceTypes": ["gpu", "mig"], "mig": {"model": "H200-141GB"}}),
    # a listed GPU class that serves nvidia.com/gpu through DRA (KEP-5004's extendedResourceName)
    "extended-class": _policy(deviceClasses=[
        *yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))["deviceClasses"],
        {"name": "hybrid-gpu-extended", "driver": "gpu.nvidia.com", "deviceType": "gpu",
         "extendedResourceName": "nvidia.com/gpu"}]),
    # DeviceClass lookups on: the cluster's classes replace the policy's list
    "class-lookups": _policy(lookups={"deviceClasses": True}),
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
        "double-mechanism": "warn", "claim-shape": "warn", "legacy-api": "audit", "unsatisfiable-request": "enforce",
        "device-config": "warn"}),
    "variables": _policy(visibleDeviceVariables=["NVIDIA_VISIBLE_DEVICES"]),
    "owner-audit": _policy(rules={"allocation-owner": "audit"}),
    # a migration window: one release may reach both cohorts, by name, in the exempt namespace it lives in
    "owner-exception": _policy(exceptions=[{"name": "plugin-migration", "namespaces": ["gpu-system"],
                                            "names": ["migrate-*"], "rules": ["allocation-owner"]}]),
    # a second DRA cohort (its own allocation label value): node selection can admit two cohorts,
    # neither a device plugin's
    "two-dra": _policy(cohorts=[*yaml.safe_load(DEFAULT_PATH.read_text(encoding="utf-8"))["cohorts"], {
        "name": "dra-b", "mechanism": "dra", "nodeLabels": {**HYBRID, ALLOC: "dra-b"}, "driver": "gpu.nvidia.com",
        "deviceTypes": ["gpu"]}]),
}


# Class: required node affinity is an OR of terms (each ANDed with nodeSelector); a cohort is chosen only when
# every term admits its nodes alone, and cohort-mismatch fires only when every term excludes the cohort of the
# pod's mechanism. Each failing row sits beside its closest benign twin.
INSTANCE = "node.kubernetes.io/instance-type"


CUDA_ALL = {"name": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3"}


NVIDIA_ALL = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}


VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}


KAI_ENV = {"name": "NVIDIA_VISIBLE_DEVICES",
           "valueFrom": {"configMapKeyRef": {"name": "kai-gpu-sharing", "key": "visible"}}}


DEVICE_PLUGIN_SOCKETS = {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}


# Class: DeviceClass CEL selectors are evaluated, not pattern-matched.
def cel_class(name, expression, **extra):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}], **extra}}


def limit_and_claim(cls):
    """A pod asking for a GPU by the device plugin, and for whatever `cls` selects by a claim."""
    tpl = claim_template("by-class", request("dev", cls["metadata"]["name"]))
    return (pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["dev"]),
                                  claims=[template_claim("dev", "by-class")])), [cls, tpl])


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
                # a ResourceList is a Go map: encoded with its keys sorted
                for name, value in resources.get("limits", {}).items():
                    resources.setdefault("requests", {}).setdefault(name, value)
                for part in ("limits", "requests"):
                    if part in resources:
                        resources[part] = {k: str(v) for k, v in sorted(resources[part].items())}
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


# ---------------------------------------------------------------------------------------------- tables

@dataclass(frozen=True)
class Case:
    """One row of a rule's table: the object, what it must draw (rule, action or None for the rule's action
    under `policy`, field path), the documents it is checked with, the policy's name in POLICIES, whether it
    is allowed (None: no enforce finding), and the cohort it is bound for ("?" = not asserted)."""

    id: str
    obj: dict
    findings: tuple[tuple[Rule, Action | None, str], ...]
    docs: tuple = ()
    policy: str = "default"
    allowed: bool | None = None
    cohort: str | None = "?"
    user: dict | None = None
    namespace: str | None = None


class Table:
    """A rule's table (tests/policy/rules/test_<rule>.py); case ids start with the rule id."""

    def __init__(self, rule: str) -> None:
        self.rule = Rule(rule)
        self.cases: list[Case] = []

    def case(self, case_id, obj, *findings, docs=(), policy="default", allowed=None, cohort="?", user=None,
             namespace=None) -> None:
        """`findings`: (rule, path) with the rule's action under `policy`, or (rule, action, path)."""
        assert case_id.startswith(self.rule.value + "-"), case_id
        rows = []
        for f in findings:
            rule, action, path = (f[0], None, f[1]) if len(f) == 2 else f
            rows.append((Rule(rule), Action(action) if action else None, path))
        self.cases.append(Case(id=case_id, obj=obj, findings=tuple(rows), docs=tuple(docs), policy=policy,
                               allowed=allowed, cohort=cohort, user=user, namespace=namespace))

    @property
    def params(self) -> list:
        return [pytest.param(c, id=c.id) for c in self.cases]


def all_tables() -> dict[Rule, Table]:
    """Every rule's table, from its module (the one pytest imports: tests/policy/rules is on sys.path, as
    pytest's default import mode puts it for a folder without __init__.py)."""
    if str(RULE_TESTS) not in sys.path:
        sys.path.insert(0, str(RULE_TESTS))
    return {r: importlib.import_module("test_" + r.value.replace("-", "_")).TABLE for r in VALIDATIONS}


def all_cases() -> list[Case]:
    return [c for t in all_tables().values() for c in t.cases]


SECRET_LIKE = ("0,1,2,3", GPU_UUID)  # env and ConfigMap values the cases use: never part of a message
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _expected(case, policy):
    return sorted((rule.value, (action or policy.actions[rule]).value, path) for rule, action, path in case.findings)


def _actual(ev):
    return sorted((v.rule.value, v.action.value, v.path) for v in ev.violations)


def _assert_readable(ev, policy):
    subject = f'{ev.kind.lower()} "{ev.namespace + "/" if ev.namespace else ""}{ev.name}": '
    for v in ev.violations:
        m = v.message
        assert not _CONTROL.search(m), f"not one line: {m!r}"
        assert m.startswith(subject), f"message does not start by naming the object ({subject}): {m}"
        assert m.endswith(f"[{v.rule.value}] {policy.docs_url(v.rule, policy.language)}"), \
            f"no rule id and docs link at the end: {m}"
        assert v.path in m, f"message does not name its field path {v.path}: {m}"
        for value in SECRET_LIKE:
            assert value not in m, f"message repeats the value {value!r}: {m}"


def check_case(case: Case, evaluate, golden) -> None:
    """Evaluate one row as the CLI does; assert findings, verdict, cohort and golden messages exactly."""
    policy = POLICIES[case.policy]
    ev = evaluate(case.obj, policy=policy, docs=case.docs, user=case.user, namespace=case.namespace)
    assert ev.errors == ()
    assert ev.skipped is None or not case.findings
    assert _actual(ev) == _expected(case, policy)
    want_allowed = case.allowed if case.allowed is not None else not any(
        (action or policy.actions[rule]) is Action.ENFORCE and not rule.is_mutation
        for rule, action, _ in case.findings)
    assert ev.allowed is want_allowed
    if case.cohort != "?":
        assert ev.cohort == case.cohort
    _assert_readable(ev, policy)
    golden([v.message for v in ev.violations])
    # The same decision in Japanese: the same rules, actions and paths, each message in the catalogue's
    # words (tests/golden/rules/ja/<case id>.txt), linking to the rule's Japanese page.
    ja = in_japanese(policy)
    ev_ja = evaluate(case.obj, policy=ja, docs=case.docs, user=case.user, namespace=case.namespace)
    assert [(v.rule, v.action, v.path) for v in ev_ja.violations] == [(v.rule, v.action, v.path) for v in ev.violations]
    assert ev_ja.allowed is ev.allowed and ev_ja.patch == ev.patch
    _assert_readable(ev_ja, ja)
    for v in ev_ja.violations:
        assert _JAPANESE.search(v.message.split(": ", 1)[1]), f"not in Japanese: {v.message}"
    golden([v.message for v in ev_ja.violations], f"ja/{case.id}")


_JAPANESE = re.compile("[\u3040-\u30ff\u4e00-\u9fff]")
_IN_JAPANESE: dict[int, Any] = {}


def in_japanese(policy):
    """The policy with `language: ja` (one copy per policy: a Policy caches what it derives)."""
    if id(policy) not in _IN_JAPANESE:
        _IN_JAPANESE[id(policy)] = (policy, dataclasses.replace(policy, language="ja"))
    return _IN_JAPANESE[id(policy)][1]


def facts_of(obj: dict, policy, docs=()):
    """(GpuFacts, Context) of a pod-bearing object as the engine computes them: for direct tests of a check."""
    resolver = BundleResolver([obj, *docs], default_namespace=NS)
    view = pod_view(obj, obj["kind"], NS)
    context = build_context(obj, obj["kind"], NS, policy=policy, resolver=resolver, view=view)
    return analyse(view, policy, context), context
