"""The release's Go tools, built from the modules pinned under tools/go/<name>/go.mod (each lists its binary as a
`tool` directive) into build/go-tools/, once: a binary newer than its go.mod and go.sum is used as it is.

    python -m tools.gotools cosign actionlint     # prints each binary's path

- cosign (github.com/sigstore/cosign/v2): signs and verifies the image and the chart, key-based and offline in the
  tests (tests/e2e/test_deployed.py), keyless in the release workflow;
- actionlint (github.com/rhysd/actionlint): checks .github/workflows (tests/test_workflows.py).

The Go command downloads the modules from the Go module proxy on the first build (GOFLAGS=-mod=mod); later builds
reuse its module and build caches.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = REPO / "tools" / "go"
BIN = REPO / "build" / "go-tools"
TOOLS = ("cosign", "actionlint")


class ToolUnavailable(RuntimeError):
    """A tool cannot be built here: why, in one line."""


def binary(name: str) -> Path:
    """The tool's binary, built first when missing or older than its module's pins."""
    if name not in TOOLS:
        raise ToolUnavailable(f"no Go tool {name!r} (one of {', '.join(TOOLS)})")
    module = MODULES / name
    out = BIN / name
    pins = [module / "go.mod", module / "go.sum"]
    if out.is_file() and all(out.stat().st_mtime >= p.stat().st_mtime for p in pins):
        return out
    if shutil.which("go") is None:
        raise ToolUnavailable(f"building {name} needs the Go toolchain (go) on PATH")
    BIN.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    done = subprocess.run(["nice", "-n", "10", "go", "build", "-trimpath", "-o", str(out) + ".part", "tool"],
                          cwd=module, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise ToolUnavailable(f"go build of {name} (tools/go/{name}) failed: {done.stderr.strip()[-2000:]}")
    os.replace(str(out) + ".part", out)
    return out


def main(argv: list[str]) -> int:
    try:
        for name in argv or TOOLS:
            print(binary(name).relative_to(REPO))
    except ToolUnavailable as exc:
        print(f"tools.gotools: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
