"""Every endpoint through pytest-flask's client: what it answers, to good and to malformed requests."""
from __future__ import annotations

import json

import pytest

from .apiserver import ApiServer

GPU_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"containers": [{"name": "trainer", "image": "cuda:12",
                                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
OVERRIDE_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "peek", "namespace": "ml"},
                "spec": {"containers": [{"name": "c", "image": "cuda:12",
                                         "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3"}],
                                         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def review(obj=GPU_POD, **request):
    base = ApiServer(None).review(obj)
    base["request"].update(request)
    return base


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_readyz_reports_the_policy_in_force(client, app):
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["ready"] is True
    assert body["policy"]["inForce"] == "current file"
    assert body["policy"]["source"].endswith(".yaml") and body["policy"]["digest"].startswith("sha256:")
    assert "certificates" not in body  # this app serves plain HTTP (TLS is gunicorn's, tested with it)


def test_readyz_and_build_info_carry_the_installed_package_version(client):
    from importlib import metadata
    installed = metadata.version("gpu-admission")  # pip's record of what is installed, read independently
    assert client.get("/readyz").get_json()["version"] == installed
    text = client.get("/metrics").get_data(as_text=True)
    assert f'gpu_admission_build_info{{version="{installed}"}} 1.0' in text


def test_readyz_is_not_ready_while_the_certificate_cannot_load(make_app, tmp_path):
    app = make_app(tls_cert=tmp_path / "missing.crt", tls_key=tmp_path / "missing.key")
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["ready"] is False and body["certificates"]["loaded"] is False
    assert "missing.crt" in body["certificates"]["error"]


def test_metrics_count_requests_by_endpoint_kind_and_result(make_app):
    # A mutation set to warn is applied and reported; at enforce it is applied silently.
    client = make_app("rules: {default-runtime-class: warn}").test_client()
    client.post("/validate?timeout=10s", json=review(OVERRIDE_POD))
    client.post("/mutate?timeout=10s", json=review())
    client.post("/validate", data="{}", content_type="application/json")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    text = response.get_data(as_text=True)
    requests = 'gpu_admission_requests_total{dry_run="false",endpoint="%s",kind="%s",operation="%s",result="%s"} 1.0'
    assert requests % ("validate", "Pod", "CREATE", "denied") in text
    assert requests % ("mutate", "Pod", "CREATE", "allowed") in text
    assert requests % ("validate", "other", "other", "invalid") in text
    results = 'gpu_admission_rule_results_total{action="%s",outcome="%s",rule="%s"} 1.0'
    assert results % ("enforce", "denied", "visible-devices-override") in text
    assert results % ("warn", "patched", "default-runtime-class") in text
    # mutations applied silently (enforce) are counted too
    assert results % ("enforce", "patched", "default-security-context") in text
    # Sub-millisecond buckets: a decision is tens of microseconds.
    assert 'gpu_admission_request_duration_seconds_bucket{endpoint="validate",kind="Pod",le="0.00025"}' in text
    assert "gpu_admission_policy_reload_ok 1.0" in text


def test_each_app_has_its_own_metrics(make_app):
    first, second = make_app().test_client(), make_app().test_client()
    first.post("/validate", json=review())
    assert "gpu_admission_requests_total{" in first.get("/metrics").get_data(as_text=True)
    assert "gpu_admission_requests_total{" not in second.get("/metrics").get_data(as_text=True)


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
@pytest.mark.parametrize("query", ["?timeout=10s", "?timeout=5s", ""], ids=["timeout10", "timeout5", "no-query"])
def test_admission_endpoints_answer_an_admission_review(client, path, query):
    sent = review()
    response = client.post(path + query, data=json.dumps(sent), headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert response.content_type == "application/json"
    body = response.get_json()
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == sent["request"]["uid"]
    assert ("patch" in body["response"]) is (path == "/mutate")  # this pod gets defaults on /mutate only


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON"])
def test_content_type_parameters_and_case_are_accepted(client, content_type):
    response = client.post("/validate", data=json.dumps(review()), headers={"Content-Type": content_type})
    assert response.status_code == 200


MALFORMED = [
    pytest.param(b"not json", "application/json", 400, "body is not valid JSON", id="not-json"),
    pytest.param(b"", "application/json", 400, "empty body", id="empty"),
    pytest.param(b"\xff\xfe{}", "application/json", 400, "not UTF-8", id="not-utf8"),
    pytest.param(b'{"a": NaN}', "application/json", 400,
                 "body is not valid JSON: unexpected character, expected a JSON value at line 1 column 7", id="nan"),
    pytest.param(b"[" * 100000 + b"]" * 100000, "application/json", 400, "body is not valid JSON", id="deep-nesting"),
    pytest.param(b"[]", "application/json", 400, "must be a JSON object", id="array"),
    pytest.param(b'"x"', "application/json", 400, "must be a JSON object", id="string"),
    pytest.param(json.dumps(review()).encode(), "text/plain", 400, "Content-Type must be application/json",
                 id="text-plain"),
    pytest.param(json.dumps(review()).encode(), None, 400, "Content-Type must be application/json, not absent",
                 id="no-content-type"),
    pytest.param(b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}',
                 "application/json", 400, "AdmissionReview of admission.k8s.io/v1", id="v1beta1"),
    pytest.param(b'{"apiVersion": "v1", "kind": "Pod"}', "application/json", 400, "got apiVersion 'v1' and kind 'Pod'",
                 id="a-pod"),
    pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "application/json", 400,
                 "request: missing", id="no-request"),
    pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []}', "application/json",
                 400, "request: must be an object, not a list", id="request-list"),
]


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
@pytest.mark.parametrize(("body", "content_type", "status", "message"), MALFORMED)
def test_malformed_bodies_get_a_clear_status(client, caplog, path, body, content_type, status, message):
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.post(path, data=body, headers=headers)
    assert response.status_code == status
    answer = response.get_json()
    assert answer["kind"] == "Status" and answer["code"] == status and answer["status"] == "Failure"
    assert message in answer["message"]
    assert "Traceback" not in response.get_data(as_text=True)
    refused = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "bad-request"]
    assert len(refused) == 1 and refused[0].fields["status"] == status


