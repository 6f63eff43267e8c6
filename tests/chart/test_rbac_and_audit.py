"""RBAC grows only with the lookups the values enable, the service account token is mounted only when
something needs it, and the audit CronJob runs `gpu-admission audit --apply` with exactly the access it needs."""
from __future__ import annotations

import pytest

from webhook.objects import kinds

from .conftest import NAMESPACE, RELEASE, set_params

pytestmark = pytest.mark.slow

LOOKUP_RESOURCES = {
    "resourceClaims": {("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates")},
    "deviceClasses": {("resource.k8s.io", "deviceclasses")},
    "namespaces": {("", "namespaces")},
    "configMaps": {("", "configmaps")},
    "secrets": {("", "secrets")},
    "nodes": {("", "nodes")},
    "resourceSlices": {("resource.k8s.io", "resourceslices"), ("resource.k8s.io", "devicetaintrules")},
    "runtimeClasses": {("node.k8s.io", "runtimeclasses")},
    "nodePools": {("karpenter.sh", "nodepools"), ("cluster.x-k8s.io", "machinedeployments")},
}


CLEANUP = f"{RELEASE}-cleanup"
# The only rules by name: the audit's read of the webhook configuration that owns its reports, and the uninstall
# hook's deletion of the release's own two webhook configurations.
BY_NAME = (
    {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
     "resourceNames": [RELEASE], "verbs": ["get"]},
    {"apiGroups": ["admissionregistration.k8s.io"],
     "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
     "resourceNames": [RELEASE], "verbs": ["get", "delete"]},
)


def _grants(role: dict) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "nonResourceURLs" not in rule
        if "resourceNames" in rule:
            assert rule in BY_NAME, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert "*" not in (group, resource) and "*" not in rule["verbs"]
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("enabled", [
    pytest.param((), id="none"),
    pytest.param(("resourceClaims",), id="claims"),
    pytest.param(("deviceClasses",), id="classes"),
    pytest.param(("namespaces",), id="namespaces"),
    pytest.param(("configMaps",), id="config-maps"),
    pytest.param(("secrets",), id="secrets"),
    pytest.param(("nodes",), id="nodes"),
    pytest.param(("resourceSlices",), id="resource-slices"),
    pytest.param(("nodes", "resourceSlices"), id="capacity"),
    pytest.param(("runtimeClasses",), id="runtime-classes"),
    pytest.param(("nodePools",), id="node-pools"),
    pytest.param(("resourceClaims", "deviceClasses", "configMaps"), id="claims-classes-config-maps"),
    pytest.param(tuple(LOOKUP_RESOURCES), id="all"),
])
def test_webhook_rbac_is_exactly_the_enabled_lookups(render, enabled):
    out = render({"lookups": {name: True for name in enabled}})
    pod = out.one("Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is bool(enabled)
    assert out.one("ServiceAccount", RELEASE)["automountServiceAccountToken"] is False
    if not enabled:
        assert _not_hooks(out.all("ClusterRole")) == [] and _not_hooks(out.all("ClusterRoleBinding")) == []
        assert out.all("Role") == [] and out.all("RoleBinding") == []
        return
    role = out.one("ClusterRole", f"{RELEASE}-lookups")
    expected = set().union(*(LOOKUP_RESOURCES[name] for name in enabled))
    grants = _grants(role)
    assert set(grants) == expected
    assert all(verbs == {"get", "list", "watch"} for verbs in grants.values())
    binding = out.one("ClusterRoleBinding", f"{RELEASE}-lookups")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                    "namespace": NAMESPACE}]


def _not_hooks(objects: list[dict]) -> list[dict]:
    return [o for o in objects if o["metadata"]["name"] != CLEANUP]


