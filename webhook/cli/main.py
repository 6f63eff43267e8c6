"""`gpu-admission`: one subcommand per module; each module has `register(subparsers)` that sets `func`.

Exit codes: 0 nothing would be denied, 1 something would, 2 usage, configuration or input errors."""
from __future__ import annotations

import argparse
import importlib
import sys

from webhook.version import package_version

COMMANDS = ("check", "mutate", "audit", "serve", "certs", "host", "version")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-admission",
        description="Admission policy for NVIDIA GPU node cohorts: check manifests, mutate them, audit a "
        "cluster, serve the webhook.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-admission {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"webhook.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("gpu-admission: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
