"""Structured logs: one JSON object per line, carrying ids and rule results, never an env var's value
or the object itself."""
from __future__ import annotations

import json
import logging
import sys

import pytest

from webhook.server.logs import JsonFormatter, logging_config

SECRET = "tok-9f8e7d6c5b4a"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "leaky", "namespace": "ml",
                                                       "annotations": {"note": f"annotation-{SECRET}"}},
       "spec": {"containers": [{"name": "c", "image": f"registry.example.invalid/img-{SECRET}:1",
                                "command": ["run", f"--token={SECRET}"],
                                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": f"all-{SECRET}"},
                                        {"name": "API_TOKEN", "value": SECRET}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def _record(msg="hello", fields=None, exc_info=None):
    record = logging.LogRecord("gpu_admission.x", logging.INFO, __file__, 1, msg, None, exc_info)
    if fields is not None:
        record.fields = fields
    return record


@pytest.mark.parametrize(("record", "expected"), [
    pytest.param(_record(), {"level": "info", "logger": "gpu_admission.x", "message": "hello"}, id="plain"),
    pytest.param(_record(fields={"event": "admission", "uid": "u1"}), {"event": "admission", "uid": "u1"}, id="fields"),
    pytest.param(_record("two\nlines"), {"message": "two\nlines"}, id="newline-escaped"),
])
def test_one_json_object_per_line(record, expected):
    line = JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert expected.items() <= parsed.items()
    assert parsed["time"].endswith("Z")


def test_exceptions_are_carried_in_the_line():
    try:
        raise ValueError("bad")
    except ValueError:
        line = JsonFormatter().format(_record(exc_info=sys.exc_info()))
    assert "ValueError: bad" in json.loads(line)["exception"] and "\n" not in line


def test_logging_config_routes_gunicorn_and_webhook_loggers_to_json():
    config = logging_config("debug")
    assert config["loggers"]["gunicorn.error"]["handlers"] == ["stderr"]
    assert config["loggers"]["gpu_admission"]["level"] == "DEBUG"
    assert config["handlers"]["stderr"]["formatter"] == "json"


@pytest.mark.parametrize("overrides", ["", "mode: audit", "rules: {visible-devices-override: warn}"],
                         ids=["enforce", "audit", "warn"])
def test_decision_logs_carry_no_values(apiserver_for, caplog, overrides):
    caplog.set_level("DEBUG", logger="gpu_admission")
    result = apiserver_for(overrides).admit(POD)
    lines = [JsonFormatter().format(r) for r in caplog.records]
    decisions = [json.loads(line) for line in lines if '"event":"admission"' in line]
    assert len(decisions) >= 2
    assert all(d["name"] == "leaky" and d["namespace"] == "ml" and d["kind"] == "Pod" for d in decisions)
    assert any(v["rule"] == "visible-devices-override" for d in decisions for v in d.get("violations", []))
    assert not any(SECRET in line for line in lines)
    assert not any(SECRET in m for m in [result.validate.message, *result.warnings])  # nor the answers


@pytest.mark.parametrize(("name", "logged"), [
    pytest.param("x" * (1024 * 1024), "x" * 253 + f"...({1024 * 1024 - 253} more)", id="megabyte-name-capped"),
    pytest.param("y" * 253, "y" * 253, id="longest-kubernetes-name-whole"),
    pytest.param("a\u2028[double-mechanism] forged\u202e", "a\\u2028[double-mechanism] forged\\u202e",
                 id="separators-escaped"),
])
def test_logged_names_are_capped_and_escaped(apiserver_for, caplog, name, logged):
    pod = {**POD, "metadata": {"name": name, "namespace": "ml"}}
    apiserver_for().send("/validate", apiserver_for().review(pod))
    lines = [JsonFormatter().format(r) for r in caplog.records]
    (decision,) = [json.loads(line) for line in lines if '"event":"admission"' in line]
    assert decision["name"] == logged
    assert max(map(len, lines)) < 8 * 1024


def test_a_decision_line_logs_the_first_findings_and_counts_the_rest(apiserver_for, caplog):
    pod = {**POD, "spec": {"containers": [{**POD["spec"]["containers"][0], "name": f"c{i}"} for i in range(500)]}}
    apiserver_for().send("/validate", apiserver_for().review(pod))
    (decision,) = [json.loads(JsonFormatter().format(r)) for r in caplog.records
                   if getattr(r, "fields", {}).get("event") == "admission"]
    assert len(decision["violations"]) == 20 and decision["violations_not_logged"] >= 480
