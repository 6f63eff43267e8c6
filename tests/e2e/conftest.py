"""Fixtures of the e2e suite: one real control plane for the session (tests/e2e/cluster.py), the chart
installed in it with real Helm (helm-python-sdk), and `gpu-admission serve` on loopback as the webhook the
chart's configurations point at through `webhooks.url`.

`make e2e` runs this suite; the default `pytest` run deselects it (it needs the binaries; `-m e2e` selects
it). E2E_CLUSTER_DIR=DIR reuses a cluster that `python tests/e2e/cluster.py up DIR` keeps running.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.e2e import cluster as clusterlib

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "gpu-admission"
RELEASE = "gpu-admission"
NAMESPACE = "gpu-admission"
CLI = [sys.executable, "-m", "webhook.cli.main"]


# ------------------------------------------------------------------------------------------------ kubectl

@dataclass
class Kubectl:
    binary: Path
    kubeconfig: Path

    def run(self, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run([str(self.binary), *args], input=input, capture_output=True, text=True,
                                timeout=timeout, env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def json(self, *args: str) -> dict:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def apply(self, manifest: dict | str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest)
        return self.run("apply", "-f", "-", *args, input=text, check=check)

    def apply_file(self, path: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess:
        """`kubectl apply -f NAME` from the file's folder, so that messages name the file as a user's would."""
        result = subprocess.run([str(self.binary), "apply", "-f", path.name, *args], cwd=path.parent,
                                capture_output=True, text=True, timeout=60,
                                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl apply -f {path} failed ({result.returncode}):\n{result.stderr}")
        return result

    def create(self, manifest: dict | str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest)
        return self.run("create", "-f", "-", *args, input=text, check=check)


def wait_for(condition, what: str, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


@dataclass
class RunningCluster:
    root: Path
    kubeconfig: Path
    kubectl: Kubectl
    server: str
    etcd_url: str
    audit_log: Path
    version: str
    control: clusterlib.Cluster  # its processes: start_scheduler() / stop_scheduler() where a module needs one

    def namespace(self, name: str | None = None, labels: dict[str, str] | None = None) -> str:
        """A new namespace, once its "default" ServiceAccount exists (Pods need it)."""
        name = name or f"e2e-{uuid.uuid4().hex[:8]}"
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        self.kubectl.apply(ns)
        wait_for(lambda: self.kubectl.run("get", "serviceaccount", "default", "-n", name,
                                          check=False).returncode == 0, f"namespace {name}'s ServiceAccount")
        return name


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> RunningCluster:
    reuse = os.environ.get("E2E_CLUSTER_DIR")
    if reuse:
        root = Path(reuse).resolve()
        info = json.loads((root / "cluster.json").read_text())
        yield RunningCluster(root, root / "kubeconfig", Kubectl(root / "bin" / "kubectl", root / "kubeconfig"),
                             info["server"], info["etcd"], root / "audit.log", info["version"],
                             clusterlib.Cluster(root))  # another process's cluster: a scheduler of its own only
        return
    root = tmp_path_factory.mktemp("cluster")
    with clusterlib.Cluster(root) as running:
        yield RunningCluster(root, running.kubeconfig, Kubectl(running.kubectl, running.kubeconfig),
                             running.server, running.etcd_url, running.audit_log, running.chain.version, running)


@pytest.fixture(scope="session")
def kubectl(cluster) -> Kubectl:
    return cluster.kubectl


# ------------------------------------------------------------------------------------------------ webhook

@dataclass
class Webhook:
    """`gpu-admission serve` on loopback, started and stopped by the tests (it is the process the chart's
    webhook configurations call through `webhooks.url`)."""

    port: int
    certs: Path
    policy: Path
    workdir: Path
    kubeconfig: Path | None = None
    proc: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.workdir / f"serve-{self.port}.log"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> Webhook:
        if self.proc is not None and self.proc.poll() is None:
            return self
        env = dict(os.environ)
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*CLI, "serve", "--bind", f"127.0.0.1:{self.port}", "--cert", str(self.certs / "tls.crt"),
                 "--key", str(self.certs / "tls.key"), "--policy", str(self.policy), "--workers", "1"],
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for(lambda: self._ready() or self._exited(), f"the webhook on {self.url}", timeout=60)
        if self.proc.poll() is not None:
            raise AssertionError(f"gpu-admission serve exited {self.proc.returncode}:\n{self.log.read_text()}")
        return self

    def _exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def _get(self, path: str) -> bytes | None:
        context = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        try:
            with urllib.request.urlopen(f"{self.url}{path}", context=context, timeout=5) as answer:
                return answer.read()
        except OSError:
            return None

    def _ready(self) -> bool:
        return self._get("/readyz") is not None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def metric(self, name: str, *labels: str) -> float:
        """The sum of a counter's samples whose labels include every `key="value"` given."""
        text = (self._get("/metrics") or b"").decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") and all(label in line for label in labels):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def reloads(self) -> float:
        return self.metric("gpu_admission_policy_reloads_total", 'result="success"')

    def requests(self, endpoint: str | None = None) -> float:
        """gpu_admission_requests_total summed (over one endpoint: "validate" or "mutate")."""
        return self.metric("gpu_admission_requests_total", *([f'endpoint="{endpoint}"'] if endpoint else []))


def webhook_certs(directory: Path) -> Path:
    """Certificates from `gpu-admission certs`: the serving one names 127.0.0.1, the address in the URL."""
    subprocess.run([*CLI, "certs", "--out", str(directory)], check=True, cwd=REPO,
                   env=dict(os.environ), capture_output=True)
    return directory


