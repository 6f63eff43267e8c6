"""host-driver-branch (webhook/host/checks/driver_branch.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import XML, judge
from tests.host.conftest import xml_with
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.DRIVER

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("dra-fit", "dra", {}, {}, [Status.PASS], Status.PASS),
    ("dra-driver-560", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="560.35.03")}},
     [Status.FAIL], Status.FAIL),
    ("dra-driver-565", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="565.57.01")}},
     [Status.PASS], Status.PASS),
    ("operator-dra-driver-575", "dra", {"manager": "gpu-operator-gpucluster"},
     {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="575.57.08")}}, [Status.FAIL], Status.FAIL),
    ("operator-dra-driver-580", "dra", {"manager": "gpu-operator-gpucluster"}, {}, [Status.PASS],
     Status.PASS),
    ("driver-version-not-read", "dra", {}, {"files": {"nvidia-smi-q.xml": xml_with(XML, driver="N/A")}},
     [Status.UNKNOWN], Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_driver_branch(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
