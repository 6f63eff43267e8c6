"""A real control plane on loopback, as controller-runtime's envtest runs one: etcd, kube-apiserver and
kube-controller-manager built from the pinned Go modules (tests/e2e/build.py). No kubelet and, unless asked for
(`Cluster(scheduler=True)`, or `start_scheduler()` beside the running control plane), no scheduler: Pods stay
Pending, which is all an admission webhook needs. A real node joins it where a test needs pods to run
(tests/e2e/node.py).

    python tests/e2e/cluster.py up DIR     # prints one line when the API is ready; Ctrl-C stops everything

DIR gets kubeconfig (cluster-admin), bin/kubectl, audit.log (the apiserver's audit log, admission annotations
included), logs/ (each process's output) and the certificates. The pytest fixtures (tests/e2e/conftest.py) start
the same `Cluster`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

if __package__ in (None, ""):  # run as a script: the repository root on the path, as pytest has it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.e2e import build

SERVICE_CIDR = "10.0.0.0/24"  # allocates Service IPs only: nothing here routes to them
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
READY_TIMEOUT = 120.0
DRA_BETAS = ("v1beta1", "v1beta2")
MUTATING_POLICY_GA = (1, 36)

# Only what the tests read: writes to the objects the webhook sees, with their admission annotations
# (level Metadata carries them), and nothing for reads, leases or events, so the log stays small.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: None
    resources:
      - group: coordination.k8s.io
      - group: ""
        resources: [events]
  - level: Metadata
    resources:
      - group: ""
        resources: [pods, pods/ephemeralcontainers, replicationcontrollers, podtemplates]
      - group: apps
      - group: batch
      - group: resource.k8s.io
      - group: admissionregistration.k8s.io
        resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations]
  - level: None
"""

