"""`gpu-admission check` and `mutate` as a platform engineer runs them in CI."""
from __future__ import annotations

import io
import json

import pytest
import yaml

from tests.support import DATA, REAL_MANIFESTS, SEED
from webhook.cli.main import main

FIELDS = {"formatVersion", "kind", "namespace", "name", "source", "allowed", "violations", "patch"}
BAD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: override, namespace: ai}
spec:
  containers:
    - name: trainer
      image: registry.example.invalid/cuda:12
      env: [{name: CUDA_VISIBLE_DEVICES, value: "0,1,2,3"}]
      resources: {limits: {nvidia.com/gpu: 1}}
"""


def run(capsys, *argv, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_name(results):
    return {(r["namespace"], r["name"]): r for r in results}


DEMOS_REFUSED = [("gpu-test4", "mig-devices"), ("gpu-test4", "pod"), ("gpu-test5", "multiple-gpus"),
                 ("gpu-test5", "pod0"), ("gpu-test6", "a100"), ("gpu-test6", "pod"), ("gpu-test-mps", "shared-gpu"),
                 ("gpu-test-mps", "test-pod"), ("gpu-test-vfio", "single-gpu-full-vfioconfig"),
                 ("gpu-test-vfio", "single-gpu"), ("gpu-test-vfio", "pod1")]
DEMOS_COHORT = """
cohorts:
  - name: device-plugin
    mechanism: device-plugin
    nodeLabels: {eks.amazonaws.com/compute-type: hybrid, workload.example.com/gpu-allocation: device-plugin}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  - name: dra
    mechanism: dra
    nodeLabels: {eks.amazonaws.com/compute-type: hybrid, workload.example.com/gpu-allocation: dra}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    deviceTypes: [gpu, mig, vfio]
    mig: {model: A100-40GB}
    sharingStrategies: [TimeSlicing, MPS]
