"""The deployed app: `gunicorn ... webhook.server.wsgi:app`, configured from the GPU_ADMISSION_*
variables when a worker loads this module."""
import os

from webhook.server.runner import build_app
from webhook.settings import Settings

app = build_app(Settings.from_env(os.environ))
