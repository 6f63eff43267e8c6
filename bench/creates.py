"""What a Pod create pays, through a real kube-apiserver: latency, the CPU seconds each process spends per
1,000 creates, and the counts that do not depend on the machine's noise (webhook calls, patches, TCP
segments and connections per create).

    python bench/creates.py [--rounds 3] [--creates 500] [--rate 50] [--cpus apiserver=0-5,...]
    python bench/creates.py --bursts 50,200,500 --replicas 1,2,3 [--cpus ...]
    python bench/creates.py --setups "no-op,no-op + patch" --profile DIR   # and the apiserver's CPU profiles

Starts etcd and kube-apiserver (tests/e2e/cluster.py, no controllers: the bench creates the namespace's
ServiceAccount itself) and registers the chart's own webhook configurations (rules, matchConditions,
failurePolicy, timeouts as rendered by `helm template`), each time pointed at one of these servers:

  none            no webhook configuration;
  no-op           answers "allowed" for the review's uid, nothing else (bench/apiserver.py's);
  no-op + patch   answers what gpu-admission answered to its first review of each path, kept and sent back
                  for every later one: the same patch, warnings and annotations, none of the work. The fair
                  line for what gpu-admission's own computation costs;
  gpu-admission   the webhook, serving the policy of the chart's ConfigMap;
  in-tree         no webhook: the ValidatingAdmissionPolicies `gpu-admission export` writes, run by the
                  apiserver.

Every server runs under the deployed gunicorn configuration (webhook.server.gunicorn_conf, TLS, the chart's 2
workers). The setups are interleaved round by round (each round in another order), and each round creates
`--creates` GPU Pods at `--rate` per second (open loop, 8 kept-alive client connections). For each setup it
prints the medians over rounds of: create latency p50/p99; CPU seconds per 1,000 creates of the apiserver,
etcd, the webhook (gunicorn's arbiter and workers) and the client, read from /proc/PID/stat (the idle rate of
each process, measured before the rounds, subtracted); the apiserver's own counts per create (webhook calls
by type, from apiserver_admission_webhook_admission_duration_seconds) and its time per create in the mutating
and validating admission steps and in each webhook call; the webhook's own requests and patches per create
and its time per request (its /metrics); and the machine's TCP segments and connections opened per create
(/proc/net/snmp: all processes on the machine, so read them on a quiet one).

`--bursts` fires N GPU creates at once (one thread and one kept-alive connection each, released together),
for no webhook and for gpu-admission run as `--replicas` servers of 2 workers each behind a Service: a
selector-less Service with Endpoints and an EndpointSlice listing every server (a local non-loopback
address; on a machine with only loopback, an alias 10.254.254.1 is added to `lo`, which needs root), so that
the apiserver picks an endpoint for each connection it opens, as it does with the Deployment's pods. Prints
added p50/p99 over no webhook and the failed creates for each burst size and replica count.

`--cpus` pins the processes with sched_setaffinity on every thread, e.g.
`apiserver=0-5,webhook=6-11,client=12-15` (etcd runs on the apiserver's CPUs unless named; replicas split
the webhook's CPUs evenly). Nothing here asserts a time: it prints figures for bench/README.md.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import http.client
import json
import os
import random
import re
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from apiserver import GPU_POD, NAMESPACE, PROBE, Client, clear, install_in_tree  # noqa: E402
from load import cpu_seconds, start, stop  # noqa: E402

from tests.e2e import build  # noqa: E402
from tests.e2e.cluster import Cluster, free_port  # noqa: E402

SETUPS = ("none", "no-op", "no-op + patch", "gpu-admission", "in-tree")
APPS = {"no-op": "apiserver:noop_app", "no-op + patch": "creates:noop_patch_app",
        "gpu-admission": "webhook.server.wsgi:app"}
RELEASE_NAMESPACE = "gpu-admission"
SERVICE = "gpu-admission"
WORKERS = "2"  # the chart's default (workers: 2)
ALIAS = "10.254.254.1"  # outside the cluster's Service CIDR and not loopback: Endpoints accept it

# ------------------------------------------------------------------------------------ the no-op + patch app

_LEARNED: dict[str, dict] = {}


def _learn(path: str, body: bytes) -> dict:
    """gpu-admission's answer to this review, as its own app gives it (once per path per worker)."""
    from webhook.server.wsgi import app

    answer = app.test_client().post(path, data=body, content_type="application/json").get_json()["response"]
    return {k: v for k, v in answer.items() if k not in ("uid", "allowed")}


