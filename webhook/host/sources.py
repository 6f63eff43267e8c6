"""Where host facts are read from: this host (commands run, files read), or a directory of captured outputs
(`--from DIR`, as `gpu-admission host capture DIR` or the shell lines in docs/host.md write it).

A captured directory holds each command's output under the file name in `COMMANDS`, `id-u.txt` and
`processes.txt`, and copies of the host folders in `HOST_DIRS` under their own path (DIR/etc/cdi/...)."""
from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from webhook.policy.messages import T, Text

# captured file -> the command that prints it (all read-only: nothing here changes a GPU setting)
COMMANDS: dict[str, tuple[str, ...]] = {
    "nvidia-smi-q.xml": ("nvidia-smi", "-q", "-x"),
    "nvidia-smi-q.txt": ("nvidia-smi", "-q"),
    "mig-lgip.txt": ("nvidia-smi", "mig", "-lgip"),
    "query.csv": ("nvidia-smi", "--query-gpu=name,driver_version,uuid,memory.total", "--format=csv,noheader"),
    "list.txt": ("nvidia-smi", "-L"),
    "nvidia-ctk-version.txt": ("nvidia-ctk", "--version"),
    "containerd-version.txt": ("containerd", "--version"),
}
HOST_DIRS = ("/etc/containerd", "/etc/cdi", "/var/run/cdi")
# Where the GPU Operator installs the toolkit on the host (its toolkit DaemonSet), when it is not on PATH.
OPERATOR_TOOLKIT = "/usr/local/nvidia/toolkit"
# `nvidia-smi mig -lgip` exits non-zero when it lists no profile but still says why.
_TELLING_FAILURES = {"mig-lgip.txt"}
TIMEOUT_S = 60


@dataclass(frozen=True, slots=True)
class Missing:
    """Something that could not be read, and why (said to the user as is)."""

    reason: str
    absent: bool = False  # it does not exist (as opposed to: it could not be read)


class Source(Protocol):
    where: Text  # what reports name it, in their language

    def output(self, name: str) -> str | Missing: ...
    def read(self, path: str) -> str | Missing: ...
    def listdir(self, path: str) -> list[str] | Missing: ...
    def euid(self) -> int | None: ...
    def processes(self) -> list[str] | Missing: ...


def shell_line(name: str) -> str:
    return shlex.join(COMMANDS[name])


class LiveHost:
    """This host, as the user running gpu-admission sees it (`root`: where its file system is seen from)."""

    where = T("this host")

    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)

    def _path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def output(self, name: str) -> str | Missing:
        argv = list(COMMANDS[name])
        exe = shutil.which(argv[0])
        operator_ctk = self._path(f"{OPERATOR_TOOLKIT}/nvidia-ctk")
        if exe is None and argv[0] == "nvidia-ctk" and os.access(operator_ctk, os.X_OK):
            exe = str(operator_ctk)
        if exe is None:
            return Missing(f"{argv[0]} is not on PATH", absent=True)
        try:
            done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return Missing(f"`{shell_line(name)}` did not answer within {TIMEOUT_S} s")
        except OSError as exc:
            return Missing(f"`{shell_line(name)}` could not run: {exc.strerror or exc}")
        if done.returncode != 0 and name not in _TELLING_FAILURES:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            return Missing(f"`{shell_line(name)}` exited {done.returncode}" + (f": {said[0][:200]}" if said else ""))
        return done.stdout + (done.stderr if done.returncode else "")

    def read(self, path: str) -> str | Missing:
        return _read(self._path(path), path, self.euid())

    def listdir(self, path: str) -> list[str] | Missing:
        return _listdir(self._path(path), path, self.euid())

    def is_dir(self, path: str) -> bool:
        return self._path(path).is_dir()

    def euid(self) -> int | None:
        return os.geteuid()

    def processes(self) -> list[str] | Missing:
        names = []
        proc = self._path("/proc")
        try:
            pids = [p for p in os.listdir(proc) if p.isdigit()]
        except OSError as exc:
            return Missing(f"/proc cannot be listed: {exc.strerror or exc}")
        for pid in pids:
            try:
                names.append((proc / pid / "comm").read_text().strip())
            except OSError:  # gone meanwhile
                continue
        return names


def _read(p: Path, shown: str, euid: int | None) -> str | Missing:
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Missing(f"{shown} does not exist", absent=True)
    except PermissionError:
        return Missing(f"{shown} cannot be read" + ("; run as root" if euid not in (0, None) else ""))
    except (OSError, UnicodeDecodeError) as exc:
        return Missing(f"{shown} cannot be read: {getattr(exc, 'strerror', None) or exc}")


