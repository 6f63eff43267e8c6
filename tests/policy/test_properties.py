"""Property tests: arbitrary JSON in every field the rules read never raises (inside a rule or out), and
every result is well-formed: known rule ids and actions, one-line messages, a patch that applies."""
from __future__ import annotations

import copy
import re

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.admission.handlers import AdmissionRequest, mutate, validate
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.policy.patch import make_patch
from webhook.policy.phase import Phase
from webhook.rules import Action, Rule

POLICY = default_policy()
SHARING_POLICY = parse_policy(DEFAULT_PATH.read_text().replace("    migStrategy: none\n", """    migStrategy: mixed
    mig: {model: A100-40GB}
    timeSlicing:
      renameByDefault: true
      failRequestsGreaterThanOne: true
      resources: [{name: nvidia.com/gpu, replicas: 4}]
""") + """
exceptions:
  - {schedulerNames: [kai-scheduler], rules: [visible-devices-override]}
  - {users: [alice], groups: [ops], namespaces: [ai], names: ["p*"], serviceAccounts: [ai/default],
     rules: [run-as-root]}
namespaceOverrides:
  - {namespaces: [ai], mode: audit, rules: {shared-claim: enforce}}
""")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=False)
    | st.sampled_from(["", "0", "1", "2", "500m", "1Gi", "void", "All", "In", "Exists", "nvidia", "/dev/nvidia0",
                       "/var/run/nvidia-container-devices/all", "gpu.nvidia.com", "single-gpu", "kai-scheduler",
                       "TimeSlicing", "dra", "device-plugin", "CUDA_VISIBLE_DEVICES", "line\nbreak", "é",
                       "/proc/1/root/dev", "//var/run/nvidia", "/var/run/../run/nvidia/mps", "Gt", "Lt", "NotIn",
                       "DoesNotExist", "metadata.name", "gpu-node-7", "/dev/null", "-12", "4"])
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "value", "key", "operator", "values", "path", "nvidia.com/gpu", "cpu", "limits",
                         "requests", "claims", "exactly", "deviceClassName", "count", "allocationMode", "type",
                         "privileged", "add", "drop", "runAsUser", "strategy", "sharing", "driver", "opaque",
                         "parameters", "mountPath", "hostPath", "configMapRef", "secretRef",
                         "prefix"]) | st.text(max_size=6),
        inner, max_size=4),
    max_leaves=12,
)

_TERM = ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0,
         "matchExpressions", 0)
# Every field some rule, mutation or resolution step reads.
POD_PATHS = [
    ("metadata",), ("metadata", "name"), ("metadata", "namespace"), ("metadata", "labels"), ("metadata", "annotations"),
    ("spec",), ("spec", "containers"), ("spec", "initContainers"), ("spec", "ephemeralContainers"),
    ("spec", "containers", 0), ("spec", "containers", 0, "name"), ("spec", "containers", 0, "resources"),
    ("spec", "containers", 0, "resources", "limits"),
    ("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
    ("spec", "containers", 0, "resources", "requests"), ("spec", "containers", 0, "resources", "claims"),
    ("spec", "containers", 0, "env"), ("spec", "containers", 0, "env", 0), ("spec", "containers", 0, "env", 0, "name"),
    ("spec", "containers", 0, "env", 0, "value"), ("spec", "containers", 0, "envFrom"),
    ("spec", "containers", 0, "securityContext"), ("spec", "containers", 0, "securityContext", "capabilities"),
    ("spec", "containers", 0, "volumeMounts"), ("spec", "containers", 1), ("spec", "nodeSelector"),
    ("spec", "nodeSelector", "workload.example.com/gpu-allocation"), ("spec", "affinity"),
    ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    (*_TERM, "key"), (*_TERM, "operator"), (*_TERM, "values"), (*_TERM, "values", 0),
    ("spec", "tolerations"), ("spec", "volumes"), ("spec", "resourceClaims"), ("spec", "resourceClaims", 0),
    ("spec", "resourceClaims", 0, "resourceClaimTemplateName"), ("spec", "resourceClaims", 0, "source"),
    ("spec", "runtimeClassName"), ("spec", "securityContext"), ("spec", "os"), ("spec", "schedulerName"),
    ("spec", "serviceAccountName"), ("spec", "nodeName"), ("spec", "ephemeralContainers", 0),
    ("spec", "ephemeralContainers", 0, "env"), ("spec", "ephemeralContainers", 0, "securityContext"),
    _TERM[:-2], _TERM[:-3], (*_TERM[:-2], "matchFields"), (*_TERM[:-3], 1), (*_TERM[:-2], "matchExpressions", 1),
    ("spec", "volumes", 0, "hostPath", "path"), ("spec", "volumes", 1), ("spec", "containers", 0, "volumeMounts", 0),
]
TEMPLATE_PATHS = [("spec",), ("spec", "spec"), ("spec", "spec", "devices"), ("spec", "spec", "devices", "requests"),
                  ("spec", "spec", "devices", "requests", 0), ("spec", "spec", "devices", "requests", 0, "exactly"),
                  ("spec", "spec", "devices", "requests", 0, "exactly", "count"),
                  ("spec", "spec", "devices", "requests", 0, "firstAvailable"), ("spec", "spec", "devices", "config"),
                  ("apiVersion",)]


def base_pod():
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ai", "labels": {"a": "b"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "i",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}, "claims": [{"name": "gpu"}]},
                 "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}],
                 "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CUDA_"}],
                 "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                 "volumeMounts": [{"name": "v", "mountPath": "/var/run/nvidia-container-devices/all"}]},
                {"name": "side", "image": "i"},
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tpl"}],
            "nodeSelector": {"workload.example.com/gpu-allocation": "dra"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "workload.example.com/gpu-allocation", "operator": "In",
                                       "values": ["dra"]}]}]}}},
            "volumes": [{"name": "v", "hostPath": {"path": "/dev/nvidia0"}}],
        },
    }


