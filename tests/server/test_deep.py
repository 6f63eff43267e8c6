"""Input nested as deep as the JSON parser takes (1,024 levels) never makes our own code fail into
"allowed without checks" (issue 12): every walk and comparison over request content is iterative or
bounded, and each has a test here. The bodies are written as text: Python's json module recurses too."""
from __future__ import annotations

import json

import pytest

from webhook.admission.handlers import differ

from .apiserver import ApiServer, judge

DEEP = '"__deep__"'


def _nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def _body(review: dict, depth: int) -> bytes:
    text = json.dumps(review)
    assert text.count(DEEP) >= 1
    return text.replace(DEEP, _nested(depth)).encode()


def _pod(env_value: str | None, *, labels: dict | None = None, env_name: str = "NVIDIA_VISIBLE_DEVICES") -> dict:
    container = {"name": "c", "image": "busybox", "aaa-deep": "__deep__"}  # compared ahead of env
    if env_value is not None:
        container["env"] = [{"name": env_name, "value": env_value}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "deep", "namespace": "ml", "labels": labels or {}},
            "spec": {"containers": [container]}}


def _send(client, path: str, review: dict, depth: int):
    body = _body(review, depth)
    response = client.post(f"{path}?timeout=10s", data=body, content_type="application/json")
    return judge(path, review["request"], response.status_code, dict(response.headers), response.get_data())


@pytest.mark.parametrize("depth", [10, 500, 980, 1000, 1015])
def test_an_update_nested_deep_ahead_of_a_changed_field_is_evaluated(client, depth):
    """The "only status or metadata changed?" comparison: an update that adds NVIDIA_VISIBLE_DEVICES is
    denied at every depth (before, depth 1,000 raised RecursionError and was allowed with a warning)."""
    # The same keys in old and new, so that the comparison goes down the deep subtree before it reaches env.
    old = _pod("all", env_name="UNRELATED")
    review = ApiServer(None).review(_pod("all"), operation="UPDATE", old=old, namespace="ml")
    answer = _send(client, "/validate", review, depth)
    assert not answer.allowed and "[visible-devices-override]" in answer.message
    assert not any("could not evaluate" in w for w in answer.warnings)


@pytest.mark.parametrize("depth", [10, 1000, 1015])
def test_a_deep_update_that_changes_only_labels_is_never_blocked(client, depth):
    """The benign twin: the same deep object, only its labels changed, goes through unevaluated."""
    old, new = _pod("all"), _pod("all", labels={"a": "b"})
    review = ApiServer(None).review(new, operation="UPDATE", old=old, namespace="ml")
    answer = _send(client, "/validate", review, depth)
    assert answer.allowed and not answer.warnings


@pytest.mark.parametrize(("a", "b", "differs"), [
    pytest.param(_nested(5000), _nested(5000), False, id="equal-5000-deep"),
    pytest.param(_nested(5000), _nested(5000, "2"), True, id="leaf-differs-5000-deep"),
    pytest.param('{"a": [1, {"b": 2}]}', '{"a": [1, {"b": 2}]}', False, id="equal"),
    pytest.param('{"a": 1}', '{"b": 1}', True, id="other-key"),
    pytest.param('{"a": [1]}', '{"a": [1, 2]}', True, id="longer-list"),
    pytest.param('{"a": {}}', '{"a": []}', True, id="dict-and-list"),
    pytest.param('{"a": 1}', '{"a": 1.0}', False, id="int-and-float-as-python-compares"),
    pytest.param('null', '{}', True, id="null-and-object"),
])
def test_the_comparison_is_iterative(a, b, differs):
    import orjson

    def load(text):  # orjson stops at 1,024 levels; deeper values are built directly
        if text.startswith("[" * 100):
            depth = text.count("[")
            value = int(text.strip("[]"))
            for _ in range(depth):
                value = [value]
            return value
        return orjson.loads(text)

    assert differ(load(a), load(b)) is differs


def test_first_available_alternatives_are_read_one_level_deep(client):
    """DeviceSubRequests have no firstAvailable: alternatives nested 1,000 deep are not walked into."""
    level = '{"name": "x", "deviceClassName": "gpu.nvidia.com", "firstAvailable": ['
    nested = level * 500 + '{"name": "x"}' + "]}" * 500  # 1,000 levels: written as text, json.dumps would recurse
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": ["__deep__"]}]}}}
    review = ApiServer(None).review(claim, namespace="ml")
    body = json.dumps(review).replace(DEEP, nested)
    response = client.post("/validate?timeout=10s", data=body, content_type="application/json")
    answer = judge("/validate", review["request"], response.status_code, dict(response.headers), response.get_data())
    assert not any("could not evaluate" in w or "internal" in w for w in answer.warnings)


@pytest.mark.parametrize("depth", [10, 1000])
def test_a_patch_beside_a_deep_subtree(client, depth):
    """The patch diff skips subtrees shared by identity: a deep one beside the defaults costs nothing."""
    pod = _pod(None)
    pod["spec"]["runtimeClassName"] = "nvidia"
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    review = ApiServer(None).review(pod, namespace="ml")
    answer = _send(client, "/mutate", review, depth)
    assert answer.allowed and answer.patch
    assert not any("could not evaluate" in w for w in answer.warnings)


def test_deeper_than_the_parser_takes_is_a_400(client):
    review = ApiServer(None).review(_pod(None), namespace="ml")
    response = client.post("/validate", data=_body(review, 1100), content_type="application/json")
    assert response.status_code == 400 and "nested too deeply" in response.get_json()["message"]