# The controllers whose work reaches admission as in a real cluster: workloads create their Pods; the
# serviceaccount controller makes each namespace's "default" ServiceAccount (the ServiceAccount admission
# plugin refuses Pods without it); namespaces are deleted for real; the garbage collector removes what an
# owner's deletion leaves; the ValidatingAdmissionPolicy status controller writes the type checking of the
# in-tree policies (`gpu-admission export`) into their status.
CONTROLLERS = (
    "job-controller", "cronjob-controller", "deployment-controller", "replicaset-controller",
    "statefulset-controller", "daemonset-controller", "garbage-collector-controller", "serviceaccount-controller",
    "serviceaccount-token-controller", "namespace-controller", "root-ca-certificate-publisher-controller",
    "validatingadmissionpolicy-status-controller",
    # a Service's endpoints, which the apiserver dials to reach a webhook by its Service (on a node's cluster,
    # tests/e2e/node.py), and the PodDisruptionBudgets' status, which eviction reads
    "endpoints-controller", "endpointslice-controller", "disruption-controller",
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ certificates

def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class _Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def new(cls, name: str) -> _Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(_now())
                .not_valid_after(_now() + dt.timedelta(days=30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        return cls(key, cert)

    def issue(self, common_name: str, *, organizations: tuple[str, ...] = (), server: bool = False,
              dns: tuple[str, ...] = (), ips: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        subject = x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(_now()).not_valid_after(_now() + dt.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return _pem_cert(builder.sign(self.key, hashes.SHA256())), _pem_key(key)


def _write(path: Path, data: bytes | str, mode: int = 0o644) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    path.chmod(mode)
    return path


def kubeconfig_text(server: str, ca: Path, *, cert: Path | None = None, key: Path | None = None,
                    token: str | None = None, user: str = "admin") -> str:
    """A kubeconfig for one user; written as JSON, which is YAML."""
    credentials: dict[str, str] = {}
    if cert is not None and key is not None:
        credentials = {"client-certificate": str(cert), "client-key": str(key)}
    if token is not None:
        credentials = {"token": token}
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        "current-context": "e2e",
    }
    return json.dumps(config, indent=2) + "\n"


# ------------------------------------------------------------------------------------------------ cluster

@dataclass
class Cluster:
    """The control plane in `root`. `start()` returns once the API answers and the controllers run;
    `stop()` ends every process it started (by its own pid) and waits for them."""

    root: Path
    chain: build.Toolchain = field(default_factory=build.toolchain)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    apiserver_port: int = 0
    etcd_port: int = 0
    # Before 1.36: "on" serves MutatingAdmissionPolicy's beta API and turns its gate on (the in-tree
    # mutations run); "api-only" serves the API with the gate off (the apiserver stores policies and runs
    # none); "off" neither, as a 1.34/1.35 cluster is by default (tests/e2e/test_intree_served.py).
    mutating_policy: str = "on"
    # kube-scheduler beside the controllers: Pods are bound to nodes (a real one, tests/e2e/node.py, or Node
    # objects created through the API).
    scheduler: bool = False
    # Where the apiserver listens and what it advertises: loopback, unless pods must reach it (a real node's
    # bridge address, tests/e2e/node.py), and then the Service CIDR is one that is never routed off the machine.
    address: str = "127.0.0.1"
    service_cidr: str = SERVICE_CIDR

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def kubectl(self) -> Path:
        return self.root / "bin" / "kubectl"

    @property
    def audit_log(self) -> Path:
        return self.root / "audit.log"

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def ca(self) -> Path:
        return self.root / "pki" / "ca.crt"

    @property
    def kubernetes_service_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the first address of the Service CIDR."""
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.chain.version.removeprefix("v").split(".")[:2]
        return int(major), int(minor)

    def runtime_config(self) -> str:
        """The DRA API: resource.k8s.io/v1 is on by default; its betas (1.34 to 1.37 still serve both) are turned
        on, so that objects written for them are admitted as on clusters that enable them. Before 1.36,
        MutatingAdmissionPolicy's beta API too (the in-tree mutations, tests/e2e/test_intree_mutation.py)."""
        apis = [f"resource.k8s.io/{v}=true" for v in DRA_BETAS]
        if self.minor < MUTATING_POLICY_GA and self.mutating_policy != "off":
            apis.append("admissionregistration.k8s.io/v1beta1=true")
        return ",".join(apis)

    def feature_gates(self) -> list[str]:
        """MutatingAdmissionPolicy is beta and off by default before 1.36 (on, and locked, from 1.36)."""
        on = self.minor < MUTATING_POLICY_GA and self.mutating_policy == "on"
        return ["--feature-gates=MutatingAdmissionPolicy=true"] if on else []

    # -------------------------------------------------------------------------------------------- start

    def start(self) -> Cluster:
        build.ensure(self.chain)
        self.root.mkdir(parents=True, exist_ok=True)
        for sub in ("bin", "logs", "pki"):
            (self.root / sub).mkdir(exist_ok=True)
        shutil.copy2(self.chain.binary("kubectl"), self.kubectl)
        self._certificates()
        try:
            self._start_etcd()
            self._start_apiserver()
            self._wait_ready()
            self._start_controller_manager()
            self._wait_controllers()
            if self.scheduler:
                self.start_scheduler()
        except BaseException:
            self.stop()
            raise
        return self

    def _certificates(self) -> None:
        pki = self.root / "pki"
        authority = _Authority.new("e2e-cluster-ca")
        _write(pki / "ca.crt", _pem_cert(authority.cert))
        _write(pki / "ca.key", _pem_key(authority.key), 0o600)
        cert, key = authority.issue("kube-apiserver", server=True,
                                    dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                         "kubernetes.default.svc.cluster.local"),
                                    ips=tuple(dict.fromkeys(("127.0.0.1", self.address, self.kubernetes_service_ip))))
        _write(pki / "apiserver.crt", cert)
        _write(pki / "apiserver.key", key, 0o600)
        for name, common, groups in (("admin", "e2e-admin", ("system:masters",)),
                                     ("controller-manager", "system:kube-controller-manager", ()),
                                     ("scheduler", "system:kube-scheduler", ()),
                                     ("kubelet-client", "kube-apiserver-kubelet-client", ())):
            cert, key = authority.issue(common, organizations=groups)
            _write(pki / f"{name}.crt", cert)
            _write(pki / f"{name}.key", key, 0o600)
        sa_key = ec.generate_private_key(ec.SECP256R1())
        _write(pki / "sa.key", _pem_key(sa_key), 0o600)
        _write(pki / "sa.pub", sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                                serialization.PublicFormat.SubjectPublicKeyInfo))
        _write(self.root / "audit-policy.yaml", AUDIT_POLICY)

    def issue(self, name: str, common_name: str, organizations: tuple[str, ...] = (), *, server: bool = False,
              ips: tuple[str, ...] = ()) -> tuple[Path, Path]:
        """A certificate of the cluster's CA (pki/NAME.crt and .key): a node's client or serving identity."""
        pki = self.root / "pki"
        key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        authority = _Authority(key, x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes()))
        cert, private = authority.issue(common_name, organizations=organizations, server=server, ips=ips)
        return _write(pki / f"{name}.crt", cert), _write(pki / f"{name}.key", private, 0o600)

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.root / "logs" / f"{name}.log", "ab")
        try:
            # Its own session: a Ctrl-C in the terminal reaches `up`, which stops the processes in order.
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            log.close()
        self.processes[name] = proc
        return proc

    def _start_etcd(self) -> None:
        self.etcd_port, peer = free_port(), free_port()
        data = self.root / "etcd"
        shutil.rmtree(data, ignore_errors=True)
        self._spawn("etcd", [
            str(self.chain.binary("etcd")), "--name=e2e", f"--data-dir={data}",
            f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=e2e=http://127.0.0.1:{peer}",
            # a test cluster's data is thrown away: no fsync keeps etcd off the shared disk's critical path
            "--unsafe-no-fsync", "--quota-backend-bytes=1073741824", "--log-level=warn",
            # progress notifications let the apiserver's watch caches (and so the BOOKMARKs they send) follow
            # the revision while their own kind is quiet; 10 min by default, seconds in a test
            "--watch-progress-notify-interval=5s",
        ])
        _wait(lambda: _http_ok(f"{self.etcd_url}/health"), "etcd", self.processes["etcd"], self.root)

    def _start_apiserver(self) -> None:
        self.apiserver_port = self.apiserver_port or free_port()
        pki = self.root / "pki"
        self._spawn("kube-apiserver", [
            str(self.chain.binary("kube-apiserver")),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={self.address}", f"--advertise-address={self.address}",
            f"--secure-port={self.apiserver_port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}", f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={self.service_cidr}",
            # on loopback the "kubernetes" Service's endpoint would be 127.0.0.1, which Endpoints refuse: no
            # reconciler; on a node's bridge, the endpoint pods reach it at (through kube-proxy)
            f"--endpoint-reconciler-type={'none' if self.address == '127.0.0.1' else 'lease'}",
            # as kubeadm's clusters: a kubelet may touch only its own Node and the objects of its pods
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            # The apiserver dials a node's kubelet (logs, exec) at its InternalIP, never by a DNS name that
            # would leave the machine, with a client certificate the kubelet trusts; and a webhook behind a
            # Service at its endpoints' pod IPs: no kube-proxy turns the ClusterIP into them here.
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'kubelet-client.key'}",
            "--enable-aggregator-routing=true",
            # The default admission plugins (PodSecurity, ServiceAccount, Priority, DefaultTolerationSeconds,
            # the admission webhooks and policies, ...) are on without naming them; none is turned off.
            f"--audit-policy-file={self.root / 'audit-policy.yaml'}", f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json", "--audit-log-maxbackup=1",
            f"--runtime-config={self.runtime_config()}", *self.feature_gates(),
            "--allow-privileged=true",
            "--profiling=false", "--v=1",
        ])
        _write(self.root / "cluster.json", json.dumps({"server": self.server, "etcd": self.etcd_url,
                                                       "version": self.chain.version}) + "\n")
        _write(self.kubeconfig, kubeconfig_text(self.server, pki / "ca.crt", cert=pki / "admin.crt",
                                                key=pki / "admin.key"), 0o600)
        for name, user in (("controller-manager", "system:kube-controller-manager"),
                           ("scheduler", "system:kube-scheduler")):
            _write(self.root / f"{name}.kubeconfig",
                   kubeconfig_text(self.server, pki / "ca.crt", cert=pki / f"{name}.crt", key=pki / f"{name}.key",
                                   user=user), 0o600)

    def _wait_ready(self) -> None:
        _wait(lambda: self._get("/readyz") is not None, "kube-apiserver", self.processes["kube-apiserver"],
              self.root)

    def _start_controller_manager(self) -> None:
        pki = self.root / "pki"
        self._spawn("kube-controller-manager", [
            str(self.chain.binary("kube-controller-manager")),
            f"--kubeconfig={self.root / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={self.root / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={self.root / 'controller-manager.kubeconfig'}",
            "--leader-elect=false", "--secure-port=0", f"--controllers={','.join(CONTROLLERS)}",
            # each controller acts as its own ServiceAccount with its bootstrap role, as in kubeadm's
            # clusters: the webhook sees e.g. system:serviceaccount:kube-system:job-controller create Pods
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
            # Pods and their owners churn quickly in tests: the garbage collector and workload syncs run often.
            "--concurrent-gc-syncs=5", "--v=1",
        ])

    def _wait_controllers(self) -> None:
        _wait(lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default") is not None,
              "kube-controller-manager (the default ServiceAccount)", self.processes["kube-controller-manager"],
              self.root)

    def start_scheduler(self) -> None:
        """kube-scheduler, at start (`scheduler=True`) or later beside the running control plane (the modules
        that need Pods bound start it; the others keep Pods Pending and pay nothing for it). It binds Pods to
        a real node or to API-only Nodes, and allocates ResourceClaims against ResourceSlices published through
        the API, as with a real kubelet and DRA driver; as system:kube-scheduler, which the bootstrap RBAC
        grants what the scheduler needs."""
        binary = self.chain.binary("kube-scheduler")
        if not binary.is_file():
            raise RuntimeError(f"no kube-scheduler in {self.chain.bin_dir}: build it with the e2e binaries")
        kubeconfig = self.root / "scheduler.kubeconfig"
        proc = self._spawn("kube-scheduler", [
            str(binary), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--v=1",
        ])
        time.sleep(0.5)
        if proc.poll() is not None:
            raise RuntimeError(f"kube-scheduler exited with {proc.returncode}; see {self.root / 'logs'}")

    def stop_scheduler(self) -> None:
        self._stop_one("kube-scheduler")

    def _get(self, path: str) -> bytes | None:
        pki = self.root / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        try:
            with urllib.request.urlopen(f"{self.server}{path}", context=context, timeout=5) as answer:
                return answer.read()
        except (urllib.error.URLError, OSError):
            return None

    def restart_apiserver(self, between=None) -> None:
        """Stop kube-apiserver, run `between()` (etcd alone is up), start it again on the same port: its
        watch cache starts afresh from etcd, as after an apiserver upgrade or crash."""
        self._stop_one("kube-apiserver")
        if between is not None:
            between()
        self._start_apiserver()
        self._wait_ready()

    def etcd(self, call: str, body: dict) -> dict:
        """One call of etcd's JSON gateway (/v3/kv/range, /v3/kv/put, /v3/kv/compaction...)."""
        request = urllib.request.Request(f"{self.etcd_url}/v3/{call}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    # --------------------------------------------------------------------------------------------- stop

    def stop(self) -> None:
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            self._stop_one(name)

    def stop_controllers(self) -> None:
        """The scheduler and controllers only (the API stays): nothing recreates or binds pods any more, so that
        a node can be drained for good."""
        for name in ("kube-scheduler", "kube-controller-manager"):
            self._stop_one(name)

    def _stop_one(self, name: str) -> None:
        terminate(self.processes.pop(name, None))

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def terminate(proc: subprocess.Popen | None, timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after `timeout` seconds; waits for the process either way."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait(ready, what: str, proc: subprocess.Popen, root: Path, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see {root / 'logs'}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready within {timeout:.0f} s; see {root / 'logs'}")


def up(root: Path) -> int:
    cluster = Cluster(root.resolve())
    def interrupted(signum, frame):
        raise KeyboardInterrupt

    # SIGINT too: a shell starts background jobs with it ignored, which Python would keep
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        cluster.start()
        print(f"cluster ready: {cluster.server} (Kubernetes {cluster.chain.version}); "
              f"export KUBECONFIG={cluster.kubeconfig} PATH={cluster.kubectl.parent}:$PATH; Ctrl-C stops it",
              flush=True)
        while all(p.poll() is None for p in cluster.processes.values()):
            time.sleep(0.5)
        dead = [n for n, p in cluster.processes.items() if p.poll() is not None]
        print(f"cluster: {', '.join(dead)} exited; see {root / 'logs'}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        # a second Ctrl-C (or the terminal's SIGHUP/SIGTERM) must not leave half the processes running
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        cluster.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "up":
        print("usage: cluster.py up DIR", file=sys.stderr)
        return 2
    return up(Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
