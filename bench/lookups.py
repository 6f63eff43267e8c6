"""Decision time with cluster lookups on and a warm cache, against lookups off, on the same pods.

    .venv/bin/python bench/lookups.py [--rounds N]

A local fake apiserver (the test suite's, over HTTPS, driven by the real kubernetes client) holds the
seed's DeviceClasses and ResourceClaimTemplate, the DRA driver's quickstart templates and claim, a
namespace label and a ConfigMap. The pods reference them by template, claim, DeviceClass and envFrom.
With lookups on, every kind is cached by list+watch and the run checks that no request reached the
API while measuring: what is timed is the decision with every reference answered from memory.
Prints the median and p99 per decision (the /validate and /mutate handlers' work), per mode; a third
mode resolves the same objects from an in-memory bundle (as `check` does), so the difference between
it and the warm cache is the cache's own cost, and the rest is the rules that resolved claims enable."""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the fake apiserver lives with the tests

from tests.cluster.fakeapi import FakeApiServer, make_certificates  # noqa: E402
from webhook.admission.codec import read_request  # noqa: E402
from webhook.admission.handlers import AdmissionRequest, mutate, validate  # noqa: E402
from webhook.config import default_policy  # noqa: E402
from webhook.config.model import Lookups  # noqa: E402
from webhook.lookups.base import NoLookups  # noqa: E402
from webhook.lookups.bundle import BundleResolver  # noqa: E402
from webhook.lookups.cluster import ClusterResolver  # noqa: E402
from webhook.lookups.kubeconfig import load_api_client  # noqa: E402

SEED = REPO / "tests" / "data" / "seed"
REAL = REPO / "tests" / "data" / "fixtures" / "real-manifests"  # copies of public manifests, with provenance
CLUSTER_FILES = (SEED / "dra-manifests.yaml",
                 REAL / "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml",
                 REAL / "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test3.yaml")
# What a real cluster also has: every pod's namespace, and the class the NVIDIA DRA driver installs.
EXTRA = """\
apiVersion: v1
kind: Namespace
metadata: {name: ai-workloads, labels: {workload.example.com/gpu-allocation: dra}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
    - cel:
        expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cuda-env, namespace: ai-workloads}
data: {CUDA_VISIBLE_DEVICES: "0,1,2,3", LOG_LEVEL: info}
"""


def _pod(name: str, namespace: str, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _container(**extra) -> dict:
    return {"name": "main", "image": "registry.example.invalid/cuda", **extra}


PODS = (
    _pod("template", "ai-workloads", {"containers": [_container(resources={"claims": [{"name": "gpu"}]})],
                                      "resourceClaims": [{"name": "gpu",
                                                          "resourceClaimTemplateName": "single-large-gpu"}]}),
    _pod("both", "ai-workloads", {"containers": [_container(resources={"limits": {"nvidia.com/gpu": "1"},
                                                                       "claims": [{"name": "gpu"}]})],
                                  "resourceClaims": [{"name": "gpu",
                                                      "resourceClaimTemplateName": "single-large-gpu"}]}),
    _pod("named-claim", "gpu-test3", {"containers": [_container(resources={"claims": [{"name": "team"}]})],
                                      "resourceClaims": [{"name": "team", "resourceClaimName": "single-gpu"}]}),
    _pod("quickstart", "gpu-test1", {"containers": [_container(resources={"claims": [{"name": "gpu"}]})],
                                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]}),
    _pod("envfrom", "ai-workloads", {"containers": [_container(envFrom=[{"configMapRef": {"name": "cuda-env"}}])]}),
    _pod("device-plugin", "team-a", {
        "nodeSelector": {"workload.example.com/gpu-allocation": "device-plugin"}, "runtimeClassName": "nvidia",
        "containers": [_container(resources={"limits": {"nvidia.com/gpu": "1"}})]}),
    _pod("cpu-only", "team-a", {"containers": [_container(resources={"limits": {"cpu": "1"}})]}),
)


def _review(pod: dict) -> AdmissionRequest:
    return read_request({"uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
            "namespace": pod["metadata"]["namespace"], "object": pod, "userInfo": {"username": "bench"}})


def _measure(handler, policy, resolver, reviews, rounds: int) -> tuple[float, float]:
    for review in reviews * 50:  # warm up
        handler(review, policy=policy, resolver=resolver)
    times = []
    for _ in range(rounds):
        for review in reviews:
            t0 = time.perf_counter_ns()
            handler(review, policy=policy, resolver=resolver)
            times.append(time.perf_counter_ns() - t0)
    times.sort()
    return statistics.median(times) / 1000, times[int(len(times) * 0.99) - 1] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="passes over the pods (default: 2000)")
    args = parser.parse_args()
    reviews = [_review(p) for p in PODS]
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certificates(Path(tmp))
        server = FakeApiServer(certs.server_context())
        for path in CLUSTER_FILES:
            server.load(path.read_text(encoding="utf-8"))
        server.load(EXTRA)
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "clusters": [{"name": "bench", "cluster": {"server": server.url, "certificate-authority": certs.ca_file}}],
            "users": [{"name": "bench", "user": {"token": server.token}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}]}))
        on = Lookups(resource_claims=True, device_classes=True, namespaces=True, config_maps=True, secrets=True)
        documents = [d for path in CLUSTER_FILES for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))]
        documents += list(yaml.safe_load_all(EXTRA))
        modes = {
            "lookups off": (default_policy(), NoLookups()),
            # The same references resolved from a dict, as `check` does: separates the engine's extra
            # work on resolved claims from the cost of the cluster cache itself.
            "same objects, in a bundle": (default_policy(), BundleResolver(documents)),
            "lookups on, warm cache": (dataclasses.replace(default_policy(), lookups=on),
                                       ClusterResolver(on, load_api_client(str(kubeconfig)))),
        }
        cluster = modes["lookups on, warm cache"][1]
        try:
            if not cluster.wait_synced(10):
                sys.exit("the fake apiserver did not sync")
            time.sleep(0.2)  # let the watches open, so that their requests are not counted below
            before = len(server.calls)
            print(f"decision time per pod, µs ({len(PODS)} pods x {args.rounds} rounds)")
            print(f"{'handler':<10} {'mode':<24} {'median':>8} {'p99':>8}")
            for handler in (validate, mutate):
                for mode, (policy, resolver) in modes.items():
                    median, p99 = _measure(handler, policy, resolver, reviews, args.rounds)
                    print(f"{handler.__name__:<10} {mode:<24} {median:>8.1f} {p99:>8.1f}")
            requests = len(server.calls) - before
            stats = cluster.stats()
            print(f"API requests while measuring: {requests}; cache hits {sum(s.hits for s in stats.values())}, "
                  f"misses {sum(s.misses for s in stats.values())}")
        finally:
            cluster.close()
            server.close()


if __name__ == "__main__":
    main()
