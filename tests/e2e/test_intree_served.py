"""MutatingAdmissionPolicy served or not (issue 18): `export --check` reads the cluster's own version and
discovery, and the chart's `inTree.mutation` reads Helm's .Capabilities, which Helm fills from the same
discovery. Against the session's cluster (1.34 with the gate and runtime-config, or 1.37) the API version is
the cluster's; against a 1.34 control plane of this module's own, started without them (as 1.34 is by
default), and then with the runtime-config alone (API served, gate off: the apiserver stores policies and
runs none), both say so instead of an install error or mutations nobody applies. The recorded answers that
tests/intree/test_served.py reads are checked against the session cluster's live ones."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e import build
from tests.e2e import cluster as clusterlib
from tests.e2e.conftest import CHART, CLI, REPO, Kubectl, ca_bundle, webhook_certs
from webhook.intree.served import GROUP, served

pytestmark = pytest.mark.e2e

RECORDED = REPO / "tests" / "intree" / "discovery"
NO_MUTATIONS = ("--set", "rules.default-runtime-class=off", "--set", "rules.default-security-context=off")


def _minor(version: str) -> str:
    return ".".join(version.removeprefix("v").split(".")[:2])


def _want(version: str) -> str:
    major, minor = (int(p) for p in _minor(version).split("."))
    return f"{GROUP}/" + ("v1" if (major, minor) >= (1, 36) else "v1beta1")


def _check(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "export", "--check", "--kubeconfig", str(kubeconfig), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def _raw(kubectl: Kubectl, path: str) -> dict:
    return json.loads(kubectl.run("get", "--raw", path).stdout)


def test_the_recorded_discovery_is_what_the_session_cluster_answers(cluster, kubectl):
    recorded = json.loads((RECORDED / f"{_minor(cluster.version)}-on.json").read_text(encoding="utf-8"))
    group = _raw(kubectl, f"/apis/{GROUP}")
    live = {v["groupVersion"]: _raw(kubectl, f"/apis/{v['groupVersion']}") for v in group["versions"]}
    assert _raw(kubectl, "/version")["gitVersion"] == recorded["version"]["gitVersion"] == cluster.version
    assert [v["groupVersion"] for v in group["versions"]] == [v["groupVersion"] for v in recorded["group"]["versions"]]
    assert {gv: sorted(r["name"] for r in lst["resources"]) for gv, lst in live.items()} == {
        gv: sorted(r["name"] for r in lst["resources"]) for gv, lst in recorded["resources"].items()}
    assert served(live) == (_want(cluster.version),)


def test_check_compares_in_the_api_version_the_cluster_serves(cluster, kubectl):
    """Nothing applied: the mutations are reported missing in the cluster's own API version, not refused
    for want of one (1.34: v1beta1, 1.37: v1), and the first line says what the cluster serves."""
    result = _check(cluster.kubeconfig, "--only", "mutating")
    assert result.returncode == 1 and result.stdout, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (f"cluster: Kubernetes {cluster.version}, "
                        f"MutatingAdmissionPolicy served as {_want(cluster.version)}")
    assert lines[1:] and all(line.startswith("MutatingAdmissionPolicy") and line.endswith(": not in the cluster")
                             for line in lines[1:])


# ----------------------------------------------------------- a 1.34 control plane without the gate (its own)

@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """1.34 as it is by default: no MutatingAdmissionPolicy API, the gate off (whatever E2E_KUBERNETES says:
    from 1.36 the API is GA and on)."""
    with clusterlib.Cluster(tmp_path_factory.mktemp("bare-1.34"), chain=build.toolchain("1.34"),
                            mutating_policy="off") as running:
        kubectl = Kubectl(running.kubectl, running.kubeconfig)
        kubectl.apply(_validating_export())
        yield running, kubectl


def _validating_export() -> str:
    """The shipped default's ValidatingAdmissionPolicies, as `export --only validating` prints them."""
    return subprocess.run([*CLI, "export", "--only", "validating"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout


def test_check_reports_mutations_the_cluster_does_not_serve(bare):
    running, _ = bare
    result = _check(running.kubeconfig)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"cluster: Kubernetes {running.chain.version}, MutatingAdmissionPolicy served as none"
    (line,) = lines[1:]  # the validating objects are there and equal: only the mutations are reported
    assert line.startswith("MutatingAdmissionPolicy: the policy exports ")
    assert "(default-runtime-class, default-security-context)" in line
    assert f"does not serve {GROUP}/v1beta1" in line
    assert "--feature-gates=MutatingAdmissionPolicy=true" in line
    assert f"--runtime-config={GROUP}/v1beta1=true" in line
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [
    pytest.param(("--only", "validating"), id="validating-only"),
    pytest.param(NO_MUTATIONS, id="a-policy-without-the-mutations"),
])
def test_check_is_clean_where_no_mutation_is_asked_for(bare, args):
    running, _ = bare
    result = _check(running.kubeconfig, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].endswith("in-tree admission objects, as the policy exports them")


def test_the_chart_refuses_in_tree_mutation_from_the_clusters_discovery(bare, tmp_path):
    """Real Helm against the real apiserver: .Capabilities.APIVersions is the cluster's discovery."""
    import helm_python

    running, kubectl = bare
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-admission"}})
    certs = webhook_certs(tmp_path / "certs")
    values = {"webhooks": {"url": "https://127.0.0.1:9/"}, "certificates": {"caBundle": ca_bundle(certs)}}
    with helm_python.Config(kubeconfig_path=running.kubeconfig, namespace="gpu-admission") as helm:
        with pytest.raises(helm_python.HelmError) as error:
            helm.install(CHART, "gpu-admission", {**values, "inTree": {"mutation": True}}, namespace="gpu-admission",
                         dry_run="server")
        text = str(error.value)
        assert f"does not serve MutatingAdmissionPolicy as {GROUP}/v1beta1," in text
        assert "--feature-gates=MutatingAdmissionPolicy=true" in text
        # its benign twin: the validating half needs nothing the cluster lacks (the objects the other tests
        # applied by hand are removed first: Helm adopts no object it did not create)
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                    "app.kubernetes.io/managed-by=gpu-admission", "--wait=true")
        try:
            release = helm.install(CHART, "gpu-admission", {**values, "inTree": {"validation": True}},
                                   namespace="gpu-admission", dry_run="server")
        finally:
            kubectl.apply(_validating_export())
        kinds = {d["kind"] for d in yaml.safe_load_all(release["manifest"]) if d}
        assert "ValidatingAdmissionPolicy" in kinds and "MutatingAdmissionPolicy" not in kinds


