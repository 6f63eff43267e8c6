"""`gpu-admission explain FILE --cluster SNAPSHOT` (and `explain pod NAME --cluster SNAPSHOT`): a table of pods,
each beside its closest twin, against snapshots written here in the shape `kubectl get nodes,pods,resourceslices,
resourceclaims,deviceclasses -A -o yaml` saves (tests/data/inventory/PROVENANCE.md): the verdict, the exit code,
what the JSON names, and the text in English and Japanese (tests/golden/explain). Then bad input: one line, exit 2."""
from __future__ import annotations

import copy
import gc
import json

import pytest
import yaml

from tests.support import DATA, GOLDEN, SEED, load_docs
from webhook.cli.main import main

INVENTORY = DATA / "inventory"
NODES = load_docs(INVENTORY / "nodes.yaml")[0]["items"]
H200 = load_docs(INVENTORY / "nvidia-dra-h200.yaml")
CLASSES = [d for d in load_docs(SEED / "dra-manifests.yaml") if d and d["kind"] == "DeviceClass"]
IMAGE = "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"
DP = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def gpu_pod(name, resource="nvidia.com/gpu", amount=1, namespace="ml", node=None, **spec):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "cuda", "image": IMAGE, "resources": {"limits": {resource: amount}}}],
                    **spec}}
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running"}
    return pod


def claim_pod(name, claim, namespace="ml"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "cuda", "image": IMAGE, "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}}


def claim(name, device_class="hybrid-full-gpu", count=1, allocated=None, namespace="ml"):
    out = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
               "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}}
    if allocated:
        out["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": pool, "device": device}
            for pool, device in allocated]}}}
    return out


def snapshot(*extra):
    return {"apiVersion": "v1", "kind": "List", "items": [*NODES, *H200, *CLASSES, *extra]}


