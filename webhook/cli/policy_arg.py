"""The exit codes and the `--config` policy every command shares; light on imports, so that `host` runs on a GPU
host that has only the policy's own dependencies."""
from __future__ import annotations

import sys

from webhook.config import ConfigError, Policy, load_policy

EXIT_OK, EXIT_DENIED, EXIT_ERROR = 0, 1, 2


def load_policy_or_exit(args) -> Policy | None:
    try:
        return load_policy(args.config)
    except ConfigError as exc:
        for error in exc.errors:
            print(f"gpu-admission: {exc.source}: {error}", file=sys.stderr)
        return None
