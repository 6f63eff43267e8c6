"""gunicorn configuration of the deployed container:

    gunicorn --config python:webhook.server.gunicorn_conf webhook.server.wsgi:app

Reads the GPU_ADMISSION_* variables when gunicorn loads it (see webhook/settings.py and docs/server.md)."""
import os
import sys

from webhook.server.runner import options
from webhook.settings import Settings, SettingsError

try:
    _settings = Settings.from_env(os.environ)
except SettingsError as exc:
    sys.exit(f"gpu-admission: {exc}")

# gunicorn reads its settings as this module's names.
globals().update(options(_settings))
