"""Pod creates through a real kube-apiserver, with and without webhooks: what gpu-admission adds to a create.

    python bench/apiserver.py [--duration 5] [--rates 10,50,200]

Starts the e2e control plane (tests/e2e/cluster.py: etcd, kube-apiserver, kube-controller-manager built from
the pinned Go modules) and, in one run, creates Pods at fixed rates (open loop: each create is sent at its
scheduled time, over kept-alive connections) with:

  1. no webhook;
  2. a no-op webhook (answers "allowed" for the review's uid, nothing else) behind the same gunicorn and TLS
     configuration as the webhook (webhook.server.gunicorn_conf), registered by the chart with the same rules
     and matchConditions (webhooks.url);
  3. gpu-admission, the same way, serving the policy of the chart's ConfigMap;
  4. in-tree only: no webhook, the ValidatingAdmissionPolicies `gpu-admission export` writes for the shipped
     default policy (the exported rules only, run by the apiserver itself).

GPU Pods reach the webhooks (pods.mutate and pods.validate); non-GPU Pods are kept off them by the
matchConditions and should cost nothing. Prints p50/p99 create latency for each, and the latency each webhook
adds over none. Goals on the 2-core machine (issue 14): gpu-admission within 0.5 ms (p50) of the no-op webhook,
and <= 1 ms p50 / <= 3 ms p99 added over no webhook at 50 creates/s; non-GPU Pods 0 added.
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from load import start, stop  # noqa: E402  (bench/load.py: gunicorn as deployed)

from tests.e2e.cluster import Cluster, free_port  # noqa: E402

NAMESPACE = "bench"
GPU_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {},
           "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
PLAIN_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                      "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}]}}
CONNECTIONS = 8
SETUPS = ("none", "no-op", "gpu-admission", "in-tree")
# a Pod the exported visible-devices-override policy denies: tells when the apiserver has loaded the policies
PROBE = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "in-tree-probe"},
         "spec": {"containers": [{"name": "probe", "image": "nginx:1.27",
                                  "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}


def noop_app(environ, start_response):
    """The no-op webhook: what any webhook must do (read the review, answer allowed for its uid)."""
    if environ["REQUEST_METHOD"] != "POST":  # the start-up probe's GET /healthz
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    review = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "response": {"uid": review["request"]["uid"], "allowed": True}}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class Client:
    """Creates Pods over kept-alive HTTPS connections with the cluster-admin client certificate."""

    def __init__(self, cluster: Cluster):
        pki = cluster.root / "pki"
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        self.port = cluster.apiserver_port
        self.local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context,
                                                                 timeout=30)
        return conn

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        conn = self._conn()
        data = json.dumps(body).encode() if body is not None else None
        try:
            conn.request(method, path, data, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            self.local.conn = None
            raise

    def create(self, pod: dict) -> float:
        started = time.perf_counter()
        status, body = self.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
        elapsed = time.perf_counter() - started
        if status != 201:
            raise SystemExit(f"create answered {status}: {body[:300]!r}")
        return elapsed


def paced(client: Client, template: dict, rate: int, duration: float, tag: str) -> list[float]:
    """Creates at `rate` per second for `duration` seconds, each sent at its scheduled time (open loop)."""
    count = int(rate * duration)
    start_at = time.perf_counter() + 0.05
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(count))
    late = [0]

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            due = start_at + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.05:
                late[0] += 1
            pod = json.loads(json.dumps(template))
            pod["metadata"]["name"] = f"{tag}-{i}"
            elapsed = client.create(pod)
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if late[0] > count // 20:
        print(f"  note: {late[0]} of {count} creates left more than 50 ms late (the client could not keep up)")
    return latencies


def clear(client: Client) -> None:
    client.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        _, body = client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")
        if not json.loads(body)["items"]:
            return
        time.sleep(0.5)


def install_in_tree(client: Client) -> None:
    """The exported policies and bindings, created once the webhooks are gone; returns when they answer."""
    from webhook.config import default_policy
    from webhook.intree.export import export

    for obj in export(default_policy()):
        plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" \
            else "validatingadmissionpolicybindings"
        status, body = client.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", obj)
        if status != 201:
            raise SystemExit(f"creating {obj['metadata']['name']} answered {status}: {body[:300]!r}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body = client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", PROBE)
        if b"ValidatingAdmissionPolicy" in body:
            return
        time.sleep(0.2)
    raise SystemExit("the in-tree policies did not start answering within 60 s")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per rate (default 5)")
    ap.add_argument("--rates", default="10,50,200", help="creates per second (default 10,50,200)")
    args = ap.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]

    import helm_python

    from webhook.tls import certs

    results: dict[tuple[str, str, int], dict] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-admission-bench-apiserver-") as tmp:
        work = Path(tmp)
        certs.write(certs.generate("gpu-admission", "gpu-admission"), work / "tls")
        ca_bundle = base64.b64encode((work / "tls/ca.crt").read_bytes()).decode()
        with Cluster(work / "cluster") as cluster:
            client = Client(cluster)
            client.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": NAMESPACE}})
            client.request("POST", "/apis/node.k8s.io/v1/runtimeclasses",
                           {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                            "handler": "nvidia"})
            while client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")[0] != 200:
                time.sleep(0.2)
            helm = helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace="gpu-admission")
            procs = []
            try:
                servers = {}
                for name, app in (("no-op", "apiserver:noop_app"), ("gpu-admission", "webhook.server.wsgi:app")):
                    port = free_port()
                    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
                    env.update(GPU_ADMISSION_BIND=f"127.0.0.1:{port}", GPU_ADMISSION_TLS_CERT=str(work / "tls/tls.crt"),
                               GPU_ADMISSION_TLS_KEY=str(work / "tls/tls.key"),
                               GPU_ADMISSION_POLICY=str(work / "policy.yaml"), GPU_ADMISSION_LOG_LEVEL="warning")
                    servers[name] = (app, env, port)
                for setup in SETUPS:
                    if setup == "in-tree":
                        for proc in procs:
                            stop(proc)
                        procs.clear()
                        helm.uninstall("gpu-admission", ignore_not_found=True)
                        install_in_tree(client)
                    elif setup != "none":
                        app, env, port = servers[setup]
                        values = {"webhooks": {"url": f"https://127.0.0.1:{port}"},
                                  "certificates": {"caBundle": ca_bundle}}
                        if setup == "no-op":
                            helm.install(REPO / "charts/gpu-admission", "gpu-admission", values,
                                         namespace="gpu-admission", create_namespace=True)
                            _, body = client.request(
                                "GET", "/api/v1/namespaces/gpu-admission/configmaps/gpu-admission-policy")
                            (work / "policy.yaml").write_text(json.loads(body)["data"]["policy.yaml"])
                        else:
                            helm.upgrade(REPO / "charts/gpu-admission", "gpu-admission", values,
                                         namespace="gpu-admission")
                        procs.append(start(app, env, work / "tls/ca.crt", port, work))
                    # warm-up: connections, the apiserver's webhook clients, the webhook's workers
                    for kind, template in (("gpu", GPU_POD), ("plain", PLAIN_POD)):
                        paced(client, template, 20, 2.0, f"warm-{setup}-{kind}".replace("_", "-"))
                    clear(client)
                    for rate in rates:
                        for kind, template in (("gpu", GPU_POD), ("plain", PLAIN_POD)):
                            lat = paced(client, template, rate, args.duration, f"{setup}-{kind}-{rate}")
                            results[(setup, kind, rate)] = {
                                "n": len(lat), "p50": statistics.median(lat) * 1e3, "p99": percentile(lat, 0.99) * 1e3}
                            r = results[(setup, kind, rate)]
                            print(f"{setup:14} {kind:5} {rate:4}/s  n={r['n']:5}  p50 {r['p50']:6.2f} ms  "
                                  f"p99 {r['p99']:6.2f} ms", flush=True)
                            clear(client)
            finally:
                for proc in procs:
                    stop(proc)
                helm.close()

    print("\nadded over no webhook (p50 / p99, ms):")
    for kind in ("gpu", "plain"):
        for rate in rates:
            base = results[("none", kind, rate)]
            cells = []
            for setup in SETUPS[1:]:
                r = results[(setup, kind, rate)]
                cells.append(f"{setup} {r['p50'] - base['p50']:+6.2f} / {r['p99'] - base['p99']:+6.2f}")
            gap = results[("gpu-admission", kind, rate)]["p50"] - results[("no-op", kind, rate)]["p50"]
            print(f"  {kind:5} {rate:4}/s  {'   '.join(cells)}   gpu-admission - no-op p50 {gap:+6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
