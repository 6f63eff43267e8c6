"""The review layer's answer: the shape the apiserver accepts, and the limits it applies."""
from __future__ import annotations

import base64
import json
from types import MappingProxyType

import pytest

from webhook.admission import codec, render
from webhook.admission.response import Outcome, error
from webhook.policy.phase import Phase
from webhook.text import one_line

from .apiserver import Rejected, judge

REQUEST = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002"}


def answer(outcome: Outcome, *, mutating: bool):
    body = codec.response(REQUEST["uid"], outcome, Phase.MUTATE if mutating else Phase.VALIDATE)
    return judge("/mutate" if mutating else "/validate", REQUEST, 200, {"Content-Type": "application/json"},
                 json.dumps(body).encode())


PATCH = ({"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"},)


@pytest.mark.parametrize(("outcome", "mutating", "expected"), [
    pytest.param(Outcome(allowed=True), False, {"uid": REQUEST["uid"], "allowed": True}, id="allowed"),
    pytest.param(Outcome(allowed=True, patch=PATCH), False, {"uid": REQUEST["uid"], "allowed": True},
                 id="validate-never-patches"),
    pytest.param(Outcome(allowed=True, patch=PATCH), True, {
        "uid": REQUEST["uid"], "allowed": True, "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(list(PATCH), separators=(",", ":")).encode()).decode()},
        id="mutate-patch"),
    pytest.param(Outcome(allowed=True, patch=()), True, {"uid": REQUEST["uid"], "allowed": True},
                 id="empty-patch-omitted"),
    pytest.param(Outcome(allowed=False, message="no [double-mechanism]", patch=PATCH), True, {
        "uid": REQUEST["uid"], "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": "no [double-mechanism]"}},
        id="denial-carries-no-patch"),
    pytest.param(Outcome(allowed=False, message=""), False, {
        "uid": REQUEST["uid"], "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": "denied by the gpu-admission policy"}},
        id="denial-never-without-explanation"),
    pytest.param(Outcome(allowed=True, warnings=("w1",), audit_annotations=MappingProxyType({"double-mechanism": "x"})),
                 False, {
        "uid": REQUEST["uid"], "allowed": True, "warnings": ["w1"], "auditAnnotations": {"double-mechanism": "x"}},
        id="warnings-and-annotations"),
])
def test_response_shape(outcome, mutating, expected):
    body = codec.response(REQUEST["uid"], outcome, Phase.MUTATE if mutating else Phase.VALIDATE)
    assert body == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": expected}
    answer(outcome, mutating=mutating)  # and the apiserver takes it


def test_internal_error_denial_keeps_its_code():
    body = codec.response("u", error("broken"), Phase.VALIDATE)
    assert body["response"]["status"] == {"code": 500, "reason": "InternalError", "message": "broken"}


def test_denial_message_keeps_one_line_per_violation():
    lines = [f'pod "ml/p": container "c{i}" sets CUDA_VISIBLE_DEVICES [visible-devices-override] https://x'
             for i in range(3)]
    outcome = Outcome(allowed=False, message="\n".join(lines))
    assert answer(outcome, mutating=False).message.split("\n") == lines


def test_denial_message_is_bounded_and_says_how_many_more():
    lines = [f"violation {i} " + "x" * 200 for i in range(200)]
    message = render.denial_message("\n".join(lines))
    assert len(message.encode()) <= render.DENIAL_MAX_BYTES + 200
    last = message.split("\n")[-1]
    kept = len(message.split("\n")) - 1
    assert last == f"... and {200 - kept} more; run `gpu-admission check` on the manifest to see them all"


@pytest.mark.parametrize(("raw", "expected"), [
    pytest.param("plain", "plain", id="plain"),
    pytest.param("two\nlines", "two lines", id="newline"),
    pytest.param("tab\there", "tab here", id="tab"),
    pytest.param("bell\x07 and del\x7f and c1\x85", "bell\\u0007 and del\\u007f and c1\\u0085",
                 id="control-characters"),
    pytest.param("line\u2028para\u2029", "line\\u2028para\\u2029", id="unicode-separators"),
    pytest.param("\u202eevil\u202c", "\\u202eevil\\u202c", id="bidi-controls"),
    pytest.param("lone \ud800 surrogate", "lone ? surrogate", id="invalid-utf8"),
    pytest.param("  padded  ", "padded", id="whitespace"),
    pytest.param("ユニコード", "ユニコード", id="unicode-kept"),
])
def test_one_line(raw, expected):
    assert one_line(raw) == expected


