"""The product as users run it: the image built from the Dockerfile (`make image`), installed by the chart with
real Helm, on a real node (tests/e2e/node.py: kubelet, containerd, runc) of its own control plane with
kube-scheduler. No `webhooks.url`: the apiserver reaches the webhook's pods through the chart's Service, with the
chart's generated certificates, as in any cluster.

In order: the pods get Ready through their probes; denials and patches reach kubectl as the golden files show;
mutated GPU pods are scheduled onto the node and their containers run with the injected defaults, while a denied
pod never reaches it; `helm upgrade`, the loss of a webhook pod and evictions happen under a stream of GPU pod
creates with `failurePolicy: Fail`; the audit CronJob's Job runs on the node; `helm uninstall` removes the webhook
configurations before the pods that serve them.

As a team installs a release: the image and the chart are pushed to a real OCI registry on loopback
(tests/e2e/registry.py: Debian's docker-registry), signed with cosign and verified before the install; the chart is
installed from `oci://127.0.0.1:PORT/charts/gpu-admission` by version, and the node's containerd pulls the image by
the digest the chart's `image.digest` names (nothing of the product is imported into containerd). A re-pushed image
with one byte of a layer changed fails verification; a digest the registry lacks leaves the pod in the kubelet's
ErrImagePull/ImagePullBackOff with its message.
"""
from __future__ import annotations

import json
import ssl
import subprocess
import tarfile
import threading
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import pytest
import yaml

from tests.e2e import node as nodelib
from tests.e2e import registry as registrylib
from tests.e2e.cluster import Cluster
from tests.e2e.conftest import CLI, REPO, Kubectl, wait_for
from tests.e2e.test_audit import CRDS
from tests.e2e.test_kubectl import assert_contains, gpu_pod, write
from tools import gotools
from tools.package_chart import package as package_chart

pytestmark = pytest.mark.e2e

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
ARCHIVE = REPO / "dist" / f"gpu-admission-{VERSION}.oci.tar"
# the registry's repositories: the image, and the chart under charts/ (Helm names it by the chart's name)
REPOSITORY = "gpu-admission"
CHARTS = "charts"
RELEASE = NAMESPACE = "gpu-admission"
GOLDEN = REPO / "tests" / "golden" / "e2e"
VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


