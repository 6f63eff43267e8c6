"""host-runtime-handler (webhook/host/checks/runtime_handler.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import DROP_IN, DROP_IN_V2, V2_ROOT_ONLY, judge
from tests.host.conftest import CONTAINERD
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.HANDLER

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("device-plugin-fit", "device-plugin", {}, {}, [Status.PASS], Status.PASS),
    ("device-plugin-fit-v3", "device-plugin", {}, {"containerd": "v3"}, [Status.PASS], Status.PASS),
    ("device-plugin-fit-v1", "device-plugin", {}, {"remove": (DROP_IN,), "files": {
        "etc/containerd/config.toml": (CONTAINERD / "v1-config.toml").read_text()}}, [Status.PASS], Status.PASS),
    ("device-plugin-no-handler", "device-plugin", {},
     {"remove": (DROP_IN,), "files": {"etc/containerd/config.toml": V2_ROOT_ONLY}},
     [Status.FAIL], Status.FAIL),
    ("device-plugin-other-runtime-class", "device-plugin", {"runtimeClassName": "nvidia-cdi"}, {},
     [Status.PASS], Status.PASS),
    ("device-plugin-handler-no-binary", "device-plugin", {}, {"files": {DROP_IN: DROP_IN_V2.replace(
        'BinaryName = "/usr/bin/nvidia-container-runtime"\n', "")}}, [Status.FAIL], Status.FAIL),
    ("device-plugin-handler-wrapper", "device-plugin", {}, {"files": {DROP_IN: DROP_IN_V2.replace(
        '"/usr/bin/nvidia-container-runtime"', '"/usr/local/bin/gpu-wrapper"')}}, [Status.UNKNOWN],
     Status.UNKNOWN),
    ("device-plugin-no-containerd-config", "device-plugin", {}, {"remove": ("etc/containerd/config.toml",)},
     [Status.UNKNOWN], Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_runtime_handler(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