def test_check_reports_the_gate_off_where_the_api_is_served(bare):
    """--runtime-config alone: discovery lists v1beta1 mutatingadmissionpolicies, so Helm and a plain
    `kubectl apply` take the policies, but the admission plugin is off and applies none; the apiserver's
    /metrics says so (kubernetes_feature_enabled)."""
    running, _ = bare
    running.mutating_policy = "api-only"
    try:
        running.restart_apiserver()
        result = _check(running.kubeconfig)
        assert result.returncode == 1, result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == (f"cluster: Kubernetes {running.chain.version}, "
                            f"MutatingAdmissionPolicy served as {GROUP}/v1beta1")
        gate = [line for line in lines if "feature gate MutatingAdmissionPolicy is off" in line]
        assert len(gate) == 1 and "stores the policies and applies none" in gate[0]
        # the mutations are still compared (absent here), in the served version
        assert any(line.startswith("MutatingAdmissionPolicy ") and line.endswith(": not in the cluster")
                   for line in lines)
        # a user who may read the policies but not /metrics: the objects are compared, the gate is not, and
        # stderr says so (the exit code is the comparison's)
        limited = _limited_kubeconfig(running)
        result = _check(limited)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "/metrics cannot be read (forbidden" in result.stderr
        assert "is not checked" in result.stderr and "Traceback" not in result.stderr
        assert not [line for line in result.stdout.splitlines() if "feature gate" in line]
        assert result.stdout.splitlines()[0].endswith(f"served as {GROUP}/v1beta1")
    finally:
        running.mutating_policy = "off"
        running.restart_apiserver()


def _limited_kubeconfig(running: clusterlib.Cluster) -> Path:
    """A ServiceAccount allowed to list the in-tree admission objects, and nothing else (discovery and
    /version are every authenticated user's by the default system:discovery roles)."""
    kubectl = Kubectl(running.kubectl, running.kubeconfig)
    kubectl.apply(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "drift-check", "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "drift-check"},
         "rules": [{"apiGroups": [GROUP], "verbs": ["list"], "resources": [
             "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies",
             "mutatingadmissionpolicybindings"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "drift-check"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "drift-check"},
         "subjects": [{"kind": "ServiceAccount", "name": "drift-check", "namespace": "default"}]},
    ]))
    token = kubectl.run("create", "token", "drift-check", "-n", "default", "--duration=1h").stdout.strip()
    path = running.root / "drift-check.kubeconfig"
    path.write_text(clusterlib.kubeconfig_text(running.server, running.ca, token=token,
                                               user="system:serviceaccount:default:drift-check"))
    return path
