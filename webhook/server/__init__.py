"""The process: gunicorn as deployed, its worker, and the threads that watch for reloads. The top layer: it runs
the app (webhook.app); nothing below imports it."""
