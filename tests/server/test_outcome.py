"""The four outcome constructors and the typed request: what each makes, and how the review layer answers it."""
from __future__ import annotations

import copy
from types import MappingProxyType

import orjson
import pytest

from webhook.admission import codec
from webhook.admission.codec import AdmissionRequest
from webhook.admission.response import Outcome, allow, deny, error, patch
from webhook.policy.phase import Phase

OPS = ({"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"},)
NOTE = MappingProxyType({"shared-claim": "x"})


@pytest.mark.parametrize(("made", "expected"), [
    pytest.param(allow(), Outcome(allowed=True), id="allow"),
    pytest.param(allow(reason="DELETE is never blocked"), Outcome(allowed=True, reason="DELETE is never blocked"),
                 id="allow-with-reason"),
    pytest.param(allow(warnings=("w",), audit_annotations=NOTE),
                 Outcome(allowed=True, warnings=("w",), audit_annotations=NOTE), id="allow-with-warnings"),
    pytest.param(deny("no [shared-claim]"), Outcome(allowed=False, message="no [shared-claim]"), id="deny"),
    pytest.param(patch(OPS), Outcome(allowed=True, patch=OPS), id="patch"),
    pytest.param(patch(()), Outcome(allowed=True), id="patch-of-nothing-is-allow"),
    pytest.param(error("broken"), Outcome(allowed=False, message="broken", code=500), id="error"),
])
def test_constructors(made, expected):
    assert made == expected


@pytest.mark.parametrize(("made", "status"), [
    pytest.param(deny("no"), {"code": 403, "reason": "Forbidden", "message": "no"}, id="deny-is-403"),
    pytest.param(error("broken"), {"code": 500, "reason": "InternalError", "message": "broken"}, id="error-is-500"),
])
def test_a_refusal_carries_its_code(made, status):
    assert codec.response("u", made, Phase.VALIDATE)["response"]["status"] == status


BASE = {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
        "object": {"kind": "Pod"}}


def _body(**request):
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {**BASE, **request}})


@pytest.mark.parametrize(("extra", "expected"), [
    pytest.param({}, AdmissionRequest(uid="u1", kind="Pod", group="", resource="pods", operation="CREATE",
                                      object={"kind": "Pod"}), id="minimal"),
    pytest.param({"namespace": None, "name": None, "dryRun": None, "userInfo": None},
                 AdmissionRequest(uid="u1", kind="Pod", group="", resource="pods", operation="CREATE",
                                  object={"kind": "Pod"}), id="nulls-are-absent"),
    pytest.param({"namespace": "ml", "name": "p", "subResource": "ephemeralcontainers", "operation": "UPDATE",
                  "oldObject": {"kind": "Pod"}, "dryRun": True, "userInfo": {"username": "dev"},
                  "resource": {"group": None, "version": "v1", "resource": "pods"}},
                 AdmissionRequest(uid="u1", kind="Pod", group="", resource="pods", operation="UPDATE", namespace="ml",
                                  name="p", sub_resource="ephemeralcontainers", object={"kind": "Pod"},
                                  old_object={"kind": "Pod"}, dry_run=True, user_info={"username": "dev"}),
                 id="every-field"),
])
def test_parse_gives_a_typed_request(extra, expected):
    assert codec.parse(_body(**extra)) == expected


def test_a_request_object_is_checked_as_a_body_is():
    with pytest.raises(codec.BadReview, match=r"request.oldObject: required for UPDATE"):
        codec.read_request({**BASE, "operation": "UPDATE"})


@pytest.mark.parametrize("extra", [
    pytest.param({}, id="minimal"),
    pytest.param({"namespace": None, "name": None, "dryRun": None, "userInfo": None, "object": None,
                  "operation": "DELETE"}, id="nulls"),
    pytest.param({"resource": {"group": None, "version": "v1", "resource": "pods"}, "kind": {"version": "v1",
                  "kind": "Pod"}}, id="group-null-or-absent"),
    pytest.param({"userInfo": {"username": None, "uid": None, "groups": ["a"]}}, id="user-nulls"),
    pytest.param({"operation": "UPDATE"}, id="refused"),
])
def test_decoding_leaves_the_request_as_it_was(extra):
    request = copy.deepcopy({**BASE, **extra})
    before = copy.deepcopy(request)
    try:
        codec.read_request(request)
    except codec.BadReview:
        pass
    assert request == before
