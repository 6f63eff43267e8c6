"""Load benchmark of the webhook as deployed: gunicorn, TLS, kept-alive connections, driven by wrk.

    .venv/bin/python bench/load.py [--rounds 5] [--duration 5] [--connections 8] [--endpoint validate|mutate]
                                   [--floor] [--hostile]

Runs, side by side and under the identical gunicorn configuration (webhook.server.gunicorn_conf):
  1. the webhook (webhook.server.wsgi:app) as the image runs it, and
  2. a no-op WSGI app (this file's `noop_app`: reads the body, answers a fixed AdmissionReview),
alternating wrk runs between them, and prints for each the requests/s and p50/p99 latency at full load
(fixed connection count) with the server's CPU time per request, then the same paced at 200 requests/s
(wrk with a per-request delay in Lua). The request is an AdmissionReview of a typical 2-container GPU
Pod shaped as the kube-apiserver sends it.

`--floor` also runs, in the same rounds, bench/envelope.py: the AdmissionReview parsed, shape-checked and
answered "allowed" by the webhook's own code, with no policy. Its ratio to the no-op app is the ceiling
of the webhook's on the machine at hand; the policy's share of a request is what lies below it.

`--hostile` also runs the webhook, in each round, with 1,000 idle kept-alive connections and 100 slowloris
clients held open beside the load (bench/hostile.py): the same figures with and without them.

Targets on a 2-core machine: the webhook at >= 75 % of the no-op app's throughput, p99 < 10 ms at 200 req/s.
Exits 1 when a target is missed, 2 when wrk is missing."""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RATE = 200  # requests per second for the paced run
NOOP_BODY = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"bench","allowed":true}}'


def noop_app(environ, start_response):
    """The baseline: what any WSGI app must do at least (read the body, answer), and nothing else."""
    environ["wsgi.input"].read()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(NOOP_BODY)))])
    return [NOOP_BODY]


def gpu_pod() -> dict:
    """A seed-style device-plugin training Pod with a sidecar, as the apiserver hands it to admission:
    defaults filled in, the service account token volume and the not-ready/unreachable tolerations added."""
    security = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    token = {"name": "kube-api-access-7xk2p", "readOnly": True,
             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}

    def container(name, image, resources, env):
        return {"name": name, "image": image, "env": env, "resources": resources, "volumeMounts": [token],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent", "securityContext": security}

    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "train-7f9c4", "generateName": "train-", "namespace": "ai-workloads",
                     "labels": {"app.kubernetes.io/name": "train", "batch.kubernetes.io/job-name": "train"},
                     "annotations": {"example.com/owner": "ml-platform"}},
        "spec": {
            "volumes": [{"name": "kube-api-access-7xk2p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "containers": [
                container("trainer", "registry.example.invalid/ml/train:1.4.2",
                          {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                           "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}},
                          [{"name": "EPOCHS", "value": "10"}, {"name": "DATA_DIR", "value": "/data"}]),
                container("metrics", "registry.example.invalid/ml/exporter:0.9",
                          {"limits": {"cpu": "100m", "memory": "64Mi"}, "requests": {"cpu": "100m", "memory": "64Mi"}},
                          [{"name": "PORT", "value": "9400"}]),
            ],
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "runtimeClassName": "nvidia",
            "nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                             "workload.example.com/gpu-allocation": "device-plugin"},
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {},
    }


def review_body() -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "5f2b1c3e-8d4a-4f6b-9c1d-2e3f4a5b6c7d", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "requestKind": {"group": "", "version": "v1",
        "kind": "Pod"}, "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "train-7f9c4", "namespace": "ai-workloads", "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller", "uid": "b1d6",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                "system:authenticated"]},
        "object": gpu_pod(), "oldObject": None, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}).encode()


def lua(body_file: Path, delay_ms: float | None) -> str:
    script = ('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
              f'local f = io.open("{body_file}", "rb"); wrk.body = f:read("*a"); f:close()\n')
    if delay_ms is not None:
        script += f"function delay() return {delay_ms} end\n"
    return script


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(app: str, env: dict, ca: Path, port: int, cwd: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "python:webhook.server.gunicorn_conf",
                             "--pythonpath", str(REPO / "bench"), app], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    context = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as raw, \
                    context.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1"):
                    time.sleep(1)  # every worker booted
                    return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise SystemExit(f"{app} did not start on port {port}")


