"""host-compute-mode (webhook/host/checks/compute_mode.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import TIME_SLICED, XML, judge
from tests.host.conftest import xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.COMPUTE_MODE

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("compute-mode-from-csv-only", "device-plugin", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt")},
     [Status.UNKNOWN], Status.UNKNOWN),
    ("compute-prohibited", "device-plugin", {},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, compute_mode="Prohibited")}},
     [Status.FAIL], Status.FAIL),
    ("exclusive-process-exclusive-cohort", "device-plugin", {}, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, [Status.PASS],
        Status.PASS),
    ("time-slicing-exclusive-process", "device-plugin", TIME_SLICED, {"files": {
        "nvidia-smi-q.xml": xml_with(XML, compute_mode="Exclusive_Process")}}, [Status.FAIL],
        Status.FAIL),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_compute_mode(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
