"""`host check` for each prerequisite: fit, not fit and unknown, on captured host folders (tests/host/conftest.py)."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import yaml

from tests.host.conftest import CONTAINERD, HOST_H200, STANDINS, list_with, xml_with
from webhook.config import default_policy
from webhook.config.load import DEFAULT_PATH, build_policy
from webhook.host.checks import Check, Status, check_host, verdict
from webhook.host.facts import collect
from webhook.host.node import Node
from webhook.host.sources import CapturedHost

XML = (HOST_H200 / "nvidia-smi-q.xml").read_text()
LIST = (HOST_H200 / "list.txt").read_text()
DEFAULT = yaml.safe_load(DEFAULT_PATH.read_text())
# Stand-ins written here (tests/data/host/README.md): a version 2 root config with runc only and no imports,
# the toolkit's drop-ins for version 2 and 3 roots, `nvidia-ctk --version` below the DRA floor, a CDI spec.
V2_ROOT_ONLY = (CONTAINERD / "v2-no-imports.toml").read_text()
DROP_IN_V2 = (CONTAINERD / "v2-99-nvidia.toml").read_text()
DROP_IN_V3 = (CONTAINERD / "v3-99-nvidia.toml").read_text()
CTK_1_17 = (STANDINS / "nvidia-ctk-version-1.17.5.txt").read_text()
CDI_SPEC = (STANDINS / "cdi-nvidia.yaml").read_text()
DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"


def policy_with(cohort: str, **fields):
    """The shipped policy with fields of one cohort changed (None removes a field)."""
    data = copy.deepcopy(DEFAULT)
    for c in data["cohorts"]:
        if c["name"] == cohort:
            for k, v in fields.items():
                if v is None:
                    c.pop(k, None)
                else:
                    c[k] = v
    return build_policy(data)


MIXED_H200 = dict(migStrategy="mixed", mig={"model": "H200-141GB"})
MIXED_A100 = dict(migStrategy="mixed", mig={"model": "A100-40GB"})
SINGLE_H200 = dict(migStrategy="single", mig={"model": "H200-141GB"})
TIME_SLICED = dict(timeSlicing={"renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]})
MPS = dict(mps={"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]})
MIG_ON = dict(mig=("Enabled", "Enabled"))


def findings(folder, cohort="dra", policy=None, node=None, **kw):
    policy = policy or default_policy()
    return check_host(collect(CapturedHost(folder), node=node), policy.cohort(cohort), policy, **kw)


def statuses(found, check: Check) -> list[Status]:
    return [f.status for f in found if f.check is check]


CASES = [
    # (id, cohort, policy fields, host_dir arguments, the check, its statuses, the verdict)
    ("dra-fit", "dra", {}, {}, Check.DRIVER, [Status.PASS], Status.PASS),
    ("dra-driver-560", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="560.35.03")}},
     Check.DRIVER, [Status.FAIL], Status.FAIL),
    ("dra-driver-565", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="565.57.01")}},
     Check.DRIVER, [Status.PASS], Status.PASS),
    ("operator-dra-driver-575", "dra", {"manager": "gpu-operator-gpucluster"},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="575.57.08")}}, Check.DRIVER, [Status.FAIL], Status.FAIL),
    ("operator-dra-driver-580", "dra", {"manager": "gpu-operator-gpucluster"}, {}, Check.DRIVER, [Status.PASS],
     Status.PASS),
    ("driver-unreadable", "dra", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt", "query.csv")},
     Check.GPUS, [Status.UNKNOWN], Status.UNKNOWN),
    ("gpus-from-csv-only", "device-plugin", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt")},
     Check.MIG_MODE, [Status.UNKNOWN], Status.UNKNOWN),
    ("compute-mode-from-csv-only", "device-plugin", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt")},
     Check.COMPUTE_MODE, [Status.UNKNOWN], Status.UNKNOWN),
    ("no-gpu-listed", "dra", {}, {"files": {"nvidia-smi-q.xml": XML[:XML.index("\t<gpu id")] + "</nvidia_smi_log>\n"}},
     Check.GPUS, [Status.FAIL], Status.FAIL),
    ("driver-version-not-read", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="N/A")}},
     Check.DRIVER, [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-toolkit-1.17", "dra", {}, {"files": {"nvidia-ctk-version.txt": CTK_1_17}},
     Check.TOOLKIT, [Status.FAIL], Status.FAIL),
    ("dra-toolkit-1.18-rc", "dra", {},
     {"files": {"nvidia-ctk-version.txt": "NVIDIA Container Toolkit CLI version 1.18.0-rc.2\n"}},
     Check.TOOLKIT, [Status.FAIL], Status.FAIL),
    ("dra-toolkit-absent", "dra", {}, {"remove": ("nvidia-ctk-version.txt",)}, Check.TOOLKIT, [Status.UNKNOWN],
     Status.UNKNOWN),
    ("device-plugin-toolkit-1.17", "device-plugin", {},
     {"files": {"nvidia-ctk-version.txt": CTK_1_17}},
     Check.TOOLKIT, [Status.PASS], Status.PASS),
    ("device-plugin-toolkit-1.6", "device-plugin", {},
     {"files": {"nvidia-ctk-version.txt": CTK_1_17.replace("1.17.5", "1.6.0")}},
     Check.TOOLKIT, [Status.FAIL], Status.FAIL),
    ("device-plugin-toolkit-absent", "device-plugin", {}, {"remove": ("nvidia-ctk-version.txt",)}, Check.TOOLKIT,
     [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-no-cdi-spec", "dra", {}, {"remove": ("etc/cdi/nvidia.yaml",)}, Check.CDI_SPEC, [Status.FAIL], Status.FAIL),
    ("dra-cdi-spec-in-var-run", "dra", {}, {"remove": ("etc/cdi/nvidia.yaml",),
                                            "files": {"var/run/cdi/nvidia.yaml": CDI_SPEC}},
     Check.CDI_SPEC, [Status.PASS], Status.PASS),
    ("dra-cdi-spec-other-kind", "dra", {}, {"files": {"etc/cdi/nvidia.yaml": CDI_SPEC
                                                      .replace("kind: nvidia.com/gpu", "kind: example.com/fpga")}},
     Check.CDI_SPEC, [Status.FAIL], Status.FAIL),
    ("dra-cdi-spec-stale", "dra", {}, {"files": {"nvidia-smi-q.xml": XML.replace("<attached_gpus>1", "<attached_gpus>2")
                                                 .replace("</gpu>",
                                                          "</gpu>" + XML[XML.index("<gpu id"):XML.index("</gpu>") + 6],
                                                          1)}},
     Check.CDI_SPEC, [Status.FAIL], Status.FAIL),
    ("dra-cdi-not-captured", "dra", {}, {"remove": ("etc/cdi", "var/run/cdi")}, Check.CDI_SPEC, [Status.UNKNOWN],
     Status.UNKNOWN),
    ("dra-cdi-off-containerd-1.7", "dra", {},
     {"remove": (DROP_IN,), "files": {"etc/containerd/config.toml": V2_ROOT_ONLY}},
     Check.CDI_RUNTIME, [Status.FAIL], Status.FAIL),
    ("dra-cdi-default-containerd-2.1", "dra", {}, {"containerd": "v3"}, Check.CDI_RUNTIME, [Status.PASS], Status.PASS),
    ("dra-cdi-explicitly-off", "dra", {}, {"containerd": "v3", "files": {DROP_IN: DROP_IN_V3.replace(
        '[plugins."io.containerd.cri.v1.runtime"]\n',
        '[plugins."io.containerd.cri.v1.runtime"]\n    enable_cdi = false\n', 1)}},
     Check.CDI_RUNTIME, [Status.FAIL], Status.FAIL),
    ("dra-cdi-containerd-version-unknown", "dra", {}, {"containerd": "v3", "remove": ("containerd-version.txt",)},
     Check.CDI_RUNTIME, [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-cdi-on-version-unknown", "dra", {}, {"remove": ("containerd-version.txt",)}, Check.CDI_RUNTIME,
     [Status.PASS], Status.PASS),
    ("device-plugin-fit", "device-plugin", {}, {}, Check.HANDLER, [Status.PASS], Status.PASS),
    ("device-plugin-fit-v3", "device-plugin", {}, {"containerd": "v3"}, Check.HANDLER, [Status.PASS], Status.PASS),
    ("device-plugin-fit-v1", "device-plugin", {}, {"remove": (DROP_IN,), "files": {
        "etc/containerd/config.toml": (CONTAINERD / "v1-config.toml").read_text()}}, Check.HANDLER,
     [Status.PASS], Status.PASS),
    ("device-plugin-no-handler", "device-plugin", {},
     {"remove": (DROP_IN,), "files": {"etc/containerd/config.toml": V2_ROOT_ONLY}},
     Check.HANDLER, [Status.FAIL], Status.FAIL),
    ("device-plugin-other-runtime-class", "device-plugin", {"runtimeClassName": "nvidia-cdi"}, {}, Check.HANDLER,
     [Status.PASS], Status.PASS),
    ("device-plugin-handler-no-binary", "device-plugin", {}, {"files": {DROP_IN: DROP_IN_V2.replace(
        'BinaryName = "/usr/bin/nvidia-container-runtime"\n', "")}}, Check.HANDLER, [Status.FAIL], Status.FAIL),
    ("device-plugin-handler-wrapper", "device-plugin", {}, {"files": {DROP_IN: DROP_IN_V2.replace(
        '"/usr/bin/nvidia-container-runtime"', '"/usr/local/bin/gpu-wrapper"')}}, Check.HANDLER, [Status.UNKNOWN],
     Status.UNKNOWN),
    ("device-plugin-no-containerd-config", "device-plugin", {}, {"remove": ("etc/containerd/config.toml",)},
     Check.HANDLER, [Status.UNKNOWN], Status.UNKNOWN),
    ("device-plugin-drop-in-broken", "device-plugin", {},
     {"files": {"etc/containerd/conf.d/50-broken.toml": "[plugins\n"}},
     Check.CONTAINERD, [Status.FAIL], Status.FAIL),
    ("drop-in-newer-containerd-2.3", "device-plugin", {}, {"files": {
        DROP_IN: DROP_IN_V3, "containerd-version.txt": "containerd github.com/containerd/containerd/v2 v2.3.0 0\n"}},
     Check.CONTAINERD, [Status.FAIL], Status.FAIL),
    ("drop-in-newer-containerd-2.1", "device-plugin", {}, {"files": {
        DROP_IN: DROP_IN_V3, "containerd-version.txt": "containerd github.com/containerd/containerd/v2 v2.1.4 0\n"}},
     Check.CONTAINERD, [Status.PASS], Status.PASS),
    ("device-plugin-mig-on", "device-plugin", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     Check.MIG_MODE, [Status.FAIL], Status.FAIL),
    ("device-plugin-mig-pending", "device-plugin", {},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, mig=("Disabled", "Enabled"))}},
     Check.MIG_MODE, [Status.FAIL], Status.FAIL),
    ("dra-mig-on", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     Check.MIG_MODE, [Status.FAIL], Status.FAIL),
    ("dra-mig-cohort-mig-on", "dra", {"deviceTypes": ["mig"]},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     Check.MIG_MODE, [Status.PASS], Status.PASS),
    ("dra-mig-cohort-mig-off", "dra", {"deviceTypes": ["mig"]}, {}, Check.MIG_MODE, [Status.FAIL], Status.FAIL),
    ("mixed-mig-off", "device-plugin", MIXED_H200, {}, Check.MIG_MODE, [Status.FAIL], Status.FAIL),
    ("mixed-h200-fit", "device-plugin", MIXED_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=2), "list.txt": list_with(LIST, ["1g.18gb", "3g.71gb"])}},
     Check.MIG_PROFILES, [Status.PASS], Status.PASS),
    ("mixed-a100-table-on-h200", "device-plugin", MIXED_A100, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     Check.MIG_PROFILES, [Status.FAIL], Status.FAIL),
    ("mixed-profiles-unreadable", "device-plugin", MIXED_H200, {"remove": ("mig-lgip.txt",), "files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     Check.MIG_PROFILES, [Status.UNKNOWN], Status.UNKNOWN),
    ("mixed-no-instances", "device-plugin", MIXED_H200, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON)}},
     Check.MIG_DEVICES, [Status.FAIL], Status.FAIL),
    ("mixed-devices-unreadable", "device-plugin", MIXED_H200, {"remove": ("list.txt",), "files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1)}}, Check.MIG_DEVICES, [Status.UNKNOWN], Status.UNKNOWN),
    ("single-one-profile", "device-plugin", SINGLE_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7), "list.txt": list_with(LIST, ["1g.18gb"] * 7)}},
     Check.MIG_DEVICES, [Status.PASS], Status.PASS),
    ("single-two-profiles", "device-plugin", SINGLE_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=2), "list.txt": list_with(LIST, ["1g.18gb", "3g.71gb"])}},
     Check.MIG_DEVICES, [Status.FAIL], Status.FAIL),
    ("compute-prohibited", "device-plugin", {},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, compute_mode="Prohibited")}},
     Check.COMPUTE_MODE, [Status.FAIL], Status.FAIL),
    ("exclusive-process-exclusive-cohort", "device-plugin", {}, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, Check.COMPUTE_MODE, [Status.PASS],
        Status.PASS),
    ("time-slicing-exclusive-process", "device-plugin", TIME_SLICED, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, Check.COMPUTE_MODE, [Status.FAIL],
        Status.FAIL),
    ("time-slicing-default-mode", "device-plugin", TIME_SLICED, {}, Check.SHARING, [Status.UNKNOWN], Status.UNKNOWN),
    ("mps-exclusive-process", "device-plugin", MPS, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, Check.MPS, [Status.PASS],
        Status.UNKNOWN),
    ("mps-on-mig", "device-plugin", {**MPS, **MIXED_H200}, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     Check.MPS, [Status.FAIL], Status.FAIL),
    ("mps-daemon-on-exclusive-cohort", "device-plugin", {},
     {"files": {"processes.txt": "systemd\nnvidia-cuda-mps-control\n"}},
     Check.MPS, [Status.FAIL], Status.FAIL),
    ("processes-not-captured", "dra", {}, {"remove": ("processes.txt",)}, Check.MPS, [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-sharing-gates", "dra", {"sharingStrategies": ["TimeSlicing"]}, {}, Check.SHARING, [Status.UNKNOWN],
     Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, check, expected, result",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_prerequisite(host_dir, cohort, fields, host, check, expected, result):
    found = findings(host_dir(**host), cohort, policy_with(cohort, **fields) if fields else None)
    assert statuses(found, check) == expected, [f.message for f in found]
    assert verdict(found) is result, [f.message for f in found if f.status is not Status.PASS]
    for f in found:
        assert f.message.endswith(f"[{f.check.value}] {f.docs}")
        assert f.docs.endswith(f"/docs/host.md#{f.check.value}")
        if f.status is not Status.PASS:
            assert f.why and f.fix, f.message


@pytest.mark.parametrize("cohort", ["device-plugin", "dra"])
def test_the_lent_host_as_captured_cannot_be_told_fit(cohort):
    """It has no toolkit, no containerd and no CDI: unknown or not fit, never fit."""
    found = findings(HOST_H200, cohort)
    assert verdict(found) is not Status.PASS
    assert statuses(found, Check.TOOLKIT) == [Status.UNKNOWN]
    assert all(s is Status.PASS for s in statuses(found, Check.DRIVER) + statuses(found, Check.MIG_MODE))


@pytest.mark.parametrize("case", ["dra-fit", "device-plugin-fit", "dra-driver-560", "device-plugin-no-handler",
                                  "mixed-a100-table-on-h200", "device-plugin-no-containerd-config"])
def test_messages(host_dir, golden_host, case):
    _, cohort, fields, host, *_ = next(c for c in CASES if c[0] == case)
    found = findings(host_dir(**host), cohort, policy_with(cohort, **fields) if fields else None)
    golden_host([f"{f.status.value} {f.message}" for f in found], case)


def test_each_gpu_is_checked(host_dir):
    """Two GPUs, one with MIG on: the device-plugin cohort (migStrategy none) fails that one only."""
    from tests.host.test_parsers import V12_TWO_GPUS
    found = findings(host_dir(files={"nvidia-smi-q.xml": V12_TWO_GPUS}), "device-plugin")
    mig = [(f.status, f.subject) for f in found if f.check is Check.MIG_MODE]
    assert mig == [(Status.FAIL, "GPU 1 (NVIDIA A100-SXM4-40GB)"), (Status.PASS, "host")]
    assert "GPU 0: no MIG" in next(f.what for f in found if f.check is Check.MIG_MODE and f.status is Status.PASS)
    # the CDI spec names one GPU by index, the host has two
    assert statuses(findings(host_dir(files={"nvidia-smi-q.xml": V12_TWO_GPUS}), "dra"),
                    Check.CDI_SPEC) == [Status.FAIL]


# What `kubectl get node NAME -o json` says of the lent host once it joins a cohort (a stand-in: that host is in
# no cluster): its labels and the capacity the device plugin advertises.
DP_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
NODE_CASES = [
    ("exclusive-fit", {}, {"nvidia.com/gpu": "1"}, DP_LABELS, Check.SHARING, [Status.PASS], Status.PASS),
    ("exclusive-labels-of-dra", {}, {"nvidia.com/gpu": "1"},
     {**DP_LABELS, "workload.example.com/gpu-allocation": "dra"},
     Check.NODE_LABELS, [Status.FAIL], Status.FAIL),
    ("exclusive-replicas-under-plain-name", {}, {"nvidia.com/gpu": "4"}, DP_LABELS, Check.SHARING, [Status.FAIL],
     Status.FAIL),
    ("exclusive-shared-offered", {}, {"nvidia.com/gpu": "1", "nvidia.com/gpu.shared": "4"}, DP_LABELS, Check.SHARING,
     [Status.FAIL], Status.FAIL),
    ("exclusive-mps-capable-label", {}, {"nvidia.com/gpu": "1"}, {**DP_LABELS, "nvidia.com/mps.capable": "true"},
     Check.SHARING, [Status.FAIL], Status.FAIL),
    ("exclusive-plugin-not-running", {}, {"cpu": "16"}, DP_LABELS, Check.SHARING, [Status.FAIL], Status.FAIL),
    ("time-slicing-fit", TIME_SLICED, {"nvidia.com/gpu.shared": "4"}, DP_LABELS, Check.SHARING, [Status.PASS],
     Status.PASS),
    ("time-slicing-other-replicas", TIME_SLICED, {"nvidia.com/gpu.shared": "8"}, DP_LABELS, Check.SHARING,
     [Status.FAIL], Status.FAIL),
    ("time-slicing-not-applied", TIME_SLICED, {"nvidia.com/gpu": "1"}, DP_LABELS, Check.SHARING, [Status.FAIL],
     Status.FAIL),
    ("mps-fit", MPS, {"nvidia.com/gpu": "4"}, DP_LABELS, Check.SHARING, [Status.PASS], Status.PASS),
]


@pytest.mark.parametrize("fields, capacity, labels, check, expected, result",
                         [pytest.param(*c[1:], id=c[0]) for c in NODE_CASES])
def test_what_the_node_offers(host_dir, fields, capacity, labels, check, expected, result):
    node = Node(name="hybrid-gpu-1", labels=labels, capacity=capacity)
    found = findings(host_dir(), "device-plugin", policy_with("device-plugin", **fields) if fields else None, node=node)
    assert statuses(found, check) == expected, [f.message for f in found]
    assert verdict(found) is result, [f.message for f in found if f.status is not Status.PASS]


@pytest.mark.parametrize("case", ["dra-fit", "device-plugin-fit", "dra-driver-560", "device-plugin-no-handler",
                                  "mixed-a100-table-on-h200", "device-plugin-no-containerd-config"])
def test_messages_in_japanese(host_dir, golden_host, case):
    """The same findings (checks, statuses, subjects, docs links) as in English, their texts in Japanese."""
    _, cohort, fields, host, *_ = next(c for c in CASES if c[0] == case)
    folder = host_dir(**host)
    policy = policy_with(cohort, **fields) if fields else None
    english = findings(folder, cohort, policy)
    found = findings(folder, cohort, policy, language="ja")
    assert [(f.check, f.status, f.subject, f.docs) for f in found] == [(f.check, f.status, f.subject, f.docs)
                                                                       for f in english]
    for f, e in zip(found, english):
        assert f.message.startswith(f"{f.subject}: ") and f.message.endswith(f"[{f.check.value}] {f.docs}")
        if f.status is not Status.PASS:
            assert "。対処: " in f.message and f.message != e.message
    golden_host([f"{f.status.value} {f.message}" for f in found], f"ja/{case}")


def test_the_policy_language_decides_without_an_argument(host_dir):
    folder = host_dir()
    policy = replace(policy_with("dra"), language="ja")
    assert "コホート" in " ".join(f.message for f in findings(folder, "dra", policy))
    assert "コホート" not in " ".join(f.message for f in findings(folder, "dra", policy, language="en"))
