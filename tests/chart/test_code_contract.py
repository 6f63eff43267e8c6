"""Cross-checks between the chart and the code: the rendered policy loads with the project's own loader,
the webhook rules list exactly the kinds the engine handles, and the Deployment matches what the server
reads and serves (environment, file locations, port, paths, probes)."""
from __future__ import annotations

import posixpath
import re

import helm_python
import pytest
import yaml

from tests.policy.test_schema import rule_id_places
from webhook import settings
from webhook.config import ConfigError, load, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.config.model import DEFAULT_VISIBLE_DEVICE_VARIABLES
from webhook.objects import kinds
from webhook.objects.annotations import ANNOTATION_PREFIXES
from webhook.policy.checks import device_access_bypass
from webhook.rules import Action, Rule
from webhook.server.worker import HEALTH_PATHS

from .conftest import CHART, CUSTOM_POLICY, NAMESPACE, RELEASE, set_params

pytestmark = pytest.mark.slow
SCHEMA = yaml.safe_load((CHART / "values.schema.json").read_text())


# ---------------------------------------------------------------- the policy ConfigMap

@pytest.mark.parametrize("value_set", set_params())
def test_rendered_policy_loads_with_the_project_loader(rendered, value_set):
    policy = parse_policy(rendered.policy_text(), source=f"chart {value_set}")  # raises ConfigError on any problem
    assert policy.service_namespace == NAMESPACE
    assert policy.is_exempt(NAMESPACE)
    values = rendered.values
    expected_mode = {"": None, "enforce": "enforce", "audit": "audit", "dry-run": "audit"}[values.get("mode", "")]
    assert policy.mode == (expected_mode or "enforce")
    for ns in values.get("exemptNamespaces", []):
        assert ns in policy.exempt_namespaces
    for key, enabled in values.get("lookups", {}).items():
        attr = re.sub(r"([A-Z])", r"_\1", key).lower()
        assert getattr(policy.lookups, attr) is enabled


def test_default_policy_value_is_the_shipped_default(chart):
    shipped = yaml.safe_load(DEFAULT_PATH.read_text())
    shipped.pop("serviceNamespace")  # the chart always sets the release namespace
    assert chart.values["policy"] == shipped


def test_default_render_means_the_shipped_default(default_render):
    """Same cohorts, classes, actions and security defaults as the service with no configuration."""
    rendered = parse_policy(default_render.policy_text())
    shipped = parse_policy(DEFAULT_PATH.read_text())
    for field in ("cohorts", "mode", "exempt_namespaces", "actions", "device_classes", "security", "gpu_drivers",
                  "visible_device_variables", "lookups", "exceptions", "namespace_overrides"):
        assert getattr(rendered, field) == getattr(shipped, field), field


def test_custom_policy_and_convenience_values(render):
    out = render({"policy": CUSTOM_POLICY, "mode": "dry-run", "exemptNamespaces": ["ml-infra"],
                  "rules": {"run-as-root": "enforce", "hide-gpus": False, "shared-claim": {"action": "audit",
                                                                                           "onError": "deny"}},
                  "lookups": {"deviceClasses": True}})
    policy = parse_policy(out.policy_text())
    assert [c.name for c in policy.cohorts] == ["a100", "h200"]
    assert policy.mode == "audit"
    assert policy.exempt_namespaces == {"kube-system", "nvidia-gpu-operator", "ml-infra"}
    assert policy.actions[Rule.RUN_AS_ROOT] is Action.ENFORCE
    assert policy.actions[Rule.HIDE_GPUS] is Action.OFF  # an unquoted `off` in a values file is false
    assert policy.actions[Rule.SHARED_CLAIM] is Action.AUDIT
    assert policy.on_error[Rule.SHARED_CLAIM] == "deny"
    assert policy.lookups.device_classes and not policy.lookups.resource_claims
    assert policy.namespace_cohorts == {"training": "h200"}


