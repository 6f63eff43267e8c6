"""`nvidia-ctk --version` and `containerd --version`: the versions the DRA prerequisites name."""
from __future__ import annotations

import re

from webhook.host.nvsmi import ParseError

Version = tuple[int, ...]

# "NVIDIA Container Toolkit CLI version 1.18.0" (then "commit: <sha>"); release candidates: "1.18.0-rc.1"
_CTK = re.compile(r"NVIDIA Container Toolkit CLI version\s+v?(?P<v>\d+(?:\.\d+)+)(?P<pre>-\S+)?")
# "containerd containerd.io 1.7.27 05044ec…", "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7…"
_CONTAINERD = re.compile(r"^containerd\s+\S+\s+v?(?P<v>\d+(?:\.\d+)+)", re.M)


def _version(text: str) -> Version:
    return tuple(int(part) for part in text.split("."))


def parse_ctk_version(text: str) -> tuple[Version, bool]:
    """(version, is a pre-release)."""
    m = _CTK.search(text)
    if not m:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise ParseError(f"not nvidia-ctk --version output: {first[:100]!r}")
    return _version(m["v"]), bool(m["pre"])


def parse_containerd_version(text: str) -> Version:
    m = _CONTAINERD.search(text)
    if not m:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise ParseError(f"not containerd --version output: {first[:100]!r}")
    return _version(m["v"])


def dotted(version: Version) -> str:
    return ".".join(map(str, version))
