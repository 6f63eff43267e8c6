"""The host parsers on every real output captured (two H200 hosts, driver 580.159.04), on the same outputs as
MIG-enabled GPUs print them, and on the stand-ins written here for what a host configured by the NVIDIA
Container Toolkit holds (tests/data/host: containerd configs, `nvidia-ctk --version`, a CDI spec)."""
from __future__ import annotations

import pytest

from tests.host.conftest import CONTAINERD, HOST_H200, SMI_H200, STANDINS, list_with, text_with, xml_with
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.host import cdi, containerd, mig, nvsmi, toolkit

CAPTURES = [pytest.param(HOST_H200, id="lent-h200"), pytest.param(SMI_H200, id="shared-h200")]


def read(folder, name):
    return (folder / name).read_text()


@pytest.mark.parametrize("folder", CAPTURES)
@pytest.mark.parametrize("form, parse", [
    pytest.param("nvidia-smi-q.xml", nvsmi.parse_xml, id="xml"),
    pytest.param("nvidia-smi-q.txt", nvsmi.parse_text, id="text"),
])
def test_report_forms_read_the_same_gpu(folder, form, parse):
    smi = parse(read(folder, form))
    assert (smi.driver_version, smi.cuda_version) == ("580.159.04", "13.0")
    [gpu] = smi.gpus
    assert (gpu.index, gpu.product_name, gpu.memory_mib) == (0, "NVIDIA H200", 143771)
    assert (gpu.mig_capable, gpu.mig_current, gpu.mig_pending, gpu.mig_enabled) == (True, "Disabled", "Disabled", False)
    assert (gpu.persistence_mode, gpu.compute_mode) == ("Enabled", "Default")
    assert gpu.serial is None or gpu.serial == "REDACTED"
    assert gpu.uuid and gpu.uuid.startswith("GPU-")
    assert gpu.bus_id == "00000000:00:06.0"


@pytest.mark.parametrize("folder", CAPTURES)
def test_xml_and_text_agree(folder):
    xml, text = nvsmi.parse_xml(read(folder, "nvidia-smi-q.xml")), nvsmi.parse_text(read(folder, "nvidia-smi-q.txt"))
    strip = lambda g: (g.product_name, g.memory_mib, g.mig_current, g.mig_pending, g.persistence_mode, g.compute_mode)
    assert [strip(g) for g in xml.gpus] == [strip(g) for g in text.gpus]


@pytest.mark.parametrize("folder", CAPTURES)
def test_seed_query_csv_and_list(folder):
    csv = nvsmi.parse_query_csv(read(folder, "query.csv"))
    assert csv.driver_version == "580.159.04" and csv.form == "csv"
    assert [(g.product_name, g.memory_mib, g.mig_capable) for g in csv.gpus] == [("NVIDIA H200", 143771, None)]
    listing = nvsmi.parse_list(read(folder, "list.txt"))
    assert [(g.index, g.product_name, g.mig_devices) for g in listing.gpus] == [(0, "NVIDIA H200", ())]


def test_csv_with_header_takes_its_columns():
    text = ("index, name, memory.total [MiB], driver_version\n0, NVIDIA H200, 143771 MiB, 580.159.04\n"
            "1, NVIDIA H200, 143771 MiB, 580.159.04\n")
    smi = nvsmi.parse_query_csv(text)
    assert [(g.index, g.memory_mib) for g in smi.gpus] == [(0, 143771), (1, 143771)]


@pytest.mark.parametrize("text, error", [
    pytest.param("NVIDIA H200, 580.159.04\n", "2 columns, expected 4", id="short-row"),
    pytest.param("NVIDIA H200, 580.159.04, GPU-a, 143771 MiB\nNVIDIA H200, 575.57.08, GPU-b, 143771 MiB\n",
                 "different driver versions", id="two-drivers"),
])
def test_csv_refuses(text, error):
    with pytest.raises(nvsmi.ParseError, match=error):
        nvsmi.parse_query_csv(text)


def test_mig_enabled_xml_and_text():
    xml = nvsmi.parse_xml(xml_with(read(HOST_H200, "nvidia-smi-q.xml"), mig=("Enabled", "Enabled"), devices=2))
    text = nvsmi.parse_text(text_with(read(HOST_H200, "nvidia-smi-q.txt"), mig=("Enabled", "Enabled"), devices=2))
    for smi in (xml, text):
        [gpu] = smi.gpus
        assert gpu.mig_enabled and gpu.mig_pending == "Enabled"
        assert [(d.index, d.gpu_instance_id, d.memory_mib) for d in gpu.mig_devices] == [(0, 7, 16384), (1, 8, 16384)]


