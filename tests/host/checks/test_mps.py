"""host-mps (webhook/host/checks/mps.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import LIST, MIG_ON, MIXED_H200, MPS, XML, judge
from tests.host.conftest import list_with, xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.MPS

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("mps-exclusive-process", "device-plugin", MPS, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, [Status.PASS],
        Status.UNKNOWN),
    ("mps-on-mig", "device-plugin", {**MPS, **MIXED_H200}, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     [Status.FAIL], Status.FAIL),
    ("mps-daemon-on-exclusive-cohort", "device-plugin", {},
     {"files": {"processes.txt": "systemd\nnvidia-cuda-mps-control\n"}},
     [Status.FAIL], Status.FAIL),
    ("processes-not-captured", "dra", {}, {"remove": ("processes.txt",)}, [Status.UNKNOWN], Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_mps(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
