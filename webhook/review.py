"""AdmissionReview `admission.k8s.io/v1` in and out, shaped to pass every check the kube-apiserver
makes on a webhook's answer (docs/architecture.md, The AdmissionReview contract). Pure functions: no Flask, no I/O."""
from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from webhook.handlers.outcome import Outcome
from webhook.handlers.request import AdmissionRequest
from webhook.policy.messages import T, render
from webhook.text import one_line

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")

# The apiserver (k8s.io/apiserver pkg/endpoints/filters/warning.go, the same in 1.34 and 1.37) adds the
# warnings as `Warning: 299 - "<text>"` headers while their texts add up to 4096 runes (code points, not
# bytes: utf8.RuneCountInString); past that it cuts every warning, the earlier ones too, to 256 runes. It
# drops any warning with a control character or invalid UTF-8 (apimachinery's NewWarningHeader). Python's
# len() of a str counts code points, so a Japanese character counts once here too.
WARNINGS_BUDGET = 4096
WARNING_MAX_BYTES = 1024  # "one line each, short": a longer warning is cut, at a character boundary
DENIAL_MAX_BYTES = 12 * 1024  # kubectl prints the whole message; beyond this it is a wall of text
# Audit annotations go into every audit event of the request: each value, and all of them together, short.
ANNOTATION_VALUE_MAX_BYTES = 4 * 1024
ANNOTATIONS_MAX_BYTES = 16 * 1024
# The whole answer stays under 256 KiB in every mode: the texts above are capped, so the patch is what
# could grow (defaults for thousands of containers). A patch over this is not sent: the request is refused.
PATCH_MAX_BYTES = 192 * 1024  # its base64, as it travels
_NOT_IN_KEY = re.compile(r"[^-A-Za-z0-9_.]+")
ANNOTATION_KEY_MAX = 63


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


def read_request(request: dict) -> AdmissionRequest:
    """An AdmissionReview's `request` object, checked and typed. Raises BadReview naming the first field
    that is wrong."""
    _check_request(request)
    kind, resource = request["kind"], request["resource"]
    return AdmissionRequest(
        uid=request["uid"], kind=kind["kind"], group=resource["group"], resource=resource["resource"],
        operation=request["operation"], namespace=request.get("namespace", ""), name=request.get("name", ""),
        sub_resource=request.get("subResource", ""), object=request["object"], old_object=request["oldObject"],
        dry_run=request["dryRun"], user_info=request["userInfo"])


def dumps(payload) -> bytes:
    """Compact JSON, UTF-8."""
    return orjson.dumps(payload)


_OPTIONAL = (("namespace", str), ("name", str), ("subResource", str), ("requestSubResource", str),
             ("object", dict), ("oldObject", dict), ("options", dict), ("requestKind", dict),
             ("requestResource", dict), ("dryRun", bool), ("userInfo", dict))
_USER_STRINGS = (("username", str), ("uid", str))


def _check_request(r: dict) -> None:
    uid = r.get("uid")
    if type(uid) is not str or not uid:
        raise BadReview("request.uid: must be a non-empty string" if "uid" in r else "request.uid: missing")
    _gvk(r, "kind", ("version", "kind"))
    _gvk(r, "resource", ("version", "resource"))
    op = r.get("operation")
    if op not in OPERATIONS:
        raise BadReview(f"request.operation: must be one of {', '.join(OPERATIONS)}, not {_show(op)}")
    _optional(r, _OPTIONAL, "request.")
    user = r.setdefault("userInfo", {})
    _optional(user, _USER_STRINGS, "request.userInfo.")
    groups = user.get("groups")
    if groups is not None and (type(groups) is not list or any(type(g) is not str for g in groups)):
        raise BadReview("request.userInfo.groups: must be a list of strings")
    extra = user.get("extra")
    if extra is not None and (type(extra) is not dict or any(
            type(v) is not list or any(type(s) is not str for s in v) for v in extra.values())):
        raise BadReview("request.userInfo.extra: must map names to lists of strings")
    r["dryRun"] = r.get("dryRun") is True
    r.setdefault("object", None)
    r.setdefault("oldObject", None)
    if op in ("CREATE", "UPDATE") and r["object"] is None:
        raise BadReview(f"request.object: required for {op}")
    if op == "UPDATE" and r["oldObject"] is None:
        raise BadReview("request.oldObject: required for UPDATE")


def _gvk(r: dict, field: str, required: tuple[str, ...]) -> None:
    value = r.get(field)
    if type(value) is not dict:
        raise BadReview(f"request.{field}: must be an object, not {_type(value)}" if field in r
                        else f"request.{field}: missing")
    if value.setdefault("group", "") is None:  # Go decodes null as ""
        value["group"] = ""
    for key in ("group", *required):
        v = value.get(key)
        if type(v) is not str or (key != "group" and not v):
            raise BadReview(f"request.{field}.{key}: must be a {'' if key == 'group' else 'non-empty '}string, "
                            f"not {_type(v)}")


def _optional(r: dict, fields: tuple[tuple[str, type], ...], where: str) -> None:
    for name, kind in fields:
        value = r.get(name)
        if value is None:
            r.pop(name, None)  # Go decodes null as the zero value: treat it as absent
        elif type(value) is not kind:
            raise BadReview(f"{where}{name}: must be {_type_name(kind)}, not {_type(value)}")


def _type(value: Any) -> str:
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _type_name(kind: type) -> str:
    return {str: "a string", dict: "an object", bool: "a boolean"}[kind]


def _show(value: Any) -> str:
    return repr(value[:60]) if isinstance(value, str) else _type(value)


# --- out ---------------------------------------------------------------------------------------