def test_pending_mig_change_is_read():
    [gpu] = nvsmi.parse_xml(xml_with(read(HOST_H200, "nvidia-smi-q.xml"), mig=("Disabled", "Enabled"))).gpus
    assert (gpu.mig_current, gpu.mig_pending, gpu.mig_enabled) == ("Disabled", "Enabled", False)


def test_gpu_without_mig_reads_not_capable():
    [gpu] = nvsmi.parse_xml(read(HOST_H200, "nvidia-smi-q.xml").replace(
        "<current_mig>Disabled</current_mig>", "<current_mig>N/A</current_mig>").replace(
        "<pending_mig>Disabled</pending_mig>", "<pending_mig>N/A</pending_mig>")).gpus
    assert (gpu.mig_capable, gpu.mig_current) == (False, None)


def test_list_with_mig_devices():
    listing = nvsmi.parse_list(list_with(read(HOST_H200, "list.txt"), ["1g.18gb", "1g.18gb+me"]))
    assert [(d.index, d.profile) for d in listing.gpus[0].mig_devices] == [(0, "1g.18gb"), (1, "1g.18gb+me")]


@pytest.mark.parametrize("parse, text, error", [
    pytest.param(nvsmi.parse_xml, "<html/>", "root element is <html>", id="xml-other-root"),
    pytest.param(nvsmi.parse_xml, "not xml", "not nvidia-smi -q -x XML", id="xml-garbage"),
    pytest.param(nvsmi.parse_xml, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><nvidia_smi_log/>',
                 "declares entities", id="xml-entities"),
    pytest.param(nvsmi.parse_text, "Failed to initialize NVML: Driver/library version mismatch\n",
                 "no 'Driver Version' line", id="text-nvml-failure"),
    pytest.param(nvsmi.parse_list, "No devices were found\n", "not a line of nvidia-smi -L", id="list-no-devices"),
])
def test_parsers_refuse_other_text(parse, text, error):
    with pytest.raises(nvsmi.ParseError, match=error):
        parse(text)


@pytest.mark.parametrize("folder", CAPTURES)
def test_lgip_is_the_shipped_h200_table(folder):
    profiles = mig.parse_lgip(read(folder, "mig-lgip.txt"))
    assert mig.tables(profiles) == {0: dict(MIG_PROFILE_TABLES["H200-141GB"])}
    assert [(p.name, p.profile_id, p.memory_gib) for p in profiles][:2] == [("1g.18gb", 19, 16.0),
                                                                            ("1g.18gb+me", 20, 16.0)]
    assert mig.policy_table(mig.tables(profiles)[0]) == (dict(MIG_PROFILE_TABLES["H200-141GB"]), ())


def test_lgip_with_instances_keeps_totals():
    from tests.host.conftest import lgip_used
    profiles = mig.parse_lgip(lgip_used(read(HOST_H200, "mig-lgip.txt"), "1g.18gb", 7))
    row = next(p for p in profiles if p.name == "1g.18gb")
    assert (row.free, row.total) == (0, 7)


@pytest.mark.parametrize("text", [
    pytest.param("No MIG-enabled devices found.\n", id="older-driver-mig-disabled"),
    pytest.param("No MIG-supported devices found.\n", id="no-mig-gpu"),
])
def test_lgip_without_a_table(text):
    assert mig.parse_lgip(text) == ()


def test_lgip_refuses_other_text():
    with pytest.raises(nvsmi.ParseError, match="not nvidia-smi mig -lgip output"):
        mig.parse_lgip("bash: nvidia-smi: command not found\n")


def test_policy_table_leaves_out_names_the_policy_cannot_take():
    assert mig.policy_table({"1g.24gb": 4, "1g.24gb+gfx": 4, "1g.12gb+me": 1}) == (
        {"1g.24gb": 4, "1g.12gb+me": 1}, ("1g.24gb+gfx",))


@pytest.mark.parametrize("name, version, pre", [
    pytest.param("nvidia-ctk-version-1.18.0.txt", (1, 18, 0), False, id="1.18.0"),
    pytest.param("nvidia-ctk-version-1.17.5.txt", (1, 17, 5), False, id="1.17.5"),
])
def test_ctk_version(name, version, pre):
    assert toolkit.parse_ctk_version(read(STANDINS, name)) == (version, pre)