def noop_patch_app(environ, start_response):
    if environ["REQUEST_METHOD"] != "POST":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    review = json.loads(raw)
    path = environ["PATH_INFO"]
    learned = _LEARNED.get(path)
    if learned is None:
        learned = _LEARNED[path] = _learn(path, raw)
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "response": {"uid": review["request"]["uid"], "allowed": True, **learned}}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


# ------------------------------------------------------------------------------------------- the machine

def cpu_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.split(";"):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def pin(pid: int, cpus: set[int] | None, *, group: bool = False) -> None:
    """Every thread of the process (of its process group when `group`) onto `cpus`."""
    if not cpus:
        return
    pids = [pid]
    if group:
        pids = [int(p) for p in filter(str.isdigit, os.listdir("/proc")) if _pgid(int(p)) == pid]
    for p in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(tid), cpus)


def _pgid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return -1


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_cpu() -> float:
    t = os.times()
    return t.user + t.system


def tcp_counters() -> dict[str, int]:
    lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Tcp:")]
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:]) if k in
            ("ActiveOpens", "PassiveOpens", "InSegs", "OutSegs", "RetransSegs")}


def established(ports: set[int]) -> int:
    """Established TCP connections whose local port is one of `ports` (the servers' side)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "01" and int(local.split(":")[1], 16) in ports:
            count += 1
    return count


def local_address() -> str:
    """A local IPv4 address that is not loopback (Endpoints refuse 127.0.0.0/8); adds ALIAS to lo if none."""
    text = Path("/proc/net/fib_trie").read_text()
    found = [ip for ip in re.findall(r"\|-- (\d+\.\d+\.\d+\.\d+)\n\s+/32 host LOCAL", text)
             if not ip.startswith("127.")]
    if found:
        return found[0]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for request, value in ((0x8916, ALIAS), (0x891C, "255.255.255.255")):  # SIOCSIFADDR, SIOCSIFNETMASK
            ifreq = struct.pack("16sH2s4s8s", b"lo:9", socket.AF_INET, b"\0\0", socket.inet_aton(value), b"\0" * 8)
            fcntl.ioctl(s, request, ifreq)
    return ALIAS


# ----------------------------------------------------------------------------------------------- metrics

_SAMPLE = re.compile(r"^([a-zA-Z_:]+)(\{[^}]*\})? ([0-9.eE+-]+|NaN|\+Inf)$", re.M)


def scrape(client: Client | None, url: str | None = None, ca: Path | None = None) -> dict[tuple[str, str], float]:
    if client is not None:
        _, body = client.request("GET", "/metrics")
        text = body.decode()
    else:
        import ssl
        import urllib.request
        with urllib.request.urlopen(url, context=ssl.create_default_context(cafile=str(ca)), timeout=10) as r:
            text = r.read().decode()
    return {(m.group(1), m.group(2) or ""): float(m.group(3)) for m in _SAMPLE.finditer(text)}


def total(samples: dict, name: str, **labels: str) -> float:
    want = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(v for (n, lab), v in samples.items() if n == name and all(w in lab for w in want))


APISERVER_FIGURES = {
    # name: (metric, labels)
    "mutating calls": ("apiserver_admission_webhook_admission_duration_seconds_count", {"type": "admit"}),
    "validating calls": ("apiserver_admission_webhook_admission_duration_seconds_count", {"type": "validating"}),
    "mutating call s": ("apiserver_admission_webhook_admission_duration_seconds_sum", {"type": "admit"}),
    "validating call s": ("apiserver_admission_webhook_admission_duration_seconds_sum", {"type": "validating"}),
    "admit step s": ("apiserver_admission_step_admission_duration_seconds_sum",
                     {"type": "admit", "operation": "CREATE", "resource": "pods"}),
    "validate step s": ("apiserver_admission_step_admission_duration_seconds_sum",
                        {"type": "validate", "operation": "CREATE", "resource": "pods"}),
    "request s": ("apiserver_request_duration_seconds_sum", {"verb": "POST", "resource": "pods", "subresource": ""}),
}
WEBHOOK_FIGURES = {
    "webhook requests": ("gpu_admission_requests_total", {}),
    "webhook patches": ("gpu_admission_rule_results_total", {"outcome": "patched"}),
    "webhook s": ("gpu_admission_request_duration_seconds_sum", {}),
}


# ----------------------------------------------------------------------------------------------- the run

class SteadyClient(Client):
    """Client whose requests other than Pod creates are sent again once when the apiserver closed the
    kept-alive connection under them (during a burst it closes idle ones); a failed create stays failed."""

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        try:
            return super().request(method, path, body)
        except (OSError, http.client.HTTPException):
            if method == "POST" and path.endswith("/pods"):
                raise
            return super().request(method, path, body)


class Plane(Cluster):
    """etcd and kube-apiserver only: the bench needs no controller (it makes the ServiceAccount itself). With
    `profiling` set before it starts, the apiserver serves Go's pprof endpoints (/debug/pprof/)."""

    profiling = False

    def _spawn(self, name: str, argv: list[str]):
        if name == "kube-apiserver" and self.profiling:
            argv = ["--profiling=true" if a == "--profiling=false" else a for a in argv]
        return super()._spawn(name, argv)

    def _start_controller_manager(self) -> None:
        pass

    def _wait_controllers(self) -> None:
        pass


