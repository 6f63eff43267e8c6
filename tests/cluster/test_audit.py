"""`gpu-admission audit` against the fake apiserver: paged listing, errors per kind, the same JSON as
`check`, a table grouped by rule and namespace, PolicyReports printed and applied, exit codes."""
from __future__ import annotations

import io
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.schemas import crd_errors, validate_junit, validate_sarif
from tests.support import DATA
from webhook.audit.listing import AUDITED, list_cluster
from webhook.audit.progress import Progress
from webhook.cli.main import main
from webhook.config.load import DEFAULT_PATH
from webhook.policy.definitions import CATEGORIES, GENERAL_CATEGORY
from webhook.rules import Action, Rule
from webhook.text import columns

from .conftest import REAL_MANIFESTS, SEED

# Asks for the same GPU through both mechanisms; its template is the seed's.
BOTH = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ai-workloads
spec:
  containers:
    - name: trainer
      image: registry.example.invalid/train
      resources:
        limits:
          nvidia.com/gpu: 1
        claims:
          - name: gpu
  resourceClaims:
    - name: gpu
      resourceClaimTemplateName: single-large-gpu
"""


# The cluster these tests audit: the seed, the shared fixtures' real manifests (the counts below are theirs)
# and one pod asking for GPUs both ways. The other real manifests have their own tables (tests/policy/rules).
AUDITED_REAL = ("NVIDIA_KAI-Scheduler__docs_quickstart_pods_gpu-pod.yaml",
                "NVIDIA_k8s-device-plugin__testdata_job-1.yaml",
                "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test1.yaml",
                "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test2.yaml",
                "kubernetes-sigs_dra-driver-nvidia-gpu__demo_specs_quickstart_v1_gpu-test3.yaml",
                "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_pods-good.yaml",
                "kyverno_policies__other_check-nvidia-gpu_.chainsaw-test_podcontrollers-good.yaml")


def manifest_files(tmp_path: Path) -> list[Path]:
    both = tmp_path / "both.yaml"
    both.write_text(BOTH)
    return [SEED / "dra-manifests.yaml", SEED / "smoke-jobs.yaml", *(REAL_MANIFESTS / n for n in AUDITED_REAL), both]


@pytest.fixture
def cluster(fake_api, tmp_path):
    for path in manifest_files(tmp_path):
        fake_api.load(path.read_text(encoding="utf-8"), namespace="default")
    return fake_api


def _key(result: dict) -> tuple[str, str, str]:
    return result["kind"], result["namespace"], result["name"]


def test_listing_is_chunked_and_complete(cluster, api_client):
    listing = list_cluster(api_client, chunk_size=2)
    assert not listing.failures and listing.attempts == len(AUDITED)
    expected = sum(len(cluster.objects(r.plural)) for r in AUDITED)
    assert len(listing.objects) == expected
    assert len({(r.plural, o["metadata"].get("namespace"), o["metadata"]["name"])
                for r, o in listing.objects}) == expected
    pods = cluster.calls_to("pods", "list")
    assert len(pods) == math.ceil(len(cluster.objects("pods")) / 2)
    assert all(c.query["limit"] == "2" for c in pods)
    assert [("continue" in c.query) for c in pods] == [False] + [True] * (len(pods) - 1)
    assert all(o["kind"] == r.kind and o["apiVersion"] == r.api_version for r, o in listing.objects)


def test_chosen_namespaces_are_listed_one_by_one(cluster, api_client):
    listing = list_cluster(api_client, ("gpu-test1", "gpu-test3"))
    namespaced = [c for c in cluster.calls_to(verb="list") if c.plural != "deviceclasses"]
    assert {c.namespace for c in namespaced} == {"gpu-test1", "gpu-test3"}
    assert [c.namespace for c in cluster.calls_to("deviceclasses", "list")] == [None]
    seen = {(o["metadata"].get("namespace"), o["kind"]) for _, o in listing.objects}
    assert {ns for ns, _ in seen} == {"gpu-test1", "gpu-test3", None}
    assert (None, "DeviceClass") in seen


def test_an_expired_continue_token_restarts_that_list_once(cluster, api_client):
    cluster.fail(410, resource="pods", verb="list", times=1, when=lambda call: "continue" in call.query)
    listing = list_cluster(api_client, chunk_size=2)
    pods = [o for r, o in listing.objects if r.plural == "pods"]
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(p["metadata"]["name"] for p in cluster.objects("pods"))
    calls = cluster.calls_to("pods", "list")
    assert [("continue" in c.query) for c in calls][:3] == [False, True, False]  # failed on page 2, started over


def test_api_errors_are_reported_per_kind_and_the_rest_goes_on(cluster, audit):
    cluster.fail(403, resource="jobs", verb="list")
    cluster.unserve("cronjobs")
    cluster.delay(2.0, resource="deployments", verb="list")
    rc, out, err = audit("-o", "json", "--request-timeout", "0.3")
    assert rc == 1  # the double-mechanism pod was still listed and evaluated
    results = json.loads(out)
    errors = {r["kind"]: r["error"] for r in results if "error" in r}
    assert errors["Job"].startswith('forbidden: jobs.batch is forbidden: User "system:serviceaccount:')
    assert errors["CronJob"] == "the API server does not serve this resource"
    assert errors["Deployment"] == "API timeout after 0.3s"
    assert set(errors) == {"Job", "CronJob", "Deployment"}
    for reason in errors.values():
        assert reason in err
    assert {r["kind"] for r in results if "error" not in r} >= {"Pod", "ResourceClaimTemplate", "DeviceClass"}


def test_json_is_what_check_says_of_the_same_manifests(cluster, audit, tmp_path, capsys):
    files = [str(p) for p in manifest_files(tmp_path)]
    assert main(["check", "-o", "json", *files]) == 1
    checked = {_key(r): r for r in json.loads(capsys.readouterr().out)}
    rc, out, _ = audit("-o", "json")
    audited = {_key(r): r for r in json.loads(out)}
    assert rc == 1
    assert set(audited) == set(checked)
    for key, result in audited.items():
        assert set(result) == set(checked[key])
        assert result["allowed"] == checked[key]["allowed"], key
        expected = sorted(v["rule"] for v in checked[key]["violations"])
        assert sorted(v["rule"] for v in result["violations"]) == expected, key
        assert result["source"]["resource"] and result["source"]["cluster"].startswith("https://127.0.0.1:")
    trainer = audited[("Pod", "ai-workloads", "trainer")]
    assert not trainer["allowed"] and "double-mechanism" in {v["rule"] for v in trainer["violations"]}
    # A running pod is reported for what the validating rules say of it as it runs: `check` gives the
    # patch the mutating webhook would apply at creation, the audit does not.
    assert checked[("Pod", "gpu-test1", "pod1")]["patch"]
    assert all(r["patch"] == [] for r in audited.values())


def test_table_groups_findings_by_rule_then_namespace(cluster, audit):
    rc, out, err = audit()
    assert rc == 1 and "\r" not in err  # no progress bar when stderr is not a terminal
    lines = out.splitlines()
    assert lines[0].split() == ["RULE", "NAMESPACE", "ACTION", "OBJECT", "PATH"]
    rows = lines[1:lines.index("")]
    rules = [line.split()[0] for line in rows if not line.startswith(" ")]
    order = [r.value for r in Rule]
    assert rules == sorted(rules, key=order.index) and len(set(rules)) == len(rules)  # each rule heads one group
    double = next(i for i, line in enumerate(lines) if line.startswith("double-mechanism"))
    assert lines[double].split()[1:4] == ["ai-workloads", "deny", "Pod/trainer"]
    shared = [line for line in lines if "Pod/pod" in line and "warn" in line]
    assert len(shared) == 2 and shared[0].split()[:2] == ["shared-claim", "gpu-test3"]
    assert shared[1].split()[0] == "warn"  # same rule and namespace: not repeated
    assert lines[-1] == "21 objects audited in 6 namespaces; 1 would be denied; 2 allowed with findings."
    assert "patch" not in out  # running pods: no would-be mutations


def test_policyreports_count_and_name_every_result(cluster, audit):
    rc, out, _ = audit("-o", "policyreport")
    assert rc == 1
    reports = list(yaml.safe_load_all(out))
    namespaced = {r["metadata"]["namespace"]: r for r in reports if r["kind"] == "PolicyReport"}
    assert set(namespaced) == {"ai-workloads", "default", "gpu-test1", "gpu-test2", "gpu-test3", "nvidia-gpu-ns"}
    assert [r["kind"] for r in reports][-1] == "ClusterPolicyReport"
    uid = {o["metadata"]["name"]: o["metadata"]["uid"] for o in cluster.objects("pods")}
    for report in reports:
        assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
        assert report["metadata"]["name"] == "gpu-admission"
        assert report["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-admission"}
        counted = {k: sum(1 for r in report["results"] if r["result"] == k)
                   for k in ("pass", "fail", "warn", "error", "skip")}
        assert report["summary"] == counted
        for result in report["results"]:
            assert result["policy"] == "gpu-admission" and result["source"] == "gpu-admission"
            assert result.get("rule") is None or Rule(result["rule"])
    fail = [r for r in namespaced["ai-workloads"]["results"] if r["result"] == "fail"]
    assert [(r["rule"], r["severity"]) for r in fail] == [("double-mechanism", "high")]
    assert fail[0]["resources"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                     "namespace": "ai-workloads", "uid": uid["trainer"]}]
    assert fail[0]["properties"]["action"] == "enforce"
    classes = [r["resources"][0]["name"] for r in reports[-1]["results"]]
    assert classes == ["hybrid-full-gpu", "hybrid-large-gpu"]


def test_apply_creates_then_updates_then_prunes(cluster, audit):
    foreign = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
               "metadata": {"name": "kyverno-report", "namespace": "gpu-test3"}, "results": []}
    cluster.apply(foreign)
    rc, out, _ = audit("-o", "policyreport", "--apply")
    assert rc == 0  # reports written: the findings are in them, not in the exit code
    assert "policyreport.wgpolicyk8s.io/gpu-admission -n gpu-test3 created" in out.splitlines()
    assert "clusterpolicyreport.wgpolicyk8s.io/gpu-admission created" in out.splitlines()
    first = {r["metadata"]["namespace"]: r for r in cluster.objects("policyreports")}
    assert first["ai-workloads"]["summary"]["fail"] == 1
    for name in ("pod1", "pod2"):
        cluster.delete("v1", "Pod", "gpu-test3", name)
    cluster.delete("resource.k8s.io/v1", "ResourceClaim", "gpu-test3", "single-gpu")
    rc, out, _ = audit("-o", "policyreport", "--apply")
    lines = out.splitlines()
    assert "policyreport.wgpolicyk8s.io/gpu-admission -n ai-workloads configured" in lines
    assert "policyreport.wgpolicyk8s.io/gpu-admission -n gpu-test3 deleted" in lines
    second = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in cluster.objects("policyreports")}
    assert ("gpu-test3", "gpu-admission") not in second and ("gpu-test3", "kyverno-report") in second
    updated = second[("ai-workloads", "gpu-admission")]
    assert int(updated["metadata"]["resourceVersion"]) > int(first["ai-workloads"]["metadata"]["resourceVersion"])
    assert len(cluster.objects("clusterpolicyreports")) == 1


def test_apply_prunes_nothing_when_a_kind_could_not_be_listed(cluster, audit):
    audit("-o", "policyreport", "--apply")
    cluster.fail(403, resource="pods", verb="list")
    rc, out, err = audit("-o", "policyreport", "--apply")
    assert "deleted" not in out and "old reports are kept" in err
    # gpu-test1 has only pods and a template: its report is rewritten from the template alone, none removed
    assert len(cluster.objects("policyreports")) == 6


def test_apply_with_chosen_namespaces_prunes_only_there(cluster, audit):
    audit("-o", "policyreport", "--apply")
    cluster.delete("v1", "Pod", "gpu-test2", "pod")
    rc, out, _ = audit("-o", "policyreport", "--apply", "-n", "gpu-test2", "-n", "gpu-test1")
    assert rc == 0
    assert sorted(out.splitlines()) == ["policyreport.wgpolicyk8s.io/gpu-admission -n gpu-test1 configured",
                                        "policyreport.wgpolicyk8s.io/gpu-admission -n gpu-test2 configured"]
    # gpu-test2 still has its template, so it keeps a report; other namespaces were not touched
    assert len(cluster.objects("policyreports")) == 6


def test_apply_owner_reference_to_the_webhook(cluster, audit):
    webhook = cluster.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                             "metadata": {"name": "gpu-admission"}, "webhooks": []})
    rc, _, _ = audit("-o", "policyreport", "--apply", "--owner-webhook", "gpu-admission")
    assert rc == 0
    for report in cluster.objects("policyreports") + cluster.objects("clusterpolicyreports"):
        assert report["metadata"]["ownerReferences"] == [{
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "name": "gpu-admission", "uid": webhook["metadata"]["uid"], "blockOwnerDeletion": False}]


def test_apply_fails_visibly_when_reports_cannot_be_written(cluster, audit):
    cluster.fail(403, resource="policyreports", verb="create")
    rc, out, err = audit("-o", "policyreport", "--apply")
    assert rc == 2
    assert "policyreport.wgpolicyk8s.io/gpu-admission -n ai-workloads failed: forbidden" in err


@pytest.mark.parametrize("output, unserved, message", [
    pytest.param("policyreport", "policyreports", "the cluster does not serve policyreports.wgpolicyk8s.io/v1alpha2: "
                 "install the CRDs of wgpolicyk8s.io", id="policyreports"),
    pytest.param("openreports", "clusterreports", "the cluster does not serve clusterreports.openreports.io/v1alpha1: "
                 "install the CRDs of openreports.io", id="openreports"),
])
def test_apply_to_a_cluster_without_the_crds_writes_nothing(cluster, audit, output, unserved, message):
    cluster.unserve(unserved)
    rc, out, err = audit("-o", output, "--apply")
    assert rc == 2 and message in err
    assert not [c for c in cluster.calls if c.verb in ("create", "update", "delete")]


@pytest.mark.parametrize("args, message", [
    pytest.param(["--apply"], "--apply and --owner-webhook go with --output policyreport or openreports",
                 id="apply-needs-reports"),
    pytest.param(["-o", "policyreport", "--owner-webhook", "x"], "--owner-webhook goes with --apply", id="owner"),
    pytest.param(["-o", "policyreport", "--fail-on-findings"], "--fail-on-findings goes with --apply",
                 id="fail-on-findings-needs-apply"),
    pytest.param(["--chunk-size", "0"], "must be positive", id="chunk-size"),
    pytest.param(["--context", "nope"], "context", id="unknown-context"),
    pytest.param(["-o", "policyreport", "--apply", "--owner-webhook", "missing"],
                 "owner ValidatingWebhookConfiguration 'missing': not found", id="owner-missing"),
])
def test_usage_and_configuration_errors_exit_2(cluster, audit, args, message):
    rc, _, err = audit(*args)
    assert rc == 2 and message in err


def test_a_broken_policy_exits_2(cluster, audit, tmp_path):
    bad = tmp_path / "policy.yaml"
    bad.write_text("mode: sometimes\n")
    rc, _, err = audit("--config", str(bad))
    assert rc == 2 and "mode" in err and not cluster.calls


def test_no_cluster_configuration_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["audit"]) == 2
    assert "cluster configuration" in capsys.readouterr().err


def test_nothing_listed_exits_2(cluster, audit):
    cluster.fail(403, verb="list")
    rc, _, err = audit()
    assert rc == 2 and "nothing could be listed" in err
    assert err.count("gpu-admission: cannot list ") == len(AUDITED)


def test_dry_run_policy_reports_what_would_be_denied_and_exits_0(cluster, audit, tmp_path):
    policy = tmp_path / "dry-run.yaml"
    policy.write_text(DEFAULT_PATH.read_text().replace("mode: enforce", "mode: dry-run"))
    rc, out, _ = audit("--config", str(policy))
    assert rc == 0
    assert any(line.split()[:4] == ["double-mechanism", "ai-workloads", "would-deny", "Pod/trainer"]
               for line in out.splitlines())
    assert "1 would be denied once enforced (dry-run)" in out


@pytest.mark.parametrize("lookups, rule, action", [
    pytest.param("", None, None, id="lookups-off"),
    pytest.param("lookups: {configMaps: true, timeoutSeconds: 0.5}\n", "visible-devices-override", "enforce",
                 id="configmap-lookups-on"),
])
def test_audit_uses_the_policys_cluster_lookups(cluster, audit, tmp_path, lookups, rule, action):
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cuda-env", "namespace": "ml"},
                   "data": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}})
    cluster.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "ml"},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "app", "image": "x", "envFrom": [{"configMapRef": {"name": "cuda-env"}}]}]}}}})
    policy = tmp_path / "policy.yaml"
    policy.write_text(DEFAULT_PATH.read_text() + lookups)
    rc, out, _ = audit("--config", str(policy), "-n", "ml", "-o", "json")
    (result,) = json.loads(out)
    found = [(v["rule"], v["action"]) for v in result["violations"]]
    assert found == ([(rule, action)] if rule else [])
    assert rc == (1 if rule else 0)
    assert bool(cluster.calls_to("configmaps")) is bool(rule)  # lookups off: not one request for ConfigMaps


@pytest.mark.parametrize("tty, drawn", [pytest.param(True, True, id="terminal"), pytest.param(False, False, id="pipe")])
def test_progress_is_drawn_only_on_a_terminal(tty, drawn):
    stream = io.StringIO()
    stream.isatty = lambda: tty
    ticks = iter(range(100))
    progress = Progress(stream, clock=lambda: next(ticks))
    progress.listed(AUDITED[0], 500)
    progress.evaluated(5, 10)
    progress.evaluated(10, 10)
    progress.finish()
    text = stream.getvalue()
    assert bool(text) is drawn
    if drawn:
        assert "listing pods: 500 objects so far" in text
        assert "[###############...............] 5/10 evaluated" in text
        assert text.endswith("\r\033[K")  # the line is cleared for what follows


@pytest.mark.parametrize("output, api_version, kinds", [
    pytest.param("policyreport", "wgpolicyk8s.io/v1alpha2", ("PolicyReport", "ClusterPolicyReport"), id="policyreport"),
    pytest.param("openreports", "openreports.io/v1alpha1", ("Report", "ClusterReport"), id="openreports"),
])
def test_reports_meet_the_report_crds(cluster, audit, output, api_version, kinds):
    rc, out, _ = audit("-o", output)
    assert rc == 1
    reports = list(yaml.safe_load_all(out))
    assert {r["kind"] for r in reports} == set(kinds) and {r["apiVersion"] for r in reports} == {api_version}
    for report in reports:
        assert crd_errors(report) == [], report["metadata"]
        for result in report["results"]:
            assert result["category"] == (CATEGORIES[Rule(result["rule"])] if "rule" in result else GENERAL_CATEGORY)
        assert report["summary"] == {k: sum(1 for r in report["results"] if r["result"] == k)
                                     for k in ("pass", "fail", "warn", "error", "skip")}
    if output == "openreports":
        assert {r["source"] for r in reports} == {"gpu-admission"}


def test_openreports_apply_creates_updates_and_prunes(cluster, audit):
    """--apply writes Report and ClusterReport objects; the fake apiserver validates each write against
    the report API's official CRD (tests/data/fixtures/schemas), as a real one does."""
    cluster.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                   "metadata": {"name": "gpu-admission"}, "webhooks": []})
    rc, out, err = audit("-o", "openreports", "--apply", "--owner-webhook", "gpu-admission")
    assert rc == 0, err  # the reports were written: findings are in them
    assert "report.openreports.io/gpu-admission -n ai-workloads created" in out.splitlines()
    assert "clusterreport.openreports.io/gpu-admission created" in out.splitlines()
    reports = {r["metadata"]["namespace"]: r for r in cluster.objects("reports")}
    assert reports["ai-workloads"]["summary"]["fail"] == 1
    assert all(r["metadata"]["ownerReferences"][0]["kind"] == "ValidatingWebhookConfiguration"
               for r in reports.values())
    assert not cluster.objects("policyreports")  # the other API is left alone
    for name in ("pod1", "pod2"):
        cluster.delete("v1", "Pod", "gpu-test3", name)
    cluster.delete("resource.k8s.io/v1", "ResourceClaim", "gpu-test3", "single-gpu")
    rc, out, _ = audit("-o", "openreports", "--apply")
    assert "report.openreports.io/gpu-admission -n ai-workloads configured" in out.splitlines()
    assert "report.openreports.io/gpu-admission -n gpu-test3 deleted" in out.splitlines()
    assert "gpu-test3" not in {r["metadata"]["namespace"] for r in cluster.objects("reports")}


