"""The arm64 image `make release` built (dist/gpu-admission-<version>-arm64.oci.tar), run on this amd64 machine under
emulation (Debian's qemu-user-static through binfmt_misc, tools/binfmt.sh) exactly as tests/image runs the amd64 one:
the chart's pod settings under runc, its entry point answering /readyz over HTTPS and on the probe port. Its
virtualenv was built on amd64 (tools/image.sh), so this is where its aarch64 wheels first run."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.image import test_image
from tests.support import REPO
from tests.test_release import VERSION

pytestmark = [pytest.mark.slow, pytest.mark.release]

ARCHIVE = REPO / "dist" / f"gpu-admission-{VERSION}-arm64.oci.tar"
test_image.READY_TIMEOUT = 600.0  # gunicorn and its imports, every instruction translated by qemu


@pytest.fixture(scope="session")
def archive() -> Path:
    if not ARCHIVE.is_file():
        pytest.fail(f"{ARCHIVE.relative_to(REPO)} is missing: run `make release` first", pytrace=False)
    done = subprocess.run([str(REPO / "tools" / "binfmt.sh")], capture_output=True, text=True, timeout=60,
                          check=False)
    if done.returncode != 0:
        pytest.fail(done.stderr.strip(), pytrace=False)
    return ARCHIVE


def test_the_archive_holds_the_arm64_image_under_the_same_name(image):
    assert image["reference"] == test_image.REFERENCE
    assert (image["config"]["os"], image["config"]["architecture"], image["config"].get("variant")) == (
        "linux", "arm64", "v8")
    assert image["config"]["config"]["Entrypoint"] == test_image.dockerfile.entrypoint()


def test_its_programs_are_aarch64(bundle):
    with open(bundle / "rootfs" / "usr" / "bin" / "python3.11", "rb") as program:
        header = program.read(20)
    assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 0xB7  # EM_AARCH64


# its filesystem read as the amd64 image's is: no pip, no setuptools, no compiler, no build leftovers, the
# virtualenv on Debian's interpreter holding exactly the lock and the project, byte-compiled
test_no_pip_no_compiler_no_build_leftovers = test_image.test_no_pip_no_compiler_no_build_leftovers


def test_the_entry_point_answers_readyz_under_emulation(container):
    status, body = container["https"]("/readyz")
    assert status == 200 and json.loads(body)["ready"] is True
    # the container's process is qemu running the aarch64 interpreter: emulation, not an amd64 image
    state = json.loads(test_image._runc(container["state"], "state", container["name"]).stdout)
    assert os.readlink(f"/proc/{state['pid']}/exe").endswith("qemu-aarch64-static")