@dataclass
class Deployed:
    cluster: Cluster
    node: nodelib.Node
    kubectl: Kubectl
    helm: object
    ready_seconds: float
    registry: registrylib.Registry
    cosign: registrylib.Cosign
    digest: str  # the image's, as pushed and signed
    chart_digest: str

    @property
    def image(self) -> str:
        return f"{self.registry.host}/{REPOSITORY}@{self.digest}"

    @property
    def chart(self) -> str:
        return f"oci://{self.registry.host}/{CHARTS}/gpu-admission"

    def values(self, **image) -> dict:
        return {"image": {"repository": f"{self.registry.host}/{REPOSITORY}", "digest": self.digest, **image},
                "audit": {"enabled": True, "reports": "policyreport"}}

    def upgrade(self, values: dict, **options):
        return self.helm.upgrade(self.chart, RELEASE, values, namespace=NAMESPACE, chart_version=VERSION,
                                 plain_http=True, **options)

    def pods(self) -> list[dict]:
        return self.kubectl.json("get", "pods", "-n", NAMESPACE, "-l",
                                 "app.kubernetes.io/component=webhook")["items"]

    def available(self) -> bool:
        deployment = self.kubectl.json("get", "deployment", RELEASE, "-n", NAMESPACE)
        status = deployment["status"]
        return (status.get("availableReplicas") == deployment["spec"]["replicas"] == status.get("updatedReplicas")
                == status.get("readyReplicas") and status.get("replicas") == deployment["spec"]["replicas"]
                and status.get("observedGeneration") == deployment["metadata"]["generation"])


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    if not ARCHIVE.is_file():
        pytest.fail(f"{ARCHIVE.relative_to(REPO)} is missing: run `make image` (`make e2e` does)", pytrace=False)
    import helm_python

    root = tmp_path_factory.mktemp("deployed")
    registry = registrylib.Registry(root / "registry")
    try:
        nodelib.preflight()
        cosign = registrylib.Cosign(gotools.binary("cosign"), root / "cosign").generate()
        registry.start()
        nodelib.bridge_up()
    except (nodelib.NodeUnavailable, registrylib.RegistryUnavailable, gotools.ToolUnavailable) as exc:
        registry.stop()
        pytest.fail(str(exc), pytrace=False)
    cluster = Cluster(root / "cluster", scheduler=True, address=nodelib.NODE_IP, service_cidr=nodelib.SERVICE_CIDR)
    # the node pulls the product from the registry: nothing of it is imported
    node = nodelib.Node(cluster, root / "node", plain_http_registries=[registry.host])
    helm = None
    try:
        # The release as published: the image and the chart pushed, signed by digest, verified before the install.
        digest = registry.push_archive(ARCHIVE, REPOSITORY, VERSION)
        helm_python.push(package_chart(root / "chart"), f"oci://{registry.host}/{CHARTS}", plain_http=True)
        chart_digest = registry.digest(f"{CHARTS}/gpu-admission", VERSION)
        assert chart_digest, "the chart is not in the registry after helm push"
        signed = (f"{registry.host}/{REPOSITORY}@{digest}", f"{registry.host}/{CHARTS}/gpu-admission@{chart_digest}")
        for reference in signed:
            cosign.sign(reference)
            verified = cosign.verify(reference)
            assert verified.returncode == 0, f"cosign verify {reference}:\n{verified.stderr}"
        cluster.start()
        node.start()
        kubectl = Kubectl(cluster.kubectl, cluster.kubeconfig)
        for crd in CRDS:  # what the audit CronJob writes
            kubectl.run("apply", "-f", str(crd))
        helm = helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=NAMESPACE)
        deployed = Deployed(cluster, node, kubectl, helm, 0.0, registry, cosign, digest, chart_digest)
        started = time.monotonic()
        helm.install(deployed.chart, RELEASE, deployed.values(), namespace=NAMESPACE, create_namespace=True,
                     chart_version=VERSION, plain_http=True)
        wait_for(deployed.available, "the webhook Deployment available", timeout=180, interval=0.5)
        deployed.ready_seconds = time.monotonic() - started
        yield deployed
    finally:
        # Each step whatever the one before did: a release that cannot be uninstalled must not leave the node
        # and its containers running.
        try:
            if helm is not None:
                helm.close()
        finally:
            try:
                cluster.stop_controllers()
                node.stop()
            finally:
                cluster.stop()
                nodelib.bridge_down()
                registry.stop()


def namespace(deployed: Deployed, name: str) -> str:
    deployed.kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(lambda: deployed.kubectl.run("get", "serviceaccount", "default", "-n", name,
                                          check=False).returncode == 0, f"namespace {name}'s ServiceAccount")
    return name