def probe(url: str, body: bytes, ca: Path) -> dict:
    """One request, so the figures are known to be of real answers (not of fast 400s)."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=str(ca)))
    conn.request("POST", f"{u.path}?{u.query}", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    conn.close()
    if resp.status != 200 or answer.get("kind") != "AdmissionReview":
        raise SystemExit(f"{url} answered {resp.status}: {answer}")
    return answer["response"]


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def cpu_seconds(pgid: int) -> float:
    """CPU time (user + system) used so far by the server's processes (its process group; Linux)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def connections_per_worker(port: int) -> str:
    """How the open connections are spread over the worker processes, e.g. "5+3" (needs `ss`)."""
    if shutil.which("ss") is None:
        return "?"
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout
    counts = sorted(collections.Counter(re.findall(r"pid=(\d+)", out)).values(), reverse=True)
    return "+".join(map(str, counts)) or "?"


def wrk(url: str, script: Path, *, connections: int, duration: int, pgid: int | None = None) -> dict:
    cpu = cpu_seconds(pgid) if pgid else 0.0
    proc = subprocess.Popen(["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script), url],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(duration / 2)
    spread = connections_per_worker(int(url.split(":")[2].split("/")[0]))
    out = proc.communicate()[0]
    cpu = cpu_seconds(pgid) - cpu if pgid else 0.0
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    latency = {p: float(v) * _UNITS[u] for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return {"rps": rps, "p50": latency["50"], "p99": latency["99"], "cpu_us": cpu / max(requests, 1) * 1e6,
            "spread": spread, "errors": errors.group(0) if errors else ""}


@contextlib.contextmanager
def hostile(name: str, url: str, ca: Path):
    """For a run named "... + hostile": 1,000 idle and 100 slowloris connections open for its duration."""
    if not name.endswith(" + hostile"):
        yield
        return
    from hostile import Hostile

    port = int(url.split(":")[2].split("/")[0])
    with Hostile(port, str(ca), idle=1000, slowloris=100) as held:
        deadline = time.monotonic() + 60
        while held.held() < 1050 and time.monotonic() < deadline:
            time.sleep(0.1)
        yield


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating runs of each app (default 5)")
    ap.add_argument("--connections", type=int, default=8, help="connections of the full-load runs (default 8)")
    ap.add_argument("--workers", type=int, help="gunicorn workers (default: the deployed default, one per CPU)")
    ap.add_argument("--hostile", action="store_true", help="also run the webhook with 1,000 idle and 100 slowloris "
                                                           "connections held open beside the load")
    ap.add_argument("--endpoint", choices=("validate", "mutate"), default="validate")
    ap.add_argument("--floor", action="store_true", help="also run bench/envelope.py: the review parsed and answered "
                                                         "without any policy (the webhook's ceiling)")
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        print("bench/load.py needs wrk, a real HTTP load generator: `apt-get install -y wrk` (Debian/Ubuntu)",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from webhook.tls import certs

    apps = {"no-op": "load:noop_app", "webhook": "webhook.server.wsgi:app"}
    if args.floor:
        apps["envelope"] = "envelope:app"
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-admission-bench-") as tmp:
        work = Path(tmp)
        certs.write(certs.generate("gpu-admission", "gpu-admission"), work / "tls")
        (work / "body.json").write_bytes(review_body())
        (work / "full.lua").write_text(lua(work / "body.json", None))
        # wrk waits `delay` after each response: with ~1 ms answers, 4 connections make about RATE req/s.
        paced_connections = 4
        (work / "paced.lua").write_text(lua(work / "body.json", paced_connections * 1000 / RATE - 1))
        procs, urls, pgids = [], {}, {}
        try:
            for name, app in apps.items():  # both up at once; the idle one costs nothing
                port = free_port()
                env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_ADMISSION_", "PROMETHEUS_"))}
                env.update(GPU_ADMISSION_BIND=f"127.0.0.1:{port}", GPU_ADMISSION_TLS_CERT=str(work / "tls/tls.crt"),
                           GPU_ADMISSION_TLS_KEY=str(work / "tls/tls.key"),
                           GPU_ADMISSION_POLICY=str(work / "none.yaml"),
                           GPU_ADMISSION_LOG_LEVEL="warning")
                if args.workers:
                    env["GPU_ADMISSION_WORKERS"] = str(args.workers)
                procs.append(start(app, env, work / "tls/ca.crt", port, work))
                pgids[name] = procs[-1].pid  # started in a new session: its pid is the group's id
                urls[name] = f"https://127.0.0.1:{port}/{args.endpoint}?timeout=10s"
                if name != "no-op":  # both run the package's code
                    answer = probe(urls[name], review_body(), work / "tls/ca.crt")
                    print(f"{name} answers: allowed={answer['allowed']}, "
                          f"patch={'patch' in answer}, warnings={len(answer.get('warnings', []))}")
                wrk(urls[name], work / "full.lua", connections=args.connections, duration=2)  # warm-up
            # Alternate the apps round by round, so that a noisy neighbour on the machine hits both alike.
            targets = list(urls) + (["webhook + hostile"] if args.hostile else [])
            for _ in range(args.rounds):
                for name in targets:
                    app = name.split(" + ")[0]
                    with hostile(name, urls[app], work / "tls/ca.crt"):
                        runs.setdefault(name, []).append(wrk(urls[app], work / "full.lua", connections=args.connections,
                                                             duration=args.duration, pgid=pgids[app]))
                        runs.setdefault(f"{name} @{RATE}/s", []).append(
                            wrk(urls[app], work / "paced.lua", connections=paced_connections, duration=args.duration))
        finally:
            for proc in procs:
                stop(proc)

    # The best run of each app is the one least disturbed by anything else on the machine (as timeit
    # takes the minimum); the medians are printed beside it.
    results = {name: {"rps": max(r["rps"] for r in rs), "median_rps": statistics.median(r["rps"] for r in rs),
                      "p50": statistics.median(r["p50"] for r in rs), "p99": statistics.median(r["p99"] for r in rs),
                      "cpu_us": min(r["cpu_us"] for r in rs),
                      "errors": "; ".join(r["errors"] for r in rs if r["errors"])} for name, rs in runs.items()}
    print(f"\nPOST /{args.endpoint}, TLS, keep-alive, {os.cpu_count()} CPUs; {args.rounds} alternating "
          f"{args.duration}s "
          f"wrk runs per app; full load: {args.connections} connections; paced: {paced_connections} connections")
    print(f"{'run':<20}{'best req/s':>11}{'median':>9}{'p50 ms':>9}{'p99 ms':>9}{'CPU/req':>10}  errors")
    for name, r in results.items():
        paced_run = name.endswith("/s")
        cpu = "-" if paced_run else f"{r['cpu_us']:.0f} us"
        print(f"{name:<20}{r['rps']:>11.0f}{r['median_rps']:>9.0f}{r['p50']:>9.2f}{r['p99']:>9.2f}{cpu:>10}  "
              f"{r['errors'] or '-'}")
    # A worker keeps the connections it accepted: a run whose connections all went to one worker has one
    # CPU's worth of Python, whichever the app. The spread shows it.
    for name in apps:
        print(f"{name} runs (req/s, connections per worker): "
              + ", ".join(f"{r['rps']:.0f} ({r['spread']})" for r in runs[name]))
    ratio = results["webhook"]["rps"] / results["no-op"]["rps"]
    median_ratio = results["webhook"]["median_rps"] / results["no-op"]["median_rps"]
    cpu_ratio = results["no-op"]["cpu_us"] / results["webhook"]["cpu_us"]
    paced = results[f"webhook @{RATE}/s"]
    ok_ratio, ok_p99 = ratio >= 0.75, paced["p99"] < 10
    print(f"\nthroughput webhook / no-op: {ratio:.1%} best runs, {median_ratio:.1%} medians "
          f"(target >= 75%: {'met' if ok_ratio else 'MISSED'}); "
          f"server CPU per request no-op / webhook: {cpu_ratio:.1%}")
    if args.floor:
        ceiling = results["envelope"]["rps"] / results["no-op"]["rps"]
        median_ceiling = results["envelope"]["median_rps"] / results["no-op"]["median_rps"]
        print(f"envelope / no-op: {ceiling:.1%} best runs, {median_ceiling:.1%} medians (the review parsed and "
              "answered, no policy: the webhook's ceiling here)")
    print(f"webhook p99 at {paced['median_rps']:.0f} req/s: {paced['p99']:.2f} ms (median of runs; target < 10 ms: "
          f"{'met' if ok_p99 else 'MISSED'})")
    if args.hostile:
        held, plain = results["webhook + hostile"], results["webhook"]
        print(f"with 1,000 idle and 100 slowloris connections held: {held['rps'] / plain['rps']:.1%} of the throughput "
              f"(best runs), p99 {held['p99']:.2f} ms against {plain['p99']:.2f} ms; at {RATE}/s p99 "
              f"{results[f'webhook + hostile @{RATE}/s']['p99']:.2f} ms against {paced['p99']:.2f} ms")
    return 0 if ok_ratio and ok_p99 else 1


if __name__ == "__main__":
    sys.exit(main())
