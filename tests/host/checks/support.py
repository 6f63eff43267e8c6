"""What the host checks' tables share: the captured H200 host's outputs, stand-ins laid over them, the shipped
policy with a cohort's fields changed, and the assertions every row makes (tests/host/conftest.py builds the
folders)."""
from __future__ import annotations

import copy

import yaml

from tests.host.conftest import CONTAINERD, HOST_H200, STANDINS
from webhook.config import default_policy
from webhook.config.load import DEFAULT_PATH, build_policy
from webhook.host.checks import HostCheckId, HostFinding, Status, check_host, verdict
from webhook.host.facts import collect
from webhook.host.node import Node
from webhook.host.sources import CapturedHost

XML = (HOST_H200 / "nvidia-smi-q.xml").read_text()
LIST = (HOST_H200 / "list.txt").read_text()
DEFAULT = yaml.safe_load(DEFAULT_PATH.read_text())
# Stand-ins written here (tests/data/host/README.md): a version 2 root config with runc only and no imports,
# the toolkit's drop-ins for version 2 and 3 roots, `nvidia-ctk --version` below the DRA floor, a CDI spec.
V2_ROOT_ONLY = (CONTAINERD / "v2-no-imports.toml").read_text()
DROP_IN_V2 = (CONTAINERD / "v2-99-nvidia.toml").read_text()
DROP_IN_V3 = (CONTAINERD / "v3-99-nvidia.toml").read_text()
CTK_1_17 = (STANDINS / "nvidia-ctk-version-1.17.5.txt").read_text()
CDI_SPEC = (STANDINS / "cdi-nvidia.yaml").read_text()
DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"

MIXED_H200 = dict(migStrategy="mixed", mig={"model": "H200-141GB"})
MIXED_A100 = dict(migStrategy="mixed", mig={"model": "A100-40GB"})
SINGLE_H200 = dict(migStrategy="single", mig={"model": "H200-141GB"})
TIME_SLICED = dict(timeSlicing={"renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]})
MPS = dict(mps={"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]})
MIG_ON = dict(mig=("Enabled", "Enabled"))
# What `kubectl get node NAME -o json` says of the lent host once it joins a cohort (a stand-in: that host is in
# no cluster): its labels and the capacity the device plugin advertises.
DP_LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}


def policy_with(cohort: str, **fields):
    """The shipped policy with fields of one cohort changed (None removes a field)."""
    data = copy.deepcopy(DEFAULT)
    for c in data["cohorts"]:
        if c["name"] == cohort:
            for k, v in fields.items():
                if v is None:
                    c.pop(k, None)
                else:
                    c[k] = v
    return build_policy(data)


def findings(folder, cohort="dra", policy=None, node=None, **kw) -> list[HostFinding]:
    policy = policy or default_policy()
    return check_host(collect(CapturedHost(folder), node=node), policy.cohort(cohort), policy, **kw)


def statuses(found, check: HostCheckId) -> list[Status]:
    return [f.status for f in found if f.check is check]


def judge(folder, cohort: str, fields: dict, check: HostCheckId, expected: list[Status], result: Status) -> None:
    """One row of a check's table: the check's statuses and the host's verdict; every finding links its docs, and
    one that does not pass says why and the fix."""
    found = findings(folder, cohort, policy_with(cohort, **fields) if fields else None)
    assert statuses(found, check) == expected, [f.message for f in found]
    assert verdict(found) is result, [f.message for f in found if f.status is not Status.PASS]
    for f in found:
        assert f.message.endswith(f"[{f.check.value}] {f.docs}")
        assert f.docs.endswith(f"/docs/host.md#{f.check.value}")
        if f.status is not Status.PASS:
            assert f.why and f.fix, f.message


def judge_node(folder, fields: dict, capacity: dict, labels: dict, check: HostCheckId, expected: list[Status],
               result: Status) -> None:
    """One row of what the lent host's Node offers, checked against the device-plugin cohort."""
    node = Node(name="hybrid-gpu-1", labels=labels, capacity=capacity)
    found = findings(folder, "device-plugin", policy_with("device-plugin", **fields) if fields else None, node=node)
    assert statuses(found, check) == expected, [f.message for f in found]
    assert verdict(found) is result, [f.message for f in found if f.status is not Status.PASS]
