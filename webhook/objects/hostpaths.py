"""Paths as the node resolves them. A hostPath is resolved by the kernel on the host: `.` and `..`, repeated
and trailing slashes, the `/var/run -> /run` link every supported distribution has, and the `/proc/<pid>/root`
links that lead back to the host's root. A container's mount destination is compared by the NVIDIA
container toolkit after Go's filepath.Clean only, with no link followed."""
from __future__ import annotations

# Links on every supported host, applied wherever the walk reaches them (so `..` after one goes up from
# the target, as the kernel's walk does).
_LINKS: dict[tuple[str, ...], tuple[str, ...]] = {("var", "run"): ("run",)}
_PROC_ROOTS = frozenset({"self", "thread-self"})


def host_path(path: str) -> str:
    """The absolute path the host's kernel reaches for `path` (a relative path is taken from `/`)."""
    parts: list[str] = []
    for part in path.strip().split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
        target = _LINKS.get(tuple(parts))
        if target is not None:
            parts[:] = target
        elif _proc_root(parts):
            parts.clear()  # /proc/<pid>/root (and /proc/<pid>/task/<tid>/root) is the host's root
    return "/" + "/".join(parts)


def _proc_root(parts: list[str]) -> bool:
    if len(parts) < 3 or parts[0] != "proc" or parts[-1] != "root":
        return False
    pid = parts[1]
    if not (pid.isdigit() or pid in _PROC_ROOTS):
        return False
    return len(parts) == 3 or (len(parts) == 5 and parts[2] == "task" and parts[3].isdigit())


def clean(path: str) -> str:
    """Go's filepath.Clean: lexical only (`..` of the root is the root); "" is "."."""
    rooted = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(part)
    out = "/".join(parts)
    return ("/" + out) if rooted else (out or ".")


def exposes(path: str, sensitive: tuple[str, ...]) -> bool:
    """The normalised host path is one of `sensitive` (a prefix: /dev/nvidia is /dev/nvidia0, /dev/nvidiactl),
    lies inside one, or is a directory above one (mounting / or /dev hands over what is under it)."""
    if path == "/":
        return True
    for s in sensitive:
        if path.startswith(s) or s.startswith(path + "/"):
            return True
    return False