def tainted(slices):
    out = copy.deepcopy(slices)
    for s in out:
        for d in s["spec"]["devices"]:
            d["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    return out


B200 = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "b200"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'"}}]}}
KARPENTER = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
             "spec": {"template": {"metadata": {"labels": DP}, "spec": {"requirements": [
                 {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["8"]}],
                 "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}}}
OTHER_RUNTIME = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "crun"},
                 "handler": "crun"}
HOLDERS = [gpu_pod("big-0", amount=6, node="hybrid-dp-0"), gpu_pod("big-1", amount=4, node="hybrid-dp-1"),
           gpu_pod("done", amount=8, node="hybrid-dp-0") | {"status": {"phase": "Succeeded"}}]
CPU_NODES = {"apiVersion": "v1", "kind": "List", "items": [
    n for n in NODES if "gpu-allocation" not in str(n["metadata"].get("labels"))]}

# id, the pods' file, the snapshot, the verdict, the exit code, what the JSON must hold (a substring)
CASES = [
    pytest.param([gpu_pod("train", amount=6)], snapshot(), "schedulable", 0, '"fits": true', id="dp-a-node-fits"),
    pytest.param([gpu_pod("train", amount=4)], snapshot(*HOLDERS), "waits", 1, "ml/big-0 (6)",
                 id="dp-capacity-held-by-bound-pods"),
    pytest.param([gpu_pod("train", amount=2)], snapshot(*HOLDERS), "schedulable", 0, "hybrid-dp-0",
                 id="dp-finished-pods-hold-nothing"),
    pytest.param([gpu_pod("train", amount=16)], snapshot(), "never", 1, "the pod asks for 16",
                 id="dp-above-every-node"),
    pytest.param([gpu_pod("infer", "nvidia.com/mig-1g.18gb", nodeSelector=DP, tolerations=TOLERATE)], snapshot(),
                 "never", 1, "[resource-not-offered]", id="dp-mig-on-a-cohort-without-mig"),
    pytest.param([gpu_pod("train", nodeSelector=DP)], snapshot(), "never", 1, "is not tolerated",
                 id="dp-selected-cohort-taint-not-tolerated"),
    pytest.param([gpu_pod("train")], snapshot(OTHER_RUNTIME), "schedulable", 1 - 1, 'RuntimeClass \\"nvidia\\"',
                 id="dp-runtime-class-missing"),
    pytest.param([gpu_pod("train", amount=8)], CPU_NODES | {"items": [*CPU_NODES["items"], KARPENTER]}, "waits", 1,
                 "its autoscaler adds one", id="dp-autoscaled-cohort-without-nodes"),
    pytest.param([claim("one"), claim_pod("llm", "one")], snapshot(), "schedulable", 0, "hybrid-dra-h200-0/gpu-0",
                 id="dra-a-device-is-free"),
    pytest.param([claim("one"), claim_pod("llm", "one")],
                 snapshot(claim("holder", allocated=[("hybrid-dra-h200-0", "gpu-0")])), "waits", 1, "ml/holder",
                 id="dra-the-device-is-held-by-a-claim"),
    pytest.param([claim("two", count=2), claim_pod("llm", "two")], snapshot(), "never", 1,
                 "1 matching devices on the node that it can get, it asks for 2",
                 id="dra-more-devices-than-a-node-has"),
    pytest.param([claim("b", "b200"), claim_pod("llm", "b")], snapshot(B200), "never", 1, '"matched": []',
                 id="dra-class-matches-no-device"),
    pytest.param([claim("one"), claim_pod("llm", "one")],
                 {"apiVersion": "v1", "kind": "List", "items": [*NODES, *tainted(H200), *CLASSES]}, "never", 1,
                 "taint gpu.nvidia.com/xid=79:NoSchedule", id="dra-the-device-is-tainted"),
]


def _run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _write(path, docs):
    path.write_text(yaml.safe_dump_all(docs if isinstance(docs, list) else [docs]), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("pods", "cluster", "verdict", "code", "named"), CASES)
def test_explain_against_a_snapshot(pods, cluster, verdict, code, named, tmp_path, capsys, request):
    manifests, saved = _write(tmp_path / "pods.yaml", pods), _write(tmp_path / "cluster.yaml", cluster)
    rc, out, err = _run(capsys, "explain", manifests, "--cluster", saved, "-o", "json", "--lang", "en")
    assert (rc, err) == (code, "")
    found = json.loads(out)
    assert [e["verdict"] for e in found] == [verdict]
    assert named in out
    name = request.node.callspec.id
    for language in ("en", "ja"):
        rc, text, err = _run(capsys, "explain", manifests, "--cluster", saved, "--lang", language)
        assert rc == code and err == ""
        golden = GOLDEN / "explain" / ("" if language == "en" else "ja") / f"{name}.txt"
        if request.config.getoption("update_golden"):
            golden.write_text(text, encoding="utf-8")
        assert golden.exists(), f"{golden} is missing: run pytest --update-golden"
        assert text == golden.read_text(encoding="utf-8")


def test_a_pod_by_name_from_the_snapshot_is_explained_as_it_runs(tmp_path, capsys):
    saved = _write(tmp_path / "cluster.yaml", snapshot(*HOLDERS))
    rc, out, err = _run(capsys, "explain", "pod", "big-0", "-n", "ml", "--cluster", saved, "-o", "json")
    assert (rc, err) == (0, "")
    assert json.loads(out)[0]["verdict"] == "bound" and json.loads(out)[0]["node"] == "hybrid-dp-0"


def test_the_scheduler_s_condition_is_quoted(tmp_path, capsys):
    pending = gpu_pod("waiting", amount=4) | {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/6 nodes are available: 2 Insufficient nvidia.com/gpu."}]}}
    saved = _write(tmp_path / "cluster.yaml", snapshot(*HOLDERS, pending))
    rc, out, err = _run(capsys, "explain", "pod", "waiting", "-n", "ml", "--cluster", saved)
    assert rc == 1 and "scheduler: Unschedulable: 0/6 nodes are available: 2 Insufficient nvidia.com/gpu." in out


UNKNOWN_DRIVER = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "fpga"},
                  "spec": {"selectors": [{"cel": {"expression": "device.driver == 'fpga.example.com'"}}]}}


@pytest.mark.parametrize(("args", "pods", "cluster", "message"), [
    pytest.param(("pod", "absent", "-n", "ml"), None, snapshot(), 'pod "ml/absent" not found', id="no-such-pod"),
    pytest.param((), [gpu_pod("train")], {"apiVersion": "v1", "kind": "List", "items": [*H200]},
                 "the snapshot holds no Node", id="snapshot-without-nodes"),
    pytest.param((), [claim("f", "fpga"), claim_pod("llm", "f")], snapshot(UNKNOWN_DRIVER),
                 'selects devices of driver "fpga.example.com", which gpu-admission does not know',
                 id="claim-of-an-unknown-driver"),
    pytest.param((), [claim_pod("llm", "absent")], snapshot(), 'ResourceClaim "absent": not found in the cluster',
                 id="claim-that-does-not-exist"),
    pytest.param((), [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}], snapshot(),
                 "holds no Pod", id="file-without-pods"),
    pytest.param(("pod",), None, snapshot(), "give one pod name", id="pod-without-a-name"),
])
def test_bad_input_is_one_line_and_exit_2(args, pods, cluster, message, tmp_path, capsys):
    saved = _write(tmp_path / "cluster.yaml", cluster)
    given = list(args) if pods is None else [_write(tmp_path / "pods.yaml", pods), *args]
    rc, out, err = _run(capsys, "explain", *given, "--cluster", saved)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert gc.isenabled()  # paused while the snapshot is read and explained, and given back on the way out


