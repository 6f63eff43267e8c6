"""What the webhooks' matchConditions let through, evaluated with CEL semantics (tests/chart/cel.py) on the
objects the apiserver would send, and checked against the engine itself: every object that the engine
would deny, warn about or patch must reach the webhook; ordinary pods must not."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from tests.support import DATA, FIXTURES, REAL_MANIFESTS, SEED
from webhook.config import parse_policy
from webhook.evaluation import evaluate_object
from webhook.lookups.base import Lookup
from webhook.lookups.bundle import BundleResolver
from webhook.objects import kinds

from . import cel
from .conftest import rendered_set, set_params

pytestmark = pytest.mark.slow

NS = "ml"
USER = {"username": "alice@example.com", "groups": ["system:authenticated"]}


# ---------------------------------------------------------------- evaluating the conditions of a request

def matching_webhooks(rendered, kind: str, operation: str, namespace: str, subresource: str = ""):
    info = kinds.BY_KIND[kind]
    resource = f"{info.resource}/{subresource}" if subresource else info.resource
    for config_kind, hook in rendered.webhooks():
        for rule in hook["rules"]:
            if info.group in rule["apiGroups"] and resource in rule["resources"] and operation in rule["operations"]:
                by_name = hook["namespaceSelector"]["matchExpressions"][0]
                if info.namespaced and (namespace in by_name["values"]) is (by_name["operator"] == "NotIn"):
                    continue  # NotIn: the exempt namespaces; In (the infrastructure webhook): only those
                yield config_kind, hook
                break


def decide(rendered, obj: dict, *, operation: str = "CREATE", old: dict | None = None, user: dict = USER,
           namespace: str = NS, subresource: str = "") -> dict[str, str]:
    """webhook name -> "call" | "skip" | "error", as the apiserver would decide for this request."""
    info = kinds.BY_KIND[obj["kind"]]
    request = {"operation": operation, "namespace": namespace, "userInfo": user, "subResource": subresource,
               "name": obj["metadata"].get("name", ""),
               "resource": {"group": info.group, "version": "v1", "resource": info.resource}}
    out = {}
    for _, hook in matching_webhooks(rendered, obj["kind"], operation, namespace, subresource):
        results = [cel.run(c["expression"], object=obj, oldObject=old, request=request)
                   for c in hook.get("matchConditions", [])]
        if any(r is False for r in results):
            out[hook["name"]] = "skip"
        elif any(isinstance(r, cel.Err) for r in results):
            out[hook["name"]] = "error"
        else:
            assert all(r is True for r in results), results
            out[hook["name"]] = "call"
    return out


def called(rendered, obj, **kw) -> bool:
    decisions = decide(rendered, obj, **kw)
    assert decisions, f"no webhook matches {obj['kind']}"
    assert "error" not in decisions.values(), decisions
    return "call" in decisions.values()


# ---------------------------------------------------------------- objects

def base_pod() -> dict:
    """An ordinary pod as the apiserver sends it: defaults filled in, service account volume injected."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9", "namespace": NS, "labels": {"app": "web"},
                     "annotations": {"kubectl.kubernetes.io/default-container": "web",
                                     "prometheus.io/scrape": "true"}},
        "spec": {
            "containers": [{
                "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_IP", "valueFrom": {
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "256Mi", "hugepages-2Mi": "64Mi"},
                              "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "1Gi"}},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/web"},
                                 {"name": "kube-api-access-x", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            }],
            "initContainers": [{"name": "migrate", "image": "web-migrate:1", "resources": {},
                                "env": [{"name": "DB", "value": "x"}]}],
            "volumes": [{"name": "config", "configMap": {"name": "web", "defaultMode": 420}},
                        {"name": "kube-api-access-x", "projected": {"sources": [{"serviceAccountToken": {
                            "expirationSeconds": 3607, "path": "token"}}]}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
            "securityContext": {}, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "schedulerName": "default-scheduler", "priority": 0,
            "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
            "terminationGracePeriodSeconds": 30,
        },
    }


def _container(pod, **fields):
    pod["spec"]["containers"][0].update(fields)


VARIANTS = {
    # id: (change to the ordinary pod, whether some rule can concern it under the default policy)
    "plain": (lambda p: None, False),
    "plain-privileged": (lambda p: _container(p, securityContext={"privileged": True}), False),
    "plain-gvisor": (lambda p: p["spec"].update(runtimeClassName="gvisor"), False),
    "plain-env-from": (lambda p: _container(p, envFrom=[{"configMapRef": {"name": "gpu-env"}}]), False),
    "gpu-limit": (lambda p: _container(p, resources={"limits": {"nvidia.com/gpu": "1"}}), True),
    "gpu-shared": (lambda p: _container(p, resources={"limits": {"nvidia.com/gpu.shared": "2"}}), True),
    "mig-resource": (lambda p: _container(p, resources={"limits": {"nvidia.com/mig-1g.5gb": "1"}}), True),
    "dra-extended": (lambda p: _container(p, resources={
        "limits": {"deviceclass.resource.kubernetes.io/hybrid-full-gpu": "1"}}), True),
    "gpu-in-init": (lambda p: p["spec"]["initContainers"][0].update(resources={"limits": {"nvidia.com/gpu": "1"}}),
                    True),
    "claim-template": (lambda p: p["spec"].update(resourceClaims=[{"name": "gpu",
                                                                   "resourceClaimTemplateName": "single-gpu"}]), True),
    "claim-by-name": (lambda p: p["spec"].update(resourceClaims=[{"name": "gpu", "resourceClaimName": "team-gpu"}]),
                      True),
    "cuda-visible-env": (lambda p: _container(p, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3"}]), True),
    "nvidia-visible-init": (lambda p: p["spec"]["initContainers"][0].update(
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), True),
    "ordinal-value-from": (lambda p: _container(p, env=[{"name": "GPU_DEVICE_ORDINAL", "valueFrom": {
        "configMapKeyRef": {"name": "x", "key": "y"}}}]), True),
    "host-dev": (lambda p: p["spec"]["volumes"].append({"name": "dev", "hostPath": {"path": "/dev"}}), True),
    "host-plugins": (lambda p: p["spec"]["volumes"].append({"name": "s", "hostPath": {
        "path": "/var/lib/kubelet/device-plugins", "type": "Directory"}}), True),
    "device-list-mount": (lambda p: p["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "config", "mountPath": "/var/run/nvidia-container-devices/all"}), True),
    "device-list-mount-run": (lambda p: p["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "config", "mountPath": "/run/nvidia-container-devices"}), True),
    "cdi-annotation": (lambda p: p["metadata"]["annotations"].update({"cdi.k8s.io/gpu": "nvidia.com/gpu=all"}), True),
    "nri-annotation": (lambda p: p["metadata"]["annotations"].update(
        {"cdi-devices.nri.io/container.web": "nvidia.com/gpu=0"}), True),
    "nvidia-runtime": (lambda p: p["spec"].update(runtimeClassName="nvidia"), True),
    "cohort-selector-root": (lambda p: (p["spec"]["nodeSelector"].update(
        {"workload.example.com/gpu-allocation": "device-plugin"}), _container(p, securityContext={"runAsUser": 0})),
        True),
    "cohort-affinity-privileged": (lambda p: (p["spec"].update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "workload.example.com/gpu-allocation", "operator": "In", "values": ["dra"]}]}]}}}),
        _container(p, securityContext={"privileged": True})), True),
    "two-cohorts": (lambda p: p["spec"].update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "workload.example.com/gpu-allocation", "operator": "In",
             "values": ["dra", "device-plugin"]}]}]}}}), True),
}


