"""Mutations: the returned patch applies, yields exactly the expected Pod, is idempotent (reinvocation
yields an empty patch), never overwrites a user's value, and the mutated Pod passes every validating rule
and the Kubernetes 1.34 OpenAPI schema (strict)."""
from __future__ import annotations

import copy
import json

import jsonpatch
import kubernetes_validate
import pytest

from tests.support import DATA, REAL_MANIFESTS, load_docs, seed_docs
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.policy.phase import Phase
from webhook.rules import Action, Rule

POLICY = default_policy()
DP_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
DRA_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
POD_SC = {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SC = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def pod(containers, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ai"},
            "spec": {"containers": containers, **spec}}


def gpu(name="main", n=1, **extra):
    return {"name": name, "image": "registry.example.invalid/cuda:12", "resources": {"limits": {"nvidia.com/gpu": n}},
            **extra}


def plain(name="sidecar", **extra):
    return {"name": name, "image": "registry.example.invalid/busybox:1", **extra}


def mutate(obj, *, policy=POLICY, docs=()):
    resolver = BundleResolver([obj, *docs])
    return evaluate_object(obj, policy=policy, resolver=resolver)


def apply(obj, patch):
    return jsonpatch.apply_patch(obj, list(patch))  # returns a copy; the input is untouched


def expected_dp(containers_sc, **spec_extra):
    return {"nodeSelector": DP_LABELS, "tolerations": [GPU_TOLERATION], "runtimeClassName": "nvidia",
            "securityContext": POD_SC, **spec_extra}


CASES = [
    pytest.param(
        pod([gpu()]),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC}], **expected_dp(None)},
        id="gpu-pod-gets-placement-runtime-security"),
    pytest.param(
        pod([gpu(), plain()]),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC},
                        {**plain(), "securityContext": CONTAINER_SC,
                         "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}],
         **expected_dp(None)},
        id="sidecar-under-nvidia-runtime-gets-hidden"),
    pytest.param(
        pod([gpu(securityContext={"readOnlyRootFilesystem": False, "capabilities": {"add": ["NET_BIND_SERVICE"]}})],
            securityContext={"runAsUser": 1000}, runtimeClassName="nvidia", nodeSelector=DP_LABELS,
            tolerations=[{"operator": "Exists"}]),
        {"containers": [gpu(securityContext={"readOnlyRootFilesystem": False, "allowPrivilegeEscalation": False,
                                             "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}})],
         "securityContext": {"runAsUser": 1000, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
         "runtimeClassName": "nvidia", "nodeSelector": DP_LABELS, "tolerations": [{"operator": "Exists"}]},
        id="user-values-never-overwritten"),
    pytest.param(
        pod([gpu(securityContext={"privileged": True})]),
        {"containers": [gpu(securityContext={"privileged": True, "readOnlyRootFilesystem": True,
                                             "capabilities": {"drop": ["ALL"]}})], **expected_dp(None)},
        id="privileged-gets-no-allowPrivilegeEscalation-false"),
    pytest.param(
        pod([gpu()], os={"name": "windows"}),
        {"containers": [gpu()], "os": {"name": "windows"}, "nodeSelector": DP_LABELS,
         "tolerations": [GPU_TOLERATION], "runtimeClassName": "nvidia"},
        id="windows-pod-gets-no-linux-security-fields"),
    pytest.param(
        pod([gpu(securityContext={"runAsUser": 0})]),
        {"containers": [gpu(securityContext={"runAsUser": 0, **CONTAINER_SC})], **expected_dp(None, securityContext={
            "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}})},
        id="explicit-root-container-gets-no-runAsNonRoot"),
    pytest.param(
        pod([plain()], runtimeClassName="nvidia"),
        {"containers": [{**plain(), "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}],
         "runtimeClassName": "nvidia"},
        id="no-cohort-nvidia-runtime-only-hides-gpus"),
    pytest.param(
        pod([plain(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}])], runtimeClassName="nvidia"),
        None, id="hide-gpus-never-overwrites-env"),
    pytest.param(pod([plain()], runtimeClassName="runc"), None, id="other-runtime-hides-no-gpus"),
    pytest.param(pod([plain()]), None, id="plain-pod-untouched"),
    pytest.param(
        pod([gpu()], nodeSelector=DP_LABELS, tolerations=[GPU_TOLERATION], runtimeClassName="nvidia",
            securityContext=POD_SC),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC}], "nodeSelector": DP_LABELS,
         "tolerations": [GPU_TOLERATION], "runtimeClassName": "nvidia", "securityContext": POD_SC},
        id="selector-chosen-cohort-gets-no-placement"),
    # a pod created bound to a node is past scheduling: validated and defaulted, never placed
    pytest.param(
        pod([gpu()], nodeName="gpu-node-7"),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC}], "nodeName": "gpu-node-7",
         "runtimeClassName": "nvidia", "securityContext": POD_SC},
        id="bound-pod-gets-no-placement"),
    pytest.param(
        pod([gpu(), plain()], nodeName="gpu-node-7", runtimeClassName="nvidia"),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC},
                        {**plain(), "securityContext": CONTAINER_SC,
                         "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}],
         "nodeName": "gpu-node-7", "runtimeClassName": "nvidia", "securityContext": POD_SC},
        id="bound-pod-still-gets-hide-gpus"),
    pytest.param(
        pod([gpu()], nodeName=""),
        {"containers": [{**gpu(), "securityContext": CONTAINER_SC}], "nodeName": "", **expected_dp(None)},
        id="empty-node-name-is-not-bound"),
]