def test_the_uninstall_hook_may_only_delete_the_release_s_webhook_configurations(render):
    """Helm runs it before deleting anything else: a ServiceAccount, a ClusterRole naming the two configurations
    and a Job that runs the webhook's image, all hooks, removed once it succeeded."""
    out = render({})
    role = out.one("ClusterRole", CLEANUP)
    assert _grants(role) == {("admissionregistration.k8s.io", "validatingwebhookconfigurations"): {"get", "delete"},
                             ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): {"get", "delete"}}
    job = out.one("Job", CLEANUP)
    for obj in (role, job, out.one("ServiceAccount", CLEANUP), out.one("ClusterRoleBinding", CLEANUP)):
        assert obj["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
        assert obj["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) > int(
        role["metadata"]["annotations"]["helm.sh/hook-weight"])  # its RBAC exists before the Job runs
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    webhook = out.one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == webhook["image"]
    assert container["command"] == ["python", "-m", "webhook.uninstall", RELEASE]
    assert container["securityContext"] == webhook["securityContext"]
    assert pod["serviceAccountName"] == CLEANUP and pod["restartPolicy"] == "Never"


@pytest.mark.parametrize("values", [
    pytest.param({"webhooksCleanup": {"enabled": False}}, id="disabled"),
    pytest.param({"webhooks": {"url": "https://203.0.113.9:8443"}, "certificates": {"caBundle": "Y2E="}},
                 id="out-of-cluster-webhook"),
])
def test_no_uninstall_hook_where_it_is_off_or_nothing_in_the_cluster_serves(render, values):
    out = render(values)
    assert [o for o in out.all("Job") if o["metadata"]["name"] == CLEANUP] == []
    assert [o for o in out.all("ClusterRole") if o["metadata"]["name"] == CLEANUP] == []


def test_a_lookup_enabled_in_the_policy_subtree_also_gets_its_rbac(render):
    out = render({"policy": {"lookups": {"deviceClasses": True, "timeoutSeconds": 0.5}}})
    assert set(_grants(out.one("ClusterRole", f"{RELEASE}-lookups"))) == LOOKUP_RESOURCES["deviceClasses"]
    assert "timeoutSeconds: 0.5" in out.policy_text()


REPORTS = {"audit-cronjob": ("policyreport", "wgpolicyk8s.io", {"policyreports", "clusterpolicyreports"}),
           "audit-openreports": ("openreports", "openreports.io", {"reports", "clusterreports"})}


@pytest.mark.parametrize("value_set", set_params(*REPORTS))
def test_audit_cronjob_runs_audit_apply_with_the_chart_s_policy(rendered, value_set):
    cron = rendered.one("CronJob")
    spec = cron["spec"]
    assert spec["schedule"] and spec["concurrencyPolicy"] == "Forbid"
    assert spec["timeZone"] == "Etc/UTC"
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["gpu-admission"]
    args = container["args"]
    assert args[0] == "audit" and "--apply" in args
    assert args[args.index("--output") + 1] == REPORTS[value_set][0]  # the report API audit.reports names
    assert args[args.index("--owner-webhook") + 1] == rendered.one("ValidatingWebhookConfiguration")["metadata"]["name"]
    # The ConfigMap holds the complete policy the webhook runs: the base, not an overlay over the default.
    config = args[args.index("--base") + 1]
    assert "--config" not in args
    if value_set == "audit-cronjob":
        assert container["args"][-2:] == ["--namespace", "ml"]  # audit.extraArgs
    (mount,) = [m for m in container["volumeMounts"] if config.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert config.rsplit("/", 1)[1] in rendered.one("ConfigMap", volume["configMap"]["name"])["data"]
    assert container["image"] == rendered.one("Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert pod["automountServiceAccountToken"] is True  # in-cluster config
    assert pod["restartPolicy"] == "Never"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


@pytest.mark.parametrize("value_set", set_params(*REPORTS))
def test_audit_rbac_reads_what_it_audits_and_writes_only_policy_reports(rendered, value_set):
    name = f"{RELEASE}-audit"
    sa = rendered.one("ServiceAccount", name)
    pod = rendered.one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    grants = _grants(rendered.one("ClusterRole", name))
    audited = {(k.group, k.resource) for k in kinds.HANDLED} | {("", "namespaces")}
    _, group, plurals = REPORTS[value_set]
    reports = {(group, plural) for plural in plurals}
    owner = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    assert set(grants) == audited | reports | {owner}
    for resource in audited:
        assert grants[resource] == {"get", "list"}, resource
    for resource in reports:
        assert grants[resource] == {"create", "update", "patch", "get", "list", "delete"}
    assert grants[owner] == {"get"}
    bindings = {b["metadata"]["name"]: b for b in rendered.all("ClusterRoleBinding")}
    assert bindings[name]["roleRef"]["name"] == name
    if value_set == "audit-openreports":
        return
    # ConfigMap lookups are on in this value set: the audit reads envFrom keys through the same role.
    assert bindings[f"{name}-lookups"]["roleRef"]["name"] == f"{RELEASE}-lookups"
    for binding in (bindings[name], bindings[f"{name}-lookups"]):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]


def test_audit_without_lookups_has_no_lookup_binding(render):
    out = render({"audit": {"enabled": True}})
    assert [b["metadata"]["name"] for b in _not_hooks(out.all("ClusterRoleBinding"))] == [f"{RELEASE}-audit"]


@pytest.mark.parametrize("value_set", set_params())
def test_no_object_grants_more_than_reads_and_policy_reports(rendered, value_set):
    for role in rendered.all("ClusterRole") + rendered.all("Role"):
        for (group, _), verbs in _grants(role).items():
            if group not in ("wgpolicyk8s.io", "openreports.io") and role["metadata"]["name"] != CLEANUP:
                assert verbs <= {"get", "list", "watch"}, role["metadata"]["name"]  # never write anything else


@pytest.mark.parametrize("value_set", set_params("audit-cronjob"))
def test_audit_arguments_are_the_cli_s(rendered, value_set):
    """The CronJob's command line parses with the CLI's own parser, as the options `audit --apply` needs."""
    from webhook.cli.main import build_parser

    (container,) = rendered.one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "audit" and args.apply is True and args.output == "policyreport"
    assert args.owner_webhook == RELEASE
    assert args.base == "/etc/gpu-admission/policy/policy.yaml" and args.config == []
    assert args.namespace == ["ml"]
    assert args.kubeconfig is None and args.context is None  # the in-cluster config