def _without(field):
    sent = review()
    del sent["request"][field]
    return sent


def _with(**fields):
    sent = review()
    sent["request"].update(fields)
    return sent


WRONG_FIELDS = [
    pytest.param(_without("uid"), "request.uid: missing", id="no-uid"),
    pytest.param(_with(uid=""), "request.uid: must be a non-empty string", id="empty-uid"),
    pytest.param(_with(uid=7), "request.uid: must be a non-empty string", id="uid-number"),
    pytest.param(_without("kind"), "request.kind: missing", id="no-kind"),
    pytest.param(_with(kind="Pod"), "request.kind: must be an object, not a string", id="kind-string"),
    pytest.param(_with(kind={"group": "", "version": "v1"}), "request.kind.kind: must be a non-empty string",
                 id="kind-without-kind"),
    pytest.param(_with(kind={"group": 1, "version": "v1", "kind": "Pod"}), "request.kind.group: must be a string",
                 id="group-number"),
    pytest.param(_with(resource={"group": "", "version": "v1"}), "request.resource.resource", id="resource-missing"),
    pytest.param(_with(operation="PATCH"), "request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT",
                 id="operation-unknown"),
    pytest.param(_with(operation=None), "request.operation", id="operation-null"),
    pytest.param(_with(namespace=["ml"]), "request.namespace: must be a string, not a list", id="namespace-list"),
    pytest.param(_with(object=[]), "request.object: must be an object, not a list", id="object-list"),
    pytest.param(_with(object=None), "request.object: required for CREATE", id="create-without-object"),
    pytest.param(_with(operation="UPDATE", oldObject=None), "request.oldObject: required for UPDATE",
                 id="update-without-old"),
    pytest.param(_with(operation="UPDATE", object=None, oldObject={"kind": "Pod"}),
                 "request.object: required for UPDATE",
                 id="update-without-object"),
    pytest.param(_with(kind={"group": "", "kind": "Pod"}), "request.kind.version: must be a non-empty string",
                 id="kind-without-version"),
    pytest.param(_with(userInfo={"groups": ["a", 1]}), "request.userInfo.groups: must be a list of strings",
                 id="groups-with-number"),
    pytest.param(_with(userInfo={"extra": {"k": ["v"], "j": [2]}}), "request.userInfo.extra: must map names to lists",
                 id="extra-with-number"),
    pytest.param(_with(dryRun="yes"), "request.dryRun: must be a boolean, not a string", id="dryrun-string"),
    pytest.param(_with(userInfo="alice"), "request.userInfo: must be an object", id="userinfo-string"),
    pytest.param(_with(userInfo={"username": 5}), "request.userInfo.username: must be a string", id="username-number"),
    pytest.param(_with(userInfo={"groups": "admins"}), "request.userInfo.groups: must be a list of strings",
                 id="groups-string"),
    pytest.param(_with(userInfo={"extra": {"k": "v"}}), "request.userInfo.extra: must map names to lists",
                 id="extra-not-lists"),
    pytest.param(_with(subResource=3), "request.subResource: must be a string", id="subresource-number"),
]


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
@pytest.mark.parametrize(("sent", "message"), WRONG_FIELDS)
def test_wrong_fields_are_named(client, path, sent, message):
    response = client.post(path, json=sent)
    assert response.status_code == 400
    assert message in response.get_json()["message"]