@pytest.mark.parametrize("obj, expected_spec", CASES)
def test_patch_yields_expected_pod(obj, expected_spec):
    original = copy.deepcopy(obj)
    ev = mutate(obj)
    assert obj == original, "the engine must never modify its input"
    if expected_spec is None:
        assert ev.patch == () and ev.mutated is None
        return
    result = apply(obj, ev.patch)
    assert result["spec"] == expected_spec
    assert result == ev.mutated
    # the same object as jsonpatch's own diff gives
    assert apply(obj, jsonpatch.make_patch(obj, ev.mutated)) == result


@pytest.mark.parametrize("obj, expected_spec", CASES)
def test_mutation_is_idempotent_and_mutated_pod_passes_validation(obj, expected_spec):
    ev = mutate(obj)
    mutated = apply(obj, ev.patch)
    again = mutate(mutated)
    assert again.patch == (), "apiserver reinvocation must yield an empty patch"
    # The mutation adds no finding: what the mutated Pod is denied for, the original was denied for too.
    before = {(v.rule, v.path) for v in evaluate_object(obj, policy=POLICY, resolver=BundleResolver([]),
                                                        phases=Phase.VALIDATE).violations}
    after = {(v.rule, v.path) for v in again.violations}
    assert after <= before, after - before
    kubernetes_validate.validate(mutated, "1.34", strict=True)


@pytest.mark.parametrize("obj, expected_spec", [c for c in CASES if c.id not in (
    "privileged-gets-no-allowPrivilegeEscalation-false", "hide-gpus-never-overwrites-env")])
def test_mutated_pod_is_allowed(obj, expected_spec):
    ev = mutate(obj)
    again = mutate(apply(obj, ev.patch))
    assert again.allowed and not [v for v in again.violations if v.action is Action.ENFORCE], \
        [v.message for v in again.violations]


def _real_pods():
    docs = load_docs(*sorted(REAL_MANIFESTS.glob("*.yaml")))
    for doc in docs:
        if doc.get("kind") == "Pod" and "apiVersion" in doc:  # kubectl refuses one without (pod-not-scheduled)
            meta = doc["metadata"]
            yield pytest.param(doc, docs,
                               id=f"{meta.get('namespace', 'default')}-{meta.get('name') or meta['generateName']}")
    # the public GPU stacks' pod shapes written here (tests/policy/rules/test_gpu_stack_shapes.py), the refused
    # ones among them: the validator's, the VFIO and time-sliced DRA pods, KAI's and Volcano's with overrides
    from tests.policy.rules.test_gpu_stack_shapes import SHAPES
    for param in SHAPES:
        obj, shape_docs, policy, verdict, _ = param.values
        if obj["kind"] == "Pod" and policy == "default" and not isinstance(verdict, str):
            yield pytest.param(obj, [obj, *shape_docs], id=param.id)


