"""The images the e2e node runs besides gpu-admission's own, built here (no registry can be reached): the pod
sandbox (pause) from the C source in the pinned Kubernetes module, and a probe that prints what a container was
given. Both with Debian's buildah (vfs storage, chroot isolation) into docker archives that containerd imports.

    python tests/e2e/images.py          # prints the archives' paths; a second run with the same inputs builds nothing
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root on the path, as pytest has it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e import build

HERE = Path(__file__).resolve().parent
OUT = HERE / ".images"
STORAGE = ("--storage-driver", "vfs", "--root", str(OUT / "storage" / "root"),
           "--runroot", str(OUT / "storage" / "run"))
BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static: one static binary, every applet

PAUSE = "localhost/e2e/pause:3.10"
PROBE = "localhost/e2e/probe:1"

# What a container was given, one fact a line, for the tests to read back with `kubectl logs`: the user, the
# environment (names and values: the probe's own pods carry no secrets), whether / can be written, the
# capabilities, seccomp and no_new_privs of the process as the kernel reports them.
PROBE_SCRIPT = """\
#!/bin/busybox sh
b=/bin/busybox
echo "uid=$($b id -u) gid=$($b id -g)"
$b env | $b sort | $b sed 's/^/env: /'
if $b touch /probe-write 2>/dev/null; then echo "root filesystem: writable"; else echo "root filesystem: read-only"; fi
$b grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status
"""


class ImageError(RuntimeError):
    """An image cannot be built here: what is missing, in one line."""


@dataclass(frozen=True)
class Image:
    name: str
    archive: Path


def _run(*argv: str, cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise ImageError(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


def _buildah(*args: str) -> str:
    return _run("buildah", *STORAGE, *args)


def _pause_source(chain: build.Toolchain) -> Path:
    """build/pause/linux/pause.c of the pinned k8s.io/kubernetes, from the Go module cache the build filled."""
    out = _run("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes", cwd=chain.k8s_dir)
    source = Path(out) / "build" / "pause" / "linux" / "pause.c"
    if not source.is_file():
        raise ImageError(f"{source} is missing: run tests/e2e/build.py first")
    return source


def _stamp(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def _image(name: str, files: dict[str, tuple[Path, int]], entrypoint: list[str], stamp: str) -> Image:
    """A one-layer image from scratch holding `files` (path in the image -> (source, mode)), as a docker
    archive named `name`; rebuilt only when `stamp` changes."""
    archive = OUT / (name.rsplit("/", 1)[1].replace(":", "-") + ".tar")
    stamp_file = archive.with_suffix(".stamp")
    if archive.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return Image(name, archive)
    OUT.mkdir(parents=True, exist_ok=True)
    container = _buildah("from", "scratch")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for target, (source, mode) in files.items():
                staged = Path(tmp) / target.lstrip("/")
                staged.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, staged)
                staged.chmod(mode)
            _buildah("copy", container, f"{tmp}/", "/")
        _buildah("config", "--entrypoint", json.dumps(entrypoint), "--cmd", "", "--user", "65532:65532",
                 "--label", "org.opencontainers.image.source=tests/e2e/images.py", container)
        _buildah("commit", "--rm", "--timestamp", "0", container, name)
    except BaseException:
        subprocess.run(["buildah", *STORAGE, "rm", container], capture_output=True, check=False)
        raise
    archive.unlink(missing_ok=True)
    _buildah("push", name, f"docker-archive:{archive}:{name}")
    stamp_file.write_text(stamp)
    return Image(name, archive)


def pause(chain: build.Toolchain) -> Image:
    """The sandbox every pod's namespaces hang on: Kubernetes' own pause.c, static, as its Makefile builds it."""
    source = _pause_source(chain)
    binary = OUT / "pause"
    stamp = _stamp(source.read_bytes(), _run("gcc", "--version").encode())
    if not (binary.is_file() and binary.with_suffix(".stamp").is_file()
            and binary.with_suffix(".stamp").read_text() == stamp):
        OUT.mkdir(parents=True, exist_ok=True)
        _run("gcc", "-Os", "-Wall", "-Werror", "-static", "-DVERSION=v3.10-e2e", "-o", str(binary), str(source))
        binary.with_suffix(".stamp").write_text(stamp)
    return _image(PAUSE, {"/pause": (binary, 0o755)}, ["/pause"], _stamp(binary.read_bytes()))


def probe() -> Image:
    if not BUSYBOX.is_file():
        raise ImageError(f"{BUSYBOX} is missing: install Debian's busybox-static")
    script = OUT / "probe.sh"
    OUT.mkdir(parents=True, exist_ok=True)
    script.write_text(PROBE_SCRIPT)
    return _image(PROBE, {"/bin/busybox": (BUSYBOX, 0o755), "/probe": (script, 0o755)}, ["/probe"],
                  _stamp(BUSYBOX.read_bytes(), PROBE_SCRIPT.encode()))


def ensure(chain: build.Toolchain | None = None) -> list[Image]:
    chain = chain or build.toolchain()
    for tool in ("buildah", "gcc", "go"):
        if shutil.which(tool) is None:
            raise ImageError(f"the e2e images need {tool}, which is not installed (.ci/run installs it)")
    return [pause(chain), probe()]


def main(argv: list[str]) -> int:
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        for image in ensure():
            print(f"{image.name} {image.archive}")
    except ImageError as exc:
        print(f"images: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
