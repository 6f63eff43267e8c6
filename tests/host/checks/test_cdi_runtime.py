"""host-cdi-runtime (webhook/host/checks/cdi_runtime.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import DROP_IN, DROP_IN_V3, V2_ROOT_ONLY, judge
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.CDI_RUNTIME

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("dra-cdi-off-containerd-1.7", "dra", {},
     {"remove": (DROP_IN,), "files": {"etc/containerd/config.toml": V2_ROOT_ONLY}},
     [Status.FAIL], Status.FAIL),
    ("dra-cdi-default-containerd-2.1", "dra", {}, {"containerd": "v3"}, [Status.PASS], Status.PASS),
    ("dra-cdi-explicitly-off", "dra", {}, {"containerd": "v3", "files": {DROP_IN: DROP_IN_V3.replace(
        '[plugins."io.containerd.cri.v1.runtime"]\n',
        '[plugins."io.containerd.cri.v1.runtime"]\n    enable_cdi = false\n', 1)}},
     [Status.FAIL], Status.FAIL),
    ("dra-cdi-containerd-version-unknown", "dra", {}, {"containerd": "v3", "remove": ("containerd-version.txt",)},
     [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-cdi-on-version-unknown", "dra", {}, {"remove": ("containerd-version.txt",)}, [Status.PASS], Status.PASS),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_cdi_runtime(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