# Pods the default policy refuses whatever the mutation does (test_real_manifests.py and test_gpu_stack_shapes.py
# say why)
REFUSED_REAL_PODS = {"FILLED_BY_THE_VALIDATOR-nvidia-cuda-validator-",
                     # the DRA driver's demos of MPS, time-slicing and VFIO on the default cohort (exclusive full GPUs)
                     "gpu-test-mps-test-pod", "gpu-test-vfio-pod1", "gpu-test5-pod0",
                     "shape-operator-cuda-validator-in-a-team-namespace", "shape-dra-vfio-pod",
                     "shape-dra-time-sliced-pod", "shape-dra-imex-pod-host-channels",
                     "shape-kai-gpu-fraction-visible-devices", "shape-kai-gpu-fraction-mps-host-pipe",
                     "shape-volcano-vgpu-pod-visible-devices"}


def test_every_refused_pod_is_among_the_cases():
    assert REFUSED_REAL_PODS <= {p.id for p in _real_pods()}


@pytest.mark.parametrize("obj, docs", list(_real_pods()))
def test_real_pods_mutated_validate_strict(obj, docs, request):
    ev = mutate(obj, docs=docs)
    mutated = apply(obj, ev.patch) if ev.patch else obj
    kubernetes_validate.validate(mutated, "1.34", strict=True)
    again = evaluate_object(mutated, policy=POLICY, resolver=BundleResolver([mutated, *docs]))
    assert again.patch == ()
    assert again.allowed is (request.node.callspec.id not in REFUSED_REAL_PODS)
    # the mutation adds no finding
    before = {(v.rule, v.path) for v in evaluate_object(obj, policy=POLICY, resolver=BundleResolver([obj, *docs]),
                                                        phases=Phase.VALIDATE).violations}
    assert {(v.rule, v.path) for v in again.violations} <= before


def test_apiserver_shaped_pod():
    obj = json.loads((DATA / "pods" / "apiserver-gpu-pod.json").read_text())
    ev = mutate(obj)
    mutated = apply(obj, ev.patch)
    spec = mutated["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["nodeSelector"] == DP_LABELS
    assert spec["tolerations"][:2] == obj["spec"]["tolerations"] and spec["tolerations"][2] == GPU_TOLERATION
    assert spec["securityContext"] == POD_SC  # filled into the apiserver's defaulted {}
    assert spec["containers"][1]["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    assert "env" not in obj["spec"]["containers"][1]
    kubernetes_validate.validate(mutated, "1.34", strict=True)
    assert mutate(mutated).patch == ()


def test_dra_pod_from_template_gets_placement_but_no_runtime_class():
    docs = seed_docs()
    job = next(d for d in docs if d["metadata"]["name"] == "hybrid-gpu-dra-smoke")
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra", "namespace": "ai-workloads"},
           "spec": copy.deepcopy(job["spec"]["template"]["spec"])}
    del obj["spec"]["nodeSelector"]
    ev = mutate(obj, docs=docs)
    mutated = apply(obj, ev.patch)
    assert mutated["spec"]["nodeSelector"] == DRA_LABELS
    assert "runtimeClassName" not in mutated["spec"]
    assert ev.cohort == "dra"
    kubernetes_validate.validate(mutated, "1.34", strict=True)


@pytest.mark.parametrize("obj", [
    pytest.param(next(d for d in seed_docs() if d["kind"] == "Job"), id="job"),
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ai"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [gpu()]}}}},
                 id="deployment"),
])
def test_templates_are_never_mutated(obj):
    assert mutate(obj).patch == ()


