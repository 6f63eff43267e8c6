"""Devices of one model share one view when a snapshot is read (a 5,000-node cluster's ResourceSlices are a
few models), and a selector is evaluated once per view: the verdicts must be those of the devices' own
content, never another device's."""
from __future__ import annotations

import pytest

from webhook.config import default_policy
from webhook.objects import inventory
from webhook.policy import capacity


def device(name, product, memory="80Gi", **extra):
    return {"name": name, "attributes": {"type": {"string": "gpu"}, "productName": {"string": product}},
            "capacity": {"memory": {"value": memory}}, **extra}


def resource_slice(node, *devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                            "resourceSliceCount": 1},
                     "devices": list(devices)}}


SLICES = [
    resource_slice("a", device("gpu-0", "NVIDIA H100"), device("gpu-1", "NVIDIA H200")),
    resource_slice("b", device("gpu-0", "NVIDIA H100"), device("gpu-1", "NVIDIA H100", memory="94Gi"),
                   device("gpu-2", "NVIDIA H100", allowMultipleAllocations=True)),
]


def test_devices_of_one_content_share_a_view_and_no_other():
    devices = inventory.build(None, SLICES).devices
    assert [d.label for d in devices] == ["a/gpu-0", "a/gpu-1", "b/gpu-0", "b/gpu-1", "b/gpu-2"]
    assert devices[0].view is devices[2].view  # the same H100 on two nodes
    distinct = {id(d.view) for d in devices}
    assert len(distinct) == 4  # H200, 94Gi H100, shareable H100 each their own
    assert devices[4].view["allowMultipleAllocations"] is True and devices[0].view["allowMultipleAllocations"] is False


@pytest.mark.parametrize("expression, matched", [
    pytest.param('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"', [1, 0, 1, 1, 1], id="product"),
    pytest.param('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("90Gi")) > 0', [0, 0, 0, 1, 0],
                 id="memory"),
    pytest.param('device.attributes["gpu.nvidia.com"].productName == "NVIDIA H200"', [0, 1, 0, 0, 0], id="other"),
])
def test_verdicts_follow_each_device_s_content(expression, matched):
    snapshot = inventory.build(None, SLICES)
    found = capacity.verdicts(snapshot, (expression,), default_policy().class_selectors)
    assert found is not None
    assert [int(v.matched) for v in found] == matched
