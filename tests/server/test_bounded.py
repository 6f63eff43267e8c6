"""Answers are bounded in every mode (issue 12): a Pod of 10,000 containers that each break a rule is
answered in at most 256 KiB and within 2 s, carrying the first findings and, per rule, how many more."""
from __future__ import annotations

import base64
import json
import time

import pytest

from webhook.admission import codec, render
from webhook.admission.render import MAX_CARRIED

from .apiserver import ApiServer, judge

CONTAINERS = 10_000
ANSWER_MAX = 256 * 1024
MODES = {
    "audit": "mode: audit",
    "warn": "rules: {run-as-root: warn}",
    "enforce": "rules: {run-as-root: enforce}",
}


def _pod(containers: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wide", "namespace": "ml"}, "spec": {
        "nodeSelector": {"workload.example.com/gpu-allocation": "device-plugin"}, "runtimeClassName": "nvidia",
        "containers": [{"name": f"c{i}", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                        "securityContext": {"runAsUser": 0},
                        "resources": {"limits": {"nvidia.com/gpu": "1"}}} for i in range(containers)]}}


@pytest.fixture(scope="module")
def wide_review():
    return json.dumps(ApiServer(None).review(_pod(CONTAINERS), namespace="ml")).encode()


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_ten_thousand_findings_make_a_small_answer_quickly(make_app, wide_review, mode, path):
    client = make_app(MODES[mode]).test_client()
    started = time.monotonic()
    response = client.post(f"{path}?timeout=10s", data=wide_review, content_type="application/json")
    took = time.monotonic() - started
    body = response.get_data()
    assert response.status_code == 200
    assert len(body) <= ANSWER_MAX, len(body)
    assert took < 2.0, took
    answer = judge(path, json.loads(wide_review)["request"], 200, dict(response.headers), body)
    texts = answer.warnings + list(answer.annotations.values()) + ([answer.message] if not answer.allowed else [])
    said = " ".join(texts)
    if mode == "enforce" and path == "/validate":
        assert not answer.allowed
        lines = answer.message.split("\n")
        assert len(lines) == MAX_CARRIED + 1 and lines[-1].startswith(f"... and {CONTAINERS - MAX_CARRIED} more "
                                                                      "run-as-root")
    elif mode == "audit":
        rule = "run-as-root" if path == "/validate" else "default-security-context"
        assert answer.allowed and answer.patch is None  # a dry run patches nothing
        assert len(answer.annotations[rule].encode()) <= render.ANNOTATION_VALUE_MAX_BYTES
        assert answer.annotations[rule].endswith(f"not shown; run `gpu-admission check` on the manifest to see them "
                                                 "all "
                                                 f"[{rule}]")
        assert sum(len(v.encode()) for v in answer.annotations.values()) <= render.ANNOTATIONS_MAX_BYTES + 200
        assert answer.annotations["mode"] == "dry-run"
    if path == "/mutate" and mode != "audit":  # the defaults of 10,000 containers: too large a patch to send
        assert not answer.allowed and "JSON patch of" in answer.message
    else:
        assert "findings not shown" in said or "more warning" in said, said[-300:]


def test_a_patch_too_large_to_send_refuses_the_request(make_app):
    """The defaults for 10,000 containers make a patch of megabytes: never sent, never allowed without them."""
    pod = _pod(CONTAINERS)
    for c in pod["spec"]["containers"]:
        del c["securityContext"]
    body = json.dumps(ApiServer(None).review(pod, namespace="ml")).encode()
    response = make_app().test_client().post("/mutate?timeout=10s", data=body, content_type="application/json")
    assert len(response.get_data()) <= ANSWER_MAX
    answer = judge("/mutate", json.loads(body)["request"], 200, dict(response.headers), response.get_data())
    assert not answer.allowed and "more than the" in answer.message and answer.patch is None


def test_a_patch_that_fits_is_sent(make_app):
    """The benign twin: the same Pod with 10 containers gets its defaults as a patch."""
    pod = _pod(10)
    for c in pod["spec"]["containers"]:
        del c["securityContext"]
    body = json.dumps(ApiServer(None).review(pod, namespace="ml")).encode()
    response = make_app().test_client().post("/mutate?timeout=10s", data=body, content_type="application/json")
    answer = judge("/mutate", json.loads(body)["request"], 200, dict(response.headers), response.get_data())
    assert answer.allowed and answer.patch
    assert len(base64.b64encode(json.dumps(answer.patch).encode())) < codec.PATCH_MAX_BYTES