def test_update_and_exempt_namespace_get_no_patch():
    obj = pod([gpu()])
    assert evaluate_object(obj, policy=POLICY, resolver=BundleResolver([]), operation="UPDATE").patch == ()
    obj["metadata"]["namespace"] = "gpu-system"
    ev = mutate(obj)
    assert ev.patch == () and ev.skipped == 'namespace "gpu-system" is exempt'


def _policy(extra: str):
    return parse_policy(DEFAULT_PATH.read_text() + extra)


@pytest.mark.parametrize("extra, applied, reported", [
    pytest.param("", {"default-placement", "default-runtime-class", "default-security-context"}, set(), id="enforce"),
    pytest.param("\nmode: dry-run\n".replace("\nmode", "\nmode"), set(),
                 {"default-placement", "default-runtime-class", "default-security-context"}, id="dry-run"),
    pytest.param("\nrules: {default-runtime-class: audit}\n", {"default-placement", "default-security-context"},
                 {"default-runtime-class"}, id="audit-action"),
    pytest.param("\nrules: {default-runtime-class: warn}\n",
                 {"default-placement", "default-runtime-class", "default-security-context"}, {"default-runtime-class"},
                 id="warn-action"),
    pytest.param("\nrules: {default-security-context: off}\n", {"default-placement", "default-runtime-class"}, set(),
                 id="off-action"),
])
def test_mutation_actions_and_modes(extra, applied, reported):
    text = DEFAULT_PATH.read_text().replace("rules: {}\n", "").replace("mode: enforce\n", "")
    policy = parse_policy(text + (extra if "mode" in extra or "rules" in extra else "rules: {}\n"))
    ev = mutate(pod([gpu()]), policy=policy)
    paths = {op["path"].split("/")[2] for op in ev.patch}
    by_field = {"nodeSelector": "default-placement", "tolerations": "default-placement",
                "runtimeClassName": "default-runtime-class", "securityContext": "default-security-context",
                "containers": "default-security-context"}
    assert {by_field[p] for p in paths} == applied
    mutation_reports = {v.rule.value for v in ev.violations if v.rule.is_mutation}
    assert mutation_reports == reported
    for v in ev.violations:
        if v.rule.is_mutation:
            verb = "would set" if (ev.dry_run or v.action is Action.AUDIT) else "sets"
            assert f": {verb} " in v.message and f"[{v.rule.value}]" in v.message
    assert ev.allowed


def test_dry_run_reports_mutations_in_order_and_patches_nothing():
    text = DEFAULT_PATH.read_text().replace("mode: enforce", "mode: audit")
    ev = mutate(pod([gpu(), plain()]), policy=parse_policy(text))
    assert ev.patch == () and ev.dry_run
    rules = [v.rule for v in ev.violations if v.rule.is_mutation]
    assert rules[0] is Rule.DEFAULT_PLACEMENT and Rule.HIDE_GPUS in rules


# ---- debug containers: UPDATE of pods/ephemeralcontainers (kubectl debug) ---------------------------------

from webhook.admission.codec import read_request  # noqa: E402
from webhook.admission.handlers import mutate as mutate_handler  # noqa: E402
from webhook.admission.handlers import validate as validate_handler  # noqa: E402

CUDA_DEBUG = {"name": "debugger-x7k2p", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
              "stdin": True, "tty": True, "targetContainerName": "main"}


def running_gpu_pod(**spec):
    """A GPU pod as it runs: admitted and mutated on CREATE (so it passes every rule)."""
    obj = pod([gpu(), plain()], **spec)
    return apply(obj, mutate(obj).patch)


def with_debug(obj, *containers):
    new = copy.deepcopy(obj)
    new["spec"].setdefault("ephemeralContainers", []).extend(copy.deepcopy(list(containers)))
    return new


def debug_review(new, old):
    return read_request({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "UPDATE",
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "ephemeralcontainers",
            "namespace": "ai", "name": "p", "object": new, "oldObject": old, "userInfo": {"username": "dev"}})


def debug_mutate(new, old):
    return evaluate_object(new, policy=POLICY, resolver=BundleResolver([new]), operation="UPDATE",
                           sub_resource="ephemeralcontainers", old=old, phases=Phase.MUTATE)


