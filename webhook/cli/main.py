"""`gpu-admission`: one subcommand per module; each module has `register(subparsers)` that sets `func`.

Exit codes: 0 nothing would be denied, 1 something would, 2 usage, configuration or input errors; 141 when the
reader of stdout went away (`... | head`), as for a command that SIGPIPE ended."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from webhook.version import package_version

COMMANDS = ("check", "mutate", "test", "audit", "explain", "export", "serve", "certs", "host", "version")
EXIT_CLOSED_STDOUT = 128 + 13  # the shell's status for a command that SIGPIPE ended
EXIT_ERROR = 2
# `pip install gpu-admission` is the CLI over manifests; these packages come with an extra (pyproject.toml).
EXTRA_OF = {"kubernetes": "cluster", "urllib3": "cluster", "flask": "server", "werkzeug": "server",
            "gunicorn": "server", "gevent": "server", "cryptography": "server", "prometheus_client": "server"}


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
        try:
            module = importlib.import_module(f"webhook.cli.{name}")
        except ModuleNotFoundError as exc:
            if _extra(exc) is None:
                raise
            _register_missing(sub, name, exc)
        else:
            module.register(sub)
    return parser


def _extra(exc: ModuleNotFoundError) -> str | None:
    """The extra that brings the module an import missed, when it is one of ours."""
    return EXTRA_OF.get((exc.name or "").partition(".")[0])


def _missing_extra(command: str, exc: ModuleNotFoundError) -> str:
    extra, package = _extra(exc), (exc.name or "").partition(".")[0]
    return (f"gpu-admission {command}: needs the '{extra}' extra ({package} is not installed): "
            f"pip install 'gpu-admission[{extra}]'")


def _register_missing(sub, name: str, exc: ModuleNotFoundError) -> None:
    """A command whose extra is not installed still shows in the help (main() says what to install when it is
    run)."""
    sub.add_parser(name, help=f"(needs: pip install 'gpu-admission[{_extra(exc)}]')", add_help=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # before any command is imported: a pipeline's first probe answers at once
        print(f"gpu-admission {package_version()}")
        return 0
    if argv and argv[0] in COMMANDS:
        try:
            importlib.import_module(f"webhook.cli.{argv[0]}")
        except ModuleNotFoundError as exc:
            if _extra(exc) is None:
                raise
            print(_missing_extra(argv[0], exc), file=sys.stderr)
            return EXIT_ERROR
    args = build_parser(argv).parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # output that fit in the buffer meets a closed pipe only here
        return code
    except ModuleNotFoundError as exc:  # a command that reaches a cluster, or serves, without its extra
        if _extra(exc) is None:
            raise
        print(_missing_extra(args.command, exc), file=sys.stderr)
        return EXIT_ERROR
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