def carried_toolchain(bin_dir: Path) -> build.Toolchain:
    """Binaries brought along (the device machine has no Go): used as they are, no build."""
    chain = build.toolchain()
    build.ensure = lambda chain=None, quiet=False: chain  # type: ignore[assignment]
    kubectl = bin_dir / "kubectl"
    if not kubectl.exists():
        kubectl.write_text("#!/bin/sh\nexit 1\n")  # the Cluster copies one; the bench never calls it
        kubectl.chmod(0o755)
    return build.Toolchain(chain.minor, chain.k8s_dir, chain.etcd_dir, bin_dir)


def rendered(path: Path | None) -> list[dict]:
    """The chart's webhook configurations and policy ConfigMap (`helm template`, default values)."""
    if path is not None:
        return json.loads(path.read_text())
    import helm_python
    import yaml

    docs = []
    for name, text in helm_python.Chart.load(str(REPO / "charts/gpu-admission")).render(
            {}, name="gpu-admission", namespace=RELEASE_NAMESPACE).items():
        if name.endswith(".yaml"):
            docs += [d for d in yaml.safe_load_all(text) if (d and d.get("kind") in (
                "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")) or
                (d and d.get("kind") == "ConfigMap" and "policy.yaml" in (d.get("data") or {}))]
    return docs