def base_template():
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "tpl", "namespace": "ai"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
                "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"sharing": {"strategy": "MPS"}}}}]}}}}


def put(obj, path, value):
    node = obj
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {} if not isinstance(key, int) else [])
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value


def fuzzed(base, paths):
    return st.lists(st.tuples(st.sampled_from(paths), json_values), min_size=1, max_size=4).map(
        lambda edits: _apply_edits(base(), edits))


def _apply_edits(obj, edits):
    for path, value in edits:
        put(obj, path, value)
    return obj


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def assert_well_formed(ev, obj):
    assert ev.errors == (), ev.errors  # no rule raised internally either
    for v in ev.violations:
        assert isinstance(v.rule, Rule) and isinstance(v.action, Action) and v.action is not Action.OFF
        assert isinstance(v.path, str) and isinstance(v.message, str)
        assert not _CONTROL.search(v.message), v.message
        assert f"[{v.rule.value}]" in v.message
    assert isinstance(ev.allowed, bool)
    if ev.patch:
        assert jsonpatch.apply_patch(obj, list(ev.patch)) == ev.mutated


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod=fuzzed(base_pod, POD_PATHS), template=fuzzed(base_template, TEMPLATE_PATHS),
       kind=st.sampled_from(["Pod", "Job", "CronJob"]), policy=st.sampled_from([POLICY, SHARING_POLICY]))
def test_arbitrary_pod_fields_never_raise(pod, template, kind, policy):
    obj = pod
    if kind == "Job":
        obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": pod.get("metadata"),
               "spec": {"template": {"spec": pod.get("spec")}}}
    elif kind == "CronJob":
        obj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": pod.get("metadata"),
               "spec": {"jobTemplate": {"spec": {"template": {"spec": pod.get("spec")}}}}}
    snapshot = copy.deepcopy(obj)
    resolver = BundleResolver([template, {"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ai"},
                                          "data": {"VISIBLE_DEVICES": "x"}}])
    ev = evaluate_object(obj, policy=policy, resolver=resolver, namespace="ai")
    assert obj == snapshot  # never modified
    assert_well_formed(ev, obj)


@settings(max_examples=200, deadline=None)
@given(template=fuzzed(base_template, TEMPLATE_PATHS),
       kind=st.sampled_from(["ResourceClaimTemplate", "ResourceClaim", "DeviceClass"]))
def test_arbitrary_dra_fields_never_raise(template, kind):
    obj = dict(template, kind=kind)
    if kind == "ResourceClaim" and isinstance(obj.get("spec"), dict):
        obj["spec"] = obj["spec"].get("spec")
    ev = evaluate_object(obj, policy=SHARING_POLICY, resolver=BundleResolver([]), namespace="ai")
    assert_well_formed(ev, obj)