def test_a_policy_the_loader_refuses_the_chart_refuses_at_render(render):
    """The loader check above is not vacuous, and the chart no longer lets such a policy through to a
    server that would refuse it at start: two cohorts selecting the same nodes fail both, naming cohorts."""
    twins = [dict(CUSTOM_POLICY["cohorts"][0], name="a"), dict(CUSTOM_POLICY["cohorts"][0], name="b")]
    with pytest.raises(helm_python.HelmError, match=r"policy\.cohorts: cohorts \"a\" and \"b\" select the same nodes"):
        render({"policy": dict(CUSTOM_POLICY, cohorts=twins)})
    with pytest.raises(ConfigError, match="cohorts 'a' and 'b' select the same nodes"):
        parse_policy(yaml.safe_dump(dict(CUSTOM_POLICY, cohorts=twins)))


# ---------------------------------------------------------------- values.schema.json vs the code

def test_schema_rule_ids_and_actions_are_the_code_s():
    assert SCHEMA["definitions"]["ruleId"]["enum"] == [r.value for r in Rule]
    assert SCHEMA["definitions"]["action"]["enum"] == [a.value for a in Action] + [False]
    # every rule-id field (the chart's rules:, the policy's rules: and exceptions) refers to that one list
    enums, refs = rule_id_places(SCHEMA)
    assert enums == ["/definitions/ruleId"]
    assert refs == ["/definitions/ruleActions/propertyNames",
                    "/properties/policy/properties/exceptions/items/properties/rules/items"]


def _loader_keys() -> set[str]:
    """The document keys the loader reads: the keys of its field tables (document key -> the model's field)."""
    return {key for name, table in vars(load).items() if name.endswith("_FIELDS") for key in table}


def _schema_keys(node, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            _schema_keys(SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]], out)
        for key, sub in node.get("properties", {}).items():
            out.add(key)
            _schema_keys(sub, out)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                _schema_keys(node[key], out)
        for sub in node.get("anyOf", []):
            _schema_keys(sub, out)
    return out


def test_schema_policy_fields_are_the_loader_s():
    schema_keys = _schema_keys(SCHEMA["properties"]["policy"], set())
    loader_keys = _loader_keys()
    assert len(loader_keys) > 40, "the loader's field names were not found; update _loader_keys"
    assert loader_keys - schema_keys == set(), "policy fields the loader reads but the chart's schema refuses"
    assert schema_keys - loader_keys == set(), "policy fields the chart's schema allows but the loader refuses"


@pytest.mark.parametrize("key", [pytest.param(k, id=k)
                                 for k in sorted(SCHEMA["properties"]["policy"]["properties"])])
def test_every_policy_key_the_schema_allows_is_known_to_the_loader(key):
    text = DEFAULT_PATH.read_text() + f"\n{key}: null\n"
    try:
        parse_policy(text)
    except ConfigError as exc:
        assert not any(e.startswith(f"{key}: unknown field") for e in exc.errors), exc.errors


# ---------------------------------------------------------------- webhook rules vs the engine's kinds

INFRASTRUCTURE_HOOK = "infrastructure.validate."


def _rules(rendered, kind: str) -> list[dict]:
    """The rules of the workload and DRA webhooks (the infrastructure webhook has its own test below)."""
    return [rule for k, hook in rendered.webhooks() if k == kind and not hook["name"].startswith(INFRASTRUCTURE_HOOK)
            for rule in hook["rules"]]