def _listdir(p: Path, shown: str, euid: int | None) -> list[str] | Missing:
    try:
        return sorted(os.listdir(p))
    except FileNotFoundError:
        return Missing(f"{shown} does not exist", absent=True)
    except PermissionError:
        return Missing(f"{shown} cannot be listed" + ("; run as root" if euid not in (0, None) else ""))
    except OSError as exc:
        return Missing(f"{shown} cannot be listed: {exc.strerror or exc}")


class CapturedHost:
    """A directory of captured outputs. What the capture lacks is unknown, never taken as absent on the host,
    except inside a captured host folder (the capture copies a folder whole, so a file not in it was not there)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.where = T("captured outputs in {root}", root=str(root))

    def _host_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def _captured_dir(self, path: str) -> bool:
        return any((path == d or path.startswith(d + "/")) and self._host_path(d).is_dir() for d in HOST_DIRS)

    def output(self, name: str) -> str | Missing:
        got = _read(self.root / name, f"{self.root}/{name}", None)
        if isinstance(got, Missing) and got.absent:
            return Missing(f"{self.root}/{name} is not in the capture (`{shell_line(name)} > {name}`)")
        return got

    def read(self, path: str) -> str | Missing:
        got = _read(self._host_path(path), path, None)
        if isinstance(got, Missing) and got.absent and not self._captured_dir(path):
            return Missing(f"{path} is not in the capture ({self.root}{path})")
        return got

    def listdir(self, path: str) -> list[str] | Missing:
        got = _listdir(self._host_path(path), path, None)
        if isinstance(got, Missing) and got.absent and not self._captured_dir(path):
            return Missing(f"{path} is not in the capture ({self.root}{path})")
        return got

    def euid(self) -> int | None:
        text = _read(self.root / "id-u.txt", "id-u.txt", None)
        return int(text.strip()) if isinstance(text, str) and text.strip().isdigit() else None

    def processes(self) -> list[str] | Missing:
        got = _read(self.root / "processes.txt", f"{self.root}/processes.txt", None)
        if isinstance(got, Missing):
            return Missing(f"{self.root}/processes.txt is not in the capture (`ps -e -o comm= > processes.txt`)")
        return [line.strip() for line in got.splitlines() if line.strip()]


def glob(source: Source, pattern: str) -> list[str] | Missing:
    """Absolute paths matching `pattern` (a glob in its last part only, as containerd's imports use it)."""
    folder, _, name = pattern.rpartition("/")
    if not any(c in name for c in "*?["):
        return [pattern]
    entries = source.listdir(folder or "/")
    if isinstance(entries, Missing):
        return [] if entries.absent else entries
    return [f"{folder}/{e}" for e in sorted(entries) if fnmatch.fnmatchcase(e, name)]


def capture(source: LiveHost, target: Path) -> list[str]:
    """Write what `CapturedHost(target)` reads; returns a line for each thing that could not be captured."""
    target.mkdir(parents=True, exist_ok=True)
    notes = []
    for name in COMMANDS:
        got = source.output(name)
        if isinstance(got, Missing):
            notes.append(f"{name}: {got.reason}")
            continue
        (target / name).write_text(got, encoding="utf-8")
    (target / "id-u.txt").write_text(f"{source.euid()}\n", encoding="utf-8")
    procs = source.processes()
    if isinstance(procs, Missing):
        notes.append(f"processes.txt: {procs.reason}")
    else:
        (target / "processes.txt").write_text("".join(f"{p}\n" for p in procs), encoding="utf-8")
    for folder in HOST_DIRS:
        notes.extend(_copy_tree(source, folder, target))
    return notes


def _copy_tree(source: LiveHost, folder: str, target: Path) -> list[str]:
    entries = source.listdir(folder)
    if isinstance(entries, Missing):
        if entries.absent:  # recorded as an empty folder: the capture says it was not there
            (target / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
            return []
        return [f"{folder}: {entries.reason}"]
    (target / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
    notes = []
    for entry in entries:
        path = f"{folder}/{entry}"
        if source.is_dir(path):
            notes.extend(_copy_tree(source, path, target))
            continue
        text = source.read(path)
        if isinstance(text, Missing):
            notes.append(f"{path}: {text.reason}")
        else:
            (target / path.lstrip("/")).write_text(text, encoding="utf-8")
    return notes
