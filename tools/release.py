"""`make release`: everything a release publishes, for the version in pyproject.toml, in one folder.

    python -m tools.release DIR INDEX ARCH=ARCHIVE=WHEELHOUSE...

DIR (dist/release) receives:

- the wheel and the sdist (`python -m build`, its build backend from the wheelhouse: no index), checked with
  `twine check --strict`; one package, the light CLI, whose `server` and `cluster` extras add the webhook's and
  the cluster commands' dependencies;
- the image as one OCI archive (INDEX: the image index of the single-architecture images, tools/image_index.py),
  as gpu-admission-<version>.oci.tar;
- the chart package (`helm package`, tools/package_chart.py);
- for each architecture's image (ARCHIVE, installed from WHEELHOUSE), a CycloneDX 1.5 SBOM (tools/sbom.py),
  gpu-admission-<version>.<arch>.cdx.json: its Python environment (every package of requirements.lock with its
  version and the hash of the file installed) and its Debian packages (read from the image's dpkg status);
- SHA256SUMS over all of them.

Reproducible where the tools allow: every timestamp is SOURCE_DATE_EPOCH (the last commit's time unless set), the
packages are built from a copy of their sources whose files carry that time, and gzip headers carry it too (Python's
tarfile writes the current time there, Helm the current time on every member: both are rewritten, the members and
their order unchanged).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from tools import sbom
from tools.package_chart import package as package_chart

REPO = Path(__file__).resolve().parents[1]
# What the packages are built from (pyproject's setuptools configuration reads nothing else).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "webhook")


def project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def source_date_epoch() -> int:
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    done = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    return int(done.stdout.strip() or 0)


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise SystemExit(f"make release: {' '.join(map(str, argv[:4]))} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return done


def _copy_sources(destination: Path, epoch: int) -> Path:
    """The package's sources, without caches, every file and folder dated `epoch`."""
    destination.mkdir(parents=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info"))
        else:
            shutil.copy2(source, destination / name)
    for path in [destination, *destination.rglob("*")]:
        os.utime(path, (epoch, epoch), follow_symlinks=False)
    return destination


def _regzip(path: Path, epoch: int) -> None:
    """A .tar.gz rewritten with every member's mtime and the gzip header's set to `epoch`, owners numeric 0
    and nameless: the same members in the same order, so the same content for pip and Helm."""
    with tarfile.open(path, "r:gz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as out:
        for member, data in members:
            member.mtime = epoch
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            member.pax_headers = {}
            out.addfile(member, io.BytesIO(data) if data is not None else None)
    with open(path, "wb") as handle, gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=epoch,
                                                   compresslevel=9) as zipped:
        zipped.write(raw.getvalue())


def python_packages(out: Path, wheelhouse: Path, epoch: int) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="gpa-release-") as scratch:
        src = _copy_sources(Path(scratch) / "src", epoch)
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch), "PIP_NO_INDEX": "1",
               "PIP_FIND_LINKS": str(wheelhouse), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)], env=env)
    version = project_version()
    wheel, sdist = out / f"gpu_admission-{version}-py3-none-any.whl", out / f"gpu_admission-{version}.tar.gz"
    _regzip(sdist, epoch)
    _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
    return [wheel, sdist]


def chart(out: Path, epoch: int) -> Path:
    archive = package_chart(out)
    _regzip(archive, epoch)
    return archive


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checksums(out: Path, files: list[Path]) -> Path:
    """SHA256SUMS as `sha256sum -c` reads it."""
    path = out / "SHA256SUMS"
    path.write_text("".join(f"{sha256(f)}  {f.name}\n" for f in sorted(files, key=lambda f: f.name)))
    return path


def release(out: Path, index: Path, images: list[tuple[str, Path, Path]]) -> list[Path]:
    epoch = source_date_epoch()
    version = project_version()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    wheelhouse = images[0][2]
    files = python_packages(out, wheelhouse, epoch)
    files.append(chart(out, epoch))
    image = out / f"gpu-admission-{version}.oci.tar"
    shutil.copyfile(index, image)
    files.append(image)
    for arch, archive, arch_wheelhouse in images:
        bom = out / f"gpu-admission-{version}.{arch}.cdx.json"
        sbom.write(bom, image=archive, lock=REPO / "requirements.lock", wheelhouse=arch_wheelhouse, epoch=epoch,
                   version=version)
        files.append(bom)
    return [*files, checksums(out, files)]


def main(argv: list[str]) -> int:
    if len(argv) < 3 or not all(a.count("=") == 2 for a in argv[2:]):
        print("usage: python -m tools.release DIR INDEX ARCH=ARCHIVE=WHEELHOUSE...", file=sys.stderr)
        return 2
    out, index = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    images = [(arch, Path(archive).resolve(), Path(wheels).resolve())
              for arch, archive, wheels in (a.split("=") for a in argv[2:])]
    needed = [(index, "make image"), *((a, "make image") for _, a, _ in images),
              *((w / ".complete", "make wheelhouse") for _, _, w in images)]
    for path, how in needed:
        if not path.exists():
            print(f"make release: {path} is missing ({how})", file=sys.stderr)
            return 2
    for path in release(out, index, images):
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
