"""host-node-labels (webhook/host/checks/node_labels.py): fit, not fit and unknown, on captured host folders."""
from __future__ import annotations

import pytest

from tests.host.checks.support import DP_LABELS, judge_node
from webhook.host.checks import HostCheckId, Status

CHECK = HostCheckId.NODE_LABELS

# (id, policy fields of the device-plugin cohort, the Node's capacity, its labels, the check's statuses, the verdict)
NODE_CASES = [
    ("exclusive-labels-of-dra", {}, {"nvidia.com/gpu": "1"},
     {**DP_LABELS, "workload.example.com/gpu-allocation": "dra"},
     [Status.FAIL], Status.FAIL),
]


@pytest.mark.parametrize("fields, capacity, labels, expected, result",
                         [pytest.param(*c[1:], id=c[0]) for c in NODE_CASES])
def test_node_labels_against_the_node(host_dir, fields, capacity, labels, expected, result):
    judge_node(host_dir(), fields, capacity, labels, CHECK, expected, result)