@pytest.mark.parametrize("value", [None], ids=["null"])
@pytest.mark.parametrize("field", ["namespace", "name", "subResource", "oldObject", "options", "dryRun", "userInfo"])
def test_null_optional_fields_read_as_absent_like_go_does(client, field, value):
    response = client.post("/validate", json=_with(**{field: value}))
    assert response.status_code == 200


@pytest.mark.parametrize("kind", [
    pytest.param({"group": None, "version": "v1", "kind": "Pod"}, id="group-null"),
    pytest.param({"version": "v1", "kind": "Pod"}, id="group-absent"),
])
def test_core_group_null_or_absent_reads_as_empty_like_go_does(client, kind):
    response = client.post("/validate", json=_with(kind=kind, resource={"group": None, "version": "v1",
                                                                        "resource": "pods"}))
    assert response.status_code == 200
    assert response.get_json()["response"]["allowed"] is True


@pytest.mark.parametrize(("limit", "size", "status"), [
    pytest.param(None, 3 * 1024 * 1024 - 200, 200, id="default-limit-3MiB-fits"),
    pytest.param(None, 3 * 1024 * 1024 + 1, 413, id="default-limit-3MiB-exceeded"),
    pytest.param(4096, 4096, 200, id="at-the-limit"),
    pytest.param(4096, 4097, 413, id="one-byte-over"),
])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_body_size_limit(make_app, limit, size, status, chunked):
    sent = review()
    sent["request"]["object"]["metadata"]["annotations"] = {"filler": ""}
    padding = size - len(json.dumps(sent).encode())
    sent["request"]["object"]["metadata"]["annotations"]["filler"] = "x" * padding
    body = json.dumps(sent).encode()
    assert len(body) == size
    app = make_app(**({"max_body_bytes": limit} if limit else {}))
    environ = {"wsgi.input_terminated": True} if chunked else {}
    headers = {"Content-Type": "application/json"}
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    response = app.test_client().post("/validate", data=body, headers=headers, environ_overrides=environ)
    assert response.status_code == status
    if status == 413:
        assert "exceeds the limit" in response.get_json()["message"]


def test_a_content_length_that_is_not_a_number_is_a_400(client):
    # gunicorn refuses such a request itself; another WSGI server may pass it on.
    response = client.post("/validate", data=json.dumps(review()), headers={"Content-Type": "application/json"},
                           environ_overrides={"CONTENT_LENGTH": "12ab"})
    assert response.status_code == 400
    assert response.get_json()["message"] == "Content-Length is not a number"


@pytest.mark.parametrize(("method", "path", "status"), [
    pytest.param("GET", "/validate", 405, id="get-validate"),
    pytest.param("PUT", "/mutate", 405, id="put-mutate"),
    pytest.param("POST", "/healthz", 405, id="post-healthz"),
    pytest.param("GET", "/nope", 404, id="unknown-path"),
    pytest.param("GET", "/validate/", 404, id="trailing-slash"),
])
def test_wrong_method_or_path_is_a_json_status(client, method, path, status):
    response = client.open(path, method=method)
    assert response.status_code == status
    body = response.get_json()
    assert body["kind"] == "Status" and body["code"] == status
    if status == 405:
        assert "POST" in response.headers["Allow"] or "GET" in response.headers["Allow"]