class Bench:
    def __init__(self, args, work: Path, cluster: Cluster, docs: list[dict], cpus: dict[str, set[int]]):
        self.args, self.work, self.cluster, self.cpus = args, work, cluster, cpus
        self.client = SteadyClient(cluster)
        self.ca_bundle = base64.b64encode((work / "tls/ca.crt").read_bytes()).decode()
        self.configs = [d for d in docs if d["kind"] != "ConfigMap"]
        (work / "policy.yaml").write_text(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["policy.yaml"])
        self.servers: dict[str, list[tuple[object, int]]] = {}  # setup -> [(proc, port)]
        self.installed: str | None = None

    # servers ------------------------------------------------------------------------------------------
    def serve(self, setup: str, replicas: int = 1, host: str = "127.0.0.1") -> list[int]:
        webhook_cpus = sorted(self.cpus.get("webhook", ()))
        started = []
        for i in range(replicas):
            port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
            env.update(GPU_ADMISSION_BIND=f"{host}:{port}", GPU_ADMISSION_TLS_CERT=str(self.work / "tls/tls.crt"),
                       GPU_ADMISSION_TLS_KEY=str(self.work / "tls/tls.key"), GPU_ADMISSION_WORKERS=WORKERS,
                       GPU_ADMISSION_POLICY=str(self.work / "policy.yaml"), GPU_ADMISSION_LOG_LEVEL="warning",
                       PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "bench"), env.get("PYTHONPATH", "")]))
            proc = _start(APPS[setup], env, self.work / "tls/ca.crt", port, self.work, host)
            if webhook_cpus:
                share = len(webhook_cpus) // replicas or 1
                mine = set(webhook_cpus[i * share:(i + 1) * share]) or set(webhook_cpus)
                pin(proc.pid, mine, group=True)
            self.servers.setdefault(setup, []).append((proc, port))
            started.append(port)
        return started

    def stop_servers(self, setup: str) -> None:
        for proc, _ in self.servers.pop(setup, []):
            stop(proc)

    # registration -------------------------------------------------------------------------------------
    def register(self, setup: str, *, service_ports: list[int] | None = None, host: str | None = None) -> None:
        """The chart's webhook configurations, pointed at this setup's server (none: deleted)."""
        if self.installed == "in-tree" and setup != "in-tree":
            self.uninstall_in_tree()
        for doc in self.configs:
            plural = doc["kind"].lower() + "s"
            base = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            self.client.request("DELETE", f"{base}/{doc['metadata']['name']}")
        if setup == "in-tree":
            install_in_tree(self.client)
        elif setup != "none":
            for doc in self.configs:
                obj = json.loads(json.dumps(doc))
                for hook in obj.get("webhooks", []):
                    path = (hook["clientConfig"].get("service") or {}).get("path") or "/validate"
                    if service_ports:
                        hook["clientConfig"] = {"service": {"namespace": RELEASE_NAMESPACE, "name": SERVICE,
                                                            "port": 443, "path": path}, "caBundle": self.ca_bundle}
                    else:
                        port = self.servers[setup][0][1]
                        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": self.ca_bundle}
                plural = obj["kind"].lower() + "s"
                status, body = self.client.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", obj)
                if status != 201:
                    raise SystemExit(f"registering {obj['metadata']['name']} answered {status}: {body[:300]!r}")
        self.installed = setup
        time.sleep(1.5)  # the apiserver's informer picks the configurations up

    def uninstall_in_tree(self) -> None:
        from webhook.config import default_policy
        from webhook.intree.export import export

        for obj in export(default_policy()):
            plural = "validatingadmissionpolicies" if obj["kind"] == "ValidatingAdmissionPolicy" \
                else "validatingadmissionpolicybindings"
            self.client.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/{plural}/{obj['metadata']['name']}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, body = self.client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All", PROBE)
            if b"ValidatingAdmissionPolicy" not in body:
                return
            time.sleep(0.2)
        raise SystemExit("the in-tree policies were still answering 60 s after their deletion")

    def endpoints(self, ip: str, ports: list[int]) -> None:
        """A Service without selector whose Endpoints and EndpointSlice list `ports` on `ip`."""
        ns = RELEASE_NAMESPACE
        for path in (f"/api/v1/namespaces/{ns}/services/{SERVICE}", f"/api/v1/namespaces/{ns}/endpoints/{SERVICE}",
                     f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
                     f"?labelSelector=kubernetes.io%2Fservice-name%3D{SERVICE}"):
            self.client.request("DELETE", path)
        created = [
            ("/api/v1/namespaces/{ns}/services", {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": SERVICE}, "spec": {"ports": [{"name": "https", "port": 443,
                                                                 "targetPort": ports[0]}]}}),
            ("/api/v1/namespaces/{ns}/endpoints", {"apiVersion": "v1", "kind": "Endpoints",
             "metadata": {"name": SERVICE}, "subsets": [{"addresses": [{"ip": ip}],
                                                         "ports": [{"name": "https", "port": p}]} for p in ports]}),
        ]
        for i, p in enumerate(ports):
            created.append(("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                "metadata": {"name": f"{SERVICE}-{i}", "labels": {"kubernetes.io/service-name": SERVICE}},
                "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": p, "protocol": "TCP"}]}))
        for path, obj in created:
            status, body = self.client.request("POST", path.format(ns=ns), obj)
            if status != 201:
                raise SystemExit(f"creating {obj['kind']} answered {status}: {body[:300]!r}")

    # measuring ----------------------------------------------------------------------------------------
    def processes(self, setup: str) -> dict[str, float]:
        out = {"apiserver": process_cpu(self.cluster.processes["kube-apiserver"].pid),
               "etcd": process_cpu(self.cluster.processes["etcd"].pid), "client": client_cpu()}
        out["webhook"] = sum(cpu_seconds(proc.pid) for proc, _ in self.servers.get(setup, []))
        return out

    def webhook_metrics(self, setup: str) -> dict:
        if setup != "gpu-admission":
            return {}
        _, port = self.servers[setup][0]
        samples = scrape(None, f"https://127.0.0.1:{port}/metrics", self.work / "tls/ca.crt")
        return {k: total(samples, m, **lab) for k, (m, lab) in WEBHOOK_FIGURES.items()}

    def apiserver_metrics(self) -> dict:
        samples = scrape(self.client)
        return {k: total(samples, m, **lab) for k, (m, lab) in APISERVER_FIGURES.items()}

    def segment(self, setup: str, idle: dict[str, float], tag: str) -> dict:
        """One round of one setup: `--creates` GPU Pods at `--rate`, and what each process spent."""
        from apiserver import paced

        n, rate = self.args.creates, self.args.rate
        paced(self.client, GPU_POD, 20, 1.0, f"w-{tag}")  # warm: connections, informers, workers
        clear(self.client)
        time.sleep(1.2)  # the webhook's metrics are flushed once a second
        cpu0, tcp0, api0, hook0 = self.processes(setup), tcp_counters(), self.apiserver_metrics(), \
            self.webhook_metrics(setup)
        profile = self.profile(setup, tag, int(n / rate))
        t0 = time.monotonic()
        lat = paced(self.client, GPU_POD, rate, n / rate, tag)
        elapsed = time.monotonic() - t0
        if profile is not None:
            profile.join()
        time.sleep(1.2)
        cpu1, tcp1, api1, hook1 = self.processes(setup), tcp_counters(), self.apiserver_metrics(), \
            self.webhook_metrics(setup)
        conns = established({p for _, p in self.servers.get(setup, [])}) if setup in self.servers else 0
        clear(self.client)
        count = len(lat)
        row = {"n": count, "p50": statistics.median(lat) * 1e3, "p99": _percentile(lat, 0.99) * 1e3,
               "webhook connections": conns}
        for k in cpu1:  # CPU seconds per 1,000 creates, each process's idle rate subtracted
            row[f"cpu {k}"] = max(0.0, cpu1[k] - cpu0[k] - idle.get(k, 0.0) * (elapsed + 2.4)) / count * 1000
        for k in tcp1:
            row[f"tcp {k}"] = (tcp1[k] - tcp0[k]) / count
        for k in api1:
            row[k] = (api1[k] - api0[k]) / count * (1e3 if k.endswith(" s") else 1)
        for k in hook1:
            row[k] = (hook1[k] - hook0[k]) / count * (1e3 if k.endswith(" s") else 1)
        return row

    def profile(self, setup: str, tag: str, seconds: int) -> threading.Thread | None:
        """The apiserver's CPU profile over the round's creates (`--profile DIR`), written to DIR/TAG.pb.gz for
        `go tool pprof` (-top, -diff_base)."""
        if not self.args.profile:
            return None
        out = self.args.profile / f"{tag}.pb.gz"

        def fetch() -> None:
            status, body = self.client.request("GET", f"/debug/pprof/profile?seconds={seconds}")
            if status == 200:
                out.write_bytes(body)
            else:
                print(f"  profile of {setup}: the apiserver answered {status}", flush=True)

        thread = threading.Thread(target=fetch, daemon=True)
        thread.start()
        return thread

    def idle_rates(self, seconds: float = 5.0) -> dict[str, float]:
        a = self.processes("none")
        time.sleep(seconds)
        b = self.processes("none")
        return {k: (b[k] - a[k]) / seconds for k in a if k != "webhook"}

    def burst(self, size: int, tag: str) -> tuple[list[float], int]:
        """`size` creates released at once, one thread and one warmed kept-alive connection each."""
        lat, failures = burst(self.client, size, tag)
        return lat, len(failures)


