"""Exit codes and the stderr line every command writes when it cannot go on. Imports nothing of the
package: `certs` and `serve` use it without loading the policy."""
from __future__ import annotations

import sys

EXIT_OK, EXIT_DENIED, EXIT_ERROR = 0, 1, 2


def warn(message: str, *, command: str = "") -> None:
    """A line on stderr in the commands' one shape: `gpu-admission[ <command>]: <message>`."""
    print(f"gpu-admission{' ' + command if command else ''}: {message}", file=sys.stderr)


def fail(message: str, *, command: str = "") -> int:
    """Say on stderr why the command cannot go on; the exit code for it (usage, input or cluster errors)."""
    warn(message, command=command)
    return EXIT_ERROR
