"""A real OCI registry on loopback for the e2e node, and cosign against it.

- `Registry`: Debian's docker-registry (the CNCF distribution registry, `registry serve`) on 127.0.0.1:PORT over
  plain HTTP, its storage under the test's folder. The image is pushed with skopeo from `make image`'s OCI archive,
  its manifest and layers unchanged (the digest the chart's `image.digest` names); the chart with Helm's own push
  (helm-python-sdk), as `helm push` does.
- `Cosign`: cosign (tools/gotools.py builds it from its pinned module) with a key pair made for the test
  (COSIGN_PASSWORD), signing and verifying offline: no transparency log upload, none read (--insecure-ignore-tlog),
  the registry over HTTP.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.cluster import free_port, terminate

MANIFEST_TYPES = ", ".join(("application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json",
                            "application/vnd.docker.distribution.manifest.v2+json"))


class RegistryUnavailable(RuntimeError):
    """The registry cannot start here: what is missing, in one line."""


@dataclass
class Registry:
    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / "registry.log"

    def start(self) -> Registry:
        for tool in ("docker-registry", "skopeo"):
            if shutil.which(tool) is None:
                raise RegistryUnavailable(f"the registry e2e needs {tool} (Debian packages docker-registry and "
                                          "skopeo; .ci/run installs them)")
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "config.yml"
        config.write_text(json.dumps({  # YAML's JSON subset
            "version": 0.1, "log": {"level": "info", "accesslog": {"disabled": False}},
            "storage": {"filesystem": {"rootdirectory": str(self.root / "data")}, "delete": {"enabled": True}},
            "http": {"addr": self.host},
        }))
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RegistryUnavailable(f"docker-registry exited {self.process.returncode}: "
                                          f"{self.log.read_text()[-500:]}")
            try:
                with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise RegistryUnavailable(f"docker-registry did not answer on {self.host} within 30 s")

    def stop(self) -> None:
        terminate(self.process, timeout=10)
        self.process = None

    def push_archive(self, archive: Path, repository: str, tag: str) -> str:
        """An OCI archive (or layout folder) pushed as repository:tag; its manifest's digest."""
        source = f"oci-archive:{archive}" if archive.is_file() else f"oci:{archive}"
        digestfile = self.root / "pushed.digest"
        done = subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--preserve-digests",
                               "--digestfile", str(digestfile), source, f"docker://{self.host}/{repository}:{tag}"],
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise AssertionError(f"skopeo copy to {self.host}/{repository}:{tag} failed: {done.stderr}")
        return digestfile.read_text().strip()

    def digest(self, repository: str, reference: str) -> str | None:
        """The manifest digest the registry answers for a tag or digest, None when it has none."""
        request = urllib.request.Request(f"http://{self.host}/v2/{repository}/manifests/{reference}", method="HEAD",
                                         headers={"Accept": MANIFEST_TYPES})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.headers["Docker-Content-Digest"]
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def pulls(self, repository: str, digest: str, client: str = "containerd/") -> int:
        """GETs of the manifest by that digest in the registry's access log by a client (its User-Agent's start):
        containerd pulling it, not cosign reading what it verifies."""
        needle = f'"GET /v2/{repository}/manifests/{digest} '
        lines = self.log.read_text(errors="replace").splitlines()
        return sum(needle in line and f'"{client}' in line for line in lines)


def tampered_layout(archive: Path, out: Path) -> tuple[Path, str]:
    """The archive's image as an OCI layout in `out` with one byte of its last layer changed: the layer, the
    manifest that lists it and the index re-digested, as anyone re-pushing an altered image would. The new
    manifest's digest comes back."""
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="tar")
    blob = lambda digest: out / "blobs" / digest.replace(":", "/")
    index = json.loads((out / "index.json").read_text())
    (entry,) = index["manifests"]
    manifest = json.loads(blob(entry["digest"]).read_bytes())
    layer = manifest["layers"][-1]
    data = bytearray(blob(layer["digest"]).read_bytes())
    data[len(data) // 2] ^= 0x01
    changed = "sha256:" + hashlib.sha256(data).hexdigest()
    blob(changed).write_bytes(bytes(data))
    layer["digest"] = changed
    body = json.dumps(manifest, separators=(",", ":")).encode()
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    blob(digest).write_bytes(body)
    entry.update(digest=digest, size=len(body))
    (out / "index.json").write_text(json.dumps(index))
    return out, digest


@dataclass
class Cosign:
    binary: Path
    root: Path
    password: str = "e2e-only-not-a-secret"

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # cosign's TUF cache (the public Sigstore roots), never read offline with a key: kept out of $HOME
        self.env = {**os.environ, "COSIGN_PASSWORD": self.password, "TUF_ROOT": str(self.root / "tuf"),
                    "HOME": str(self.root), "SIGSTORE_NO_CACHE": "1"}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([str(self.binary), *args], cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=300, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"cosign {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return done

    @property
    def key(self) -> Path:
        return self.root / "cosign.key"

    @property
    def public_key(self) -> Path:
        return self.root / "cosign.pub"

    def generate(self) -> Cosign:
        if not self.key.is_file():
            self.run("generate-key-pair")
        return self

    def sign(self, reference: str) -> None:
        """reference is repository@digest: what is signed is that manifest, never whatever a tag points at."""
        self.run("sign", "--yes", "--key", str(self.key), "--tlog-upload=false", "--allow-http-registry",
                 "--allow-insecure-registry", reference)

    def verify(self, reference: str) -> subprocess.CompletedProcess:
        return self.run("verify", "--key", str(self.public_key), "--insecure-ignore-tlog", "--allow-http-registry",
                        "--allow-insecure-registry", "--output", "json", reference, check=False)
