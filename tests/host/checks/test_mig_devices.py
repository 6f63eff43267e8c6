"""host-mig-devices (webhook/host/checks/mig_devices.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import LIST, MIG_ON, MIXED_H200, SINGLE_H200, XML, judge
from tests.host.conftest import list_with, xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.MIG_DEVICES

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("mixed-no-instances", "device-plugin", MIXED_H200, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON)}},
     [Status.FAIL], Status.FAIL),
    ("mixed-devices-unreadable", "device-plugin", MIXED_H200, {"remove": ("list.txt",), "files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1)}}, [Status.UNKNOWN], Status.UNKNOWN),
    ("single-one-profile", "device-plugin", SINGLE_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7), "list.txt": list_with(LIST, ["1g.18gb"] * 7)}},
     [Status.PASS], Status.PASS),
    ("single-two-profiles", "device-plugin", SINGLE_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=2), "list.txt": list_with(LIST, ["1g.18gb", "3g.71gb"])}},
     [Status.FAIL], Status.FAIL),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_mig_devices(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