def test_ctk_pre_release_and_garbage():
    assert toolkit.parse_ctk_version("NVIDIA Container Toolkit CLI version 1.18.0-rc.2\ncommit: abc\n") == ((1, 18, 0),
                                                                                                            True)
    with pytest.raises(nvsmi.ParseError, match="command not found"):
        toolkit.parse_ctk_version("bash: nvidia-ctk: command not found\n")


@pytest.mark.parametrize("text, version", [
    pytest.param("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", (1, 7, 27),
                 id="1.7-deb"),
    pytest.param("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n",
                 (2, 1, 4), id="2.1-upstream"),
])
def test_containerd_version(text, version):
    assert toolkit.parse_containerd_version(text) == version


NVIDIA_HANDLERS = {"nvidia": "/usr/bin/nvidia-container-runtime", "nvidia-cdi": "/usr/bin/nvidia-container-runtime.cdi",
                   "nvidia-legacy": "/usr/bin/nvidia-container-runtime.legacy"}
V2_CRI, V3_CRI = 'plugins."io.containerd.grpc.v1.cri"', 'plugins."io.containerd.cri.v1.runtime"'


@pytest.mark.parametrize("name, version, handlers, cdi_on, imports, default, table", [
    pytest.param("v1-config.toml", 1, {"nvidia", "runc"}, None, (), "runc", 'plugins."cri"', id="v1"),
    pytest.param("v2-no-imports.toml", 2, {"runc"}, None, (), "runc", V2_CRI, id="v2-before"),
    pytest.param("v2-config.toml", 2, {"runc"}, None, ("/etc/containerd/conf.d/*.toml",), "runc", V2_CRI, id="v2-root"),
    pytest.param("v2-99-nvidia.toml", 2, set(NVIDIA_HANDLERS), True, (), None, V2_CRI, id="v2-drop-in"),
    pytest.param("v3-config.toml", 3, {"runc"}, None, ("/etc/containerd/conf.d/*.toml",), "runc", V3_CRI, id="v3-root"),
    pytest.param("v3-99-nvidia.toml", 3, set(NVIDIA_HANDLERS), None, (), None, V3_CRI, id="v3-drop-in"),
])
def test_containerd_configs(name, version, handlers, cdi_on, imports, default, table):
    """The stand-ins for containerd configs before and after `nvidia-ctk runtime configure` (tests/data/host)."""
    config = containerd.parse_config(read(CONTAINERD, name), f"/etc/containerd/{name}")
    assert (config.version, set(config.runtimes), config.enable_cdi, config.imports) == (version, handlers, cdi_on,
                                                                                         imports)
    assert config.default_runtime == default
    for handler, runtime in config.runtimes.items():
        assert (runtime.runtime_type, runtime.table) == ("io.containerd.runc.v2",
                                                         f"{table}.containerd.runtimes.{handler}")
        assert runtime.binary_name == NVIDIA_HANDLERS.get(handler), handler  # runc: no BinaryName, plain runc


def test_containerd_v1_takes_either_cri_plugin_name():
    """A version 1 config may name the CRI plugin `cri` or `io.containerd.grpc.v1.cri`; version 1 is the default."""
    short = read(CONTAINERD, "v1-config.toml")
    long = short.replace("[plugins.cri", '[plugins."io.containerd.grpc.v1.cri"')
    config = containerd.parse_config(long, "x.toml")
    assert (config.version, config.runtimes["nvidia"].binary_name) == (1, "/usr/bin/nvidia-container-runtime")
    assert containerd.parse_config("version = 1\n" + long, "x.toml").runtimes == config.runtimes
    # version 2 reads the long name only
    assert set(containerd.parse_config("version = 2\n" + long, "x.toml").runtimes) == {"nvidia", "runc"}
    assert containerd.parse_config("version = 2\n" + short, "x.toml").runtimes == {}


def test_containerd_v3_tables_are_not_read_in_a_v2_config():
    """A version 2 file names the CRI plugin io.containerd.grpc.v1.cri; the v3 name there is not containerd's."""
    text = read(CONTAINERD, "v3-99-nvidia.toml").replace("version = 3", "version = 2")
    assert containerd.parse_config(text, "x.toml").runtimes == {}