def probe_pod(namespace: str, name: str, *, gpus: int = 1, sidecar: bool = True, **container) -> dict:
    """A device-plugin GPU pod of the probe image (tests/e2e/images.py) with nothing of security set: what
    the webhook injects is all it runs with. The sidecar asks for no GPU."""
    containers = [{"name": "gpu", "image": "localhost/e2e/probe:1", "imagePullPolicy": "IfNotPresent",
                   "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}, **container}]
    if sidecar:
        containers.append({"name": "sidecar", "image": "localhost/e2e/probe:1", "imagePullPolicy": "IfNotPresent"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"restartPolicy": "Never", "containers": containers}}


# ---------------------------------------------------------------------------------------------- a stream

@dataclass
class Stream:
    """GPU pod creates, one every `interval`, server-side dry runs (the whole admission chain, mutating and
    validating webhooks included, with nothing stored), from a thread: each answer is counted, and every one that
    is not a created pod is kept with its message."""

    cluster: Cluster
    namespace: str
    patched: bool = True  # every created pod carries the webhook's patch (not once its configurations are gone)
    interval: float = 0.1
    sent: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Stream:
        pki = self.cluster.root / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        url = f"{self.cluster.server}/api/v1/namespaces/{self.namespace}/pods?dryRun=All"
        body = json.dumps(probe_pod(self.namespace, "stream")).encode()

        def run() -> None:
            while not self._stop.is_set():
                started = time.monotonic()
                request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
                self.sent += 1
                try:
                    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
                        patched = json.loads(answer.read())["spec"].get("runtimeClassName") == "nvidia"
                        if answer.status != 201 or (self.patched and not patched):
                            self.failures.append(f"{answer.status}: not patched")
                except urllib.error.HTTPError as exc:
                    self.failures.append(f"{exc.code}: {json.loads(exc.read()).get('message', '')}")
                except OSError as exc:
                    self.failures.append(f"no answer: {exc}")
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=60)


def _webhook_configurations(kubectl: Kubectl) -> list[str]:
    out = []
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        out += [f"{kind}/{i['metadata']['name']}" for i in kubectl.json("get", kind)["items"]]
    return out


# ------------------------------------------------------------------------------------------------ tests

def test_the_webhook_pods_become_ready_through_their_probes(deployed):
    pods = deployed.pods()
    assert len(pods) == 2
    for pod in pods:
        (container,) = pod["spec"]["containers"]
        assert container["image"] == deployed.image
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["port"] == "health"
        (status,) = pod["status"]["containerStatuses"]
        assert status["ready"] is True and status["restartCount"] == 0, status
        assert pod["spec"]["nodeName"] == nodelib.NAME
    assert deployed.ready_seconds < 180


def test_the_image_is_pulled_from_the_registry_by_the_digest_that_was_signed(deployed):
    """The digest of `make image`'s archive, pushed unchanged, is what the chart names, what cosign verified and
    what containerd pulled (the registry's log has its GET); the chart came from the registry by version."""
    with tarfile.open(ARCHIVE) as tar:
        (built,) = json.loads(tar.extractfile("index.json").read())["manifests"]
    assert deployed.digest == built["digest"]
    for pod in deployed.pods():
        (status,) = pod["status"]["containerStatuses"]
        assert status["imageID"] == deployed.image, status
    assert deployed.registry.pulls(REPOSITORY, deployed.digest) >= 1
    listed = deployed.node._ctr("images", "list", "--quiet").stdout.split()
    assert deployed.image in listed
    assert not [name for name in listed if "gpu-admission" in name and deployed.registry.host not in name]
    release = deployed.helm.status(RELEASE)
    assert release["chart_version"] == VERSION  # installed from the registry by that version
    verified = json.loads(deployed.cosign.verify(deployed.image).stdout)
    assert [v["critical"]["image"]["docker-manifest-digest"] for v in verified] == [deployed.digest]
    chart = f"{deployed.registry.host}/{CHARTS}/gpu-admission@{deployed.chart_digest}"
    assert deployed.registry.digest(f"{CHARTS}/gpu-admission", VERSION) == deployed.chart_digest
    assert deployed.cosign.verify(chart).returncode == 0


def test_a_re_pushed_image_with_one_byte_of_a_layer_changed_fails_verification(deployed, tmp_path):
    """Under the same tag: its digest has no signature; the original's signature copied beside it does not
    match what it signs. The tag is restored afterwards."""
    host = deployed.registry.host
    layout, changed = registrylib.tampered_layout(ARCHIVE, tmp_path / "tampered")
    assert changed != deployed.digest
    try:
        assert deployed.registry.push_archive(layout, REPOSITORY, VERSION) == changed
        assert deployed.registry.digest(REPOSITORY, VERSION) == changed
        unsigned = deployed.cosign.verify(f"{host}/{REPOSITORY}:{VERSION}")
        assert unsigned.returncode != 0 and "no signatures found" in unsigned.stderr, unsigned.stderr
        # an attacker's next step: the genuine signature tagged for the altered digest
        signature = f"sha256-{deployed.digest.split(':')[1]}.sig"
        copied = subprocess.run(["skopeo", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
                                 f"docker://{host}/{REPOSITORY}:{signature}",
                                 f"docker://{host}/{REPOSITORY}:sha256-{changed.split(':')[1]}.sig"],
                                capture_output=True, text=True, timeout=120, check=False)
        assert copied.returncode == 0, copied.stderr
        forged = deployed.cosign.verify(f"{host}/{REPOSITORY}@{changed}")
        assert forged.returncode != 0, forged.stdout
        assert "no matching signatures" in forged.stderr, forged.stderr
    finally:
        assert deployed.registry.push_archive(ARCHIVE, REPOSITORY, VERSION) == deployed.digest
    assert deployed.cosign.verify(f"{host}/{REPOSITORY}:{VERSION}").returncode == 0


def test_the_apiserver_reaches_the_webhook_through_its_service(deployed, tmp_path):
    """No URL: the configurations name the Service, whose CA is the chart's generated one; the denial reaches
    kubectl word for word as the golden file (written against the out-of-cluster webhook) shows."""
    hooks = deployed.kubectl.json("get", "validatingwebhookconfiguration", RELEASE)["webhooks"]
    assert {h["clientConfig"]["service"]["name"] for h in hooks} == {RELEASE}
    assert all("url" not in h["clientConfig"] for h in hooks)
    name = namespace(deployed, "ml-golden")
    pod = gpu_pod(name, env=VISIBLE_ALL)
    result = subprocess.run([str(deployed.cluster.kubectl), "apply", "-f", "pod.yaml"],
                            cwd=write(tmp_path, "pod.yaml", pod).parent, capture_output=True, text=True,
                            timeout=60, env={"KUBECONFIG": str(deployed.cluster.kubeconfig)})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (GOLDEN / "denial-visible-devices.txt").read_text(encoding="utf-8")


def test_a_stored_gpu_pod_carries_the_patch_mutate_prints(deployed, tmp_path):
    name = namespace(deployed, "ml-patch")
    path = write(tmp_path, "pod.yaml", probe_pod(name, "patched"))
    mutated = yaml.safe_load(subprocess.run([*CLI, "mutate", str(path)], check=True, cwd=REPO,
                                            capture_output=True, text=True).stdout)
    deployed.kubectl.run("apply", "-f", str(path))
    stored = deployed.kubectl.json("get", "pod", "patched", "-n", name)
    assert stored["spec"]["runtimeClassName"] == "nvidia"
    assert_contains(stored["spec"], mutated["spec"], "spec")


def _logs(deployed: Deployed, namespace: str, pod: str, container: str) -> dict[str, list[str]]:
    """The probe's output, by fact: uid, env, root filesystem, CapEff, Seccomp, NoNewPrivs."""
    text = deployed.kubectl.run("logs", pod, "-n", namespace, "-c", container).stdout
    facts: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=") if line.startswith("uid=") else line.partition(":")
        facts.setdefault(key, []).append(value.strip())
    return facts


def test_mutated_gpu_pods_are_scheduled_onto_the_node_and_run_with_the_injected_defaults(deployed):
    name = namespace(deployed, "ml-run")
    deployed.kubectl.create(probe_pod(name, "train"))
    pod = wait_for(lambda: (p := deployed.kubectl.json("get", "pod", "train", "-n", name))["status"].get("phase")
                   in ("Succeeded", "Failed") and p, "the probe pod to finish", timeout=120, interval=0.5)
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert pod["spec"]["nodeName"] == nodelib.NAME and pod["spec"]["runtimeClassName"] == "nvidia"
    for container in ("gpu", "sidecar"):
        facts = _logs(deployed, name, "train", container)
        assert facts["uid"] == ["65532 gid=0"], facts  # runAsUser 65532 from the cohort's defaults
        assert facts["root filesystem"] == ["read-only"]
        assert facts["CapEff"] == ["0000000000000000"]  # capabilities: drop ALL
        assert facts["Seccomp"] == ["2"]  # RuntimeDefault: a filter
        assert facts["NoNewPrivs"] == ["1"]  # allowPrivilegeEscalation: false
    env = {c: {v.partition("=")[0]: v.partition("=")[2] for v in _logs(deployed, name, "train", c)["env"]}
           for c in ("gpu", "sidecar")}
    assert env["sidecar"]["NVIDIA_VISIBLE_DEVICES"] == "void"  # hide-gpus on the container without a GPU
    assert "NVIDIA_VISIBLE_DEVICES" not in env["gpu"]  # the device plugin's to set, never the pod's


def test_a_denied_pod_never_reaches_the_node(deployed):
    name = namespace(deployed, "ml-denied")
    result = deployed.kubectl.create(probe_pod(name, "overrides", env=[{"name": "CUDA_VISIBLE_DEVICES",
                                                                       "value": "0,1,2,3"}]), check=False)
    assert result.returncode == 1 and "[visible-devices-override]" in result.stderr
    assert deployed.kubectl.run("get", "pod", "overrides", "-n", name, check=False).returncode == 1
    containers = deployed.node._ctr("containers", "list", "--quiet", "labels.\"io.kubernetes.pod.name\"==overrides",
                                    check=False)
    assert containers.returncode == 0 and containers.stdout.strip() == ""


def _rolled(deployed: Deployed, before: set[str]) -> bool:
    return deployed.available() and not ({p["metadata"]["name"] for p in deployed.pods()} & before)


def test_helm_upgrade_rolls_the_pods_under_a_stream_of_gpu_pod_creates_and_loses_none(deployed):
    """`failurePolicy: Fail`, two replicas, maxUnavailable 0: the Deployment surges a new pod, waits for its
    readiness, and each old pod keeps serving (preStop) until the endpoints have dropped it."""
    name = namespace(deployed, "ml-stream")
    before = {p["metadata"]["name"] for p in deployed.pods()}
    with Stream(deployed.cluster, name) as stream:
        time.sleep(2)
        deployed.upgrade({**deployed.values(), "podAnnotations": {"rolled": "1"}})
        wait_for(lambda: _rolled(deployed, before), "the upgrade's rollout", timeout=240, interval=0.5)
        time.sleep(2)
    assert stream.sent > 50
    assert stream.failures == []


def test_losing_a_webhook_pod_under_a_stream_fails_no_create(deployed):
    """A webhook pod deleted (a node drained, a pod rescheduled): the other replica answers everything while the
    Deployment replaces it."""
    name = namespace(deployed, "ml-loss")
    victim = deployed.pods()[0]["metadata"]["name"]
    with Stream(deployed.cluster, name) as stream:
        time.sleep(2)
        deployed.kubectl.run("delete", "pod", victim, "-n", NAMESPACE, "--wait=false")
        wait_for(lambda: _rolled(deployed, {victim}), "the replacement pod", timeout=180, interval=0.5)
        time.sleep(2)
    assert stream.sent > 20
    assert stream.failures == []


def test_eviction_honours_the_pod_disruption_budget(deployed):
    """maxUnavailable 1: the first eviction is granted; a second, while the first's replacement is not yet
    Ready, is refused with the PDB's 429."""
    first, second = (p["metadata"]["name"] for p in deployed.pods()[:2])

    def evict(pod: str) -> subprocess.CompletedProcess:
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": NAMESPACE}}
        return deployed.kubectl.run("create", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction",
                                    "-f", "-", input=json.dumps(eviction), check=False)

    wait_for(lambda: deployed.kubectl.json("get", "pdb", RELEASE, "-n", NAMESPACE)["status"].get(
        "disruptionsAllowed") == 1, "the PodDisruptionBudget to allow one disruption")
    granted = evict(first)
    assert granted.returncode == 0, granted.stderr
    refused = evict(second)
    assert refused.returncode != 0
    assert "disruption budget" in refused.stderr
    wait_for(lambda: _rolled(deployed, {first}), "the evicted pod's replacement", timeout=180, interval=0.5)


def test_the_audit_cronjob_s_job_runs_on_the_node_and_writes_its_reports(deployed):
    name = namespace(deployed, "ml-audited")
    deployed.kubectl.create(probe_pod(name, "overrides-in-cluster"))  # admitted, then audited
    deployed.kubectl.run("create", "job", "audit-now", f"--from=cronjob/{RELEASE}-audit", "-n", NAMESPACE)
    def finished() -> dict | None:
        status = deployed.kubectl.json("get", "job", "audit-now", "-n", NAMESPACE)["status"]
        return status if status.get("succeeded") or status.get("failed") else None

    status = wait_for(finished, "the audit Job", timeout=180, interval=1)
    logs = deployed.kubectl.run("logs", "job/audit-now", "-n", NAMESPACE, check=False)
    assert status.get("succeeded") == 1, (status, logs.stdout[-2000:], logs.stderr[-2000:])
    (pod,) = deployed.kubectl.json("get", "pods", "-n", NAMESPACE, "-l", "job-name=audit-now")["items"]
    assert pod["spec"]["nodeName"] == nodelib.NAME
    reports = deployed.kubectl.json("get", "policyreports", "-n", name)["items"]
    assert reports and reports[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-admission"


def test_a_digest_the_registry_lacks_leaves_the_new_pod_in_image_pull_back_off_with_the_kubelet_s_message(deployed):
    """An upgrade naming a digest nobody pushed (a mirror that lacks it): the surge pod never starts and says why
    as the kubelet reports it; the old pods keep serving (maxUnavailable 0) until `helm rollback`."""
    missing = "sha256:" + "0" * 63 + "1"
    assert deployed.registry.digest(REPOSITORY, missing) is None
    before = {p["metadata"]["name"] for p in deployed.pods()}
    deployed.upgrade(deployed.values(digest=missing))

    def pulling() -> dict | None:
        for pod in deployed.pods():
            for status in pod["status"].get("containerStatuses", []):
                waiting = status.get("state", {}).get("waiting", {})
                if pod["spec"]["containers"][0]["image"].endswith(missing) and waiting.get("message"):
                    return waiting
        return None

    waiting = wait_for(pulling, "the new pod's image pull to fail", timeout=120, interval=0.5)
    assert waiting["reason"] in ("ErrImagePull", "ImagePullBackOff"), waiting
    reference = f"{deployed.registry.host}/{REPOSITORY}@{missing}"
    assert f'"{reference}"' in waiting["message"] and "not found" in waiting["message"], waiting
    assert before <= {p["metadata"]["name"] for p in deployed.pods()}  # the old pods still serve
    deployed.helm.rollback(RELEASE, wait="watcher", timeout=180)
    wait_for(lambda: deployed.available() and {p["metadata"]["name"] for p in deployed.pods()} == before,
             "the rollback", timeout=180, interval=0.5)


def test_uninstall_removes_the_webhook_configurations_before_the_pods_under_a_stream(deployed):
    name = namespace(deployed, "ml-uninstall")
    assert _webhook_configurations(deployed.kubectl) == [f"validatingwebhookconfigurations/{RELEASE}",
                                                         f"mutatingwebhookconfigurations/{RELEASE}"]
    import helm_python

    # once the hook deleted the configurations, pods are created unpatched: that is the uninstall, not a failure
    with Stream(deployed.cluster, name, patched=False) as stream:
        time.sleep(2)
        try:
            deployed.helm.uninstall(RELEASE, wait="watcher", timeout=180)
        except helm_python.errors.HelmError as exc:
            logs = deployed.kubectl.run("logs", f"job/{RELEASE}-cleanup", "-n", NAMESPACE, check=False)
            raise AssertionError(f"{exc}\nthe hook's log:\n{logs.stdout}{logs.stderr}") from exc
        time.sleep(2)
    assert _webhook_configurations(deployed.kubectl) == []
    assert stream.failures == []
    # The pre-delete hook deleted them, as its ServiceAccount, before Helm deleted the Deployment.
    events = [json.loads(line) for line in deployed.cluster.audit_log.read_text().splitlines()]
    deletes = [(e["objectRef"]["resource"], e["user"]["username"]) for e in events
               if e["verb"] == "delete" and e["stage"] == "ResponseComplete"
               and e.get("responseStatus", {}).get("code") == 200
               and e["objectRef"].get("resource") in ("validatingwebhookconfigurations",
                                                      "mutatingwebhookconfigurations", "deployments")]
    assert deletes[:2] == [(r, f"system:serviceaccount:{NAMESPACE}:{RELEASE}-cleanup")
                           for r in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")]
    assert ("deployments", deletes[2][1]) == deletes[2]
