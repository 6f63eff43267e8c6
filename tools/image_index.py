"""One OCI archive holding an image index of single-architecture images (`make image`'s amd64 and arm64 archives):
what a release publishes, so that `docker pull`, containerd and the kubelet pick the node's architecture from one
reference and one digest.

    python -m tools.image_index OUT ARCHIVE...

Each input's manifest, config and layers are copied unchanged (their digests stay those of the single images); the
index lists them with their platform (from each config) and is named as the inputs are. The archive is written
deterministically: sorted members, fixed owners, the mtime of SOURCE_DATE_EPOCH (or 0).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

INDEX = "application/vnd.oci.image.index.v1+json"
REF = "org.opencontainers.image.ref.name"


def _read(archive: Path) -> tuple[dict, dict[str, bytes]]:
    """The archive's one manifest descriptor and every blob (digest -> bytes)."""
    with tarfile.open(archive) as tar:
        (descriptor,) = json.loads(tar.extractfile("index.json").read())["manifests"]  # type: ignore[union-attr]
        blobs = {}
        for member in tar.getmembers():
            if member.isfile() and member.name.startswith("blobs/"):
                algorithm, digest = member.name.split("/")[1:3]
                blobs[f"{algorithm}:{digest}"] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return descriptor, blobs


def build(out: Path, archives: list[Path], epoch: int) -> str:
    """Writes the index archive; returns the index's digest."""
    blobs: dict[str, bytes] = {}
    entries, names = [], set()
    for archive in archives:
        descriptor, found = _read(archive)
        blobs.update(found)
        manifest = json.loads(found[descriptor["digest"]])
        config = json.loads(found[manifest["config"]["digest"]])
        platform = {"architecture": config["architecture"], "os": config["os"]}
        if config.get("variant"):
            platform["variant"] = config["variant"]
        names.add(descriptor.get("annotations", {}).get(REF))
        entries.append({"mediaType": descriptor["mediaType"], "digest": descriptor["digest"],
                        "size": descriptor["size"], "platform": platform})
    if len(names) != 1 or None in names:
        raise SystemExit(f"the archives name different images: {sorted(map(str, names))}")
    architectures = [e["platform"]["architecture"] for e in entries]
    if len(set(architectures)) != len(architectures):
        raise SystemExit(f"one image per architecture: {architectures}")
    index = json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": entries},
                       separators=(",", ":")).encode()
    digest = "sha256:" + hashlib.sha256(index).hexdigest()
    blobs[digest] = index
    top = {"schemaVersion": 2, "manifests": [{"mediaType": INDEX, "digest": digest, "size": len(index),
                                              "annotations": {REF: names.pop()}}]}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(top, separators=(",", ":")).encode(),
             **{"blobs/" + d.replace(":", "/"): b for d, b in blobs.items()}}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        directories = sorted({str(Path(n).parent) for n in files if "/" in n} | {"blobs"})
        for name in directories:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, epoch
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, epoch
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(partial, out)
    return digest


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: python -m tools.image_index OUT ARCHIVE ARCHIVE...", file=sys.stderr)
        return 2
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or 0)
    print(build(Path(argv[0]), [Path(a) for a in argv[1:]], epoch))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