@settings(max_examples=200, deadline=None)
@given(pod=fuzzed(base_pod, POD_PATHS), operation=st.sampled_from(["CREATE", "UPDATE"]),
       user=json_values)
def test_handlers_answer_any_request(pod, operation, user):
    # Built directly, not through the review layer: userInfo's values are not shape-checked there either.
    request = AdmissionRequest(uid="u", kind="Pod", group="", resource="pods", operation=operation, namespace="ai",
                               object=pod, user_info=user if isinstance(user, dict) else {})
    for handler in (validate, mutate):
        outcome = handler(request, policy=SHARING_POLICY, resolver=BundleResolver([]))
        assert isinstance(outcome.allowed, bool)
        assert all(isinstance(w, str) and not _CONTROL.search(w) for w in outcome.warnings)
        assert all(re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", k) and len(k) <= 63
                   for k in outcome.audit_annotations)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod=fuzzed(base_pod, POD_PATHS), old=fuzzed(base_pod, POD_PATHS), debug=json_values)
def test_debug_container_updates_never_raise_and_touch_only_ephemeral_containers(pod, old, debug):
    """UPDATE of pods/ephemeralcontainers with anything in either object: a well-formed answer, and the
    patch never reaches outside spec.ephemeralContainers."""
    pod.setdefault("spec", {}) if isinstance(pod.get("spec"), dict) else None
    if isinstance(pod.get("spec"), dict):
        pod["spec"]["runtimeClassName"] = "nvidia"
        pod["spec"].setdefault("ephemeralContainers", [])
        if isinstance(pod["spec"]["ephemeralContainers"], list):
            pod["spec"]["ephemeralContainers"].append(debug if isinstance(debug, dict) else {"name": "dbg",
                                                                                             "image": "i"})
    snapshot = copy.deepcopy(pod)
    for phases in (Phase.MUTATE, Phase.VALIDATE):
        ev = evaluate_object(pod, policy=POLICY, resolver=BundleResolver([]), namespace="ai", operation="UPDATE",
                             sub_resource="ephemeralcontainers", old=old, phases=phases)
        assert pod == snapshot
        assert_well_formed(ev, pod)
        assert all(op["path"].startswith("/spec/ephemeralContainers/") for op in ev.patch)


_CEL_PIECES = st.sampled_from([
    "device.driver", "==", "!=", "'gpu.nvidia.com'", '"nic.example.com"', "&&", "||", "!", "(", ")", "in", "[", "]",
    "device.attributes['gpu.nvidia.com'].type", "'gpu'", "'mig'", "device.capacity['gpu.nvidia.com'].memory",
    ".compareTo(quantity('40Gi'))", ".isGreaterThan(quantity('1'))", ">=", "0", "quantity('x')", "semver('1.2.3')",
    ".lowerAscii()", ".matches('^N')", "url('x')", "true", "1", ",", ".",
])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_CEL_PIECES | st.text(max_size=8), max_size=12), more=st.lists(st.text(max_size=20), max_size=2))
def test_any_device_class_selector_gets_a_verdict_or_unknown(pieces, more):
    """Whatever the selector text: no exception, and either a verdict or unknown (never both)."""
    from webhook.policy.context import device_class_info

    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
           "spec": {"selectors": [{"cel": {"expression": " ".join(pieces)}},
                                  *({"cel": {"expression": m}} for m in more)]}}
    info = device_class_info(obj, POLICY)
    assert info.unknown is None or (info.driver, info.device_type) == (None, None)
    assert info.unknown is None or ("\n" not in info.unknown and len(info.unknown) < 400)


@settings(max_examples=300, deadline=None)
@given(old=json_values, new=json_values)
def test_patch_equivalent_to_jsonpatch(old, new):
    doc_old, doc_new = {"root": old}, {"root": new}
    ours = make_patch(doc_old, doc_new)
    assert jsonpatch.apply_patch(doc_old, ours) == doc_new
    assert jsonpatch.apply_patch(doc_old, ours) == jsonpatch.apply_patch(
        doc_old, jsonpatch.make_patch(doc_old, doc_new))
