"""host-sharing-config (webhook/host/checks/sharing_config.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import DP_LABELS, MPS, TIME_SLICED, judge, judge_node
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.SHARING

# (id, cohort, policy fields, host_dir arguments, the check's statuses, the host's verdict)
CASES = [
    ("time-slicing-default-mode", "device-plugin", TIME_SLICED, {}, [Status.UNKNOWN], Status.UNKNOWN),
    ("dra-sharing-gates", "dra", {"sharingStrategies": ["TimeSlicing"]}, {}, [Status.UNKNOWN],
     Status.UNKNOWN),
]


@pytest.mark.parametrize("cohort, fields, host, expected, result", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_sharing_config(host_dir, cohort, fields, host, expected, result):
    judge(host_dir(**host), cohort, fields, CHECK, expected, result)


# (id, policy fields of the device-plugin cohort, the Node's capacity, its labels, the check's statuses, the verdict)
NODE_CASES = [
    ("exclusive-fit", {}, {"nvidia.com/gpu": "1"}, DP_LABELS, [Status.PASS], Status.PASS),
    ("exclusive-replicas-under-plain-name", {}, {"nvidia.com/gpu": "4"}, DP_LABELS, [Status.FAIL],
     Status.FAIL),
    ("exclusive-shared-offered", {}, {"nvidia.com/gpu": "1", "nvidia.com/gpu.shared": "4"}, DP_LABELS,
     [Status.FAIL], Status.FAIL),
    ("exclusive-mps-capable-label", {}, {"nvidia.com/gpu": "1"}, {**DP_LABELS, "nvidia.com/mps.capable": "true"},
     [Status.FAIL], Status.FAIL),
    ("exclusive-plugin-not-running", {}, {"cpu": "16"}, DP_LABELS, [Status.FAIL], Status.FAIL),
    ("time-slicing-fit", TIME_SLICED, {"nvidia.com/gpu.shared": "4"}, DP_LABELS, [Status.PASS],
     Status.PASS),
    ("time-slicing-other-replicas", TIME_SLICED, {"nvidia.com/gpu.shared": "8"}, DP_LABELS, [Status.FAIL], Status.FAIL),
    ("time-slicing-not-applied", TIME_SLICED, {"nvidia.com/gpu": "1"}, DP_LABELS, [Status.FAIL],
     Status.FAIL),
    ("mps-fit", MPS, {"nvidia.com/gpu": "4"}, DP_LABELS, [Status.PASS], Status.PASS),
]


@pytest.mark.parametrize("fields, capacity, labels, expected, result",
                         [pytest.param(*c[1:], id=c[0]) for c in NODE_CASES])
def test_sharing_config_against_the_node(host_dir, fields, capacity, labels, expected, result):
    judge_node(host_dir(), fields, capacity, labels, CHECK, expected, result)
