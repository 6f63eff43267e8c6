"""`gpu-admission explain` on a large cluster snapshot: 5,000 nodes (half of them GPU nodes of the two cohorts),
20,000 pods bound to them (most holding GPUs), a ResourceSlice per DRA node and a claim allocated on most of
them; the Pending pods explained are a device-plugin pod and a DRA pod. For the snapshot as JSON (`kubectl get
-o json`) and as YAML (`-o yaml`, read with libyaml's parser), two figures: the command as a user runs it (a
new process: interpreter, imports, reading, explaining; its CPU seconds from getrusage, and wall seconds), and
the command called again in this process (median of the rounds, CPU and wall). CPU time is the figure to
read on a shared machine: wall time there grows with the neighbours' load.

`--live` measures the other way explain reads a cluster, `explain pod NAME -n ml --kubeconfig FILE`: the same
objects are served over HTTPS by tests/cluster/fakeapi.py's FakeApiServer, which stands in for the
kube-apiserver's list with `limit`/`continue` (explain lists each kind in pages of 500, across all namespaces;
built-in kinds' items come without kind/apiVersion, as the real one sends them). Kinds the stand-in does not
serve (RuntimeClasses, DeviceTaintRules, Karpenter's and Cluster API's, Events) answer 404, which explain passes
over as it does for an API a cluster lacks. A kubeconfig with a bearer token is written for it, and the command
runs as a user runs it, in a new process each round: its CPU seconds (getrusage of the children: the explain
process alone, the server runs in this one) and wall seconds. The wall time holds the stand-in's answers, which
are slower than a real apiserver's (a Python server that replays its history for each continue token).

    .venv/bin/python bench/explain.py [--nodes 5000] [--pods 20000] [--rounds 3] [--live]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from webhook.cli.main import main

DP = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}
DRA = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "dra"}
TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "hybrid-full-gpu"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.nvidia.com\" && "
                                        "device.attributes[\"gpu.nvidia.com\"].type == \"gpu\""}}]}}


def node(i: int, labels: dict, gpus: int | None) -> dict:
    allocatable = {"cpu": "96", "memory": "1024Gi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {**labels, "kubernetes.io/hostname": f"node-{i}"}},
            "spec": {"taints": TAINT if labels else []}, "status": {"allocatable": allocatable}}


def resource_slice(name: str) -> dict:
    devices = [{"name": f"gpu-{d}", "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H200"}},
                "capacity": {"memory": {"value": "143771Mi"}}} for d in range(8)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                              "resourceSliceCount": 1},
                     "devices": devices}}


def pod(i: int, node_name: str | None, gpus: int, namespace: str = "ml") -> dict:
    spec: dict = {"containers": [{"name": "cuda", "image": "cuda",
                                  "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}", "namespace": namespace},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def claim(name: str, pool: str | None, namespace: str = "ml") -> dict:
    out = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
               "deviceClassName": "hybrid-full-gpu", "allocationMode": "ExactCount", "count": 1}}]}}}
    if pool:
        out["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": pool, "device": f"gpu-{d}"} for d in range(8)]}}}
    return out


def snapshot(nodes: int, pods: int) -> dict:
    items: list[dict] = [CLASS]
    dp = nodes // 4
    dra = nodes // 4
    for i in range(nodes):
        labels = DP if i < dp else DRA if i < dp + dra else {}
        items.append(node(i, labels, 8 if i < dp else None))
        if dp <= i < dp + dra:
            items.append(resource_slice(f"node-{i}"))
            items.append(claim(f"held-{i}", f"node-{i}"))
    for i in range(pods):
        items.append(pod(i, f"node-{i % dp}", 1 if i % 5 else 0))
    pending = pod(pods, None, 4)
    pending["spec"]["tolerations"] = TOLERATE
    dra_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm", "namespace": "ml"},
               "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": "wanted"}]},
               "status": {"phase": "Pending"}}
    items += [pending, dra_pod, claim("wanted", None)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def timed(args: list[str], rounds: int) -> tuple[float, float, int]:
    """(median CPU seconds, median wall seconds, exit code) of the command called in this process."""
    cpu, wall = [], []
    code = 0
    for _ in range(rounds):
        out = io.StringIO()
        started, started_cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(out):
            code = main(args)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
    return statistics.median(cpu), statistics.median(wall), code


def cold(args: list[str], rounds: int) -> tuple[float, float, int]:
    """(median CPU seconds, median wall seconds, exit code) of the command in a new process each time."""
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-c", "import sys; from webhook.cli.main import main; sys.exit(main(sys.argv[1:]))",
               *args]
    cpu, wall = [], []
    code = 0
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        code = subprocess.run(command, cwd=root, stdout=subprocess.DEVNULL, check=False).returncode
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpu), statistics.median(wall), code


def live(data: dict, rounds: int, pods: int) -> None:
    """Serve the snapshot's objects from the apiserver stand-in and explain both Pending pods against it."""
    from tests.cluster.conftest import write_kubeconfig
    from tests.cluster.fakeapi import FakeApiServer, make_certificates

    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certificates(Path(tmp))
        server = FakeApiServer(certs.server_context())
        try:
            started = time.perf_counter()
            for obj in data["items"]:
                server.apply(obj)
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", server=server.url, ca_file=certs.ca_file,
                                          token=server.token)
            print(f"{len(data['items'])} objects served by the apiserver stand-in ({server.url}, loaded in "
                  f"{time.perf_counter() - started:.1f} s); median of {rounds} runs, seconds")
            print(f"  {'live, pod':24} {'new process CPU':>15} {'wall':>6}  exit  lists")
            for what, name in (("device-plugin pod", f"pod-{pods}"), ("DRA pod", "llm")):
                command = ["explain", "pod", name, "-n", "ml", "--kubeconfig", str(kubeconfig), "--lang", "en"]
                calls = len(server.calls)
                cpu, wall, code = cold(command, rounds)
                lists = sum(1 for c in server.calls[calls:] if c.verb == "list") // rounds
                print(f"  {'live, ' + what:24} {cpu:15.2f} {wall:6.2f}  {code:4}  {lists:5}")
        finally:
            server.close()


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--live", action="store_true", help="explain against an apiserver stand-in, not a file")
    args = parser.parse_args(argv)
    data = snapshot(args.nodes, args.pods)
    if args.live:
        live(data, args.rounds, args.pods)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        as_json = Path(tmp) / "cluster.json"
        as_json.write_text(json.dumps(data))
        as_yaml = Path(tmp) / "cluster.yaml"
        as_yaml.write_text(yaml.safe_dump(data, sort_keys=False))
        print(f"{args.nodes} nodes, {args.pods} pods, {len(data['items'])} objects "
              f"(JSON {as_json.stat().st_size / 1e6:.1f} MB, YAML {as_yaml.stat().st_size / 1e6:.1f} MB); "
              f"median of {args.rounds} runs, seconds")
        print(f"  {'snapshot, pod':24} {'new process CPU':>15} {'wall':>6}   {'in process CPU':>14} {'wall':>6}  exit")
        for label, path in (("JSON", as_json), ("YAML", as_yaml)):
            for what, name in (("device-plugin pod", f"pod-{args.pods}"), ("DRA pod", "llm")):
                command = ["explain", "pod", name, "-n", "ml", "--cluster", str(path), "--lang", "en"]
                new_cpu, new_wall, code = cold(command, args.rounds)
                cpu, wall, _ = timed(command, args.rounds)
                print(f"  {label + ', ' + what:24} {new_cpu:15.2f} {new_wall:6.2f}   {cpu:14.2f} {wall:6.2f}  {code}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