def test_a_report_the_crd_refuses_is_a_failed_write(cluster, audit, monkeypatch):
    """The fake apiserver's CRD validation is not vacuous: a severity outside the CRD's enum is refused."""
    from webhook.audit import policyreport
    monkeypatch.setitem(policyreport._SEVERITY, Action.ENFORCE, "severe")
    rc, _, err = audit("-o", "openreports", "--apply")
    assert rc == 2
    assert ("report.openreports.io/gpu-admission -n ai-workloads failed: API error 422: "
            'Report.openreports.io "gpu-admission" is invalid: results.0.severity') in err
    assert "'severe' is not one of ['critical', 'high', 'low', 'medium', 'info']" in err


@pytest.mark.parametrize("output", ["sarif", "junit", "github"])
def test_ci_formats_of_a_live_audit(cluster, audit, output):
    rc, out, _ = audit("-o", output)
    assert rc == 1
    _, js, _ = audit("-o", "json")
    findings = [v for r in json.loads(js) for v in r["violations"]]
    assert findings and not any(Rule(v["rule"]).is_mutation for v in findings)
    if output == "sarif":
        log = json.loads(out)
        validate_sarif(log)
        results = log["runs"][0]["results"]
        assert len(results) == len(findings)
        assert all("physicalLocation" not in r["locations"][0] for r in results)  # no file: the cluster
        assert {r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in results} >= {
            "Pod/ai-workloads/trainer"}
    elif output == "junit":
        validate_junit(out)
        suites = {s.get("name") for s in ET.fromstring(out).findall("testsuite")}
        assert {"ai-workloads", "gpu-test3", "(cluster)"} <= suites
    else:
        assert len(out.splitlines()) == len(findings)
        assert all(line.startswith(("::error title=", "::warning title=",
                                    "::notice title=")) for line in out.splitlines())


