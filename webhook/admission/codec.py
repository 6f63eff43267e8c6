"""AdmissionReview `admission.k8s.io/v1` in and out, shaped to pass every check the kube-apiserver
makes on a webhook's answer (docs/architecture.md, The AdmissionReview contract). Pure functions: no Flask,
no I/O; decoding reads the body's objects and never changes them."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson

from webhook.admission import render
from webhook.admission.response import Outcome
from webhook.policy.phase import Phase
from webhook.text import one_line

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
# The whole answer stays under 256 KiB in every mode: its texts are capped (webhook.admission.render), so the
# patch is what could grow (defaults for thousands of containers). A patch over this is not sent: the request
# is refused.
PATCH_MAX_BYTES = 192 * 1024  # its base64, as it travels


@dataclass(slots=True, kw_only=True)
class AdmissionRequest:
    """The fields of an AdmissionReview's `request` the webhook reads, typed (`parse` makes one). Optional
    strings the request leaves out (or sends as null, which Go reads as the zero value) are ""."""

    uid: str
    kind: str  # request.kind.kind: the object's kind, as the apiserver names it
    group: str  # request.resource.group
    resource: str  # request.resource.resource ("pods", "deployments", ...)
    operation: str  # CREATE, UPDATE, DELETE or CONNECT
    namespace: str = ""
    name: str = ""
    sub_resource: str = ""
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    user_info: dict[str, Any] = field(default_factory=dict)


class BadReview(ValueError):
    """The body is not an AdmissionReview this webhook can answer; `status` is the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


# --- in ----------------------------------------------------------------------------------------