def burst(client: Client, size: int, tag: str, template: dict | None = None) -> tuple[list[float], list[str]]:
    """`size` GPU Pod creates released at once, one thread and one warmed kept-alive connection each: the
    latencies of the created ones, and for each failed create why (the apiserver's status and message, or the
    client's error)."""
    barrier = threading.Barrier(size + 1)
    lat: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def one(i):
        with contextlib.suppress(Exception):
            client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")
        barrier.wait()
        pod = json.loads(json.dumps(template or GPU_POD))
        pod["metadata"]["name"] = f"{tag}-{i}"
        started = time.perf_counter()
        why = ""
        try:
            status, body = client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
            if status != 201:
                try:
                    why = f"{status}: {json.loads(body).get('message', '')}"
                except ValueError:
                    why = f"{status}: {body[:200]!r}"
        except Exception as exc:  # a failed create is counted, whatever failed
            why = f"no answer: {type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - started
        with lock:
            if why:
                failures.append(why)
            else:
                lat.append(elapsed)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(size)]
    for t in threads:
        t.start()
    barrier.wait()
    for t in threads:
        t.join()
    return lat, failures


def _start(app: str, env: dict, ca: Path, port: int, cwd: Path, host: str):
    """bench/load.py's start, on another address than loopback where asked."""
    if host == "127.0.0.1":
        return start(app, env, ca, port, cwd)
    import ssl
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "python:webhook.server.gunicorn_conf",
                             "--pythonpath", str(REPO / "bench"), app], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1) as raw, \
                    context.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1"):
                    time.sleep(1)
                    return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise SystemExit(f"{app} did not start on {host}:{port}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _parse_cpus(text: str | None) -> dict[str, set[int]]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        name, _, cpus = item.partition("=")
        out[name] = cpu_list(cpus)
    if "apiserver" in out:
        out.setdefault("etcd", out["apiserver"])
    return out


COLUMNS = ("p50", "p99", "cpu apiserver", "cpu etcd", "cpu webhook", "cpu client", "mutating calls",
           "validating calls", "mutating call s", "validating call s", "admit step s", "validate step s",
           "request s", "webhook requests", "webhook patches", "webhook s", "tcp OutSegs", "tcp ActiveOpens",
           "tcp PassiveOpens", "tcp RetransSegs", "webhook connections")


def rounds(bench: Bench, args) -> None:
    setups = [s for s in SETUPS if s in args.setups.split(",")]
    for setup in setups:
        if setup in APPS:
            bench.serve(setup)
    bench.register("none")
    samples = scrape(bench.client)
    for name in sorted({n for n, _ in samples if "admission" in n and n.endswith("_sum")}):
        labels = next(lab for n, lab in samples if n == name)
        print(f"apiserver metric: {name}{labels}", flush=True)
    idle = bench.idle_rates()
    print("idle CPU (fraction of a core): " + ", ".join(f"{k} {v:.3f}" for k, v in idle.items()), flush=True)
    rows: dict[str, list[dict]] = {s: [] for s in setups}
    order = list(setups)
    for r in range(args.rounds):
        random.Random(r).shuffle(order)
        for setup in order:
            bench.register(setup)
            row = bench.segment(setup, idle, f"r{r}-{setup.replace(' + ', '-')}")
            rows[setup].append(row)
            print(f"round {r} {setup:14} n={row['n']} p50 {row['p50']:.2f} p99 {row['p99']:.2f} ms; CPU s/1000: "
                  f"apiserver {row['cpu apiserver']:.2f} etcd {row['cpu etcd']:.2f} webhook {row['cpu webhook']:.2f} "
                  f"client {row['cpu client']:.2f}; calls m/v {row['mutating calls']:.2f}/"
                  f"{row['validating calls']:.2f}", flush=True)
    print(f"\nmedians over {args.rounds} interleaved rounds of {args.creates} GPU creates at {args.rate}/s "
          f"({os.cpu_count()} CPUs{'; pinned ' + args.cpus if args.cpus else ''}); CPU in s per 1,000 creates, "
          "times in ms (per create, or per request for 'webhook s'), counts per create:")
    print("| figure | " + " | ".join(setups) + " |")
    print("| --- |" + " ---: |" * len(setups))
    for col in COLUMNS:
        cells = []
        for s in setups:
            values = [row[col] for row in rows[s] if col in row]
            cells.append(f"{statistics.median(values):.3f}" if values else "")
        if any(cells):
            print(f"| {col} | " + " | ".join(cells) + " |")
    for s in setups:
        spread = [row["cpu apiserver"] + row["cpu etcd"] + row["cpu webhook"] for row in rows[s]]
        print(f"{s}: server-side CPU s/1000 (apiserver + etcd + webhook) per round: "
              + ", ".join(f"{v:.2f}" for v in spread))


def bursts(bench: Bench, args) -> None:
    sizes = [int(x) for x in args.bursts.split(",")]
    replicas = [int(x) for x in args.replicas.split(",")]
    ip = local_address()
    print(f"webhook replicas at {ip}", flush=True)
    results: dict[tuple[str, int], list[tuple[list[float], int]]] = {}
    for r in range(args.rounds):
        for setup in ["none"] + [f"gpu-admission x{n}" for n in replicas]:
            if setup == "none":
                bench.register("none")
            else:
                n = int(setup.rsplit("x", 1)[1])
                ports = bench.serve("gpu-admission", replicas=n, host=ip)
                bench.endpoints(ip, ports)
                bench.register("gpu-admission", service_ports=ports)
                bench.burst(20, f"w{r}-{n}")  # warm: connections to every replica
                clear(bench.client)
            for size in sizes:
                lat, failed = bench.burst(size, f"b{r}-{setup.replace(' ', '')}-{size}")
                results.setdefault((setup, size), []).append((lat, failed))
                p50 = statistics.median(lat) * 1e3 if lat else float("nan")
                p99 = _percentile(lat, 0.99) * 1e3 if lat else float("nan")
                print(f"round {r} {setup:18} burst {size:4}: p50 {p50:8.2f} p99 {p99:8.2f} ms, failed {failed}",
                      flush=True)
                clear(bench.client)
            if setup != "none":
                print("  connections held per replica: "
                      + "+".join(str(established({p})) for p in ports), flush=True)
                bench.register("none")
                bench.stop_servers("gpu-admission")
    print(f"\nbursts ({args.rounds} rounds; p50/p99 of all creates of a size pooled over rounds; "
          f"{os.cpu_count()} CPUs{'; pinned ' + args.cpus if args.cpus else ''}):")
    print("| setup | " + " | ".join(f"{s} at once: p50 / p99 ms (added) | failed" for s in sizes) + " |")
    print("| --- |" + " --- | ---: |" * len(sizes))
    base = {s: [x for lat, _ in results[("none", s)] for x in lat] for s in sizes}
    for setup in ["none"] + [f"gpu-admission x{n}" for n in replicas]:
        cells = []
        for s in sizes:
            lat = [x for lt, _ in results[(setup, s)] for x in lt]
            failed = sum(f for _, f in results[(setup, s)])
            if not lat:
                cells += ["-", str(failed)]
                continue
            p50, p99 = statistics.median(lat) * 1e3, _percentile(lat, 0.99) * 1e3
            if setup == "none":
                cells.append(f"{p50:.1f} / {p99:.1f}")
            else:
                b50, b99 = statistics.median(base[s]) * 1e3, _percentile(base[s], 0.99) * 1e3
                cells.append(f"{p50:.1f} / {p99:.1f} (+{p50 - b50:.1f} / +{p99 - b99:.1f})")
            cells.append(str(failed))
        print(f"| {setup} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--creates", type=int, default=500, help="GPU creates per setup per round (default 500)")
    ap.add_argument("--rate", type=int, default=50, help="creates per second (default 50)")
    ap.add_argument("--setups", default=",".join(SETUPS))
    ap.add_argument("--bursts", help="burst sizes, e.g. 50,200,500: the burst run instead of the rounds")
    ap.add_argument("--replicas", default="1,2,3")
    ap.add_argument("--cpus", help="pinning, e.g. apiserver=0-5,webhook=6-11,client=12-15 (';' joins ranges)")
    ap.add_argument("--bin", type=Path, help="the e2e binaries, brought along (no Go on the machine)")
    ap.add_argument("--rendered", type=Path, help="the chart's rendered webhook configurations and ConfigMap "
                                                  "as JSON (where helm_python is not installed)")
    ap.add_argument("--render-to", type=Path, help="write the rendered chart objects as JSON and exit")
    ap.add_argument("--profile", type=Path, help="the apiserver with --profiling=true: a CPU profile of each round "
                                                 "of each setup into this folder (ROUND-SETUP.pb.gz)")
    args = ap.parse_args(argv)
    docs = rendered(args.rendered)
    if args.render_to:
        args.render_to.write_text(json.dumps(docs))
        return 0
    cpus = _parse_cpus(args.cpus)
    if "client" in cpus:
        os.sched_setaffinity(0, cpus["client"])

    from webhook.tls import certs

    with tempfile.TemporaryDirectory(prefix="gpu-admission-bench-creates-") as tmp:
        work = Path(tmp)
        certs.write(certs.generate(SERVICE, RELEASE_NAMESPACE), work / "tls")
        chain = carried_toolchain(args.bin) if args.bin else build.toolchain()
        plane = Plane(work / "cluster", chain=chain)
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            plane.profiling = True
        with plane as cluster:
            for name in ("kube-apiserver", "etcd"):
                pin(cluster.processes[name].pid, cpus.get(name.removeprefix("kube-")))
            bench = Bench(args, work, cluster, docs, cpus)
            c = bench.client
            for path, obj in (("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": NAMESPACE}}),
                              ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": RELEASE_NAMESPACE}}),
                              (f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
                               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
                              ("/apis/node.k8s.io/v1/runtimeclasses",
                               {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                "metadata": {"name": "nvidia"}, "handler": "nvidia"})):
                c.request("POST", path, obj)
            try:
                if args.bursts:
                    bursts(bench, args)
                else:
                    rounds(bench, args)
            finally:
                for setup in list(bench.servers):
                    bench.stop_servers(setup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