@pytest.mark.parametrize("text, error", [
    pytest.param("version = 2\n[plugins\n", "not valid TOML", id="broken"),
    pytest.param('version = "2"\n', "positive integer", id="version-string"),
    pytest.param('imports = "conf.d/*.toml"\n', "imports must be a list", id="imports-string"),
])
def test_containerd_refuses(text, error):
    with pytest.raises(nvsmi.ParseError, match=error):
        containerd.parse_config(text, "/etc/containerd/config.toml")


def test_cdi_spec():
    spec = cdi.parse_spec(read(STANDINS, "cdi-nvidia.yaml"), "/etc/cdi/nvidia.yaml")
    assert (spec.kind, spec.cdi_version, spec.devices) == ("nvidia.com/gpu", "0.5.0", ("0", "GPU-REDACTED", "all"))
    as_json = cdi.parse_spec('{"cdiVersion": "0.6.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0"}]}', "x.json")
    assert as_json.devices == ("0",)
    with pytest.raises(nvsmi.ParseError, match="has no kind"):
        cdi.parse_spec("devices: []\n", "x.yaml")


# Two GPUs as R535 to R575 drivers print them (nvsmi_device_v12.dtd; R580 prints v13 with the same elements
# read here): one without MIG (N/A), one MIG-enabled with two instances whose memory is not given. Values are
# illustrative; the element names and layout are those of those drivers' `nvidia-smi -q -x`.
V12_TWO_GPUS = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<timestamp>Fri Oct 11 18:24:09 2024</timestamp>
	<driver_version>565.57.01</driver_version>
	<cuda_version>12.7</cuda_version>
	<attached_gpus>2</attached_gpus>
	<gpu id="00000000:15:00.0">
		<product_name>NVIDIA L40S</product_name>
		<persistence_mode>Disabled</persistence_mode>
		<mig_mode>
			<current_mig>N/A</current_mig>
			<pending_mig>N/A</pending_mig>
		</mig_mode>
		<mig_devices>
			None
		</mig_devices>
		<uuid>GPU-00000000-0000-0000-0000-000000000001</uuid>
		<fb_memory_usage><total>46068 MiB</total></fb_memory_usage>
		<compute_mode>Default</compute_mode>
	</gpu>
	<gpu id="00000000:10:00.0">
		<product_name>NVIDIA A100-SXM4-40GB</product_name>
		<persistence_mode>Enabled</persistence_mode>
		<mig_mode>
			<current_mig>Enabled</current_mig>
			<pending_mig>Enabled</pending_mig>
		</mig_mode>
		<mig_devices>
			<mig_device>
				<index>0</index>
				<gpu_instance_id>1</gpu_instance_id>
				<compute_instance_id>0</compute_instance_id>
			</mig_device>
			<mig_device>
				<index>1</index>
				<gpu_instance_id>5</gpu_instance_id>
				<compute_instance_id>0</compute_instance_id>
			</mig_device>
		</mig_devices>
		<uuid>GPU-00000000-0000-0000-0000-000000000002</uuid>
		<fb_memory_usage><total>40960 MiB</total></fb_memory_usage>
		<compute_mode>Default</compute_mode>
	</gpu>
</nvidia_smi_log>
"""


def test_v12_two_gpus():
    smi = nvsmi.parse_xml(V12_TWO_GPUS)
    assert (smi.driver_version, nvsmi.driver_branch(smi.driver_version)) == ("565.57.01", 565)
    l40s, a100 = smi.gpus
    assert (l40s.index, l40s.mig_capable, l40s.mig_current, l40s.mig_devices, l40s.persistence_mode) == (
        0, False, None, (), "Disabled")
    assert (a100.index, a100.mig_enabled, [d.gpu_instance_id for d in a100.mig_devices], a100.bus_id) == (
        1, True, [1, 5], "00000000:10:00.0")


def test_node():
    from webhook.host.node import parse_node
    item = {"kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}},
            "status": {"capacity": {"nvidia.com/gpu.shared": "4", "memory": "1Gi"}}}
    import json
    for text in (json.dumps(item), json.dumps({"kind": "List", "items": [item]})):
        node = parse_node(text, "node.json")
        assert (node.name, node.labels, node.count("nvidia.com/gpu.shared"), node.count("memory"),
                node.count("nvidia.com/gpu")) == ("n1", {"a": "b"}, 4, None, None)
    with pytest.raises(nvsmi.ParseError, match="not one Node"):
        parse_node(json.dumps({"kind": "List", "items": [item, item]}), "node.json")
