"""`gpu-admission explain pod NAME -n NS` against the fake apiserver (kubeconfig as `audit`): the pod, Nodes,
Pods, ResourceSlices, ResourceClaims and DeviceClasses listed; what the caller may not list, or a pod that does
not exist, is one line and exit 2."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.schemas import crd_errors
from tests.support import DATA
from webhook.cli.main import main

NODES = yaml.safe_load((DATA / "inventory" / "nodes.yaml").read_text())["items"]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
       "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "6"}}}],
                "nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                                 "workload.example.com/gpu-allocation": "device-plugin"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
       "status": {"phase": "Pending", "conditions": [
           {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/6 nodes are available: 2 Insufficient nvidia.com/gpu."}]}}
HOLDER = {**POD, "metadata": {"name": "holder", "namespace": "ml"},
          "spec": {**POD["spec"], "nodeName": "hybrid-dp-0"}, "status": {"phase": "Running"}}


@pytest.fixture
def live(fake_api, kubeconfig, capsys):
    for node in NODES:
        fake_api.apply(node)
    fake_api.apply(POD)
    fake_api.apply(HOLDER)

    def run(*args: str) -> tuple[int, str, str]:
        rc = main(["explain", *args, "--kubeconfig", str(kubeconfig), "--lang", "en"])
        out, err = capsys.readouterr()
        return rc, out, err
    return run


def test_a_live_pod_is_explained_with_the_pods_that_hold_capacity(live):
    rc, out, err = live("pod", "train", "-n", "ml", "-o", "json")
    assert rc == 1, err
    found = json.loads(out)[0]
    assert found["verdict"] == "waits"
    reasons = {n["name"]: [r["message"] for r in n["reasons"]] for n in found["nodes"]}
    assert reasons["hybrid-dp-0"] == ["nvidia.com/gpu: 2 free of 8, the pod asks for 6; held by ml/holder (6)"]


def test_a_pod_that_does_not_exist(live):
    rc, out, err = live("pod", "absent", "-n", "ml")
    assert (rc, out) == (2, "") and err == 'gpu-admission explain: pod "ml/absent" not found\n'


def test_a_caller_who_may_not_list_resource_slices(live, fake_api):
    fake_api.fail(403, resource="resourceslices", verb="list")
    rc, out, err = live("pod", "train", "-n", "ml")
    assert (rc, out) == (2, "")
    assert err.startswith("gpu-admission explain: cannot list resourceslices.resource.k8s.io: ") and \
        err.count("\n") == 1 and "Traceback" not in err


def test_audit_lists_pending_gpu_pods_with_the_same_explanation(live, kubeconfig, capsys):
    rc, explained, _ = live("pod", "train", "-n", "ml")
    assert main(["audit", "--kubeconfig", str(kubeconfig), "-n", "ml", "--lang", "en"]) == 0
    table, _ = capsys.readouterr()
    assert "Pending GPU pods (1):" in table
    assert explained.rstrip("\n") in table  # the holder runs; the Pending pod's explanation, word for word
    assert main(["audit", "--kubeconfig", str(kubeconfig), "-n", "ml", "-o", "json", "--lang", "en"]) == 0
    results = {r["name"]: r for r in json.loads(capsys.readouterr()[0])}
    assert results["train"]["explain"]["verdict"] == "waits" and "explain" not in results["holder"]


@pytest.mark.parametrize("args", [pytest.param((), id="all-namespaces-with-the-cohort-report"),
                                  pytest.param(("-n", "ml"), id="one-namespace")])
def test_audit_lists_nodes_and_resource_slices_once(live, kubeconfig, capsys, fake_api, args):
    """The Pending pod's explanation and the cohort report read the same Nodes and ResourceSlices."""
    assert main(["audit", "--kubeconfig", str(kubeconfig), *args, "-o", "json", "--lang", "en"]) == 0
    results = json.loads(capsys.readouterr()[0])
    assert next(r for r in results if r["name"] == "train")["explain"]["verdict"] == "waits"
    assert any(r["kind"] == "Node" for r in results) is (not args)  # the cohort report, across all namespaces
    assert len(fake_api.calls_to("nodes", "list")) == 1
    assert len(fake_api.calls_to("resourceslices", "list")) == 1


@pytest.mark.parametrize("output", ["policyreport", "openreports"])
@pytest.mark.parametrize("language", ["en", "ja"])
def test_audit_reports_carry_pending_gpu_pods_with_the_same_explanation(live, kubeconfig, capsys, output, language):
    rc = main(["explain", "pod", "train", "-n", "ml", "--kubeconfig", str(kubeconfig), "--lang", language])
    explained = capsys.readouterr()[0]
    assert rc == 1
    assert main(["audit", "--kubeconfig", str(kubeconfig), "-o", output, "--lang", language]) == 0
    reports = list(yaml.safe_load_all(capsys.readouterr()[0]))
    for report in reports:
        assert crd_errors(report) == [], report["metadata"]
    (ml,) = [r for r in reports if r["metadata"].get("namespace") == "ml"]
    pending = [r for r in ml["results"] if r.get("properties", {}).get("verdict")]
    assert [(r["resources"][0]["name"], r["result"], r["severity"], r["properties"]["verdict"]) for r in pending] == \
        [("train", "warn", "low", "waits")]
    assert pending[0]["message"] == explained.rstrip("\n")
    assert ml["summary"]["warn"] == sum(1 for r in ml["results"] if r["result"] == "warn")
