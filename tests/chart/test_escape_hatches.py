"""The chart's escape hatches (docs/deployment.md, Escape hatches; as Kyverno's and Gatekeeper's charts have
them): each value lands where Kubernetes reads it, and the defaults stay as they were. Every value set here is
also in VALUE_SETS, so test_render_and_validate validates its objects strictly against the Kubernetes 1.34
schemas."""
from __future__ import annotations

import helm_python
import pytest

from .conftest import RELEASE, render_values, rendered_set

pytestmark = pytest.mark.slow

SELECTOR = {"app.kubernetes.io/name": "gpu-admission", "app.kubernetes.io/instance": RELEASE,
            "app.kubernetes.io/component": "webhook"}


def _pod(name: str) -> dict:
    return rendered_set(name).one("Deployment")["spec"]["template"]["spec"]


def _container(name: str) -> dict:
    return _pod(name)["containers"][0]


def _env(container: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_host_network_binds_its_own_port_and_keeps_cluster_dns():
    pod = _pod("host-network")
    container = pod["containers"][0]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert container["ports"] == [{"name": "https", "containerPort": 9743, "hostPort": 9743, "protocol": "TCP"},
                                  {"name": "health", "containerPort": 9744, "hostPort": 9744, "protocol": "TCP"}]
    assert _env(container)["GPU_ADMISSION_BIND"] == "0.0.0.0:9743"
    assert _env(container)["GPU_ADMISSION_HEALTH_BIND"] == "0.0.0.0:9744"  # the probes' listener: on the node too
    service = rendered_set("host-network").one("Service")
    assert service["spec"]["ports"][0]["targetPort"] == "https"  # the node's port, by name
    assert rendered_set("host-network").one("Deployment")["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def test_pod_network_by_default():
    pod = _pod("default")
    assert "hostNetwork" not in pod and "dnsPolicy" not in pod
    assert pod["containers"][0]["ports"] == [{"name": "https", "containerPort": 8443, "protocol": "TCP"},
                                             {"name": "health", "containerPort": 8081, "protocol": "TCP"}]
    assert _env(pod["containers"][0])["GPU_ADMISSION_BIND"] == "0.0.0.0:8443"


@pytest.mark.parametrize("port", [
    pytest.param(10250, id="kubelet"), pytest.param(10256, id="kube-proxy"), pytest.param(9400, id="dcgm-exporter"),
    pytest.param(10260, id="cert-manager-webhook"), pytest.param(80, id="privileged"),
])
def test_host_ports_that_collide_are_refused(port):
    with pytest.raises(helm_python.HelmValuesError, match="hostNetwork/port"):
        render_values({"hostNetwork": {"enabled": True, "port": port}})
    with pytest.raises(helm_python.HelmValuesError, match="hostNetwork/healthPort"):
        render_values({"hostNetwork": {"enabled": True, "healthPort": port}})


def test_extra_env_args_and_volumes_are_added_after_the_charts_own():
    container, pod = _container("escape-hatches"), _pod("escape-hatches")
    env = _env(container)
    assert env["HTTPS_PROXY"] == "http://proxy.corp:3128"
    assert env["NODE"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert list(env)[:3] == ["GPU_ADMISSION_POLICY", "GPU_ADMISSION_TLS_CERT", "GPU_ADMISSION_TLS_KEY"]
    assert container["args"] == ["--limit-request-line", "8190"]
    assert "args" not in _container("default")
    assert [v["name"] for v in pod["volumes"]] == ["policy", "tls", "tmp", "corp-ca"]
    assert container["volumeMounts"][-1] == {"name": "corp-ca", "mountPath": "/etc/ssl/corp", "readOnly": True}
    assert pod["dnsPolicy"] == "None"


def test_selectors_and_user_match_conditions_reach_every_webhook():
    hooks = rendered_set("escape-hatches").webhooks()
    assert len(hooks) == 7  # five validating (one of them for infrastructure, allocation-owner), two mutating
    for _, hook in hooks:
        ns = hook["namespaceSelector"]
        assert ns["matchLabels"] == {"gpu": "true"}
        # the chart's exclusion of exempt namespaces stays first, the user's expressions are added
        assert ns["matchExpressions"][0]["key"] == "kubernetes.io/metadata.name"
        assert ns["matchExpressions"][1:] == [{"key": "tier", "operator": "In", "values": ["ml"]}]
        assert hook["objectSelector"] == {
            "matchExpressions": [{"key": "gpu-admission.io/skip", "operator": "DoesNotExist"}]}
        assert hook["matchConditions"][-1] == {"name": "not-ci-bots",
                                               "expression": "!request.userInfo.username.startsWith('ci-')"}
    for _, hook in rendered_set("default").webhooks():
        assert "objectSelector" not in hook and "matchLabels" not in hook["namespaceSelector"]


def test_a_user_match_condition_cannot_take_a_charts_name():
    with pytest.raises(helm_python.HelmValuesError, match="matchConditions/extra/0/name"):
        render_values({"webhooks": {"matchConditions": {"extra": [
            {"name": "skip-unchanged-updates", "expression": "true"}]}}})


def test_raw_topology_spread_replaces_the_charts_and_gets_the_pod_selector():
    spread = _pod("escape-hatches")["topologySpreadConstraints"]
    assert spread == [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                       "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": SELECTOR}}]
    assert [c["topologyKey"] for c in _pod("default")["topologySpreadConstraints"]] == [
        "kubernetes.io/hostname", "topology.kubernetes.io/zone"]


def test_revision_history_and_update_strategy():
    spec = rendered_set("escape-hatches").one("Deployment")["spec"]
    assert spec["revisionHistoryLimit"] == 2 and spec["strategy"] == {"type": "Recreate"}
    default = rendered_set("default").one("Deployment")["spec"]
    assert default["revisionHistoryLimit"] == 5
    assert default["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_security_context_overrides_merge_over_the_charts_for_webhook_and_audit():
    rendered = rendered_set("escape-hatches")
    job = rendered.one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    for pod in (_pod("escape-hatches"), job):
        assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                          "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"},
                                          "supplementalGroups": [4000], "fsGroupChangePolicy": "OnRootMismatch"}
        assert pod["containers"][0]["securityContext"] == {
            "allowPrivilegeEscalation": False, "privileged": False, "readOnlyRootFilesystem": True,
            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"},
            "seLinuxOptions": {"type": "spc_t"}}
    # the same as before any override
    assert _pod("default")["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                                  "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    assert _pod("minimal")["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def test_an_override_may_loosen_what_the_chart_sets():
    """An override wins (the user's choice, e.g. a platform that needs a writable root): merged, not ignored."""
    pod = render_values({"containerSecurityContext": {"readOnlyRootFilesystem": False}})
    assert "readOnlyRootFilesystem: false" in pod["gpu-admission/templates/deployment.yaml"]


def test_autoscaling_replaces_the_fixed_replica_count():
    rendered = rendered_set("escape-hatches")
    assert "replicas" not in rendered.one("Deployment")["spec"]
    hpa = rendered.one("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": RELEASE}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 9)
    assert [(m["resource"]["name"], m["resource"]["target"]["averageUtilization"]) for m in hpa["spec"]["metrics"]] \
        == [("cpu", 70), ("memory", 80)]
    assert hpa["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 600}}
    assert rendered_set("default").maybe("HorizontalPodAutoscaler") is None
    assert rendered_set("default").one("Deployment")["spec"]["replicas"] == 2


def test_audit_job_fails_on_findings_only_when_asked():
    def args(name: str) -> list[str]:
        return rendered_set(name).one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"][
            "containers"][0]["args"]
    assert "--fail-on-findings" in args("escape-hatches")
    assert "--fail-on-findings" not in args("audit-cronjob")


def test_extra_args_reach_gunicorn_after_the_entry_point_and_win():
    """The container's args follow the image's ENTRYPOINT (gunicorn, its config, the app): gunicorn's own parser
    takes them there, and a command-line setting overrides the config file's."""
    from gunicorn.config import Config

    from .test_dockerfile import ENTRYPOINT

    parsed = Config(prog="gunicorn").parser().parse_args([*ENTRYPOINT[1:], *_container("escape-hatches")["args"]])
    assert parsed.args == ["webhook.server.wsgi:app"] and parsed.config == "python:webhook.server.gunicorn_conf"
    assert parsed.limit_request_line == 8190