def parse(body: bytes) -> AdmissionRequest:
    """The `request` of an AdmissionReview, its shape checked (so handlers may trust the types).

    Raises BadReview naming the first field that is wrong."""
    if not body:
        raise BadReview("empty body: POST an AdmissionReview (admission.k8s.io/v1) as JSON")
    try:
        # orjson: strict RFC 8259 (UTF-8 only, no NaN/Infinity, bounded depth) and faster than json,
        # on the path of every admission request.
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "UTF-8" in exc.msg:
            raise BadReview("body is not UTF-8 text") from None
        if "depth limit" in exc.msg:
            raise BadReview("body is not valid JSON: nested too deeply") from None
        raise BadReview(f"body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if type(review) is not dict:
        raise BadReview(f"body must be a JSON object (an AdmissionReview), not {_type(review)}")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise BadReview(f"body must be an AdmissionReview of {API_VERSION}; got apiVersion "
                        f"{_show(review.get('apiVersion'))} and kind {_show(review.get('kind'))}")
    request = review.get("request")
    if type(request) is not dict:
        raise BadReview(f"request: must be an object, not {_type(request)}"
                        if "request" in review else "request: missing; an AdmissionReview to answer carries one")
    return read_request(request)


def read_request(r: dict) -> AdmissionRequest:
    """An AdmissionReview's `request` object, checked and typed; `r` is left as it is. Raises BadReview naming
    the first field that is wrong. A null reads as the field's absence (Go decodes it as the zero value)."""
    uid = r.get("uid")
    if type(uid) is not str or not uid:
        raise BadReview("request.uid: must be a non-empty string" if "uid" in r else "request.uid: missing")
    _, kind = _gvk(r, "kind", "kind")
    group, resource = _gvk(r, "resource", "resource")
    op = r.get("operation")
    if op not in OPERATIONS:
        raise BadReview(f"request.operation: must be one of {', '.join(OPERATIONS)}, not {_show(op)}")
    values: list[Any] = []
    for key, expected in _OPTIONAL:  # a loop in place: this runs for every request
        value = r.get(key)
        if value is not None and type(value) is not expected:
            raise _wrong("request.", key, value, expected)
        values.append(value)
    namespace, name, sub_resource, _, obj, old, _, _, _, dry_run, user = values
    user = _user(user) if user is not None else {}
    if op in ("CREATE", "UPDATE") and obj is None:
        raise BadReview(f"request.object: required for {op}")
    if op == "UPDATE" and old is None:
        raise BadReview("request.oldObject: required for UPDATE")
    return AdmissionRequest(uid=uid, kind=kind, group=group, resource=resource, operation=op,
                            namespace=namespace or "", name=name or "", sub_resource=sub_resource or "", object=obj,
                            old_object=old, dry_run=dry_run is True, user_info=user)


# In the order read_request unpacks them; the ones it does not keep are checked all the same.
_OPTIONAL = (("namespace", str), ("name", str), ("subResource", str), ("requestSubResource", str),
             ("object", dict), ("oldObject", dict), ("options", dict), ("requestKind", dict),
             ("requestResource", dict), ("dryRun", bool), ("userInfo", dict))
_USER_STRINGS = (("username", str), ("uid", str))  # their nulls are dropped


def _user(user: dict) -> dict:
    """userInfo, checked; without its null fields (a copy only when it has any)."""
    for key, expected in _USER_STRINGS:
        value = user.get(key)
        if value is not None and type(value) is not expected:
            raise _wrong("request.userInfo.", key, value, expected)
    groups = user.get("groups")
    if groups is not None and (type(groups) is not list or any(type(g) is not str for g in groups)):
        raise BadReview("request.userInfo.groups: must be a list of strings")
    extra = user.get("extra")
    if extra is not None and (type(extra) is not dict or any(
            type(v) is not list or any(type(s) is not str for s in v) for v in extra.values())):
        raise BadReview("request.userInfo.extra: must map names to lists of strings")
    if user.get("username", "") is None or user.get("uid", "") is None:
        return {k: v for k, v in user.items() if v is not None or k not in ("username", "uid")}
    return user


def _gvk(r: dict, field: str, name: str) -> tuple[str, str]:
    """(group, name) of request.kind or request.resource, with its version checked."""
    value = r.get(field)
    if type(value) is not dict:
        raise BadReview(f"request.{field}: must be an object, not {_type(value)}" if field in r
                        else f"request.{field}: missing")
    group = value.get("group", "")
    if group is None:  # Go decodes null as ""
        group = ""
    for key, v in (("group", group), ("version", value.get("version")), (name, value.get(name))):
        if type(v) is not str or (key != "group" and not v):
            raise BadReview(f"request.{field}.{key}: must be a {'' if key == 'group' else 'non-empty '}string, "
                            f"not {_type(v)}")
    return group, value[name]


def _wrong(where: str, name: str, value: Any, kind: type) -> BadReview:
    return BadReview(f"{where}{name}: must be {_type_name(kind)}, not {_type(value)}")


def _type(value: Any) -> str:
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _type_name(kind: type) -> str:
    return {str: "a string", dict: "an object", bool: "a boolean"}[kind]


def _show(value: Any) -> str:
    return repr(value[:60]) if isinstance(value, str) else _type(value)


# --- out ---------------------------------------------------------------------------------------


def response(uid: str, outcome: Outcome, phase: Phase) -> dict:
    """The AdmissionReview answering `uid`. Only the mutating endpoint ever carries a patch, and
    only with `patchType: JSONPatch` (the apiserver refuses either without the other)."""
    answer: dict[str, Any] = {"uid": uid, "allowed": bool(outcome.allowed)}
    language = outcome.evaluation.language if outcome.evaluation is not None else "en"
    if not outcome.allowed:
        code = outcome.code
        answer["status"] = {
            "code": code,
            "reason": "Forbidden" if code == 403 else "InternalError",
            "message": render.denial_message(outcome.message, language),
        }
    if outcome.warnings:
        warnings = render.sanitize_warnings(outcome.warnings, language=language)
        if warnings:
            answer["warnings"] = warnings
    if outcome.audit_annotations:
        annotations = render.audit_annotations(outcome.audit_annotations, language)
        if annotations:
            answer["auditAnnotations"] = annotations
    if phase is Phase.MUTATE and outcome.allowed and outcome.patch:
        patch = base64.b64encode(dumps(list(outcome.patch))).decode()
        if len(patch) <= PATCH_MAX_BYTES:
            answer["patch"] = patch
            answer["patchType"] = "JSONPatch"
        else:  # the answer would be too large to send: refused, never allowed without its defaults
            answer.update(allowed=False, status={"code": 403, "reason": "Forbidden", "message": render.denial_message(
                render.patch_too_large(len(patch), PATCH_MAX_BYTES, language), language)})
            answer.pop("warnings", None)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": answer}


def status_body(code: int, reason: str, message: str) -> dict:
    """A Kubernetes `Status`: what a request that is not an answerable AdmissionReview gets."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": one_line(message), "reason": reason, "code": code}


def dumps(payload) -> bytes:
    """Compact JSON, UTF-8."""
    return orjson.dumps(payload)
