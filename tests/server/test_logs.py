"""Structured logs: one JSON object per line, carrying ids and rule results, never an env var's value
or the object itself."""
from __future__ import annotations

import json
import logging
import sys

import pytest

from webhook import logs, settings
from webhook.logs import JsonFormatter, TextFormatter, logging_config

SECRET = "tok-9f8e7d6c5b4a"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "leaky", "namespace": "ml",
                                                       "annotations": {"note": f"annotation-{SECRET}"}},
       "spec": {"containers": [{"name": "c", "image": f"registry.example.invalid/img-{SECRET}:1",
                                "command": ["run", f"--token={SECRET}"],
                                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": f"all-{SECRET}"},
                                        {"name": "API_TOKEN", "value": SECRET}],
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def _record(msg="hello", fields=None, exc_info=None, level=logging.INFO):
    record = logging.LogRecord("gpu_admission.x", level, __file__, 1, msg, None, exc_info)
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


@pytest.mark.parametrize("level, name, severity", [
    pytest.param(logging.DEBUG, "debug", "DEBUG", id="debug"),
    pytest.param(logging.INFO, "info", "INFO", id="info"),
    pytest.param(logging.WARNING, "warn", "WARNING", id="warn"),
    pytest.param(logging.ERROR, "error", "ERROR", id="error"),
    pytest.param(logging.CRITICAL, "error", "CRITICAL", id="critical"),
    pytest.param(logging.INFO + 5, "info", "INFO", id="in-between"),
])
def test_levels_are_named_ours_and_severity_as_log_collectors_read_it(level, name, severity):
    parsed = json.loads(JsonFormatter().format(_record(level=level)))
    assert (parsed["level"], parsed["severity"]) == (name, severity)
    assert TextFormatter().format(_record(level=level)).split()[1] == name


def test_a_field_cannot_hide_the_lines_own_keys():
    parsed = json.loads(JsonFormatter().format(_record(fields={"severity": "DEBUG", "level": "x", "event": "e"})))
    assert (parsed["severity"], parsed["level"], parsed["event"]) == ("INFO", "info", "e")


def test_names_and_values_are_capped():
    huge = "n" * 10_000
    fields = {"name": huge, "k" * 500: "v", "items": list(range(1000)), "nested": {"a": {"b": {"c": {"d": {"e": 1}}}}}}
    line = JsonFormatter().format(_record(msg="m" * 10_000, fields=fields))
    parsed = json.loads(line)
    assert len(parsed["name"]) == logs.VALUE_MAX and parsed["name"].endswith(logs.TRUNCATED)
    assert len(parsed["message"]) == logs.MESSAGE_MAX
    assert max(len(k) for k in parsed) == logs.NAME_MAX
    assert len(parsed["items"]) == logs.ITEMS_MAX + 1 and parsed["items"][-1] == f"{logs.TRUNCATED} 950 more"
    assert isinstance(parsed["nested"]["a"]["b"]["c"], str)  # deeper than DEPTH_MAX: flattened to a string
    assert len(line) < 4 * logs.VALUE_MAX + logs.MESSAGE_MAX + logs.ITEMS_MAX * 8 + 500
    text = TextFormatter().format(_record(msg="m" * 10_000, fields=fields))
    assert len(text) < len(line) + 200 and "\n" not in text


def test_short_values_are_untouched():
    fields = {"name": "trainer-7f", "errors": ["a", "b"], "count": 3}
    assert json.loads(JsonFormatter().format(_record(fields=fields))).items() >= fields.items()


@pytest.mark.parametrize("fields, expected", [
    pytest.param({"event": "started", "tls": True}, "event=started tls=true", id="plain"),
    pytest.param({"error": 'two words "quoted"'}, 'error="two words \\"quoted\\""', id="quoted"),
    pytest.param({"path": "a\nb"}, 'path="a\\nb"', id="control-character"),
    pytest.param({"errors": ["x", "y"]}, 'errors=["x","y"]', id="list"),
])
def test_text_format_is_one_line_of_key_values(fields, expected):
    line = TextFormatter().format(_record("webhook\nready", fields=fields))
    assert "\n" not in line
    assert line.split()[1:3] == ["info", "gpu_admission.x:"]
    assert line.endswith(" webhook\\nready " + expected)


@pytest.mark.parametrize("log_format, formatter", [pytest.param("json", JsonFormatter, id="json"),
                                                   pytest.param("text", TextFormatter, id="text")])
def test_logging_config_uses_the_chosen_format(log_format, formatter):
    config = logging_config("warn", log_format)
    assert config["formatters"][config["handlers"]["stderr"]["formatter"]]["()"] is formatter
    assert config["loggers"]["gpu_admission"]["level"] == "WARNING"


@pytest.mark.parametrize("env, level, log_format", [
    pytest.param({}, "info", "json", id="defaults"),
    pytest.param({settings.ENV_LOG_LEVEL: "warn", settings.ENV_LOG_FORMAT: "text"}, "warn", "text", id="ours"),
    pytest.param({settings.ENV_LOG_LEVEL: "WARNING"}, "warn", "json", id="python-name"),
    pytest.param({settings.ENV_LOG_LEVEL: "critical"}, "error", "json", id="critical-is-error"),
])
def test_log_settings_from_the_environment(env, level, log_format):
    got = settings.Settings.from_env(env)
    assert (got.log_level, got.log_format) == (level, log_format)


@pytest.mark.parametrize("env, message", [
    pytest.param({settings.ENV_LOG_FORMAT: "xml"}, "GPU_ADMISSION_LOG_FORMAT must be one of json, text", id="format"),
    pytest.param({settings.ENV_LOG_LEVEL: "verbose"}, "GPU_ADMISSION_LOG_LEVEL must be one of", id="level"),
])
def test_bad_log_settings_are_refused_by_name(env, message):
    with pytest.raises(settings.SettingsError, match=message):
        settings.Settings.from_env(env)


@pytest.mark.parametrize(("name", "logged"), [
    pytest.param("x" * (1024 * 1024), "x" * 253 + f"...({1024 * 1024 - 253} more bytes)", id="megabyte-name-capped"),
    # counted in UTF-8 bytes (3 a Japanese character), cut between characters: 84 of them are 252 bytes
    pytest.param("名" * 100, "名" * 84 + "...(48 more bytes)", id="japanese-name-capped-in-bytes"),
    pytest.param("名" * 84, "名" * 84, id="japanese-name-within-the-cap-whole"),
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
