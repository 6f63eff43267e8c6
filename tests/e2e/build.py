"""Build the e2e cluster's binaries from the pinned Go modules under tests/e2e/go/.

    python tests/e2e/build.py            # E2E_KUBERNETES=1.34 (default) or 1.37

kube-apiserver, kube-controller-manager and kubectl come from one `go build` of the k8s module (they share one
compile cache); etcd from its own module, whose dependencies are newer than Kubernetes'. The binaries land in
tests/e2e/.bin/k8s-X.Y/ (git-ignored) with a stamp of what built them: the pinned go.mod/go.sum, the flags and
the Go version. A second run with the same stamp builds nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
GO = HERE / "go"
BIN_ROOT = HERE / ".bin"
VERSION_VARIABLE = "E2E_KUBERNETES"
DEFAULT_KUBERNETES = "1.34"
ETCD_MODULE = "etcd-3.6"
K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kubectl", "kube-scheduler", "kubelet", "kube-proxy")


@dataclass(frozen=True)
class Toolchain:
    minor: str  # "1.34"
    k8s_dir: Path
    etcd_dir: Path
    bin_dir: Path

    @property
    def version(self) -> str:
        """The pinned patch release, "v1.34.4", read from the module's go.mod."""
        return _required_version(self.k8s_dir / "go.mod", "k8s.io/kubernetes")

    def binary(self, name: str) -> Path:
        return self.bin_dir / name


def toolchain(minor: str | None = None) -> Toolchain:
    minor = minor or os.environ.get(VERSION_VARIABLE) or DEFAULT_KUBERNETES
    minor = ".".join(minor.removeprefix("v").split(".")[:2])  # 1.37.x and 1.37.2 name the same pinned module
    k8s_dir = GO / f"k8s-{minor}"
    if not (k8s_dir / "go.mod").is_file():
        known = sorted(p.name.removeprefix("k8s-") for p in GO.glob("k8s-*"))
        raise SystemExit(f"{VERSION_VARIABLE}={minor}: no pinned module {k8s_dir.relative_to(HERE.parents[1])} "
                         f"(pinned: {', '.join(known)}; add one with tests/e2e/gomod.py k8s X.Y.Z)")
    return Toolchain(minor, k8s_dir, GO / ETCD_MODULE, BIN_ROOT / f"k8s-{minor}")


def _required_version(gomod: Path, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", gomod.read_text(), re.M)
    if not match:
        raise SystemExit(f"{gomod}: {module} is not required")
    return match.group(1)


def _ldflags(version: str) -> str:
    """The version stamps Kubernetes' own build sets (hack/lib/version.sh): kubectl and /version report them,
    and Helm checks the chart's kubeVersion against them."""
    major, minor = version.removeprefix("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
                  f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean",
                  f"-X {package}.buildDate=1970-01-01T00:00:00Z"]
    return " ".join(flags)


def _go_version() -> str:
    return subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def _stamp(chain: Toolchain) -> str:
    digest = hashlib.sha256()
    for path in (chain.k8s_dir / "go.mod", chain.k8s_dir / "go.sum", chain.etcd_dir / "go.mod",
                 chain.etcd_dir / "go.sum"):
        digest.update(path.read_bytes())
    digest.update(_ldflags(chain.version).encode())
    digest.update(_go_version().encode())
    return digest.hexdigest()


def _go_build(module_dir: Path, out: Path, ldflags: str) -> None:
    env = {**os.environ, "GOFLAGS": "-buildvcs=false -mod=readonly"}
    out.mkdir(parents=True, exist_ok=True)
    # `tool` is every binary the module lists in its tool directives, all built in one command.
    subprocess.run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", f"{out}/", "tool"],
                   check=True, cwd=module_dir, env=env)


def ensure(chain: Toolchain | None = None, *, quiet: bool = False) -> Toolchain:
    """Build what is missing or stale; return the toolchain whose binaries are then in place."""
    chain = chain or toolchain()
    stamp_file = chain.bin_dir / ".stamp"
    stamp = _stamp(chain)
    wanted = [*K8S_BINARIES, "etcd"]
    if stamp_file.is_file() and stamp_file.read_text() == stamp and all(chain.binary(b).is_file() for b in wanted):
        return chain
    stamp_file.unlink(missing_ok=True)
    started = time.monotonic()
    if not quiet:
        print(f"building {', '.join(K8S_BINARIES)} {chain.version} and etcd into "
              f"{chain.bin_dir} (a cold build takes a while)", file=sys.stderr, flush=True)
    _go_build(chain.k8s_dir, chain.bin_dir, _ldflags(chain.version))
    _go_build(chain.etcd_dir, chain.bin_dir, "-s -w")
    # The etcd module's tool is the package go.etcd.io/etcd/server/v3: go names its binary "server".
    built = chain.bin_dir / "server"
    if built.exists():
        built.replace(chain.binary("etcd"))
    missing = [b for b in wanted if not chain.binary(b).is_file()]
    if missing:
        raise SystemExit(f"the build left no {', '.join(missing)} in {chain.bin_dir}")
    stamp_file.write_text(stamp)
    if not quiet:
        print(f"built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return chain


def main(argv: list[str]) -> int:
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    chain = ensure()
    print(chain.bin_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