def test_audit_fail_on_warn(cluster, audit, tmp_path):
    # Only warnings once the double-mechanism pod is gone: shared-claim on the pods of gpu-test3.
    cluster.delete("v1", "Pod", "ai-workloads", "trainer")
    assert audit()[0] == 0
    assert audit("--fail-on-warn")[0] == 1
    assert audit("--fail-on-warn", "--set", "rules.shared-claim=off")[0] == 0
@pytest.mark.parametrize("values, findings, rc", [
    pytest.param({}, True, 0, id="findings-reports-written"),
    pytest.param({}, False, 0, id="no-findings"),
    pytest.param({"failOnFindings": True}, True, 1, id="fail-on-findings"),
    pytest.param({"failOnFindings": True}, False, 0, id="fail-on-findings-nothing-found"),
])
def test_the_charts_cronjob_command_exits_0_once_reports_are_written(fake_api, kubeconfig, tmp_path, monkeypatch,
                                                                    capsys, values, findings, rc):
    """The CronJob's own command and arguments, as the chart renders them, against the fake apiserver: a Job
    that wrote its reports succeeds (a failed Job would fire KubeJobFailed every run), unless asked otherwise."""
    from tests.chart.conftest import render_values

    rendered = [doc for path, text in render_values({"audit": {"enabled": True, **values}}).items()
                if not path.endswith("NOTES.txt") for doc in yaml.safe_load_all(text) if doc]
    container = next(o for o in rendered if o["kind"] == "CronJob")["spec"]["jobTemplate"]["spec"]["template"][
        "spec"]["containers"][0]
    policy = next(o for o in rendered if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-policy"))
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy["data"]["policy.yaml"])
    args = list(container["args"])
    args[args.index("--base") + 1] = str(policy_file)  # the mounted ConfigMap, here a file
    assert container["command"] == ["gpu-admission"]
    fake_api.apply({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                    "metadata": {"name": args[args.index("--owner-webhook") + 1]}, "webhooks": []})
    fake_api.load((SEED / "dra-manifests.yaml").read_text(encoding="utf-8"), namespace="default")
    fake_api.load(BOTH if findings else BOTH.replace("          nvidia.com/gpu: 1\n", "          cpu: 1\n"),
                  namespace="default")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))  # in the pod: the in-cluster service account
    assert main(args) == rc
    out, err = capsys.readouterr()
    assert "policyreport.wgpolicyk8s.io/gpu-admission -n ai-workloads created" in out.splitlines()
    report = next(r for r in fake_api.objects("policyreports") if r["metadata"]["namespace"] == "ai-workloads")
    assert report["summary"]["fail"] == (1 if findings else 0), report["summary"]


