"""host-containerd-config (webhook/host/checks/containerd_config.py): fit, not fit and unknown, on captured
host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import DROP_IN, DROP_IN_V3, judge
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.CONTAINERD

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("device-plugin-drop-in-broken", "device-plugin", {},
     {"files": {"etc/containerd/conf.d/50-broken.toml": "[plugins\n"}},
     [Status.FAIL], Status.FAIL),
    ("drop-in-newer-containerd-2.3", "device-plugin", {}, {"files": {
        DROP_IN: DROP_IN_V3, "containerd-version.txt": "containerd github.com/containerd/containerd/v2 v2.3.0 0\n"}},
     [Status.FAIL], Status.FAIL),
    ("drop-in-newer-containerd-2.1", "device-plugin", {}, {"files": {
        DROP_IN: DROP_IN_V3, "containerd-version.txt": "containerd github.com/containerd/containerd/v2 v2.1.4 0\n"}},
     [Status.PASS], Status.PASS),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_containerd_config(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
