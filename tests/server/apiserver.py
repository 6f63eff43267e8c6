"""A test client that calls the webhook the way the kube-apiserver does, and judges every answer the
way the kube-apiserver does (docs/architecture.md, The AdmissionReview contract), since no local cluster can
show us either side.

- Objects are shaped as the apiserver hands them to admission: quantities as strings, scheme defaults
  filled in, and the in-tree admission plugins' additions (service account token volume and mounts,
  not-ready/unreachable tolerations, priority).
- Each AdmissionReview carries a fresh uid, userInfo, dryRun, requestKind/requestResource, options,
  and object/oldObject as the operation has them; the path gets `?timeout=10s`, the body
  `Content-Type: application/json`.
- `admit()` runs both phases: /mutate (then applies the patch, and reinvokes /mutate on the result,
  as `reinvocationPolicy: IfNeeded` may, which must then patch nothing), and /validate on the
  mutated object.

It stands in for the kube-apiserver as the webhook's client (its AdmissionReview encoding and defaulting,
patch application, reinvocation, warning filter and audit-annotation rules) in the fast suite, and for what
a real one cannot be made to send on demand: malformed or oversized bodies, wrong types, a missing uid, an
arbitrary userInfo or dryRun. The real one is tests/e2e: the chart's webhooks called by a real kube-apiserver
and the results read back through kubectl.
"""
from __future__ import annotations

import base64
import copy
import json
import re
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import jsonpatch

from webhook.objects.kinds import BY_KIND

QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
WARNINGS_BUDGET = 4096
TOKEN_VOLUME = "kube-api-access-5x7kq"
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_USER = {"username": "system:serviceaccount:kube-system:job-controller", "uid": "4b1f0c2e",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]}
OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}

# (status, headers, body) for (path with query, body, headers)
Transport = Callable[[str, bytes, dict], tuple[int, dict, bytes]]


class Rejected(AssertionError):
    """The answer breaks a rule the apiserver enforces: the user's request would fail."""


@dataclass
class Answer:
    path: str
    request: dict
    response: dict
    patch: list | None = None  # decoded JSON Patch (mutate only)

    @property
    def allowed(self) -> bool:
        return self.response["allowed"]

    @property
    def warnings(self) -> list[str]:
        return self.response.get("warnings", [])

    @property
    def annotations(self) -> dict[str, str]:
        return self.response.get("auditAnnotations", {})

    @property
    def message(self) -> str:
        return self.response.get("status", {}).get("message", "")


@dataclass
class Admission:
    """Both phases of one request, as the apiserver ran them."""

    sent: dict
    mutate: Answer
    validate: Answer
    mutated: dict
    reinvoked: Answer | None = None

    @property
    def allowed(self) -> bool:
        return self.mutate.allowed and self.validate.allowed

    @property
    def warnings(self) -> list[str]:
        return self.mutate.warnings + self.validate.warnings


class ApiServer:
    def __init__(self, transport: Transport, *, user: dict | None = None):
        self.transport = transport
        self.user = user or DEFAULT_USER
        self.calls: list[tuple[str, int]] = []  # (path, HTTP status) of every call

    # ---- requests -------------------------------------------------------------------------------

    def review(self, obj: dict | None, *, operation: str = "CREATE", old: dict | None = None,
               namespace: str | None = None, dry_run: bool = False, sub_resource: str = "",
               kind: dict | None = None, resource: str | None = None, user: dict | None = None,
               options: dict | None = None) -> dict:
        subject = obj if obj is not None else old
        api_version = subject["apiVersion"] if subject else "v1"
        group, _, version = api_version.rpartition("/")
        kind_name = kind["kind"] if kind else subject["kind"]
        info = BY_KIND.get(kind_name)
        resource = resource or (info.resource if info else kind_name.lower() + "s")
        gvk = kind or {"group": group, "version": version, "kind": kind_name}
        gvr = {"group": gvk["group"], "version": gvk["version"], "resource": resource}
        meta = subject.get("metadata") if subject and isinstance(subject.get("metadata"), dict) else {}
        namespace = namespace or meta.get("namespace")
        request = {
            "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": meta.get("name") if isinstance(meta.get("name"), str) else "", "operation": operation,
            "userInfo": user or self.user,
            "object": obj, "oldObject": old, "dryRun": dry_run,
            "options": options or ({"apiVersion": "meta.k8s.io/v1", "kind": OPTIONS[operation]}
                                   if operation in OPTIONS else None),
        }
        if sub_resource:
            request["subResource"] = request["requestSubResource"] = sub_resource
        if namespace and (info is None or info.namespaced):
            request["namespace"] = namespace
        if not request["name"]:
            del request["name"]  # generateName: the apiserver sends no name yet
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    def send(self, path: str, review: dict) -> Answer:
        status, headers, body = self.transport(f"{path}?timeout=10s", json.dumps(review).encode(),
                                               {"Content-Type": "application/json", "Accept": "application/json"})
        self.calls.append((path, status))
        answer = judge(path, review["request"], status, headers, body)
        return answer

    def admit(self, obj: dict, *, operation: str = "CREATE", old: dict | None = None, namespace: str | None = None,
              dry_run: bool = False, shape_object: bool = True) -> Admission:
        """Mutating phase, then validating phase, as the apiserver runs them for one request."""
        sent = shape(obj, namespace=namespace) if shape_object else copy.deepcopy(obj)
        mutated = sent
        mutate = self.send("/mutate", self.review(sent, operation=operation, old=old, namespace=namespace,
                                                  dry_run=dry_run))
        reinvoked = None
        if mutate.patch:
            mutated = apply_patch(sent, mutate.patch)
            # reinvocationPolicy IfNeeded: a second call on the mutated object must change nothing.
            reinvoked = self.send("/mutate", self.review(mutated, operation=operation, old=old, namespace=namespace,
                                                         dry_run=dry_run))
            if reinvoked.patch:
                raise Rejected(f"mutation is not idempotent: reinvocation patched again {reinvoked.patch}")
        validate = self.send("/validate", self.review(mutated, operation=operation, old=old, namespace=namespace,
                                                      dry_run=dry_run))
        return Admission(sent, mutate, validate, mutated, reinvoked)


