"""Structured logs on stderr, for gunicorn's own lines and the webhook's: one JSON object per line (the
default), or one readable text line (`--log-format text`, GPU_ADMISSION_LOG_FORMAT=text).

Levels are named debug, info, warn and error. Each JSON line also carries `severity` in the words of
Google Cloud Logging's LogSeverity (DEBUG, INFO, WARNING, ERROR, CRITICAL), which it and other
collectors (Fluent Bit, Vector, Datadog) read: without it a collector takes every stderr line for an
error.

Callers put data in `extra={"fields": {...}}`; what they pass is theirs to keep small: ids, names,
rule ids and counts, never an env var's value or a whole object. The formatter bounds it anyway: field
names and string values are cut to a fixed length, lists to a fixed count, nesting to a fixed depth,
so that no request can make a log line grow without end."""
from __future__ import annotations

import json
import logging
import time
from typing import Any

LOGGER = "gpu_admission"
FORMATS = ("json", "text")
LEVEL_NAMES = ("debug", "info", "warn", "error")
# Python's level -> (our level name, Cloud Logging severity)
_LEVELS = {logging.DEBUG: ("debug", "DEBUG"), logging.INFO: ("info", "INFO"), logging.WARNING: ("warn", "WARNING"),
           logging.ERROR: ("error", "ERROR"), logging.CRITICAL: ("error", "CRITICAL")}
_EXCEPTION_MAX = 4000
MESSAGE_MAX = 1000
NAME_MAX = 64  # a field's name
VALUE_MAX = 512  # a string value, anywhere in a field
ITEMS_MAX = 50  # entries of a list or mapping
DEPTH_MAX = 4
TRUNCATED = "…"


def level_names(levelno: int) -> tuple[str, str]:
    """(level, severity) of a Python logging level; levels in between take the one below."""
    for number in sorted(_LEVELS, reverse=True):
        if levelno >= number:
            return _LEVELS[number]
    return _LEVELS[logging.DEBUG]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + TRUNCATED


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` with strings, lists, mappings and nesting cut to the limits above (JSON-ready)."""
    if isinstance(value, str):
        return _cut(value, VALUE_MAX)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= DEPTH_MAX:
        return _cut(str(value), VALUE_MAX)
    if isinstance(value, dict):
        items = list(value.items())
        out = {_cut(str(k), NAME_MAX): bounded(v, depth + 1) for k, v in items[:ITEMS_MAX]}
        if len(items) > ITEMS_MAX:
            out[TRUNCATED] = f"{len(items) - ITEMS_MAX} more"
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        seq = list(value)
        out_list = [bounded(v, depth + 1) for v in seq[:ITEMS_MAX]]
        if len(seq) > ITEMS_MAX:
            out_list.append(f"{TRUNCATED} {len(seq) - ITEMS_MAX} more")
        return out_list
    return _cut(str(value), VALUE_MAX)


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def _fields(record: logging.LogRecord) -> dict:
    fields = getattr(record, "fields", None)
    return bounded(fields) if isinstance(fields, dict) else {}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level, severity = level_names(record.levelno)
        entry = {
            "time": _timestamp(record),
            "severity": severity,
            "level": level,
            "logger": record.name,
            "message": _cut(record.getMessage(), MESSAGE_MAX),
        }
        for key, value in _fields(record).items():
            entry.setdefault(key, value)  # a field never hides the line's own keys
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)[-_EXCEPTION_MAX:]
        return json.dumps(entry, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """`2026-12-01T19:33:04.123Z warn  gpu_admission.tls: message key=value key="two words"`: one line,
    values JSON-quoted when they hold a space, a quote or a control character."""

    def format(self, record: logging.LogRecord) -> str:
        level, _ = level_names(record.levelno)
        message = json.dumps(_cut(record.getMessage(), MESSAGE_MAX))[1:-1]
        parts = [f"{_timestamp(record)} {level:<5} {record.name}: {message}"]
        for key, value in _fields(record).items():
            parts.append(f"{key}={_text_value(value)}")
        if record.exc_info:
            parts.append("exception=" + json.dumps(self.formatException(record.exc_info)[-_EXCEPTION_MAX:]))
        return " ".join(parts)


def _text_value(value: Any) -> str:
    if isinstance(value, str):
        plain = value and not any(c in value for c in ' "=\\') and value.isprintable()
        return value if plain else json.dumps(value)
    return json.dumps(value, default=str, separators=(",", ":"))


def python_level(level: str) -> str:
    """The logging module's (and gunicorn's) name of one of ours: warn -> WARNING."""
    return {"warn": "WARNING"}.get(level.lower(), level.upper())


def logging_config(level: str, log_format: str = "json") -> dict:
    """A `logging.config.dictConfig` mapping (gunicorn's `logconfig_dict`): gunicorn's error log and
    the webhook's loggers in `log_format` on stderr. gunicorn's access log stays off: every admission
    decision worth reading is logged by the webhook itself, with what an access line lacks."""
    level = python_level(level)
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {log_format: {"()": formatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": log_format,
                                "stream": "ext://sys.stderr"}},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
            LOGGER: {"level": level, "handlers": ["stderr"], "propagate": False},
        },
        "root": {"level": "WARNING", "handlers": ["stderr"]},
    }