def _header_total(warnings):
    """What the apiserver counts against its 4096 (k8s.io/apiserver pkg/endpoints/filters/warning.go):
    the runes of each warning's text; the header's code, agent and quoting are not counted."""
    return sum(len(w) for w in warnings)


@pytest.mark.parametrize(("warnings", "kept", "note"), [
    pytest.param(["a", "b"], ["a", "b"], None, id="few"),
    pytest.param(["a", "a", "b"], ["a", "b"], None, id="duplicates-once"),
    pytest.param(["", "\n", "c"], ["c"], None, id="empty-dropped"),
    pytest.param([f"w{i} " + "x" * 300 for i in range(30)], None, "more warnings not shown", id="over-budget"),
    pytest.param([f'w{i} "quoted" ' + '"' * 150 for i in range(40)], None, "more warnings not shown",
                 id="escapes-count"),
    pytest.param(["ü" * 3000], ["ü" * 510 + "..."], None, id="one-long-warning-cut"),
])
def test_warnings_fit_the_apiserver_budget(warnings, kept, note):
    out = render.sanitize_warnings(warnings)
    assert _header_total(out) <= render.WARNINGS_BUDGET
    if kept is not None:
        assert out == kept
    if note:
        shown = len(out) - 1
        assert out[-1].startswith(f"gpu-admission: {len(warnings) - shown} {note}")
        assert out[:-1] == [one_line(w) for w in warnings[:shown]]
        assert shown > 0
    answer(Outcome(allowed=True, warnings=tuple(warnings)), mutating=False)


@pytest.mark.parametrize(("key", "expected"), [
    pytest.param("double-mechanism", "double-mechanism", id="rule-id"),
    pytest.param("gpu-admission/mode", "gpu-admission-mode", id="slash"),
    pytest.param("-._lead and trail_.-", "lead-and-trail", id="edges"),
    pytest.param("a" * 80, "a" * 63, id="too-long"),
    pytest.param("x" * 62 + "-y", "x" * 62, id="cut-then-trimmed"),
    pytest.param("ü", "", id="nothing-left"),
    pytest.param("Mixed_Case.ok", "Mixed_Case.ok", id="underscore-dot-case"),
])
def test_annotation_keys_are_qualified_names(key, expected):
    assert render.annotation_key(key) == expected


def test_annotation_keys_that_collide_keep_both_values():
    out = render.audit_annotations({"a/b": "1", "a-b": "2", "a b": "3", "": "dropped"})
    assert out == {"a-b": "1", "a-b-2": "2", "a-b-3": "3"}
    answer(Outcome(allowed=True, audit_annotations=MappingProxyType({"a/b": "1", "a-b": "2", "x" * 70: "3"})),
           mutating=False)


@pytest.mark.parametrize(("body", "field"), [
    pytest.param({"response": {"uid": "other", "allowed": True}}, "expected response.uid", id="uid"),
    pytest.param({"response": {"uid": REQUEST["uid"], "allowed": True, "patch": "W10="}}, "not response.patchType",
                 id="patch-without-type"),
    pytest.param({"response": {"uid": REQUEST["uid"], "allowed": True, "patchType": "JSONPatch"}},
                 "validating webhook may not", id="type-on-validate"),
    pytest.param({"response": {"uid": REQUEST["uid"], "allowed": False}}, "without explanation", id="bare-denial"),
    pytest.param({"response": {"uid": REQUEST["uid"], "allowed": True, "warnings": ["a\nb"]}}, "control character",
                 id="warning-newline"),
    pytest.param({"response": {"uid": REQUEST["uid"], "allowed": True, "auditAnnotations": {"a/b": "c"}}},
                 "not a qualified name", id="annotation-key"),
])
def test_the_apiserver_client_rejects_what_the_apiserver_rejects(body, field):
    """The judge used by every test is not vacuous: each rule it checks does fail a bad answer."""
    full = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", **body}
    with pytest.raises(Rejected, match=field):
        judge("/validate", REQUEST, 200, {"Content-Type": "application/json"}, json.dumps(full).encode())
