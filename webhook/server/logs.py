"""Structured logs: one JSON object per line on stderr, for gunicorn's own lines and the webhook's.

Callers put data in `extra={"fields": {...}}`; what they pass is theirs to keep small: ids, names,
rule ids and counts, never an env var's value or a whole object."""
from __future__ import annotations

import json
import logging
import time

LOGGER = "gpu_admission"
_EXCEPTION_MAX = 4000


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)[-_EXCEPTION_MAX:]
        return json.dumps(entry, default=str, separators=(",", ":"))


def logging_config(level: str) -> dict:
    """A `logging.config.dictConfig` mapping (gunicorn's `logconfig_dict`): gunicorn's error log and
    the webhook's loggers as JSON on stderr. gunicorn's access log stays off: every admission decision
    worth reading is logged by the webhook itself, with what an access line lacks."""
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
            LOGGER: {"level": level, "handlers": ["stderr"], "propagate": False},
        },
        "root": {"level": "WARNING", "handlers": ["stderr"]},
    }
