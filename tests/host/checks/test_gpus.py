"""host-gpus (webhook/host/checks/gpus.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import XML, judge
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.GPUS

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("driver-unreadable", "dra", {}, {"remove": ("nvidia-smi-q.xml", "nvidia-smi-q.txt", "query.csv")},
     [Status.UNKNOWN], Status.UNKNOWN),
    ("no-gpu-listed", "dra", {}, {"files": {"nvidia-smi-q.xml": XML[:XML.index("\t<gpu id")] + "</nvidia_smi_log>\n"}},
     [Status.FAIL], Status.FAIL),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_gpus(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
