"""Host directories for `host inventory|check --from`, built from a real capture and stand-ins written here.

`host_dir(...)` copies tests/data/fixtures/host-h200 (captured on a lent H200 host, which had no toolkit, no
containerd and no CDI spec) and lays files over it. Where a case needs a host that could not be had here (MIG
enabled, an older driver), the real outputs are edited in the one place that differs, by the functions below;
each says which real output it stands in for. A configured toolkit (containerd configs and drop-ins,
`nvidia-ctk --version`, a CDI spec) comes from tests/data/host/, stand-ins written in this repository (its
README.md says which real file each replaces). Golden files for `host check` live under tests/golden/host/."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support import DATA, FIXTURES, REPO, compare_golden

HOST_H200 = FIXTURES / "host-h200"
SMI_H200 = FIXTURES / "nvidia-smi-h200"
# Stand-ins written here for a host the NVIDIA Container Toolkit configured (tests/data/host/README.md).
STANDINS = DATA / "host"
CONTAINERD = STANDINS / "containerd"
GOLDEN_HOST = REPO / "tests" / "golden" / "host"

# What nvidia-smi prints for one MIG device under <mig_devices> / "MIG Devices" (the element and field names
# of R565+ output; values of a 1g.18gb instance of the H200 in host-h200/mig-lgip.txt).
MIG_DEVICE_XML = """
			<mig_device>
				<index>{index}</index>
				<gpu_instance_id>{gi}</gpu_instance_id>
				<compute_instance_id>0</compute_instance_id>
				<fb_memory_usage>
					<total>16384 MiB</total>
					<reserved>0 MiB</reserved>
					<used>12 MiB</used>
					<free>16371 MiB</free>
				</fb_memory_usage>
			</mig_device>"""
MIG_DEVICE_TEXT = """        MIG Device
            Index                                      : {index}
            GPU Instance ID                            : {gi}
            Compute Instance ID                        : 0
            FB Memory Usage
                Total                                  : 16384 MiB
                Reserved                               : 0 MiB
                Used                                   : 12 MiB
                Free                                   : 16371 MiB
"""


def xml_with(text: str, *, mig: tuple[str, str] | None = None, devices: int = 0, driver: str | None = None,
             compute_mode: str | None = None) -> str:
    """The real `nvidia-smi -q -x` with MIG mode, MIG devices, driver version or compute mode changed."""
    if mig:
        text = text.replace("<current_mig>Disabled</current_mig>", f"<current_mig>{mig[0]}</current_mig>")
        text = text.replace("<pending_mig>Disabled</pending_mig>", f"<pending_mig>{mig[1]}</pending_mig>")
    if devices:
        body = "".join(MIG_DEVICE_XML.format(index=i, gi=7 + i) for i in range(devices))
        text = re.sub(r"<mig_devices>\s*None\s*</mig_devices>", f"<mig_devices>{body}\n\t\t</mig_devices>", text)
    if driver:
        text = re.sub(r"<driver_version>[^<]+</driver_version>", f"<driver_version>{driver}</driver_version>", text)
    if compute_mode:
        text = text.replace("<compute_mode>Default</compute_mode>", f"<compute_mode>{compute_mode}</compute_mode>")
    return text


def text_with(text: str, *, mig: tuple[str, str] | None = None, devices: int = 0) -> str:
    """The real `nvidia-smi -q` with MIG mode and MIG devices changed."""
    if mig:
        text = re.sub(r"(MIG Mode\n\s+Current\s+: )Disabled(\n\s+Pending\s+: )Disabled",
                      rf"\g<1>{mig[0]}\g<2>{mig[1]}", text)
    if devices:
        block = "    MIG Devices\n" + "".join(MIG_DEVICE_TEXT.format(index=i, gi=7 + i) for i in range(devices))
        text = text.replace("    Accounting Mode  ", block + "    Accounting Mode  ", 1)
    return text


def list_with(text: str, profiles: list[str]) -> str:
    """`nvidia-smi -L` of a MIG-enabled GPU: one line per MIG device under its GPU."""
    lines = text.rstrip("\n").splitlines()
    lines += [f"  MIG {p:<13} Device {i:>2}: (UUID: MIG-REDACTED-{i})" for i, p in enumerate(profiles)]
    return "\n".join(lines) + "\n"


def lgip_used(text: str, name: str, used: int) -> str:
    """`nvidia-smi mig -lgip` once `used` instances of profile `name` exist (Free drops, Total stays)."""
    def row(m):
        free, total = int(m["free"]), int(m["total"])
        return f"{m['head']}{max(free - used, 0)}/{total}"
    return re.sub(rf"(?P<head>MIG {re.escape(name)}\s+\d+\s+)(?P<free>\d+)/(?P<total>\d+)", row, text)


def containerd_configured(root: Path, version: str) -> None:
    """containerd as `nvidia-ctk runtime configure` leaves it: a root config of config version `version` ("v2":
    containerd 1.7, "v3": containerd 2.x) importing conf.d/*.toml, and the toolkit's drop-in there (with CDI
    on in the version 2 one)."""
    (root / "etc/containerd/conf.d").mkdir(parents=True, exist_ok=True)
    shutil.copy(CONTAINERD / f"{version}-config.toml", root / "etc/containerd/config.toml")
    shutil.copy(CONTAINERD / f"{version}-99-nvidia.toml", root / "etc/containerd/conf.d/99-nvidia.toml")


CONTAINERD_17 = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n"
CONTAINERD_21 = "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n"


def configured_host(root: Path, *, containerd: str = "v2") -> None:
    """A host with toolkit 1.18.0, containerd configured by it, and a generated CDI spec."""
    if containerd not in ("v2", "v3"):
        raise ValueError(f"containerd must be v2 or v3, not {containerd!r}")
    shutil.copy(STANDINS / "nvidia-ctk-version-1.18.0.txt", root / "nvidia-ctk-version.txt")
    containerd_configured(root, containerd)
    (root / "containerd-version.txt").write_text(CONTAINERD_17 if containerd == "v2" else CONTAINERD_21)
    shutil.copy(STANDINS / "cdi-nvidia.yaml", root / "etc/cdi/nvidia.yaml")


@pytest.fixture
def host_dir(tmp_path):
    """`host_dir(configured=True, files={...}, remove=[...])`: a captured host folder to give --from."""

    built = []

    def build(*, configured: bool = True, containerd: str = "v2", files: dict[str, str] | None = None,
              remove: tuple[str, ...] = ()) -> Path:
        built.append(None)
        root = tmp_path / f"host-{len(built)}"
        shutil.copytree(HOST_H200, root)
        if configured:
            configured_host(root, containerd=containerd)
        for name, body in (files or {}).items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(body)
        for name in remove:
            target = root / name
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        return root

    return build


@pytest.fixture
def golden_host(request):
    update = bool(request.config.getoption("update_golden", default=False))

    def check(lines, name: str | None = None) -> None:
        compare_golden(lines, GOLDEN_HOST / f"{name or request.node.callspec.id}.txt", update=update,
                       suite="tests/host")

    return check
