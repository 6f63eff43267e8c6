"""host-mig-profiles (webhook/host/checks/mig_profiles.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import LIST, MIG_ON, MIXED_A100, MIXED_H200, XML, judge
from tests.host.conftest import list_with, xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.MIG_PROFILES

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("mixed-h200-fit", "device-plugin", MIXED_H200, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=2), "list.txt": list_with(LIST, ["1g.18gb", "3g.71gb"])}},
     [Status.PASS], Status.PASS),
    ("mixed-a100-table-on-h200", "device-plugin", MIXED_A100, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     [Status.FAIL], Status.FAIL),
    ("mixed-profiles-unreadable", "device-plugin", MIXED_H200, {"remove": ("mig-lgip.txt",), "files": {
        "nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=1), "list.txt": list_with(LIST, ["1g.18gb"])}},
     [Status.UNKNOWN], Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_mig_profiles(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
