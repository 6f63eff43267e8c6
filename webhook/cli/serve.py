"""`gpu-admission serve` (`make run`): the webhook on https://127.0.0.1:8443, under the same gunicorn
configuration as the deployed container, with development certificates generated on first run."""
from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from webhook.cli.exits import fail
from webhook.config import ConfigError, load_policy
from webhook.settings import FAILURE_MODES, LOG_FORMATS, LOG_LEVEL_ALIASES, LOG_LEVELS, Settings, SettingsError

EXAMPLE_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda"},
    "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                             "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="run the webhook on https://127.0.0.1:8443 with development certificates",
        description="Serve /validate, /mutate, /healthz, /readyz and /metrics over HTTPS with gunicorn, configured as "
        "the deployed container. Without --cert/--key, development certificates are generated into --certs-dir "
        "when missing.")
    p.add_argument("--policy", type=Path, help="policy file (default: the shipped default); reloaded when it changes")
    p.add_argument("--bind", default="127.0.0.1:8443", help="HOST:PORT (default: 127.0.0.1:8443)")
    p.add_argument("--certs-dir", type=Path, default=Path("certs"), help="where development certificates live "
                   "(default: certs)")
    p.add_argument("--cert", type=Path, help="serving certificate (PEM); with --key, instead of development ones")
    p.add_argument("--key", type=Path, help="its private key (PEM)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default: 2: while one "
                   "restarts, the other serves)")
    p.add_argument("--max-connections", type=int, default=4096, help="open connections per worker; past it a new "
                   "one is refused at once (default: 4096)")
    p.add_argument("--log-level", choices=LOG_LEVELS + tuple(LOG_LEVEL_ALIASES), default="info",
                   help="debug, info, warn or error (default: info)")
    p.add_argument("--log-format", choices=LOG_FORMATS, default="json",
                   help="json: one object a line, with `severity` for log collectors (default); "
                        "text: one readable line")
    p.add_argument("--on-error", choices=FAILURE_MODES, default="allow",
                   help="what a request gets when evaluating it fails internally (default: allow, with a warning)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.server.runner import Server
    from webhook.tls import certs

    if (args.cert is None) != (args.key is None):
        return fail("give --cert and --key together", command="serve")
    if args.policy is not None:
        try:
            load_policy(args.policy)  # a clear error now, rather than a worker that fails to boot
        except ConfigError as exc:
            return fail("\n  ".join([f"policy {exc.source} does not load:", *exc.errors]), command="serve")
    ca = None
    if args.cert is None:
        try:
            args.cert, args.key, ca, created = certs.ensure_dev_certs(args.certs_dir)
        except OSError as exc:
            return fail(f"cannot write development certificates to {args.certs_dir}: {exc}", command="serve")
        if created:
            print(f"generated development certificates in {args.certs_dir}/ (CA: {ca})")
    try:
        settings = Settings(policy_path=args.policy, tls_cert=args.cert, tls_key=args.key, bind=args.bind,
                            workers=args.workers, max_connections=args.max_connections, log_level=args.log_level,
                            log_format=args.log_format,
                            failure_mode=args.on_error)
    except SettingsError as exc:
        return fail(str(exc), command="serve")
    _print_usage(settings, ca)
    Server(settings).run()
    return 0


def _print_usage(settings: Settings, ca: Path | None) -> None:
    host, _, port = settings.bind.rpartition(":")
    if host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    url = f"https://{host}:{port}"
    tls = f"--cacert {shlex.quote(str(ca))}" if ca else "--insecure"
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "00000000-0000-0000-0000-000000000001", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
        "namespace": "default", "userInfo": {"username": "dev"}, "object": EXAMPLE_POD}}
    policy = settings.policy_path or "the shipped default"
    print(f"gpu-admission webhook on {url} (policy: {policy}); Ctrl-C stops it. Try:\n"
          f"  curl {tls} {url}/readyz\n"
          f"  curl {tls} -H 'Content-Type: application/json' '{url}/validate?timeout=10s' \\\n"
          f"    -d {shlex.quote(json.dumps(review, separators=(',', ':')))}\n"
          f"  (the same body to /mutate returns the JSON Patch, base64 in response.patch)", flush=True)