def pod_variant(name: str) -> dict:
    pod = base_pod()
    VARIANTS[name][0](pod)
    return pod


def as_kind(pod: dict, kind: str) -> dict:
    """The same pod spec in another pod-bearing kind, at the kind's own path."""
    if kind == "Pod":
        return pod
    metadata = copy.deepcopy(pod["metadata"])
    del metadata["name"], metadata["namespace"]
    template = {"metadata": metadata, "spec": copy.deepcopy(pod["spec"])}
    info = kinds.BY_KIND[kind]
    group = f"{info.group}/v1" if info.group else "v1"
    obj = {"apiVersion": group, "kind": kind, "metadata": {"name": "web", "namespace": NS}}
    if kind == "PodTemplate":
        obj["template"] = template
    elif kind == "CronJob":
        obj["spec"] = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    else:
        obj["spec"] = {"template": template}
        if kind != "Job":
            obj["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    return obj


POD_KINDS = [k.kind for k in kinds.POD_BEARING]


# ---------------------------------------------------------------- what is sent, what is skipped

@pytest.mark.parametrize("variant", [pytest.param(v, id=v) for v in VARIANTS])
@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in POD_KINDS])
def test_pods_and_templates_reach_the_webhook_exactly_when_a_rule_may_concern_them(kind, variant):
    rendered = rendered_set("default")
    expected = VARIANTS[variant][1]
    obj = as_kind(pod_variant(variant), kind)
    assert called(rendered, obj) is expected
    decisions = decide(rendered, obj)
    if kind == "Pod":
        assert set(decisions) == {"pods.validate.gpu-admission.io", "pods.mutate.gpu-admission.io"}
        assert len(set(decisions.values())) == 1  # validated and mutated alike
    else:
        assert len(decisions) == 1  # one validating webhook per shape, never a mutating one