def _resources(rules) -> set[tuple[str, str]]:
    return {(group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}


@pytest.mark.parametrize("value_set", set_params())
def test_validating_rules_cover_exactly_the_engine_s_kinds(rendered, value_set):
    expected = {(k.group, k.resource) for k in kinds.HANDLED}
    expected |= {(group, f"{resource}/{sub}") for (group, resource), subs in kinds.SUBRESOURCES.items() for sub in subs}
    rules = _rules(rendered, "ValidatingWebhookConfiguration")
    assert _resources(rules) == expected
    for rule in rules:
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert rule["apiVersions"] == ["v1"]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                info = kinds.BY_RESOURCE[(group, resource.split("/")[0])]
                assert rule["scope"] == ("Namespaced" if info.namespaced else "Cluster"), resource


@pytest.mark.parametrize("value_set", set_params())
def test_the_infrastructure_webhook_covers_exactly_the_allocation_owner_s_kinds(rendered, value_set):
    """DaemonSets (in the exempt namespaces only: the workloads webhook sees the rest), the GPU Operator's
    objects at the versions its CRDs serve, and Node UPDATEs; every rule's scope is its kind's."""
    (hook,) = [h for _, h in rendered.webhooks() if h["name"].startswith(INFRASTRUCTURE_HOOK)]
    seen = {}
    for rule in hook["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                info = kinds.BY_RESOURCE[(group, resource)]
                assert rule["scope"] == ("Namespaced" if info.namespaced else "Cluster"), resource
                seen[(group, resource)] = (tuple(rule["apiVersions"]), tuple(rule["operations"]))
    assert seen == {
        ("apps", "daemonsets"): (("v1",), ("CREATE", "UPDATE")),
        **{(k.group, k.resource): ((kinds.OPERATOR_VERSIONS[k.kind],), ("CREATE", "UPDATE"))
           for k in kinds.INFRASTRUCTURE if k.group == "nvidia.com"},
        ("", "nodes"): (("v1",), ("UPDATE",)),
    }
    policy = parse_policy(rendered.policy_text())
    expected = sorted({"kube-system", NAMESPACE} | set(policy.exempt_namespaces))
    user = rendered.values.get("webhooks", {}).get("namespaceSelector", {})  # labels required on top
    assert hook["namespaceSelector"] == {**user, "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": expected},
        *user.get("matchExpressions", [])]}
    assert hook["clientConfig"].get("service", {}).get("path", "/validate") == "/validate" or \
        hook["clientConfig"]["url"].endswith("/validate")


def test_the_infrastructure_webhook_is_not_rendered_when_the_rule_is_off(render):
    out = render({"policy": {"rules": {"allocation-owner": "off"}}})
    assert not [h for _, h in out.webhooks() if h["name"].startswith(INFRASTRUCTURE_HOOK)]
    assert [h for _, h in render({}).webhooks() if h["name"].startswith(INFRASTRUCTURE_HOOK)]


@pytest.mark.parametrize("value_set", set_params("default", "custom-policy", "audit-mode"))
def test_mutating_rules_cover_exactly_the_mutated_kinds_on_create(rendered, value_set):
    """Pods on CREATE; the ephemeral containers subresource on UPDATE (kubectl debug), and nothing else."""
    rules = _rules(rendered, "MutatingWebhookConfiguration")
    create = [r for r in rules if r["operations"] == ["CREATE"]]
    update = [r for r in rules if r["operations"] == ["UPDATE"]]
    assert len(create) + len(update) == len(rules)
    assert _resources(create) == {(k.group, k.resource) for k in kinds.HANDLED if k.mutated}
    assert _resources(update) == {(group, f"{resource}/{sub}") for (group, resource), subs in kinds.SUBRESOURCES.items()
                                  for sub in subs}


@pytest.mark.parametrize("value_set", set_params())
def test_webhooks_never_match_what_must_always_go_through(rendered, value_set):
    for _, hook in rendered.webhooks():
        for rule in hook["rules"]:
            assert not {"DELETE", "CONNECT", "*"} & set(rule["operations"])
            for resource in rule["resources"]:
                name, _, sub = resource.partition("/")
                assert name not in {"leases", "events", "namespaces", "*"}
                # Nodes: only the infrastructure webhook, only UPDATEs (never their status: see the sub check)
                assert name != "nodes" or (hook["name"].startswith(INFRASTRUCTURE_HOOK)
                                           and rule["operations"] == ["UPDATE"])
                assert sub in ("", "ephemeralcontainers"), resource  # never status, scale, binding, ...
            assert "*" not in rule["apiGroups"] and "coordination.k8s.io" not in rule["apiGroups"]


# ---------------------------------------------------------------- namespaceSelector

@pytest.mark.parametrize("value_set", set_params())
def test_namespace_selector_excludes_system_own_and_exempt_namespaces(rendered, value_set):
    policy = parse_policy(rendered.policy_text())
    expected = sorted({"kube-system", NAMESPACE} | set(policy.exempt_namespaces))
    user = rendered.values.get("webhooks", {}).get("namespaceSelector", {})  # labels required on top
    for _, hook in rendered.webhooks():
        if hook["name"].startswith(INFRASTRUCTURE_HOOK):
            continue  # the exempt namespaces only (test_the_infrastructure_webhook_covers_...)
        assert hook["namespaceSelector"] == {**user, "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": expected},
            *user.get("matchExpressions", [])]}


