"""`gpu-admission`: one subcommand per module; each module has `register(subparsers)` that sets `func`.

Exit codes: 0 nothing would be denied, 1 something would, 2 usage, configuration or input errors; 141 when the
reader of stdout went away (`... | head`), as for a command that SIGPIPE ended."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from webhook.version import package_version

COMMANDS = ("check", "mutate", "audit", "explain", "export", "serve", "certs", "host", "version")
EXIT_CLOSED_STDOUT = 128 + 13  # the shell's status for a command that SIGPIPE ended


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with every command; or, when `argv` names a command first, with that command alone, so that
    a command imports only what it needs (`host` runs on a GPU host with only the policy's dependencies, no
    Kubernetes client or web server)."""
    parser = argparse.ArgumentParser(
        prog="gpu-admission",
        description="Admission policy for NVIDIA GPU node cohorts: check manifests, mutate them, audit a "
        "cluster, serve the webhook.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-admission {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    for name in (chosen,) if chosen else COMMANDS:
        importlib.import_module(f"webhook.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # output that fit in the buffer meets a closed pipe only here
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("gpu-admission: interrupted", file=sys.stderr)
        return 130


def _stdout_closed() -> int:
    """The reader of stdout is gone: stop quietly. What is still buffered would fail again when the
    interpreter flushes at exit, so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (a test's capture): nothing is left to flush
        pass
    return EXIT_CLOSED_STDOUT


if __name__ == "__main__":
    sys.exit(main())