def test_ordinary_pods_skip_the_webhook_on_every_kind_of_update():
    rendered = rendered_set("default")
    pod = base_pod()
    relabelled = copy.deepcopy(pod)
    relabelled["metadata"]["labels"]["team"] = "a"
    relabelled["metadata"]["finalizers"] = ["example.com/cleanup"]
    assert not called(rendered, relabelled, operation="UPDATE", old=pod)
    gpu = pod_variant("gpu-limit")
    relabelled_gpu = copy.deepcopy(gpu)
    relabelled_gpu["metadata"]["labels"]["team"] = "a"
    assert not called(rendered, relabelled_gpu, operation="UPDATE", old=gpu)  # metadata only: never blocked


def test_spec_updates_and_ephemeral_containers_reach_the_webhook():
    rendered = rendered_set("default")
    gpu = pod_variant("gpu-limit")
    changed = copy.deepcopy(gpu)
    changed["spec"]["activeDeadlineSeconds"] = 60
    assert called(rendered, changed, operation="UPDATE", old=gpu)
    debug = copy.deepcopy(base_pod())
    debug["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox",
                                             "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
    decisions = decide(rendered, debug, operation="UPDATE", old=base_pod(), subresource="ephemeralcontainers")
    assert decisions == {"pods.validate.gpu-admission.io": "call", "pods.mutate.gpu-admission.io": "call"}
    plain_debug = copy.deepcopy(base_pod())
    plain_debug["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
    decisions = decide(rendered, plain_debug, operation="UPDATE", old=base_pod(), subresource="ephemeralcontainers")
    assert decisions == {"pods.validate.gpu-admission.io": "skip", "pods.mutate.gpu-admission.io": "skip"}
    # kubectl debug on a pod under the nvidia runtime: the mutating webhook hides the node's GPUs from it
    nvidia = copy.deepcopy(base_pod())
    nvidia["spec"]["runtimeClassName"] = "nvidia"
    nvidia_debug = copy.deepcopy(nvidia)
    nvidia_debug["spec"]["ephemeralContainers"] = [{"name": "debugger",
                                                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}]
    decisions = decide(rendered, nvidia_debug, operation="UPDATE", old=nvidia, subresource="ephemeralcontainers")
    assert decisions == {"pods.validate.gpu-admission.io": "call", "pods.mutate.gpu-admission.io": "call"}


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in POD_KINDS if k != "Pod"])
def test_template_updates_skip_unless_the_spec_changes(kind):
    rendered = rendered_set("default")
    old = as_kind(pod_variant("gpu-limit"), kind)
    scaled = copy.deepcopy(old)
    scaled["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    assert not called(rendered, scaled, operation="UPDATE", old=old)
    changed = copy.deepcopy(old)
    if kind == "PodTemplate":
        changed["template"]["metadata"]["labels"]["version"] = "2"
    else:
        changed["spec"]["paused" if kind == "Deployment" else "activeDeadlineSeconds"] = 1
    assert called(rendered, changed, operation="UPDATE", old=old)


@pytest.mark.parametrize("kind, obj", [
    pytest.param("ResourceClaim", {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com"}}]}}}, id="ResourceClaim"),
    pytest.param("ResourceClaimTemplate", {"spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "hybrid-full-gpu", "allocationMode": "All"}}]}}}}, id="ResourceClaimTemplate"),
    pytest.param("DeviceClass", {"spec": {"selectors": [{"cel": {"expression": "device.driver == 'dra.example.com'"}}],
                                          "extendedResourceName": "example.com/fpga"}}, id="DeviceClass"),
])
def test_dra_objects_always_reach_the_webhook_on_create(kind, obj):
    rendered = rendered_set("default")
    full = {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "x"}, **obj}
    namespace = "kube-system" if kind == "DeviceClass" else NS  # cluster-scoped: the selector does not apply
    assert decide(rendered, full, namespace=namespace) == {"dra.validate.gpu-admission.io": "call"}
    relabelled = copy.deepcopy(full)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert decide(rendered, relabelled, operation="UPDATE", old=full, namespace=namespace) == {
        "dra.validate.gpu-admission.io": "skip"}


def test_mirror_pods_of_kubelets_are_skipped_but_controllers_pods_are_not():
    rendered = rendered_set("default")
    gpu = pod_variant("host-dev")
    node = {"username": "system:node:gpu-node-1", "groups": ["system:nodes", "system:authenticated"]}
    assert set(decide(rendered, gpu, user=node).values()) == {"skip"}
    # Controllers in kube-system create most pods (replicaset-controller, job-controller, ...): skipping
    # them would skip the mutation and validation of every pod made from a template.
    controller = {"username": "system:serviceaccount:kube-system:replicaset-controller",
                  "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system"]}
    assert set(decide(rendered, gpu, user=controller).values()) == {"call"}


def test_exempt_and_own_namespaces_never_reach_the_webhook():
    rendered = rendered_set("exempt-namespaces")
    for namespace in ("kube-system", "gpu-policy", "gpu-system", "ml-infra", "monitoring"):
        assert decide(rendered, pod_variant("gpu-limit"), namespace=namespace) == {}
    assert decide(rendered, pod_variant("gpu-limit"), namespace="default")


def test_conditions_follow_a_custom_policy():
    rendered = rendered_set("custom-policy")
    pod = base_pod()
    pod["spec"]["runtimeClassName"] = "nvidia-cdi"
    assert called(rendered, pod)
    pod = base_pod()
    pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "NVIDIA-H200"
    assert called(rendered, pod)
    pod = base_pod()
    _container(pod, env=[{"name": "HIP_VISIBLE_DEVICES", "value": "0"}])
    assert called(rendered, pod)
    assert called(rendered, base_pod(), namespace="training")  # namespaceCohorts: training -> h200
    assert not called(rendered, base_pod(), namespace="ml")
    assert not called(rendered, pod_variant("plain-env-from"))


def test_env_from_reaches_the_webhook_when_config_map_lookups_can_read_it():
    assert called(rendered_set("audit-cronjob"), pod_variant("plain-env-from"))
    assert not called(rendered_set("default"), pod_variant("plain-env-from"))


@pytest.mark.parametrize("value_set", set_params("lookups-on", "extras-lookups", "minimal"))
def test_no_pod_is_skipped_when_a_namespace_label_can_choose_the_cohort(rendered, value_set):
    for _, hook in rendered.webhooks():
        names = {c["name"] for c in hook.get("matchConditions", [])}
        assert "skip-pods-no-rule-concerns" not in names
    assert called(rendered, base_pod())


def test_match_conditions_evaluate_without_error_on_objects_with_every_field_set():
    """kubernetes/api serialization fixtures set every field: no condition may fail on an unexpected shape
    (a CEL error with failurePolicy Fail rejects the request)."""
    rendered = rendered_set("default")
    directory = FIXTURES / "k8s-api-testdata"
    checked = 0
    for path in sorted(directory.glob("*.json")):
        obj = json.loads(path.read_text())
        if obj.get("kind") not in kinds.BY_KIND:
            continue
        namespace = obj["metadata"].get("namespace") or NS
        for operation, old in (("CREATE", None), ("UPDATE", obj)):
            decisions = decide(rendered, obj, operation=operation, old=old, namespace=namespace)
            assert decisions and "error" not in decisions.values(), (path.name, decisions)
            checked += 1
    assert checked >= 2 * len(kinds.HANDLED) - 2


# ---------------------------------------------------------------- against the engine itself

class _LookupsAsConfigured:
    """The bundle, but ConfigMaps, Secrets and namespace labels only when the policy's lookups could see them."""

    def __init__(self, docs, policy):
        self._bundle = BundleResolver(docs, default_namespace=NS)
        self._lookups = policy.lookups

    def __getattr__(self, name):
        return getattr(self._bundle, name)

    def config_map_keys(self, namespace, name):
        return self._bundle.config_map_keys(namespace, name) if self._lookups.config_maps else Lookup.miss("off")

    def secret_keys(self, namespace, name):
        return self._bundle.secret_keys(namespace, name) if self._lookups.secrets else Lookup.miss("off")

    def namespace_labels(self, name):
        return self._bundle.namespace_labels(name) if self._lookups.namespaces else Lookup.miss("off")


def _bundle_extras() -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-env", "namespace": NS},
         "data": {"CUDA_VISIBLE_DEVICES": "0,1"}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "single-gpu", "namespace": NS},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "team-gpu", "namespace": NS},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
    ]


