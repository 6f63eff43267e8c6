"""Bursts of GPU Pod creates against the chart's Deployment on a real node: what a burst adds, what fails, and
how many replicas absorb it.

    python bench/bursts.py [--sizes 50,200,500] [--replicas 1,2,3] [--rounds 3] [--archive dist/...oci.tar]
                           [--values JSON]   # more chart values, e.g. a longer mutating timeout

Root (the node runs containerd, runc and the kubelet) and the e2e binaries (tests/e2e/build.py); the node's
lock, as for the node's e2e modules: `flock /tmp/gpa-e2e-node.lock python bench/bursts.py ...`.

Starts what tests/e2e/test_deployed.py starts: the control plane with kube-scheduler on the node's bridge
(tests/e2e/cluster.py), the node (tests/e2e/node.py: kubelet, containerd, runc, kube-proxy) with the image built
from the Dockerfile (`make image`'s archive) imported into its containerd, and the chart installed from
charts/gpu-admission with real Helm and its default values (its webhook configurations, `failurePolicy: Fail`,
its Service, certificates, 2 gunicorn workers per pod), its image named by the archive's reference. For each
replica count (`helm upgrade --set replicaCount=N`, then every pod Ready and in the Service's endpoints) and
each round, every burst size is measured twice in a shuffled order: with the chart's webhook configurations and
without them (deleted, then created again as the chart made them; a dry-run create tells when the apiserver
follows). A burst is N GPU Pod creates released at once, one client thread and one warmed kept-alive connection
each (bench/creates.py's `burst`); the pods name a scheduler that does not exist, so none is placed or run:
what is measured is the create through the apiserver and its admission. Prints, per replica count and size, the
creates' p50/p99 with and without the webhook (all rounds pooled), the added p50/p99, the spread of the added
p50 over rounds, the failed creates with the apiserver's reasons, the webhook pods' CPU seconds (their cgroups)
and the apiserver's (/proc) per 1,000 creates, and the load average before and after.

Nothing here asserts a time: it prints figures for bench/README.md. Every process of the cluster, the node, the
webhook's pods and this client share the machine's cores: on a small machine the added latency and the failures
are the result, not the absolute times.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import struct
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from apiserver import GPU_POD, NAMESPACE, PROBE, clear  # noqa: E402
from creates import APISERVER_FIGURES, SteadyClient, burst, process_cpu, scrape, total  # noqa: E402

from tests.e2e import node as nodelib  # noqa: E402
from tests.e2e.cluster import Cluster  # noqa: E402

CHART = REPO / "charts" / "gpu-admission"
RELEASE = RELEASE_NAMESPACE = "gpu-admission"
KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
# placed by no scheduler: the pods stay Pending, and the kubelet never runs them
UNSCHEDULED = {**GPU_POD, "spec": {**GPU_POD["spec"], "schedulerName": "bench-no-scheduler"}}


def version() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def image_reference(archive: Path) -> str:
    """The reference `make image` writes into the archive's index (docker.io/library/gpu-admission:VERSION)."""
    with tarfile.open(archive) as tar:
        extracted = tar.extractfile("index.json")
        assert extracted is not None
        (manifest,) = json.loads(extracted.read())["manifests"]
    return manifest["annotations"]["org.opencontainers.image.ref.name"]


class NodeClient(SteadyClient):
    """The bench's client of an apiserver that listens on the node's bridge (not loopback), patient enough that
    a failed create is the apiserver's answer, not the client's timeout."""

    def __init__(self, cluster: Cluster):
        super().__init__(cluster)
        self.host = cluster.address

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                                                 timeout=120)
        return conn

    def json(self, method: str, path: str, body: dict | None = None, ok: tuple[int, ...] = (200, 201)) -> dict:
        status, answer = self.request(method, path, body)
        if status not in ok:
            raise SystemExit(f"{method} {path} answered {status}: {answer[:300]!r}")
        return json.loads(answer)


def to_webhook(port: int = 8443) -> set[tuple[str, str]]:
    """Established TCP connections of this network namespace to the node's pods on `port` (the chart's container
    port): the apiserver's to the webhook's pods, as (local, remote) address pairs."""
    prefix = nodelib.SUBNET.rsplit(".", 1)[0] + "."
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, _, remote_port = fields[2].partition(":")
        if fields[3] != "01" or int(remote_port, 16) != port:
            continue
        if socket.inet_ntoa(struct.pack("<I", int(address, 16))).startswith(prefix):
            found.add((fields[1], fields[2]))
    return found