def debug_validate(new, old):
    return evaluate_object(new, policy=POLICY, resolver=BundleResolver([new]), operation="UPDATE",
                           sub_resource="ephemeralcontainers", old=old, phases=Phase.VALIDATE)


VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
SYSADMIN = {"privileged": True}  # kubectl debug --profile=sysadmin


@pytest.mark.parametrize("old, added, patched, denied", [
    pytest.param(running_gpu_pod(), [CUDA_DEBUG], {0}, set(), id="cuda-debug-container-hidden"),
    pytest.param(with_debug(running_gpu_pod(), {**CUDA_DEBUG, "name": "debugger-1", "env": [VOID]}),
                 [{**CUDA_DEBUG, "name": "debugger-2"}], {1}, set(), id="only-the-added-one"),
    pytest.param(running_gpu_pod(runtimeClassName="runc"), [CUDA_DEBUG], set(), set(), id="other-runtime-untouched"),
    pytest.param(pod([plain()]), [CUDA_DEBUG], set(), set(), id="plain-pod-untouched"),
    pytest.param(running_gpu_pod(), [{**CUDA_DEBUG, "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}],
                 set(), {"visible-devices-override"}, id="debug-container-asking-for-all-gpus"),
    pytest.param(running_gpu_pod(), [{**CUDA_DEBUG, "securityContext": SYSADMIN}], {0}, {"device-access-bypass"},
                 id="privileged-debug-container-in-gpu-pod"),
    pytest.param(running_gpu_pod(), [{**CUDA_DEBUG, "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}}],
                 {0}, set(), id="ptrace-debug-container-pass"),
    pytest.param(pod([gpu(securityContext={"privileged": True})], runtimeClassName="nvidia"), [CUDA_DEBUG], {0}, set(),
                 id="pre-existing-finding-is-not-the-debug-container-s"),
])
def test_debug_containers(old, added, patched, denied):
    new = with_debug(old, *added)
    ev = debug_mutate(new, old)
    touched = {int(op["path"].split("/")[3]) for op in ev.patch}
    assert all(op["path"].startswith("/spec/ephemeralContainers/") for op in ev.patch)
    assert touched == patched
    mutated = apply(new, ev.patch) if ev.patch else new
    for i in patched:
        assert mutated["spec"]["ephemeralContainers"][i]["env"][-1] == VOID
    assert debug_mutate(mutated, old).patch == (), "reinvocation must yield an empty patch"
    verdict = debug_validate(mutated, old)
    assert {v.rule.value for v in verdict.denials} == denied
    assert verdict.allowed is not denied
    kubernetes_validate.validate(mutated, "1.34", strict=True)
    # the webhooks' own path, from the AdmissionReview request, gives the same patch and verdict
    answer = mutate_handler(debug_review(new, old), policy=POLICY, resolver=BundleResolver([]))
    assert list(answer.patch) == list(ev.patch)
    answer = validate_handler(debug_review(mutated, old), policy=POLICY, resolver=BundleResolver([]))
    assert answer.allowed is not denied
    # as the apiserver sends them (defaults filled in, the token volume mounted): the same patch and verdict
    from tests.policy.builders import apiserver_shaped
    served_old, served_new = apiserver_shaped(old), apiserver_shaped(new)
    served = debug_mutate(served_new, served_old)
    assert {int(op["path"].split("/")[3]) for op in served.patch} == patched
    served_mutated = apply(served_new, served.patch) if served.patch else served_new
    assert {v.rule.value for v in debug_validate(served_mutated, served_old).denials} == denied


def test_pod_create_never_touches_ephemeral_containers_nor_does_a_plain_update():
    obj = pod([gpu()], runtimeClassName="nvidia", ephemeralContainers=[dict(CUDA_DEBUG)])
    assert all("/ephemeralContainers" not in op["path"] for op in mutate(obj).patch)
    old = running_gpu_pod()
    new = with_debug(old, CUDA_DEBUG)
    ev = evaluate_object(new, policy=POLICY, resolver=BundleResolver([]), operation="UPDATE", old=old)
    assert ev.patch == ()
