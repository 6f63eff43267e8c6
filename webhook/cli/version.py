"""`gpu-admission version`: the installed package's version (also `gpu-admission --version`)."""
from __future__ import annotations

from webhook.version import package_version


def register(sub) -> None:
    p = sub.add_parser("version", help="print the version", description="Print the installed package's version.")
    p.set_defaults(func=run)


def run(args) -> int:
    print(f"gpu-admission {package_version()}")
    return 0
