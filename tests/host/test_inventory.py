"""`host inventory`: each GPU, and each model's MIG profile table in the shape a cohort's `mig:` takes."""
from __future__ import annotations

import copy

import pytest
import yaml

from tests.host.conftest import HOST_H200, SMI_H200, xml_with
from webhook.config.load import DEFAULT_PATH, build_policy
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.host.facts import collect
from webhook.host.inventory import inventory, text
from webhook.host.sources import CapturedHost

CAPTURES = [pytest.param(HOST_H200, id="lent-h200"), pytest.param(SMI_H200, id="shared-h200")]


@pytest.mark.parametrize("folder", CAPTURES)
def test_gpus(folder):
    inv = inventory(collect(CapturedHost(folder)))
    assert (inv["driverVersion"], inv["cudaVersion"], inv["readFrom"]) == ("580.159.04", "13.0", "xml")
    assert inv["gpus"] == [{
        "index": 0, "productName": "NVIDIA H200", "memoryMiB": 143771, "migCapable": True,
        "migMode": {"current": "Disabled", "pending": "Disabled"}, "persistenceMode": "Enabled",
        "computeMode": "Default", "migDevices": [],
    }]


@pytest.mark.parametrize("folder", CAPTURES)
def test_profile_table_loads_as_a_cohort_table_equal_to_the_shipped_h200_one(folder):
    [model] = inventory(collect(CapturedHost(folder)))["models"]
    assert (model["productName"], model["gpus"], model["builtinModel"]) == ("NVIDIA H200", [0], "H200-141GB")
    data = copy.deepcopy(yaml.safe_load(DEFAULT_PATH.read_text()))
    cohort = next(c for c in data["cohorts"] if c["name"] == "device-plugin")
    cohort.update(migStrategy="mixed", mig=model["mig"])
    loaded = build_policy(data).cohort("device-plugin")
    assert dict(loaded.mig_profiles) == dict(MIG_PROFILE_TABLES["H200-141GB"])
    assert "nvidia.com/mig-1g.18gb" in loaded.offered_resources()


def test_text_table_is_yaml_a_cohort_takes():
    lines = text(inventory(collect(CapturedHost(HOST_H200))))
    start = lines.index("    mig:")
    table = yaml.safe_load("\n".join(lines[start:start + 9]))
    assert table == {"mig": {"profiles": dict(MIG_PROFILE_TABLES["H200-141GB"])}}


def test_ids_only_when_asked():
    facts = collect(CapturedHost(HOST_H200))
    hidden, shown = inventory(facts), inventory(facts, show_ids=True)
    assert not {"uuid", "serial", "busId"} & set(hidden["gpus"][0])
    assert "GPU-REDACTED" not in "\n".join(text(hidden)) and "00:06.0" not in "\n".join(text(hidden))
    assert (shown["gpus"][0]["uuid"], shown["gpus"][0]["serial"], shown["gpus"][0]["busId"]) == (
        "GPU-REDACTED", "REDACTED", "00000000:00:06.0")
    assert "uuid GPU-REDACTED" in "\n".join(text(shown))


def test_mig_devices_take_their_profile_from_the_list(host_dir):
    from tests.host.conftest import list_with
    folder = host_dir(configured=False, files={
        "nvidia-smi-q.xml": xml_with((HOST_H200 / "nvidia-smi-q.xml").read_text(), mig=("Enabled", "Enabled"),
                                     devices=2),
        "list.txt": list_with((HOST_H200 / "list.txt").read_text(), ["1g.18gb", "1g.18gb"])})
    [gpu] = inventory(collect(CapturedHost(folder)))["gpus"]
    assert gpu["migDevices"] == [{"index": 0, "profile": "1g.18gb", "memoryMiB": 16384},
                                 {"index": 1, "profile": "1g.18gb", "memoryMiB": 16384}]


def test_without_a_profile_listing(host_dir):
    folder = host_dir(configured=False, files={"mig-lgip.txt": "No MIG-enabled devices found.\n"})
    [model] = inventory(collect(CapturedHost(folder)))["models"]
    assert model["mig"] is None and "No MIG-enabled devices found" in model["migTableUnknown"]


def test_falls_back_to_the_seed_query(host_dir):
    inv = inventory(collect(CapturedHost(host_dir(configured=False, remove=("nvidia-smi-q.xml", "nvidia-smi-q.txt")))))
    assert inv["readFrom"] == "csv" and inv["gpus"][0]["migCapable"] is None
    assert any("MIG mode" in n for n in inv["notes"])


def test_nothing_readable(tmp_path):
    inv = inventory(collect(CapturedHost(tmp_path)))
    assert inv["gpus"] == [] and inv["errors"] and "nvidia-smi-q.xml is not in the capture" in inv["errors"][0]
