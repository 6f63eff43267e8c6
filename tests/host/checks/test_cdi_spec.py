"""host-cdi-spec (webhook/host/checks/cdi_spec.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import CDI_SPEC, XML, judge
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.CDI_SPEC

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("dra-no-cdi-spec", "dra", {}, {"remove": ("etc/cdi/nvidia.yaml",)}, [Status.FAIL], Status.FAIL),
    ("dra-cdi-spec-in-var-run", "dra", {}, {"remove": ("etc/cdi/nvidia.yaml",),
                                            "files": {"var/run/cdi/nvidia.yaml": CDI_SPEC}},
     [Status.PASS], Status.PASS),
    ("dra-cdi-spec-other-kind", "dra", {}, {"files": {"etc/cdi/nvidia.yaml": CDI_SPEC
                                                      .replace("kind: nvidia.com/gpu", "kind: example.com/fpga")}},
     [Status.FAIL], Status.FAIL),
    ("dra-cdi-spec-stale", "dra", {}, {"files": {"nvidia-smi-q.xml": XML.replace("<attached_gpus>1", "<attached_gpus>2")
                                                 .replace("</gpu>",
                                                          "</gpu>" + XML[XML.index("<gpu id"):XML.index("</gpu>") + 6],
                                                          1)}},
     [Status.FAIL], Status.FAIL),
    ("dra-cdi-not-captured", "dra", {}, {"remove": ("etc/cdi", "var/run/cdi")}, [Status.UNKNOWN],
     Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_cdi_spec(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)