def _concerns(evaluation) -> bool:
    return bool(evaluation.violations or evaluation.patch)


def _assert_engine_concerns_are_called(rendered, objects: list[dict], bundle: list[dict]) -> tuple[int, int]:
    policy = parse_policy(rendered.policy_text())
    resolver = _LookupsAsConfigured(bundle, policy)
    concerned = skipped = 0
    for obj in objects:
        namespace = obj["metadata"].get("namespace") or NS
        evaluation = evaluate_object(obj, policy=policy, resolver=resolver, namespace=namespace)
        decisions = decide(rendered, obj, namespace=namespace)
        assert "error" not in decisions.values(), (obj["kind"], obj["metadata"].get("name"), decisions)
        if _concerns(evaluation):
            concerned += 1
            missed = [name for name, d in decisions.items() if d == "skip"]
            assert not missed, (f"{obj['kind']} {obj['metadata'].get('name')}: the engine reports "
                                f"{[v.rule.value for v in evaluation.violations]} / patch {list(evaluation.patch)} "
                                f"but {missed} would not be called")
        elif decisions and set(decisions.values()) == {"skip"}:
            skipped += 1
    return concerned, skipped


@pytest.mark.parametrize("value_set", set_params("default", "custom-policy", "audit-cronjob", "audit-mode"))
def test_everything_the_engine_would_deny_warn_or_patch_reaches_the_webhook(value_set):
    rendered = rendered_set(value_set)
    objects = []
    for variant in VARIANTS:
        for kind in POD_KINDS:
            obj = as_kind(pod_variant(variant), kind)
            objects.append(obj)
            if kind == "Pod":
                training = copy.deepcopy(obj)
                training["metadata"]["namespace"] = "training"
                objects.append(training)
    concerned, skipped = _assert_engine_concerns_are_called(rendered, objects, _bundle_extras())
    assert concerned >= 60 and skipped >= 10  # both sides of the condition are exercised