@pytest.mark.parametrize("lookups, gpus, found", [
    pytest.param("", "16", [], id="node-lookups-off"),
    pytest.param("lookups: {nodes: true}\n", "16", [("unsatisfiable-request", "warn")], id="above-the-largest-node"),
    pytest.param("lookups: {nodes: true}\n", "8", [], id="fits-the-largest-node"),
])
def test_audit_compares_requests_with_the_clusters_nodes(cluster, audit, tmp_path, lookups, gpus, found):
    for node in yaml.safe_load((DATA / "inventory" / "nodes.yaml").read_text())["items"]:
        cluster.apply(node)
    cluster.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "train", "namespace": "ml"},
                   "spec": {"template": {"spec": {
                       "nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                                        "workload.example.com/gpu-allocation": "device-plugin"},
                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                       "runtimeClassName": "nvidia",
                       "containers": [{"name": "train", "image": "x",
                                       "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
                   }}}})
    policy = tmp_path / "policy.yaml"
    policy.write_text(DEFAULT_PATH.read_text() + lookups)
    rc, out, _ = audit("--config", str(policy), "-n", "ml", "-o", "json")
    (result,) = json.loads(out)
    assert [(v["rule"], v["action"]) for v in result["violations"]] == found
    assert rc == 0
    assert bool(cluster.calls_to("nodes")) is bool(lookups)