@pytest.mark.parametrize(("text", "message"), [
    pytest.param(None, "no such file or directory", id="snapshot-that-does-not-exist"),
    pytest.param("", "file is empty", id="empty-snapshot"),
    pytest.param('{"kind": "List", "items": [', "not valid YAML", id="json-cut-short"),
    pytest.param('{"kind": "List", "items": [7]}', "item 0: not an object", id="list-item-not-an-object"),
    pytest.param('{"kind": "List", "items": [{"metadata": {}}]}', "item 0: has no kind", id="list-item-without-kind"),
    pytest.param("[1, 2]", "not an object", id="json-array"),
])
def test_a_snapshot_that_cannot_be_read_is_one_line_and_exit_2(text, message, tmp_path, capsys):
    saved = tmp_path / "cluster.json"
    if text is not None:
        saved.write_text(text, encoding="utf-8")
    rc, out, err = _run(capsys, "explain", "pod", "train", "-n", "ml", "--cluster", str(saved))
    assert (rc, out) == (2, "")
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert gc.isenabled()


def test_odd_shapes_in_a_snapshot_are_read_tolerantly(tmp_path, capsys):
    odd = [{"apiVersion": "v1", "kind": "Node", "metadata": "node-x"},
           {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": [1]},
            "spec": {"taints": "all"}},
           {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "namespace": "ml"},
            "spec": {"nodeName": ["n"], "containers": "c"}, "status": {"phase": {"x": 1}}},
           {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"devices": [{"name": "d", "capacity": {"memory": {"value": ["1Gi"]}}}, 3]}},
           {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
            "status": {"allocation": {"devices": {"results": [{"pool": 1}, "x"]}}}}]
    saved = _write(tmp_path / "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": [*NODES, *odd]})
    rc, out, err = _run(capsys, "explain", _write(tmp_path / "pods.yaml", [gpu_pod("train", amount=16)]),
                        "--cluster", saved, "-o", "json", "--lang", "en")
    assert (rc, err) == (1, "") and json.loads(out)[0]["verdict"] == "never"


def test_a_snapshot_that_is_not_yaml_is_one_line(tmp_path, capsys):
    bad = tmp_path / "cluster.yaml"
    bad.write_text("items: [unclosed", encoding="utf-8")
    rc, out, err = _run(capsys, "explain", "pod", "x", "--cluster", str(bad))
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