# ---- the apiserver's checks of an answer --------------------------------------------------------


def judge(path: str, request: dict, status: int, headers: dict, body: bytes) -> Answer:
    """Every check the apiserver makes of a webhook's answer; Rejected names the broken rule."""
    if status != 200:
        raise Rejected(f"{path}: HTTP {status} (the apiserver counts the call as failed): {body[:300]!r}")
    content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    if not content_type.startswith("application/json"):
        raise Rejected(f"{path}: Content-Type {content_type!r}, not application/json")
    try:
        review = json.loads(body)
    except ValueError as exc:
        raise Rejected(f"{path}: the body is not JSON: {exc}") from None
    if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview":
        raise Rejected(f"{path}: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
                       f"{review.get('apiVersion')}, Kind={review.get('kind')}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise Rejected(f"{path}: webhook response was absent")
    if response.get("uid") != request["uid"]:
        raise Rejected(f"{path}: expected response.uid={request['uid']!r}, got {response.get('uid')!r}")
    if not isinstance(response.get("allowed"), bool):
        raise Rejected(f"{path}: response.allowed is not a boolean")
    patch = _judge_patch(path, response)
    if not response["allowed"]:
        _judge_denial(path, response.get("status"))
    _judge_warnings(path, response.get("warnings"))
    _judge_annotations(path, response.get("auditAnnotations"))
    return Answer(path, request, response, patch)


def _judge_patch(path: str, response: dict) -> list | None:
    patch_type, patch = response.get("patchType"), response.get("patch")
    if patch_type is None:
        if patch:
            raise Rejected(f"{path}: webhook returned response.patch but not response.patchType")
        return None
    if path != "/mutate":
        raise Rejected(f"{path}: validating webhook may not return response.patchType")
    if patch_type != "JSONPatch":
        raise Rejected(f"{path}: webhook returned invalid response.patchType {patch_type!r}")
    if not patch:
        raise Rejected(f"{path}: webhook returned response.patchType but not response.patch")
    try:
        ops = json.loads(base64.b64decode(patch, validate=True))
    except ValueError as exc:
        raise Rejected(f"{path}: response.patch is not base64 of JSON: {exc}") from None
    if not isinstance(ops, list) or not all(isinstance(op, dict) and "op" in op and "path" in op for op in ops):
        raise Rejected(f"{path}: response.patch is not a JSON Patch array")
    return ops


def _judge_denial(path: str, status) -> None:
    if not isinstance(status, dict):
        raise Rejected(f"{path}: a denial without status: the user sees 'without explanation'")
    if status.get("code") != 403 and not (isinstance(status.get("code"), int) and 400 <= status["code"] <= 599):
        raise Rejected(f"{path}: denial status.code {status.get('code')!r} is not an error code")
    if status.get("code") == 403 and status.get("reason") != "Forbidden":
        raise Rejected(f"{path}: a 403 denial must have reason Forbidden, not {status.get('reason')!r}")
    if not isinstance(status.get("message"), str) or not status["message"].strip():
        raise Rejected(f"{path}: a denial without a message")


def _judge_warnings(path: str, warnings) -> None:
    if warnings is None:
        return
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise Rejected(f"{path}: warnings must be a list of strings")
    total = 0
    for w in warnings:
        # net.NewWarningHeader refuses these, and the apiserver drops the warning silently.
        if any(unicodedata.category(c) == "Cc" for c in w):
            raise Rejected(f"{path}: warning with a control character would be dropped: {w!r}")
        try:
            w.encode("utf-8")
        except UnicodeEncodeError:
            raise Rejected(f"{path}: warning that is not valid UTF-8 would be dropped: {w!r}") from None
        if not w:
            raise Rejected(f"{path}: empty warning")
        # k8s.io/apiserver pkg/endpoints/filters/warning.go counts each text's runes (utf8.RuneCountInString)
        total += len(w)
    if total > WARNINGS_BUDGET:
        raise Rejected(f"{path}: warnings total {total} runes; the apiserver truncates past {WARNINGS_BUDGET}")
    if len(set(warnings)) != len(warnings):
        raise Rejected(f"{path}: duplicate warnings (the apiserver shows each once)")


def _judge_annotations(path: str, annotations) -> None:
    if annotations is None:
        return
    if not isinstance(annotations, dict):
        raise Rejected(f"{path}: auditAnnotations must be an object")
    for key, value in annotations.items():
        if "/" in key or len(key) > 63 or not QUALIFIED_NAME.match(key):
            raise Rejected(f"{path}: audit annotation key {key!r} is not a qualified name")
        if not isinstance(value, str):
            raise Rejected(f"{path}: audit annotation {key!r} has a non-string value")


def apply_patch(obj: dict, ops: list) -> dict:
    try:
        return jsonpatch.apply_patch(obj, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        # The apiserver answers the user's request with a 500 whatever the failurePolicy.
        raise Rejected(f"the patch does not apply: {exc}") from None


# ---- shaping objects as the apiserver does ------------------------------------------------------


def shape(obj: dict, *, namespace: str | None = None) -> dict:
    """The object after decoding, defaulting and the in-tree mutating admission plugins."""
    obj = copy.deepcopy(obj)
    kind = obj.get("kind", "")
    info = BY_KIND.get(kind)
    meta = obj.setdefault("metadata", {})
    if namespace and (info is None or info.namespaced):
        meta.setdefault("namespace", namespace)
    if info is None:
        return obj
    if info.pod_spec_path is not None:
        spec = obj
        for key in info.pod_spec_path:
            spec = spec.setdefault(key, {})
        _default_pod_spec(spec, restart="Always" if kind not in ("Job", "CronJob") else None)
        if kind == "Pod":
            _admission_plugins(spec)
        obj.setdefault("status", {})  # a struct field: Go always serialises it
    elif kind == "ResourceClaimTemplate":
        _default_claim_spec(obj.get("spec", {}).get("spec", {}))
    elif kind == "ResourceClaim":
        _default_claim_spec(obj.get("spec", {}))
        obj.setdefault("status", {})
    return obj


def _quantity(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"  # the canonical form of 0.5 is 500m


def _default_container(c: dict) -> None:
    resources = c.setdefault("resources", {})
    for section in ("limits", "requests"):
        if isinstance(resources.get(section), dict):
            resources[section] = {k: _quantity(v) for k, v in resources[section].items()}
    if isinstance(resources.get("limits"), dict):  # requests default to limits, resource by resource
        requests = resources.setdefault("requests", {})
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image", "")
    c.setdefault("imagePullPolicy", "Always" if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]
                 else "IfNotPresent")
    for port in c.get("ports", []) or []:
        port.setdefault("protocol", "TCP")
    for env in c.get("env", []) or []:
        ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def _default_pod_spec(spec: dict, *, restart: str | None) -> None:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key, []) or []:
            if isinstance(c, dict):
                _default_container(c)
    if restart:
        spec.setdefault("restartPolicy", restart)
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for volume in spec.get("volumes", []) or []:
        for source in ("configMap", "secret"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)


def _admission_plugins(spec: dict) -> None:
    spec.setdefault("serviceAccountName", "default")
    spec["serviceAccount"] = spec["serviceAccountName"]
    if spec.get("automountServiceAccountToken") is not False:  # ServiceAccount plugin
        spec.setdefault("volumes", []).append({"name": TOKEN_VOLUME, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                          "fieldPath": "metadata.namespace"}}]}}]}})
        for key in ("initContainers", "containers"):
            for c in spec.get(key, []) or []:
                c.setdefault("volumeMounts", []).append({"name": TOKEN_VOLUME, "readOnly": True,
                                                         "mountPath": TOKEN_MOUNT})
    tolerations = spec.setdefault("tolerations", [])  # DefaultTolerationSeconds plugin
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    if "priorityClassName" not in spec:  # Priority plugin
        spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _default_claim_spec(spec: dict) -> None:
    for request in spec.get("devices", {}).get("requests", []) or []:
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            exactly.setdefault("allocationMode", "ExactCount")
            if exactly["allocationMode"] == "ExactCount":
                exactly.setdefault("count", 1)