class Connections:
    """The connections to the webhook's pods seen while a burst runs (sampled every 20 ms: one that opens and
    closes between two samples is missed), against those open before it."""

    def __init__(self):
        self.before = to_webhook()
        self.seen = set(self.before)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.seen |= to_webhook()

    def stop(self) -> tuple[int, int]:
        """New connections seen during the burst, and those held after it."""
        self._stop.set()
        self._thread.join()
        return len(self.seen - self.before), len(to_webhook())


def calls(client: NodeClient) -> float:
    """Seconds the apiserver has spent in webhook calls so far (mutating and validating, as it times them)."""
    samples = scrape(client)
    figures = [APISERVER_FIGURES[k] for k in ("mutating call s", "validating call s")]
    return sum(total(samples, metric, **labels) for metric, labels in figures)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Deployment:
    """The chart's release on the node: its replicas, its webhook configurations turned off and on."""

    def __init__(self, cluster: Cluster, node: nodelib.Node, client: NodeClient, image: str, extra: dict):
        import helm_python

        self.cluster, self.node, self.client, self.extra = cluster, node, client, extra
        self.repository, _, self.tag = image.rpartition(":")
        self.helm = helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=RELEASE_NAMESPACE)
        self.configurations: list[tuple[str, dict]] = []
        self.on = True

    def values(self, replicas: int) -> dict:
        return {**self.extra, "image": {"repository": self.repository, "tag": self.tag}, "replicaCount": replicas}

    def install(self, replicas: int) -> float:
        started = time.monotonic()
        self.helm.install(CHART, RELEASE, self.values(replicas), namespace=RELEASE_NAMESPACE, create_namespace=True)
        self.wait_available(replicas)
        for kind in KINDS:  # as the chart made them, to create again after a round without them
            obj = self.client.json("GET", f"{ADMISSION}/{kind}/{RELEASE}")
            meta = obj["metadata"]
            obj["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
            self.configurations.append((kind, obj))
        return time.monotonic() - started

    def scale(self, replicas: int) -> float:
        """`helm upgrade` with another replicaCount (the configurations in place, as Helm left them)."""
        self.webhook(True)
        started = time.monotonic()
        self.helm.upgrade(CHART, RELEASE, self.values(replicas), namespace=RELEASE_NAMESPACE)
        self.wait_available(replicas)
        return time.monotonic() - started

    def wait_available(self, replicas: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            deployment = self.client.json("GET", f"/apis/apps/v1/namespaces/{RELEASE_NAMESPACE}/deployments/{RELEASE}")
            status = deployment["status"]
            pods = self.pods()
            slices = self.client.json("GET", f"/apis/discovery.k8s.io/v1/namespaces/{RELEASE_NAMESPACE}/endpointslices"
                                             f"?labelSelector=kubernetes.io%2Fservice-name%3D{RELEASE}")["items"]
            ready = sum(1 for s in slices for e in s.get("endpoints") or []
                        if (e.get("conditions") or {}).get("ready"))
            if (status.get("readyReplicas") == status.get("updatedReplicas") == status.get("replicas") == replicas
                    and status.get("observedGeneration") == deployment["metadata"]["generation"]
                    and len(pods) == replicas and ready == replicas):
                return
            time.sleep(1)
        raise SystemExit(f"the Deployment did not get {replicas} ready replicas within {timeout:.0f} s")

    def pods(self) -> list[dict]:
        return self.client.json("GET", f"/api/v1/namespaces/{RELEASE_NAMESPACE}/pods"
                                       "?labelSelector=app.kubernetes.io%2Fcomponent%3Dwebhook")["items"]

    def webhook(self, on: bool) -> None:
        """The chart's configurations present or absent, and the apiserver following: a dry-run GPU Pod is
        patched (mutating) and a Pod that overrides CUDA_VISIBLE_DEVICES is denied (validating), or neither."""
        if on == self.on:
            return
        for kind, obj in self.configurations:
            if on:
                self.client.json("POST", f"{ADMISSION}/{kind}", obj)
            else:
                self.client.json("DELETE", f"{ADMISSION}/{kind}/{obj['metadata']['name']}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._patched() == on and self._denied() == on:
                self.on = on
                time.sleep(0.5)
                return
            time.sleep(0.2)
        raise SystemExit(f"the apiserver did not follow the webhook configurations ({'on' if on else 'off'}) "
                         "within 60 s")

    def _patched(self) -> bool:
        pod = {**UNSCHEDULED, "metadata": {"name": "bench-probe"}}
        status, body = self.client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", pod)
        return status == 201 and json.loads(body)["spec"].get("runtimeClassName") == "nvidia"

    def _denied(self) -> bool:
        status, body = self.client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", PROBE)
        return status != 201 and b"gpu-admission" in body

    def cpu_seconds(self) -> float:
        """CPU seconds of the webhook's pods so far, from their cgroups (cpuacct) under the node's."""
        total = 0.0
        top = nodelib.CGROUP_FS / "cpuacct" / self.node.cgroup
        for pod in self.pods():
            for directory in top.rglob(f"pod{pod['metadata']['uid']}"):
                total += int((directory / "cpuacct.usage").read_text()) / 1e9
        return total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(deployment: Deployment, client: NodeClient, replicas: int, sizes: list[int], rounds: int,
            results: dict) -> None:
    apiserver = deployment.cluster.processes["kube-apiserver"].pid
    deployment.webhook(True)
    burst(client, 20, f"warm-{replicas}", UNSCHEDULED)  # connections from the apiserver to every replica
    clear(client)
    for r in range(rounds):
        for size in sizes:
            order = ["none", "webhook"]
            random.Random(f"{replicas}-{r}-{size}").shuffle(order)
            for setup in order:
                deployment.webhook(setup == "webhook")
                hook0, api0, calls0 = deployment.cpu_seconds(), process_cpu(apiserver), calls(client)
                watch = Connections()
                lat, failures = burst(client, size, f"b{replicas}-{r}-{size}-{setup}", UNSCHEDULED)
                opens, connections = watch.stop()
                hook1, api1, calls1 = deployment.cpu_seconds(), process_cpu(apiserver), calls(client)
                entry = results.setdefault((replicas, size, setup), {"lat": [], "failures": [], "rounds": [],
                                                                    "hook cpu": [], "api cpu": [], "call ms": [],
                                                                    "opens": [], "held": []})
                entry["lat"] += lat
                entry["failures"] += failures
                entry["rounds"].append(statistics.median(lat) if lat else float("nan"))
                entry["hook cpu"].append((hook1 - hook0) / size * 1000)
                entry["api cpu"].append((api1 - api0) / size * 1000)
                entry["call ms"].append((calls1 - calls0) / size * 1000)
                entry["opens"].append(opens)
                entry["held"].append(connections)
                p50 = statistics.median(lat) * 1e3 if lat else float("nan")
                p99 = percentile(lat, 0.99) * 1e3 if lat else float("nan")
                print(f"{replicas} replica(s) round {r} {size:4} at once {setup:7}: p50 {p50:8.1f} p99 {p99:8.1f} ms, "
                      f"failed {len(failures)}; CPU s/1000 apiserver {(api1 - api0) / size * 1000:.2f} webhook pods "
                      f"{(hook1 - hook0) / size * 1000:.2f}; webhook calls {(calls1 - calls0) / size * 1000:.1f} ms "
                      f"per create; connections to the webhook: {opens} new, {connections} held after; "
                      f"load {loadavg()}", flush=True)
                for why in sorted(set(failures))[:3]:
                    print(f"    {failures.count(why)} x {why[:300]}", flush=True)
                clear(client)


def report(results: dict, replicas: list[int], sizes: list[int], rounds: int) -> None:
    print(f"\nbursts on the node ({rounds} rounds, with and without the webhook interleaved; p50/p99 of the "
          f"created pods pooled over rounds; {os.cpu_count()} CPUs):")
    print("| replicas | at once | no webhook p50 / p99 ms | webhook p50 / p99 ms | added p50 / p99 ms | "
          "added p50 per round | failed (no webhook / webhook) | webhook pods / apiserver CPU s per 1,000 | "
          "in webhook calls, ms per create | connections to the webhook: new / held after |")
    print("| ---: | ---: | --- | --- | --- | --- | --- | --- | ---: | --- |")
    for n in replicas:
        for size in sizes:
            none, hook = results.get((n, size, "none")), results.get((n, size, "webhook"))
            if not none or not hook:
                continue

            def cell(entry) -> str:
                lat = entry["lat"]
                if not lat:
                    return "-"
                return f"{statistics.median(lat) * 1e3:.0f} / {percentile(lat, 0.99) * 1e3:.0f}"

            added = "-"
            if none["lat"] and hook["lat"]:
                added = (f"+{(statistics.median(hook['lat']) - statistics.median(none['lat'])) * 1e3:.0f} / "
                         f"+{(percentile(hook['lat'], 0.99) - percentile(none['lat'], 0.99)) * 1e3:.0f}")
            spread = ", ".join(f"{(h - b) * 1e3:+.0f}" for h, b in zip(hook["rounds"], none["rounds"]))
            cpu = f"{statistics.median(hook['hook cpu']):.2f} / {statistics.median(hook['api cpu']):.2f}"
            conns = f"{statistics.median(hook['opens']):.0f} / {statistics.median(hook['held']):.0f}"
            print(f"| {n} | {size} | {cell(none)} | {cell(hook)} | {added} | {spread} | "
                  f"{len(none['failures'])} / {len(hook['failures'])} | {cpu} | "
                  f"{statistics.median(hook['call ms']):.0f} | {conns} |")
    print("\nfailed creates by reason:")
    for key, entry in sorted(results.items()):
        for why in sorted(set(entry["failures"])):
            print(f"  {key[0]} replica(s), {key[1]} at once, {key[2]}: {entry['failures'].count(why)} x {why[:300]}")
    print("no-webhook baseline CPU s/1000 (apiserver): " + "; ".join(
        f"{k[0]}x{k[1]} {statistics.median(e['api cpu']):.2f}" for k, e in sorted(results.items()) if k[2] == "none"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="50,200,500", help="creates released at once (default 50,200,500)")
    ap.add_argument("--replicas", default="1,2,3", help="the Deployment's replica counts, in order")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--archive", type=Path, default=REPO / "dist" / f"gpu-admission-{version()}.oci.tar",
                    help="the image's OCI archive (`make image`)")
    ap.add_argument("--values", type=json.loads, default={},
                    help='more chart values as JSON, e.g. \'{"webhooks": {"mutating": {"timeoutSeconds": 5}}}\'')
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    replicas = [int(x) for x in args.replicas.split(",")]
    if not args.archive.is_file():
        print(f"bursts: {args.archive} is missing: run `make image`", file=sys.stderr)
        return 2
    try:
        nodelib.preflight()
    except nodelib.NodeUnavailable as exc:
        print(f"bursts: {exc}", file=sys.stderr)
        return 2

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):  # a killed run still stops the node and removes its bridge
        signal.signal(sig, interrupted)
    image = image_reference(args.archive)
    print(f"load average at start: {loadavg()}; image {image}; {os.cpu_count()} CPUs; chart values "
          f"{json.dumps(args.values)}", flush=True)
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="gpu-admission-bench-bursts-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        nodelib.bridge_up()
        cluster = Cluster(root / "cluster", scheduler=True, address=nodelib.NODE_IP,
                          service_cidr=nodelib.SERVICE_CIDR)
        node = nodelib.Node(cluster, root / "node", images={image: args.archive})
        deployment = None
        try:
            started = time.monotonic()
            cluster.start()
            node.start()
            client = NodeClient(cluster)
            client.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": NAMESPACE}})
            deadline = time.monotonic() + 60
            while client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")[0] != 200:
                if time.monotonic() > deadline:
                    raise SystemExit("the bench namespace's default ServiceAccount did not appear within 60 s")
                time.sleep(0.5)
            print(f"cluster and node up in {time.monotonic() - started:.0f} s; load {loadavg()}", flush=True)
            deployment = Deployment(cluster, node, client, image, args.values)
            took = deployment.install(replicas[0])
            print(f"chart installed, {replicas[0]} replica(s) ready in {took:.0f} s", flush=True)
            for n in replicas:
                if n != replicas[0]:
                    took = deployment.scale(n)
                    print(f"scaled to {n} replica(s), ready in {took:.0f} s", flush=True)
                measure(deployment, client, n, sizes, args.rounds, results)
        except KeyboardInterrupt:
            print("interrupted: stopping the node and the cluster", file=sys.stderr, flush=True)
        finally:
            print(f"load average at the end: {loadavg()}", flush=True)
            try:
                if deployment is not None:
                    deployment.helm.close()
            finally:
                try:
                    cluster.stop_controllers()
                    node.stop()
                finally:
                    cluster.stop()
                    nodelib.bridge_down()
    report(results, replicas, sizes, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