def response(uid: str, outcome: Outcome, *, mutating: bool) -> dict:
    """The AdmissionReview answering `uid`. Only the mutating endpoint ever carries a patch, and
    only with `patchType: JSONPatch` (the apiserver refuses either without the other)."""
    answer: dict[str, Any] = {"uid": uid, "allowed": bool(outcome.allowed)}
    language = outcome.evaluation.language if outcome.evaluation is not None else "en"
    if not outcome.allowed:
        code = outcome.code
        answer["status"] = {
            "code": code,
            "reason": "Forbidden" if code == 403 else "InternalError",
            "message": denial_message(outcome.message, language),
        }
    if outcome.warnings:
        warnings = sanitize_warnings(outcome.warnings, language=language)
        if warnings:
            answer["warnings"] = warnings
    if outcome.audit_annotations:
        annotations = audit_annotations(outcome.audit_annotations, language)
        if annotations:
            answer["auditAnnotations"] = annotations
    if mutating and outcome.allowed and outcome.patch:
        patch = base64.b64encode(dumps(list(outcome.patch))).decode()
        if len(patch) <= PATCH_MAX_BYTES:
            answer["patch"] = patch
            answer["patchType"] = "JSONPatch"
        else:  # the answer would be too large to send: refused, never allowed without its defaults
            answer.update(allowed=False, status={"code": 403, "reason": "Forbidden", "message": denial_message(
                render(T("gpu-admission: the defaults this object needs make a JSON patch of {size} bytes, more than "
                         "the {limit} an answer may carry; set them in the manifest (`gpu-admission mutate` prints it "
                         "with them)", size=len(patch), limit=PATCH_MAX_BYTES), language), language)})
            answer.pop("warnings", None)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": answer}


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` UTF-8 bytes, ending in "..." when cut; never inside a character (the
    apiserver drops a warning that is not valid UTF-8)."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode("utf-8", "ignore").rstrip() + "..."


def _runes(text: str) -> int:
    """What warning.go counts of a warning against its 4096: the text's runes."""
    return len(text)


def sanitize_warnings(warnings: Iterable[str], budget: int = WARNINGS_BUDGET, *, language: str = "en") -> list[str]:
    """One line each, deduplicated, within the apiserver's budget. When they do not all fit, the
    last one says how many were left out, so nothing is dropped silently."""
    lines = list(dict.fromkeys(line for w in warnings if (line := _cut(one_line(w), WARNING_MAX_BYTES))))
    if sum(map(_runes, lines)) <= budget:
        return lines
    kept: list[str] = []
    used = _runes(_more_note(len(lines), language))  # room for the note, at its longest
    for line in lines:
        if used + _runes(line) > budget:
            break
        kept.append(line)
        used += _runes(line)
    return kept + [_more_note(len(lines) - len(kept), language)]


def _more_note(count: int, language: str = "en") -> str:
    return render(T("gpu-admission: {count} more warning not shown (the apiserver keeps 4096 characters of warnings); "
                    "run `gpu-admission check` on the manifest to see them all", count=count) if count == 1 else
                  T("gpu-admission: {count} more warnings not shown (the apiserver keeps 4096 characters of "
                    "warnings); run `gpu-admission check` on the manifest to see them all", count=count), language)


def denial_message(message: str, language: str = "en") -> str:
    # "\n" only: the lines are the handler's; str.splitlines would also split at separators a value carried.
    lines = [one_line(line) for line in str(message).split("\n")]
    lines = [line for line in lines if line] or [render(T("denied by the gpu-admission policy"), language)]
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line.encode()) + 1 > DENIAL_MAX_BYTES and kept:
            rest = len(lines) - len(kept)
            kept.append(render(T("... and {count} more; run `gpu-admission check` on the manifest to see them all",
                                 count=rest), language))
            break
        kept.append(_cut(line, DENIAL_MAX_BYTES))
        used += len(kept[-1].encode()) + 1
    return "\n".join(kept)


def annotation_key(key: str) -> str:
    """A qualified name (`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters, no `/`):
    the apiserver prefixes the webhook's name and refuses any other key. "" when nothing is left."""
    return _NOT_IN_KEY.sub("-", str(key))[:ANNOTATION_KEY_MAX].strip("-_.")


def audit_annotations(annotations: Mapping[str, str], language: str = "en") -> dict[str, str]:
    """Qualified keys; values on one line, each at most ANNOTATION_VALUE_MAX_BYTES and all together at most
    ANNOTATIONS_MAX_BYTES (a value cut ends in "..."; one that no longer fits is dropped, and the last
    kept says how many were)."""
    out: dict[str, str] = {}
    used = 0
    dropped = 0
    for key, value in annotations.items():
        name = annotation_key(key)
        if not name:
            continue
        room = min(ANNOTATION_VALUE_MAX_BYTES, ANNOTATIONS_MAX_BYTES - used - len(name))
        if room < 128:
            dropped += 1
            continue
        text = _cut(one_line(value), room)
        n = 2
        base = name
        while name in out:  # two keys that sanitise alike keep both values
            suffix = f"-{n}"
            name = base[: ANNOTATION_KEY_MAX - len(suffix)].rstrip("-_.") + suffix
            n += 1
        out[name] = text
        used += len(text.encode()) + len(name)
    if dropped:
        out["not-shown"] = render(
            T("{count} more annotation; run `gpu-admission check` on the manifest", count=dropped)
            if dropped == 1 else
            T("{count} more annotations; run `gpu-admission check` on the manifest", count=dropped), language)
    return out


def status_body(code: int, reason: str, message: str) -> dict:
    """A Kubernetes `Status`: what a request that is not an answerable AdmissionReview gets."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": one_line(message), "reason": reason, "code": code}