def _fixture_documents() -> list[tuple[str, list[dict]]]:
    files = sorted(REAL_MANIFESTS.glob("*.yaml")) + sorted(SEED.glob("*.yaml"))
    out = [(p.name, [d for d in yaml.safe_load_all(p.read_text()) if d]) for p in files]
    out += [(p.name, [json.loads(p.read_text())]) for p in sorted((DATA / "pods").glob("*.json"))]
    # the public GPU stacks' shapes written here (NVIDIA's node agents, the operator's validators, DRA demos,
    # KAI-Scheduler, Volcano's vGPU and its own Job kind) until their real manifests come through the fixtures
    from tests.policy.rules.test_gpu_stack_shapes import SHAPES
    out += [(param.id, [param.values[0], *param.values[1]]) for param in SHAPES
            if param.values[2] == "default" and param.values[0]["kind"] in kinds.BY_KIND]
    return out


@pytest.mark.parametrize("name, docs", [pytest.param(n, d, id=Path(n).stem[:60]) for n, d in _fixture_documents()])
def test_real_manifests_the_engine_concerns_reach_the_webhook(name, docs):
    # kinds matched with their API group: a Volcano Job is not the batch Job the webhook rules name
    objects = [d for d in docs if d.get("kind") in kinds.BY_KIND and not kinds.foreign_kind(d, d["kind"])]
    if not objects:
        # nothing the webhook handles: another group's Job, or kinds it never reads (DeviceTaintRule)
        assert all(d.get("kind") not in kinds.BY_KIND or kinds.foreign_kind(d, d["kind"]) for d in docs), name
        assert any(kinds.foreign_kind(d, d.get("kind", "")) or d.get("kind") == "DeviceTaintRule" for d in docs), name
        return
    for value_set in ("default", "custom-policy"):
        _assert_engine_concerns_are_called(rendered_set(value_set), objects, docs)
