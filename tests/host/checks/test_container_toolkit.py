"""host-container-toolkit (webhook/host/checks/container_toolkit.py): fit, not fit and unknown, on captured
host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import CTK_1_17, judge
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.TOOLKIT

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("dra-toolkit-1.17", "dra", {}, {"files": {"nvidia-ctk-version.txt": CTK_1_17}},
     [Status.FAIL], Status.FAIL),
    ("dra-toolkit-1.18-rc", "dra", {},
     {"files": {"nvidia-ctk-version.txt": "NVIDIA Container Toolkit CLI version 1.18.0-rc.2\n"}},
     [Status.FAIL], Status.FAIL),
    ("dra-toolkit-absent", "dra", {}, {"remove": ("nvidia-ctk-version.txt",)}, [Status.UNKNOWN],
     Status.UNKNOWN),
    ("device-plugin-toolkit-1.17", "device-plugin", {},
     {"files": {"nvidia-ctk-version.txt": CTK_1_17}},
     [Status.PASS], Status.PASS),
    ("device-plugin-toolkit-1.6", "device-plugin", {},
     {"files": {"nvidia-ctk-version.txt": CTK_1_17.replace("1.17.5", "1.6.0")}},
     [Status.FAIL], Status.FAIL),
    ("device-plugin-toolkit-absent", "device-plugin", {}, {"remove": ("nvidia-ctk-version.txt",)},
     [Status.UNKNOWN], Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_container_toolkit(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
