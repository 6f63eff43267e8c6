"""The Deployment is highly available and runs under the restricted Pod Security profile, with a
read-only root filesystem, as a numeric non-root user."""
from __future__ import annotations

import pytest

from .conftest import RELEASE, set_params

pytestmark = pytest.mark.slow


def _pod(rendered) -> dict:
    return rendered.one("Deployment")["spec"]["template"]["spec"]


@pytest.mark.parametrize("value_set", set_params())
def test_restricted_pod_security_profile(rendered, value_set):
    """The checks of Pod Security Admission's restricted level (v1.34), on the webhook and audit pods. The host
    network is the one exception, and only when asked for (hostNetwork.enabled): it needs a privileged
    namespace, as docs/deployment.md says."""
    host = rendered.values.get("hostNetwork", {}).get("enabled", False)
    pods = [_pod(rendered)] + [c["spec"]["jobTemplate"]["spec"]["template"]["spec"] for c in rendered.all("CronJob")]
    for pod in pods:
        sc = pod["securityContext"]
        assert sc["runAsNonRoot"] is True
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        assert sc.get("runAsUser", 1) != 0
        assert pod.get("hostNetwork", False) is (host and pod is pods[0])
        for key in ("hostPID", "hostIPC"):
            assert not pod.get(key)
        assert all("hostPath" not in v for v in pod.get("volumes", []))
        for container in pod["containers"]:
            csc = container["securityContext"]
            assert csc["allowPrivilegeEscalation"] is False
            assert csc["privileged"] is False
            assert csc["capabilities"] == {"drop": ["ALL"]}
            assert csc["readOnlyRootFilesystem"] is True
            assert csc["runAsNonRoot"] is True
            assert all("hostPort" not in p for p in container.get("ports", [])) or host
            (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
            assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == tmp["name"])


@pytest.mark.parametrize("value_set", set_params())
def test_runs_as_the_image_s_numeric_user_unless_the_platform_chooses(rendered, value_set):
    sc = _pod(rendered)["securityContext"]
    if value_set == "minimal":
        assert not {"runAsUser", "runAsGroup", "fsGroup"} & set(sc)
    else:
        assert (sc["runAsUser"], sc["runAsGroup"], sc["fsGroup"]) == (65532, 65532, 65532)


@pytest.mark.parametrize("value_set", set_params())
def test_high_availability(rendered, value_set):
    deployment = rendered.one("Deployment")
    spec = deployment["spec"]
    if rendered.values.get("autoscaling", {}).get("enabled"):
        assert "replicas" not in spec and rendered.one("HorizontalPodAutoscaler")["spec"]["minReplicas"] >= 2
    else:
        assert spec["replicas"] == rendered.values.get("replicaCount", 2) >= 2
    assert spec["strategy"] == rendered.values.get(
        "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    pod = spec["template"]["spec"]
    selector = spec["selector"]["matchLabels"]
    pdb = rendered.maybe("PodDisruptionBudget")
    if value_set == "minimal":
        assert pdb is None and "topologySpreadConstraints" not in pod and "priorityClassName" not in pod
        return
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    assert pdb["spec"]["maxUnavailable"] in (1, "50%")
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    for constraint in spread.values():
        assert constraint["labelSelector"]["matchLabels"] == selector
    if not rendered.values.get("topologySpreadConstraints"):  # the chart's own (test_escape_hatches: the user's)
        assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
        assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway"
        for constraint in spread.values():
            assert constraint["nodeTaintsPolicy"] == "Honor"  # tainted GPU nodes do not count as empty domains
            assert constraint["matchLabelKeys"] == ["pod-template-hash"]
    priority = pod["priorityClassName"]
    if value_set == "extras-on":
        assert priority == "system-cluster-critical" and rendered.all("PriorityClass") == []
    else:
        created = rendered.one("PriorityClass", priority)
        assert created["value"] == 1000000000 and created["globalDefault"] is False
    assert pod["terminationGracePeriodSeconds"] > pod["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"] + 25


@pytest.mark.parametrize("value_set", set_params("default"))
def test_resources_probes_and_policy_rollout(rendered, value_set):
    pod = _pod(rendered)
    (container,) = pod["containers"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert container["resources"]["limits"] == {"memory": "512Mi"}  # no CPU limit: throttling costs latency
    assert container["readinessProbe"]["periodSeconds"] <= 5
    annotations = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert len(annotations["checksum/policy"]) == 64  # a policy change rolls the pods, new ones ready first
    assert pod["enableServiceLinks"] is False
    assert pod["serviceAccountName"] == RELEASE


def test_policy_checksum_follows_the_policy(render):
    a = render({"mode": "audit"}).one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    b = render({"mode": "enforce"}).one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    c = render({"mode": "enforce", "replicaCount": 3}).one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert a["checksum/policy"] != b["checksum/policy"] == c["checksum/policy"]


@pytest.mark.parametrize("value_set", set_params("extras-on", "extras-lookups"))
def test_network_policy_opens_the_https_port_and_egress_only_for_lookups(rendered, value_set):
    policy = rendered.one("NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == rendered.one("Deployment")["spec"]["selector"]["matchLabels"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["ingress"]
    assert ingress["ports"] == [{"port": "https", "protocol": "TCP"}]
    if value_set == "extras-on":
        assert "from" not in ingress and policy["egress"] == []
    else:
        assert ingress["from"] == [{"ipBlock": {"cidr": "10.0.0.0/8"}}]
        api, dns = policy["egress"]
        assert {p["port"] for p in api["ports"]} == {443, 6443}
        assert {p["port"] for p in dns["ports"]} == {53}


def test_image_reference(render):
    assert _pod(render({}))["containers"][0]["image"] == "ghcr.io/gpu-admission/gpu-admission:0.1.0"
    digest = "sha256:" + "b" * 64
    out = render({"image": {"repository": "registry.example/gpu-admission", "tag": "x", "digest": digest}})
    assert _pod(out)["containers"][0]["image"] == f"registry.example/gpu-admission@{digest}"