"""


def test_real_manifests_pass_where_the_cohort_enables_what_they_use(capsys, tmp_path):
    """`--config` with a DRA cohort that offers MIG (an A100 40GB's table), VFIO, time-slicing and MPS: every demo of
    the DRA driver is admitted, its opaque configs included (device-config)."""
    overlay = tmp_path / "demos.yaml"
    overlay.write_text(DEMOS_COHORT, encoding="utf-8")
    demos = sorted(str(p) for p in REAL_MANIFESTS.glob("kubernetes-sigs_dra-driver-nvidia-gpu__*.yaml"))
    code, out, err = run(capsys, "check", "-o", "json", "--config", str(overlay), *demos)
    results = json.loads(out)
    assert len(results) > 20
    assert [(r["namespace"], r["name"]) for r in results if not r["allowed"]] == []
    assert code == 0, err
    assert not any(v["rule"] == "device-config" for r in results for v in r["violations"])


def test_real_manifests_verdicts(capsys):
    code, out, err = run(capsys, "check", "-o", "json", str(REAL_MANIFESTS))
    results = json.loads(out)
    # denied: exactly what the verdict table of tests/policy/rules/test_real_manifests.py denies
    assert {(r["kind"], r["name"]) for r in results if not r["allowed"]} == _table_denials()
    assert code == 1, err
    assert all(set(r) == FIELDS for r in results)
    r = by_name(results)
    # DRA quickstart pods are allowed and placed on the DRA cohort, with no runtime class
    for key in [("gpu-test1", "pod1"), ("gpu-test1", "pod2"), ("gpu-test2", "pod")]:
        assert r[key]["allowed"] and r[key]["violations"] == []
        paths = {op["path"] for op in r[key]["patch"]}
        assert "/spec/nodeSelector" in paths and "/spec/runtimeClassName" not in paths
    # the pods sharing one named claim draw a shared-claim warning
    for key in [("gpu-test3", "pod1"), ("gpu-test3", "pod2")]:
        assert r[key]["allowed"]
        assert [(v["rule"], v["action"], v["path"]) for v in r[key]["violations"]] == [
            ("shared-claim", "warn", "spec.resourceClaims[0]")]
    # a GPU pod without a cohort gets placement, runtime class and security defaults
    kai = {op["path"]: op["value"] for op in r[("default", "gpu-pod")]["patch"]}
    assert kai["/spec/runtimeClassName"] == "nvidia"
    assert kai["/spec/nodeSelector"]["workload.example.com/gpu-allocation"] == "device-plugin"
    assert kai["/spec/securityContext"]["runAsNonRoot"] is True
    assert kai["/spec/containers/0/securityContext"]["readOnlyRootFilesystem"] is True
    # Jobs, Deployments and CronJobs are validated, never patched
    for key in [("default", "j-e2e-1"), ("nvidia-gpu-ns", "gooddeployment01"), ("nvidia-gpu-ns", "goodcronjob01")]:
        assert r[key]["allowed"] and r[key]["patch"] == []
    # Pods that ask for no GPU are left alone
    for name in ("goodpod01", "goodpod02", "goodpod03"):
        assert r[("nvidia-gpu-ns", name)] == {**r[("nvidia-gpu-ns", name)], "allowed": True, "violations": [],
                                              "patch": []}
    assert r[("gpu-test3", "pod1")]["source"]["file"].endswith("gpu-test3.yaml")
    assert r[("gpu-test3", "pod1")]["source"]["document"] == 3
    namespaces = sum(1 for p in REAL_MANIFESTS.iterdir() if p.suffix in (".yaml", ".yml")
                     for d in yaml.safe_load_all(p.read_text(encoding="utf-8")) if d and d.get("kind") == "Namespace")
    assert namespaces >= 3 and err.count("skipped, kind Namespace") == namespaces


def _table_denials() -> set[tuple[str, str]]:
    from tests.policy.rules.test_real_manifests import TABLE
    return {(kind, name) for rows in TABLE.values() for kind, name, verdict, _ in rows if verdict is False}


def _gpu_stack_shapes():
    """Public GPU stacks' shapes written here (tests/policy/rules/test_gpu_stack_shapes.py says which each mimics)."""
    from tests.policy.rules import test_gpu_stack_shapes as s
    return [s.MIG_TEMPLATE, s.VFIO_TEMPLATE, s.GPU_TEMPLATE, s.dra_pod("vfio", s.template_claim("gpu", "vfio")),
            s.dra_pod("full", s.template_claim("gpu", "gpu")), s.TIME_SLICED, s.MPS,
            s.validator("cuda-validator", s.TEAM), s.validator("cuda-validator", "gpu-operator"),
            s.validator("plugin-validator", s.TEAM, env=None, cdi=False, gpus=1),
            s.node_agent("nvdp", "nvidia-device-plugin", env=s.DEVICE_PLUGIN_ENV),
            s.node_agent("nvdp", s.TEAM, env=s.DEVICE_PLUGIN_ENV)]


def test_gpu_stack_shapes_beside_the_real_manifests(capsys, tmp_path):
    """What the default policy's cohorts do not offer (MIG, VFIO, shared GPUs on the DRA cohort) and NVIDIA's
    infrastructure outside its namespaces are denied, the DRA driver's own demos of them among the real
    manifests too; their benign twins and the other real manifests are not."""
    shapes = tmp_path / "gpu-stack-shapes.yaml"
    shapes.write_text(yaml.safe_dump_all(_gpu_stack_shapes()))
    code, out, err = run(capsys, "check", "-o", "json", str(REAL_MANIFESTS), str(shapes))
    results = json.loads(out)
    denied = {(r["namespace"], r["name"]) for r in results if not r["allowed"] and r["namespace"] == "team-a"}
    assert {(r["kind"], r["name"]) for r in results if not r["allowed"] and r["namespace"] != "team-a"} \
        == _table_denials()
    assert denied == {("team-a", "mig"), ("team-a", "vfio"), ("team-a", "time-sliced"), ("team-a", "mps-shared"),
                      ("team-a", "cuda-validator"), ("team-a", "nvdp")}
    assert code == 1, err
    r = {(x["kind"], x["namespace"], x["name"]): x for x in results}
    assert r[("Pod", "team-a", "vfio")]["violations"][0]["rule"] == "resource-not-offered"
    assert r[("Pod", "team-a", "full")]["allowed"] and r[("Pod", "team-a", "full")]["violations"] == []
    assert r[("Pod", "team-a", "plugin-validator")]["allowed"]
    # NVIDIA's infrastructure in NVIDIA's namespaces: exempt, so admitted with nothing said and nothing patched
    for key in [("DaemonSet", "nvidia-device-plugin", "nvdp"), ("Pod", "gpu-operator", "cuda-validator")]:
        assert (r[key]["allowed"], r[key]["violations"], r[key]["patch"]) == (True, [], [])
    assert all(r[k]["source"]["file"] == str(shapes) for k in r if k[1] in ("team-a", "gpu-operator"))


def test_seed_manifests_pass(capsys):
    code, out, _ = run(capsys, "check", "-o", "json", str(SEED))
    results = json.loads(out)
    assert code == 0 and len(results) == 5
    assert all(r["allowed"] and r["violations"] == [] and r["patch"] == [] for r in results)


def test_denial_exits_1_with_readable_report(capsys, tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(BAD_POD)
    before = f.read_bytes()
    code, out, _ = run(capsys, "check", str(f))
    assert code == 1
    assert 'pod "ai/override"' in out and "DENIED" in out
    assert "[visible-devices-override]" in out and "0,1,2,3" not in out  # never an env var's value
    assert out.strip().splitlines()[-1].startswith("1 object checked; 1 denied")
    assert f.read_bytes() == before  # nothing written back


def test_stdin_json_and_list(capsys, monkeypatch):
    doc = yaml.safe_load(BAD_POD)
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": [doc, {**doc, "metadata": {"name": "b"}}]})
    code, out, _ = run(capsys, "check", "-o", "json", "-", stdin=listing, monkeypatch=monkeypatch)
    results = json.loads(out)
    assert code == 1
    assert [(r["namespace"], r["name"], r["source"]) for r in results] == [
        ("ai", "override", {"file": "<stdin>", "document": 1, "item": 0}),
        ("default", "b", {"file": "<stdin>", "document": 1, "item": 1}),
    ]


def test_namespace_option_places_documents(capsys, monkeypatch):
    doc = yaml.safe_load(BAD_POD)
    del doc["metadata"]["namespace"]
    code, out, _ = run(capsys, "check", "-o", "json", "-n", "team-a", "-", stdin=json.dumps(doc),
                       monkeypatch=monkeypatch)
    assert json.loads(out)[0]["namespace"] == "team-a"


@pytest.mark.parametrize("content, message", [
    pytest.param("kind: Pod\nmetadata: {name: a\n", "bad.yaml: document 1: not valid YAML at line 3",
                 id="invalid-yaml"),
    pytest.param("", "bad.yaml: file is empty", id="empty"),
    pytest.param("- a\n- b\n", "bad.yaml: document 1: not an object (a list)", id="not-an-object"),
    pytest.param("---\n---\n", "bad.yaml: holds no document", id="only-separators"),
    pytest.param("metadata: {name: a}\n", "bad.yaml: document 1: has no kind", id="no-kind"),
])
def test_unreadable_input_exits_2_naming_file_and_document(capsys, tmp_path, content, message):
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    code, out, err = run(capsys, "check", str(f))
    assert code == 2
    lines = [l for l in err.splitlines() if l]
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err + out


def test_good_documents_still_reported_beside_bad_ones(capsys, tmp_path):
    (tmp_path / "a.yaml").write_text(BAD_POD)
    (tmp_path / "b.yaml").write_text("kind: [\n")
    code, out, err = run(capsys, "check", "-o", "json", str(tmp_path))
    assert code == 1  # a denial outranks the input error, and both are reported
    assert json.loads(out)[0]["name"] == "override" and "b.yaml: document 1: not valid YAML" in err


def test_unknown_kind_is_skipped_not_failed(capsys, tmp_path):
    f = tmp_path / "svc.yaml"
    f.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    code, out, _ = run(capsys, "check", str(f))
    assert code == 0 and "skipped, not a kind gpu-admission handles" in out


def test_missing_path_and_bad_config_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "check", str(tmp_path / "absent.yaml"))
    assert code == 2 and "absent.yaml: no such file or directory" in err
    policy = tmp_path / "policy.yaml"
    policy.write_text("mode: strict\ncohorts: []\n")
    code, _, err = run(capsys, "check", "--config", str(policy), str(SEED))
    assert code == 2
    assert "mode: must be one of enforce, audit, dry-run, not 'strict'" in err
    assert "cohorts: must list at least one cohort" in err


def test_custom_policy_changes_verdict(capsys, tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(BAD_POD)
    policy = tmp_path / "policy.yaml"
    from webhook.config.load import DEFAULT_PATH
    policy.write_text(DEFAULT_PATH.read_text().replace("rules: {}", "rules: {visible-devices-override: warn}"))
    code, out, _ = run(capsys, "check", "-o", "json", "--config", str(policy), str(f))
    assert code == 0
    assert json.loads(out)[0]["violations"][0]["action"] == "warn"


def test_dry_run_policy_denies_nothing_patches_nothing(capsys, tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(BAD_POD)
    policy = tmp_path / "policy.yaml"
    from webhook.config.load import DEFAULT_PATH
    policy.write_text(DEFAULT_PATH.read_text().replace("mode: enforce", "mode: dry-run"))
    code, out, _ = run(capsys, "check", "-o", "json", "--config", str(policy), str(f))
    result = json.loads(out)[0]
    assert code == 0 and result["allowed"] and result["patch"] == []
    rules = {v["rule"] for v in result["violations"]}
    assert "visible-devices-override" in rules and "default-runtime-class" in rules


def test_mutate_prints_patched_documents(capsys, tmp_path):
    src = REAL_MANIFESTS / "NVIDIA_KAI-Scheduler__docs_quickstart_pods_gpu-pod.yaml"
    job = SEED / "smoke-jobs.yaml"
    code, out, err = run(capsys, "mutate", str(src), str(job))
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["Pod", "Job", "Job"]
    assert docs[0]["spec"]["runtimeClassName"] == "nvidia"
    assert docs[0]["spec"]["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert docs[1:] == list(yaml.safe_load_all(job.read_text()))  # templates are never mutated
    code, out, _ = run(capsys, "mutate", "-o", "json", str(src))
    assert json.loads(out)["spec"]["nodeSelector"]["workload.example.com/gpu-allocation"] == "device-plugin"


def test_other_kinds_of_alpha_dra_groups_are_not_legacy(capsys, tmp_path):
    f = tmp_path / "dra.yaml"
    f.write_text("apiVersion: resource.k8s.io/v1alpha3\nkind: DeviceTaintRule\nmetadata: {name: t}\n---\n"
                 "apiVersion: resource.k8s.io/v1alpha2\nkind: ResourceClass\nmetadata: {name: gpu}\ndriverName: "
                 "gpu.nvidia.com\n")
    code, out, _ = run(capsys, "check", "-o", "json", str(f))
    results = json.loads(out)
    assert code == 1
    assert [(r["kind"], r["namespace"], [v["rule"] for v in r["violations"]]) for r in results] == [
        ("ResourceClass", "", ["legacy-api"])]  # DeviceTaintRule is still served at v1alpha3: not ours


SNAPSHOT = DATA / "inventory"  # a `kubectl get nodes,resourceslices -o yaml` stand-in (PROVENANCE.md there)
_GPU_POD = """apiVersion: v1
kind: Pod
metadata: {{name: train, namespace: ai-workloads}}
spec:
  containers:
    - name: trainer
      image: registry.example.com/ml/app:1.0
      resources: {{limits: {{nvidia.com/gpu: {n}}}}}
"""


def _snapshot_list() -> str:
    """Nodes and ResourceSlices in one List, as `kubectl get nodes,resourceslices -o yaml` prints them."""
    items = yaml.safe_load((SNAPSHOT / "nodes.yaml").read_text())["items"]
    for name in ("nvidia-dra-h200.yaml", "nvidia-dra-h200-mig.yaml"):
        items.append(yaml.safe_load((SNAPSHOT / name).read_text()))
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})


@pytest.mark.parametrize(("gpus", "warned"), [
    pytest.param(8, False, id="fits-the-largest-node"),
    pytest.param(12, True, id="above-the-largest-node"),
])
def test_check_against_a_cluster_snapshot(capsys, tmp_path, gpus, warned):
    (tmp_path / "pod.yaml").write_text(_GPU_POD.format(n=gpus))
    (tmp_path / "cluster.yaml").write_text(_snapshot_list())
    code, out, err = run(capsys, "check", str(tmp_path / "pod.yaml"), str(tmp_path / "cluster.yaml"))
    assert code == 0 and err == ""
    assert f"- 6 nodes and 2 resourceslices ({tmp_path / 'cluster.yaml'}): the cluster capacity" in out
    assert "skipped" not in out and "other kinds" not in out
    assert ('is 8 (node "hybrid-dp-0")' in out) is warned
    code, out, err = run(capsys, "check", "-o", "json", "--fail-on-warn", str(tmp_path / "pod.yaml"),
                         str(tmp_path / "cluster.yaml"))
    rules = [v["rule"] for r in json.loads(out) for v in r["violations"]]
    assert (rules == ["unsatisfiable-request"]) is warned and code == (1 if warned else 0) and err == ""


def test_check_without_a_snapshot_says_nothing_of_capacity(capsys, tmp_path):
    (tmp_path / "pod.yaml").write_text(_GPU_POD.format(n=64))
    code, out, _ = run(capsys, "check", "-o", "json", str(tmp_path / "pod.yaml"))
    assert code == 0 and [v["rule"] for r in json.loads(out) for v in r["violations"]] == []