def ca_bundle(certs: Path) -> str:
    return base64.b64encode((certs / "ca.crt").read_bytes()).decode()


def policy_from_configmap(kubectl: Kubectl, namespace: str = NAMESPACE, release: str = RELEASE) -> str:
    """The policy the chart created, read back from the cluster."""
    configmap = kubectl.json("get", "configmap", "-n", namespace, "-l",
                             f"app.kubernetes.io/instance={release}")
    for item in configmap["items"]:
        if "policy.yaml" in item.get("data", {}):
            return item["data"]["policy.yaml"]
    raise AssertionError(f"no ConfigMap with policy.yaml in {namespace}")


@dataclass
class Release:
    """The chart installed with real Helm, and the webhook serving the policy of its ConfigMap."""

    helm: object
    kubectl: Kubectl
    webhook: Webhook
    base_values: dict

    def values(self, extra: dict | None = None) -> dict:
        return _merge(self.base_values, extra or {})

    def upgrade(self, extra: dict | None = None):
        release = self.helm.upgrade(CHART, RELEASE, self.values(extra), namespace=NAMESPACE)
        self.sync_policy()
        return release

    def sync_policy(self) -> None:
        """Write the ConfigMap's policy where the webhook reads it (the webhook reloads a changed file, as a
        mounted ConfigMap changes in a pod)."""
        text = policy_from_configmap(self.kubectl)
        if self.webhook.policy.exists() and self.webhook.policy.read_text() == text:
            return
        running = self.webhook.proc is not None and self.webhook.proc.poll() is None
        before = self.webhook.reloads() if running else 0
        tmp = self.webhook.policy.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.webhook.policy)
        if running:
            wait_for(lambda: self.webhook.reloads() > before, "the webhook to reload the policy")


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.fixture(scope="session")
def helm(cluster):
    import helm_python

    config = helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=NAMESPACE)
    yield config
    config.close()


@pytest.fixture(scope="session")
def release(cluster, helm, tmp_path_factory) -> Release:
    """The chart installed once for the session, pointing at the webhook on the host; the webhook serves the
    policy read back from the chart's ConfigMap. Tests that change values restore them."""
    work = tmp_path_factory.mktemp("webhook")
    certs = webhook_certs(work / "certs")
    port = clusterlib.free_port()
    webhook = Webhook(port, certs, work / "policy.yaml", work)
    base = {"webhooks": {"url": webhook.url}, "certificates": {"caBundle": ca_bundle(certs)}}
    # The runtime class the device-plugin cohort's pods get, as the GPU operator installs it: the RuntimeClass
    # admission plugin refuses pods whose class does not exist.
    cluster.kubectl.apply({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                           "handler": "nvidia"})
    helm.install(CHART, RELEASE, base, namespace=NAMESPACE, create_namespace=True)
    rel = Release(helm, cluster.kubectl, webhook, base)
    rel.sync_policy()
    webhook.start()
    yield rel
    webhook.stop()
    helm.uninstall(RELEASE, ignore_not_found=True)


@pytest.fixture
def webhook(release) -> Webhook:
    """The session's webhook, running (a test that stopped it gets it back)."""
    release.webhook.start()
    return release.webhook


@pytest.fixture
def namespace(cluster, release) -> str:
    name = cluster.namespace()
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


GOLDEN = REPO / "tests" / "golden" / "e2e"


@pytest.fixture
def golden(request):
    """`golden(text, name)` compares text with tests/golden/e2e/<name>.txt; `--update-golden` rewrites it."""
    update = bool(request.config.getoption("update_golden", default=False))

    def check(text: str, name: str) -> None:
        path = GOLDEN / f"{name}.txt"
        if update:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), (f"golden file {path.relative_to(REPO)} is missing: "
                               "run `make e2e E2E_ARGS=--update-golden`")
        assert text == path.read_text(encoding="utf-8"), f"kubectl's output differs from {path.relative_to(REPO)}"

    return check


LOOKUPS = {"resourceClaims": True, "deviceClasses": True}


@pytest.fixture(scope="module")
def lookups(release, cluster):
    """Claim and DeviceClass lookups on: the chart grants its ServiceAccount get/list/watch on them, and the
    webhook watches the cluster with a TokenRequest token of that ServiceAccount, so the real authorizer
    checks the chart's RBAC."""
    with lookups_on(release, cluster, LOOKUPS):
        yield release


@contextlib.contextmanager
def lookups_on(release, cluster, lookups: dict):
    """The chart upgraded with `lookups`, and the webhook restarted watching with the chart's ServiceAccount
    token; afterwards the values and the webhook as they were."""
    release.upgrade({"lookups": lookups})
    token = cluster.kubectl.run("create", "token", RELEASE, "-n", NAMESPACE, "--duration=2h").stdout.strip()
    kubeconfig = release.webhook.workdir / "webhook.kubeconfig"
    kubeconfig.write_text(clusterlib.kubeconfig_text(cluster.server, cluster.root / "pki" / "ca.crt",
                                                     token=token, user=f"system:serviceaccount:{NAMESPACE}:{RELEASE}"))
    release.webhook.stop()
    release.webhook.kubeconfig = kubeconfig
    release.webhook.start()
    yield release
    release.webhook.stop()
    release.webhook.kubeconfig = None
    release.upgrade()
    release.webhook.start()
