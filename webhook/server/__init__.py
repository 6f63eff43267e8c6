"""Running the webhook as deployed: gunicorn over TLS, certificates, reloads, JSON logs."""
