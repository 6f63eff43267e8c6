"""host-mig-mode (webhook/host/checks/mig_mode.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import MIG_ON, MIXED_H200, XML, judge
from tests.host.conftest import xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.MIG_MODE

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("gpus-from-csv-only", "device-plugin", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt")},
     [Status.UNKNOWN], Status.UNKNOWN),
    ("device-plugin-mig-on", "device-plugin", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     [Status.FAIL], Status.FAIL),
    ("device-plugin-mig-pending", "device-plugin", {},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, mig=("Disabled", "Enabled"))}},
     [Status.FAIL], Status.FAIL),
    ("dra-mig-on", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     [Status.FAIL], Status.FAIL),
    ("dra-mig-cohort-mig-on", "dra", {"deviceTypes": ["mig"]},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, **MIG_ON, devices=7)}},
     [Status.PASS], Status.PASS),
    ("dra-mig-cohort-mig-off", "dra", {"deviceTypes": ["mig"]}, {}, [Status.FAIL], Status.FAIL),
    ("mixed-mig-off", "device-plugin", MIXED_H200, {}, [Status.FAIL], Status.FAIL),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_mig_mode(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