def test_release_namespace_is_excluded_whatever_it_is_called(render):
    out = render({}, namespace="platform-webhooks")
    for _, hook in out.webhooks():
        assert "platform-webhooks" in hook["namespaceSelector"]["matchExpressions"][0]["values"]
        assert hook["clientConfig"]["service"]["namespace"] == "platform-webhooks"
    assert parse_policy(out.policy_text()).service_namespace == "platform-webhooks"


# ---------------------------------------------------------------- the server contract

def _container(rendered) -> dict:
    (container,) = rendered.one("Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def _mount_for(rendered, path: str) -> tuple[dict, dict]:
    """The volume mounted at the directory holding `path`, and its mount."""
    spec = rendered.one("Deployment")["spec"]["template"]["spec"]
    directory = posixpath.dirname(path)
    (mount,) = [m for m in _container(rendered)["volumeMounts"] if m["mountPath"] == directory]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return volume, mount


@pytest.mark.parametrize("value_set", set_params())
def test_environment_and_files_match_the_server_settings(rendered, value_set):
    container = _container(rendered)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env[settings.ENV_POLICY] == settings.DEPLOYED_POLICY
    assert env[settings.ENV_TLS_CERT] == settings.DEPLOYED_TLS_CERT
    assert env[settings.ENV_TLS_KEY] == settings.DEPLOYED_TLS_KEY
    port = container["ports"][0]["containerPort"]  # 8443 unless on the host network
    assert env[settings.ENV_BIND] == settings.DEPLOYED_BIND.replace(":8443", f":{port}")
    assert int(env[settings.ENV_WORKERS]) >= 1
    assert env[settings.ENV_LOG_LEVEL] in settings.LOG_LEVELS
    assert env[settings.ENV_LOG_FORMAT] in settings.LOG_FORMATS
    settings.Settings.from_env({k: v for k, v in env.items() if v is not None})  # the server reads them all
    unknown = {name for name in env if name.startswith("GPU_ADMISSION_")} - {
        v for k, v in vars(settings).items() if k.startswith("ENV_")}
    assert unknown == set(), "variables the server does not read"

    policy_volume, policy_mount = _mount_for(rendered, env[settings.ENV_POLICY])
    configmap = rendered.one("ConfigMap", policy_volume["configMap"]["name"])
    assert posixpath.basename(env[settings.ENV_POLICY]) in configmap["data"]
    tls_volume, tls_mount = _mount_for(rendered, env[settings.ENV_TLS_CERT])
    assert _mount_for(rendered, env[settings.ENV_TLS_KEY])[1] == tls_mount  # certificate and key side by side
    assert posixpath.basename(env[settings.ENV_TLS_CERT]) == "tls.crt"  # kubernetes.io/tls Secret keys
    assert posixpath.basename(env[settings.ENV_TLS_KEY]) == "tls.key"
    assert tls_volume["secret"]["secretName"] == (
        rendered.values.get("certificates", {}).get("secretName") or f"{RELEASE}-tls")
    for mount in (policy_mount, tls_mount):
        assert "subPath" not in mount  # a subPath mount never sees ConfigMap/Secret updates
        assert mount["readOnly"] is True


@pytest.mark.parametrize("value_set", set_params())
def test_port_paths_and_probes_match_what_the_server_serves(rendered, value_set):
    container = _container(rendered)
    port, health = container["ports"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    bind_port = int(env[settings.ENV_BIND].rsplit(":", 1)[1])
    health_port = int(env[settings.ENV_HEALTH_BIND].rsplit(":", 1)[1])
    host = rendered.values.get("hostNetwork", {}).get("enabled")  # the node's ports: declared, so pods never share them
    assert bind_port == (rendered.values["hostNetwork"]["port"] if host else 8443)
    assert health_port == (rendered.values["hostNetwork"].get("healthPort", 9744) if host else 8081) != bind_port
    assert port == {"name": "https", "containerPort": bind_port, "protocol": "TCP",
                    **({"hostPort": bind_port} if host else {})}
    assert health == {"name": "health", "containerPort": health_port, "protocol": "TCP",
                      **({"hostPort": health_port} if host else {})}
    probes = {name: container[name]["httpGet"] for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes["livenessProbe"]["path"] == "/healthz"
    assert probes["startupProbe"]["path"] == "/healthz"
    assert probes["readinessProbe"]["path"] == "/readyz"
    for probe in probes.values():  # the probes' own listener (webhook/server/worker.py HEALTH_PATHS)
        assert probe["scheme"] == "HTTP" and probe["port"] == health["name"]
        assert probe["path"] in HEALTH_PATHS
    service = rendered.one("Service")
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    selector = service["spec"]["selector"]
    pod_labels = rendered.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels[k] == v for k, v in selector.items())
    paths = set()
    for kind, hook in rendered.webhooks():
        ref = hook["clientConfig"]["service"]
        assert (ref["name"], ref["namespace"], ref["port"]) == (service["metadata"]["name"], NAMESPACE,
                                                                service_port["port"])
        assert ref["path"] == ("/mutate" if kind.startswith("Mutating") else "/validate")
        paths.add(ref["path"])
    assert "/validate" in paths


def _admission_review(operation: str = "CREATE") -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"containers": [{"name": "trainer", "image": "cuda:12",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    gvk = {"group": "", "version": "v1", "kind": "Pod"}
    gvr = {"group": "", "version": "v1", "resource": "pods"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816", "kind": gvk, "resource": gvr, "requestKind": gvk,
        "requestResource": gvr, "name": "train", "namespace": "ml", "operation": operation,
        "userInfo": {"username": "alice"}, "object": pod, "oldObject": None, "dryRun": False}}


@pytest.mark.parametrize("value_set", set_params("default", "custom-policy", "audit-mode", "lookups-claims"))
def test_the_server_serves_the_chart_s_paths_with_the_chart_s_policy(rendered, value_set, tmp_path):
    """The app as deployed, given the rendered ConfigMap's policy.yaml: every path the chart sends the
    apiserver, the kubelet's probes and Prometheus to answers (the apiserver appends ?timeout=)."""
    from webhook.app import create_app
    from webhook.lookups.base import NoLookups
    from webhook.settings import Settings

    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(rendered.policy_text())
    # No cluster here: the lookups' resolver is given (the app would otherwise connect to one).
    client = create_app(Settings(policy_path=policy_file), resolver=NoLookups()).test_client()
    container = _container(rendered)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        response = client.get(container[probe]["httpGet"]["path"])
        assert response.status_code == 200, probe
    ready = client.get(container["readinessProbe"]["httpGet"]["path"]).get_json()
    assert ready["policy"]["source"] == str(policy_file) and ready["policy"]["inForce"] == "current file"
    metrics = rendered.values.get("serviceMonitor", {}).get("path", "/metrics")
    assert client.get(metrics).status_code == 200
    for kind, hook in rendered.webhooks():
        ref = hook["clientConfig"]["service"]
        response = client.post(f"{ref['path']}?timeout={hook['timeoutSeconds']}s", json=_admission_review())
        assert response.status_code == 200, ref["path"]
        body = response.get_json()
        assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
        assert body["response"]["uid"] == _admission_review()["request"]["uid"]
        if kind.startswith("Validating"):
            assert "patch" not in body["response"]


# ---------------------------------------------------------------- matchConditions vs the engine's constants

def _gpu_condition(rendered) -> str:
    for _, hook in rendered.webhooks():
        for condition in hook.get("matchConditions", []):
            if condition["name"] == "skip-pods-no-rule-concerns":
                return condition["expression"]
    raise AssertionError("no skip-pods-no-rule-concerns condition")


def test_the_match_conditions_helper_s_variables_are_the_config_default():
    """The helper repeats the default visibleDeviceVariables (used when the policy sets none): the same list."""
    helper = (CHART / "templates" / "_helpers.tpl").read_text()
    (listed,) = re.findall(r'\$variables := list ((?:"[A-Z0-9_]+" ?)+)', helper)
    assert tuple(re.findall(r'"([A-Z0-9_]+)"', listed)) == DEFAULT_VISIBLE_DEVICE_VARIABLES


def test_match_conditions_use_the_engine_s_lists(default_render):
    expression = _gpu_condition(default_render)
    for variable in DEFAULT_VISIBLE_DEVICE_VARIABLES:
        assert f"'{variable}'" in expression
    for prefix in ANNOTATION_PREFIXES:
        assert f"startsWith('{prefix}')" in expression
    assert f"contains('{posixpath.basename(device_access_bypass.DEVICE_LIST_DIR)}')" in expression