def test_the_table_in_japanese(cluster, audit):
    """The same audit with --lang ja: headings, marks and summary in Japanese, columns aligned in terminal
    columns (a Japanese character takes two), rule ids, namespaces, objects and paths as they are."""
    rc, out, _ = audit("--lang", "ja")
    _, english, _ = audit()
    assert rc == 1
    lines, lines_en = out.splitlines(), english.splitlines()
    assert lines[0].split() == ["ルール", "NAMESPACE", "アクション", "オブジェクト", "パス"]
    double = next(line for line in lines if line.startswith("double-mechanism"))
    assert double.split()[1:4] == ["ai-workloads", "拒否", "Pod/trainer"]
    assert [line.split()[-1] for line in lines[1:lines.index("")]] == \
        [line.split()[-1] for line in lines_en[1:lines_en.index("")]]  # the same rows, the same paths
    assert lines[-1] == "6 個の namespace で 21 件のオブジェクトを監査、拒否対象 1 件、指摘ありで許可 2 件。"
    # aligned on the screen: each cell starts at its heading's terminal column
    header = lines[0]
    for heading, cell in (("NAMESPACE", "ai-workloads"), ("アクション", "拒否"), ("オブジェクト", "Pod/trainer")):
        assert columns(header[: header.index(heading)]) == columns(double[: double.index(cell)]), heading


def test_policyreport_messages_in_japanese(cluster, audit):
    rc, out, _ = audit("-o", "policyreport", "--lang", "ja")
    assert rc == 1
    reports = list(yaml.safe_load_all(out))
    results = [r for report in reports for r in report["results"]]
    fail = [r for r in results if r["result"] == "fail"]
    assert [r["rule"] for r in fail] == ["double-mechanism"]
    assert "両方要求しています" in fail[0]["message"] and fail[0]["message"].endswith("ja/double-mechanism.md")
    assert {r["message"] for r in results if r["result"] == "pass"} == {"gpu-admission の rule に該当しませんでした"}
