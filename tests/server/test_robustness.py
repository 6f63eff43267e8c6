"""Whatever arrives, the answer is a well-formed AdmissionReview or a clear 400: never a 5xx, never a
stack trace (hypothesis feeds arbitrary JSON into every field the review layer and the engine read)."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .apiserver import ApiServer, judge

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=10)
CONTAINER = st.fixed_dictionaries({"name": st.text(max_size=5), "image": st.text(max_size=5)}, optional={
    "env": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["CUDA_VISIBLE_DEVICES", "X"]), "value": JSON}),
                    max_size=2) | JSON,
    "resources": st.fixed_dictionaries({"limits": st.dictionaries(
        st.sampled_from(["nvidia.com/gpu", "cpu", "nvidia.com/gpu.shared"]), JSON, max_size=2)}) | JSON,
    "securityContext": JSON,
    "volumeMounts": JSON,
})
POD = st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                             "metadata": st.fixed_dictionaries({"name": st.text(max_size=5)}, optional={
                                 "annotations": JSON, "labels": JSON}) | JSON,
                             "spec": st.fixed_dictionaries({"containers": st.lists(CONTAINER, max_size=2) | JSON},
                                                           optional={"nodeSelector": JSON, "runtimeClassName": JSON,
                                                                     "volumes": JSON, "resourceClaims": JSON}) | JSON})
FIELDS = st.sampled_from(["uid", "kind", "resource", "operation", "namespace", "name", "object", "oldObject",
                          "userInfo",
                          "dryRun", "subResource", "options"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pod=POD, broken=st.dictionaries(FIELDS, JSON, max_size=2), operation=st.sampled_from(["CREATE", "UPDATE"]),
       path=st.sampled_from(["/validate", "/mutate"]))
def test_arbitrary_requests_get_an_answer_or_a_400(client, pod, broken, operation, path):
    review = ApiServer(None).review(pod, operation=operation, old=pod if operation == "UPDATE" else None,
                                    namespace="ml")
    review["request"].update(broken)
    response = client.post(f"{path}?timeout=10s", data=json.dumps(review), content_type="application/json")
    assert response.status_code in (200, 400), response.get_data()
    if response.status_code == 200:
        answer = judge(path, review["request"], 200, dict(response.headers), response.get_data())
        assert not any("could not evaluate" in w for w in answer.warnings), "the engine raised"
    else:
        body = response.get_json()
        assert body["kind"] == "Status" and body["message"].startswith("request.")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=JSON)
def test_arbitrary_json_bodies_get_a_400(client, body):
    response = client.post("/validate", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["kind"] == "Status"
