"""The exported in-tree policies in a real apiserver (issue 18): accepted, type-checked without warnings,
deciding as the engine does, and `export --check` telling drift."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from tests.e2e.conftest import CLI, GOLDEN, LOOKUPS, REPO, wait_for
from tests.e2e.test_parity import MANIFESTS, RULE, namespaces_of, observed
from webhook.objects.kinds import POD_BEARING
from webhook.policy.coverage import EXPORTED as EXPORTED_RULES

EXPORTED = {r.value for r in EXPORTED_RULES}

POD_KINDS = {k.kind for k in POD_BEARING}

pytestmark = pytest.mark.e2e


def export(*args: str) -> list[dict]:
    """The ValidatingAdmissionPolicies (tests/e2e/test_intree_mutation.py has the mutating ones)."""
    result = subprocess.run([*CLI, "export", "-o", "json", "--only", "validating", *args], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["items"]


def export_check(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "export", "--check", "--only", "validating", "--kubeconfig", str(cluster.kubeconfig),
                           *args], cwd=REPO,
                          capture_output=True, text=True)


@pytest.fixture
def in_tree(cluster, kubectl):
    objects = export()
    kubectl.apply(yaml.safe_dump_all(objects))
    yield objects
    kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                "app.kubernetes.io/managed-by=gpu-admission", "--wait=true", check=False)


def test_exported_policies_type_check_without_warnings(in_tree, kubectl):
    _type_check_without_warnings(in_tree, kubectl)


def _type_check_without_warnings(objects: list[dict], kubectl) -> None:
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ValidatingAdmissionPolicy"]
    assert names

    def checked():
        items = kubectl.json("get", "validatingadmissionpolicy", "-l", "app.kubernetes.io/managed-by=gpu-admission")
        done = {i["metadata"]["name"]: i.get("status", {}) for i in items["items"]
                if i.get("status", {}).get("observedGeneration") == i["metadata"]["generation"]}
        return done if set(done) >= set(names) else None

    statuses = wait_for(checked, "the apiserver's type checking of the exported policies")
    for name in names:
        assert statuses[name].get("typeChecking", {}).get("expressionWarnings", []) == [], (name, statuses[name])
        assert not statuses[name].get("conditions") or all(c["status"] != "False" for c in statuses[name]["conditions"])


def test_export_check_is_clean_then_tells_drift(in_tree, cluster, kubectl):
    clean = export_check(cluster)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    drifted = export_check(cluster, "--set", "rules.visible-devices-override=warn")
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert "ValidatingAdmissionPolicyBinding gpu-admission.visible-devices-override.pods.default: differs" \
        in drifted.stdout
    assert "ValidatingAdmissionPolicy gpu-admission.visible-devices-override.pods:" not in drifted.stdout


# ------------------------------------------------------------------------------------ parity with the webhook

IN_TREE_SUBJECT = re.compile(r"""(?:denied request|with binding '[^']+'): ([a-z]+) "([^"]+)"(?=: )""")
PROBE = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "in-tree-probe", "namespace": "default"},
         "spec": {"containers": [{"name": "probe", "image": "registry.example.invalid/probe:1",
                                  "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}


def _verdicts(result, docs: list[dict]) -> tuple[dict, set, set]:
    """(object -> created, {(object, rule)} warned, {(object, rule)} denied), from the webhook's lines and
    the in-tree policies' (`... with binding 'b': pod "ns/name": ...` and `... denied request: pod ...`)."""
    verdicts, warned, denied = observed(result.stdout, result.stderr, docs)
    warned, denied = set(warned), set(denied)
    for line in result.stderr.splitlines():
        rule, subject = RULE.search(line), IN_TREE_SUBJECT.search(line)
        if rule and subject:
            key = ((subject.group(1), subject.group(2)), rule.group(1))
            (warned if line.startswith("Warning: ") else denied).add(key)
    in_tree = sum("ValidatingAdmissionPolicy '" in line for line in result.stderr.splitlines())
    return verdicts, warned, denied, in_tree


def _apply_all(cluster, kubectl) -> dict:
    out = {}
    for path in MANIFESTS:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for ns in namespaces_of(docs):
            cluster.namespace(ns)
        try:
            out[path.name] = _verdicts(kubectl.apply_file(path), docs)
        finally:
            kubectl.run("delete", "-f", str(path), "--ignore-not-found", "--wait=true", "--timeout=60s", check=False)
    return out


def _probe_last(objects: list[dict]) -> list[dict]:
    """`objects` with the policy _in_tree_answers probes, and its bindings, applied last: kubectl applies in
    order and the apiserver's informers deliver in order, so once the probe is answered, all are in force."""
    def probed(o: dict) -> bool:
        return o["metadata"]["name"].startswith(PROBED + ".") or o["metadata"]["name"] == PROBED
    return [o for o in objects if not probed(o)] + [o for o in objects if probed(o)]


PROBED = "gpu-admission.visible-devices-override.pods"


def _in_tree_answers(kubectl) -> bool:
    result = kubectl.create(PROBE, "--dry-run=server", check=False)
    return f"ValidatingAdmissionPolicy '{PROBED}'" in result.stderr


MUTATION_PROBE = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "in-tree-mutation-probe", "namespace": "default"},
                  "spec": {"nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid",
                                            "workload.example.com/gpu-allocation": "device-plugin"},
                           "containers": [{"name": "probe", "image": "registry.example.invalid/cuda:12",
                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def _in_tree_mutates(kubectl) -> bool:
    """The MutatingAdmissionPolicies answer (the webhook, inTree.mutation on, no longer sets the class)."""
    result = kubectl.create(MUTATION_PROBE, "--dry-run=server", "-o", "json", check=False)
    return result.returncode == 0 and json.loads(result.stdout)["spec"].get("runtimeClassName") == "nvidia"


def test_corpus_verdicts_webhook_only_and_in_tree_with_webhook(cluster, kubectl, lookups, webhook, release):
    """The manifest corpus applied webhook-only, then with the chart's in-tree policies (validating and
    mutating) and the webhook leaving their rules to them: the same objects admitted, the same (object, rule)
    warnings, and the same denials, except that a denial by an in-tree policy ends admission before the webhook
    is called (the apiserver's chain stops at the first denial): then its rules are a non-empty part of the
    webhook's."""
    alone = _apply_all(cluster, kubectl)
    release.upgrade({"lookups": LOOKUPS, "inTree": {"validation": True, "mutation": True}})
    try:
        wait_for(lambda: _in_tree_answers(kubectl), "the in-tree policies to answer")
        wait_for(lambda: _in_tree_mutates(kubectl), "the in-tree mutating policies to answer")
        together = _apply_all(cluster, kubectl)
    finally:
        release.upgrade({"lookups": LOOKUPS})
        wait_for(lambda: not _in_tree_answers(kubectl), "the in-tree policies to be gone")
    assert sum(r[3] for r in alone.values()) == 0
    # the corpus's denied.yaml: a literal CUDA_VISIBLE_DEVICES and a device hostPath, decided in-tree
    assert sum(r[3] for r in together.values()) >= 2, together
    in_tree_denials = 0
    for name, (verdicts, warned, denied, _) in alone.items():
        got_verdicts, got_warned, got_denied, _ = together[name]
        assert got_verdicts == verdicts, name
        assert got_warned == warned, name
        by_object: dict = {}
        for (obj, rule) in denied:
            by_object.setdefault(obj, set()).add(rule)
        got_by_object: dict = {}
        for (obj, rule) in got_denied:
            got_by_object.setdefault(obj, set()).add(rule)
        assert set(got_by_object) == set(by_object), name
        for obj, rules in by_object.items():
            got = got_by_object[obj]
            if got & EXPORTED and not rules <= got:
                in_tree_denials += 1
                assert got and got <= rules, (name, obj, got, rules)
            else:
                assert got == rules, (name, obj, got, rules)
    print(f"objects denied first by an in-tree policy: {in_tree_denials}")


# ------------------------------------------------------------------------ double-mechanism, message for message

DOUBLE = REPO / "tests" / "e2e" / "manifests" / "double-mechanism.yaml"
WEBHOOK_DENIAL = re.compile(r"denied the request: (.+)$", re.M)
IN_TREE_DENIAL = re.compile(r"ValidatingAdmissionPolicy 'gpu-admission\.double-mechanism\.[a-z]+' with binding "
                            r"'[^']+' denied request: (.+)$", re.M)


def _double_answers(kubectl, docs: list[dict]) -> list[tuple[int, list[str], list[str]]]:
    out = []
    for doc in docs:
        result = kubectl.create(doc, "--dry-run=server", check=False)
        out.append((result.returncode, WEBHOOK_DENIAL.findall(result.stderr), IN_TREE_DENIAL.findall(result.stderr)))
    return out


def test_double_mechanism_in_tree_says_what_the_webhook_says(cluster, kubectl, lookups, webhook):
    """Device-plugin GPUs beside deviceclass.resource.kubernetes.io/<class> resources, which this apiserver
    accepts (kubernetes.io-prefixed names are native: no feature gate, requests without limits allowed).
    The webhook alone, then the exported policies in front of it: the same objects denied, and each denial's
    line the same, the in-tree one from the apiserver's own CEL (its map keys in no order: `min()` picks the
    name the webhook reads first, the least, as the apiserver sends the keys sorted)."""
    docs = [d for d in yaml.safe_load_all(DOUBLE.read_text()) if d]
    for ns in namespaces_of(docs):
        cluster.namespace(ns)
    alone = _double_answers(kubectl, docs)
    assert sum(code != 0 for code, _, _ in alone) == 4, alone
    assert all(not in_tree for _, _, in_tree in alone), alone
    objects = [o for o in export() if o["metadata"]["labels"]["gpu-admission.io/rule"] == "double-mechanism"]
    assert objects
    kubectl.apply(yaml.safe_dump_all(objects))
    try:
        # one policy per pod-spec shape, each active once the apiserver's informer has it and its binding:
        # wait for every object the webhook denied to be answered by its shape's policy
        denied = [doc for doc, (code, _, _) in zip(docs, alone, strict=True) if code != 0]
        wait_for(lambda: all(in_tree for _, _, in_tree in _double_answers(kubectl, denied)),
                 "every shape's double-mechanism policy to answer")
        together = _double_answers(kubectl, docs)
    finally:
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                    "gpu-admission.io/rule=double-mechanism", "--wait=true", check=False)
    for doc, (code, by_webhook, _), (got_code, _, by_policy) in zip(docs, alone, together, strict=True):
        name = doc["metadata"]["name"]
        assert (got_code == 0) == (code == 0), (name, by_webhook, by_policy)
        assert by_policy == [m for m in by_webhook if "[double-mechanism]" in m], name
    first = together[0][2][0]
    assert "requests nvidia.com/gpu (spec.containers[0].resources.limits) and " \
           "deviceclass.resource.kubernetes.io/hybrid-full-gpu" in first, first


# ------------------------------------------------------------------------------------------------ cost

def _largest_pod_bearing(count: int) -> list[dict]:
    docs = [d for p in MANIFESTS for d in yaml.safe_load_all(p.read_text()) if d and d.get("kind") in POD_KINDS]
    return sorted(docs, key=lambda d: len(json.dumps(d)), reverse=True)[:count]


def _crowded_pod() -> dict:
    """A pod at the corpus's far end: many containers, variables, volumes and annotations, and one finding
    at the very end, so that every expression walks everything."""
    env = [{"name": f"VAR_{i}", "value": str(i)} for i in range(200)]
    # a device-plugin GPU in each and no DRA one: double-mechanism's DRA side reads every resource name
    resources = {"limits": {"nvidia.com/gpu": "1", **{f"example.com/r{j}": "1" for j in range(20)}}}
    containers = [{"name": f"c{i}", "image": "registry.example.invalid/app:1", "env": env, "resources": resources,
                   "volumeMounts": [{"name": f"v{j}", "mountPath": f"/data/{j}"} for j in range(20)]}
                  for i in range(40)]
    containers[-1] = {**containers[-1], "env": [*env, {"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "crowded", "namespace": "default",
                         "annotations": {f"example.com/a{i}": "x" for i in range(100)}},
            "spec": {"containers": containers,
                     "volumes": [{"name": f"v{j}", "hostPath": {"path": f"/data/{j}"}} for j in range(20)]}}


@pytest.mark.parametrize("language", [
    pytest.param([], id="english"),
    # the messages in two languages, picked by namespace: the crowded pod's is the Japanese one
    pytest.param(["--set", "namespaceOverrides=[{namespaces: [default], language: ja}]"], id="japanese-override"),
])
def test_largest_pods_are_evaluated_within_the_cost_budgets(cluster, kubectl, language):
    """With failurePolicy Fail (onError: deny), a CEL cost or evaluation error would deny with the
    apiserver's own message: the largest pod-bearing objects of the corpus, and a crowded pod, are decided by
    the rules' messages only."""
    strict = [f"rules.{r}={{action: enforce, onError: deny}}"
              for r in sorted(EXPORTED)]
    objects = export(*(a for s in strict for a in ("--set", s)), *language)
    assert {o["spec"]["failurePolicy"] for o in objects if o["kind"] == "ValidatingAdmissionPolicy"} == {"Fail"}
    kubectl.apply(yaml.safe_dump_all(_probe_last(objects)))
    try:
        wait_for(lambda: _in_tree_answers(kubectl), "the in-tree policies to answer")
        for doc in [*_largest_pod_bearing(5), _crowded_pod()]:
            doc = {**doc, "metadata": {**doc["metadata"], "namespace": "default"}}
            result = kubectl.create(doc, "--dry-run=server", check=False)
            assert "cost" not in result.stderr and "expression" not in result.stderr.lower(), result.stderr
            assert result.returncode == 0 or "[visible-devices-override]" in result.stderr or \
                "[device-access-bypass]" in result.stderr or "gpu-admission" in result.stderr, result.stderr
        crowded = kubectl.create(_crowded_pod(), "--dry-run=server", check=False)
        assert "spec.containers[39].env[200]" in crowded.stderr, crowded.stderr
        assert ("。対処: " in crowded.stderr) == bool(language), crowded.stderr
    finally:
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                    "app.kubernetes.io/managed-by=gpu-admission", "--wait=true", check=False)


# ------------------------------------------------------------------------------------------------ language

def _gpu_pod(namespace: str, name: str, env: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                                     "env": env, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_a_japanese_in_tree_denial_as_kubectl_prints_it(cluster, kubectl, tmp_path, golden):
    """A namespace whose messages the policy gives in Japanese (namespaceOverrides[].language): the exported
    policy's denial, by the real apiserver alone, is the webhook's Japanese line (tests/golden/e2e/
    denial-visible-devices-ja.txt has the webhook's); the same policy object speaks English in another
    namespace, and the benign twin is created without a word."""
    ja, en = cluster.namespace("ml-intree-ja"), cluster.namespace("ml-intree-en")
    objects = export("--set", f"namespaceOverrides=[{{namespaces: [{ja}], language: ja}}]")
    kubectl.apply(yaml.safe_dump_all(objects))
    try:
        _type_check_without_warnings(objects, kubectl)
        wait_for(lambda: _in_tree_answers(kubectl), "the in-tree policies to answer")
        override = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
        results = {}
        for namespace in (ja, en):
            (tmp_path / namespace).mkdir()
            path = tmp_path / namespace / "pod.yaml"
            path.write_text(yaml.safe_dump(_gpu_pod(namespace, "cuda", override)))
            results[namespace] = kubectl.apply_file(path)
            assert results[namespace].returncode == 1 and results[namespace].stdout == ""
        golden(results[ja].stderr, "denial-in-tree-visible-devices-ja")
        golden(results[en].stderr, "denial-in-tree-visible-devices")
        for namespace, webhooks in ((ja, "denial-visible-devices-ja"), (en, "denial-visible-devices")):
            # the webhook's line for the same pod (tests/e2e/test_kubectl.py, namespace ml-golden[-ja])
            line = (GOLDEN / f"{webhooks}.txt").read_text(encoding="utf-8").split("denied the request: ", 1)[1]
            expected = re.sub(r'^pod "ml-golden(-ja)?/', f'pod "{namespace}/', line)
            assert results[namespace].stderr.split("denied request: ", 1)[1] == expected
        assert "ValidatingAdmissionPolicy 'gpu-admission.visible-devices-override.pods'" in results[ja].stderr
        assert "。対処: " in results[ja].stderr and "/docs/rules/ja/visible-devices-override.md" in results[ja].stderr
        assert "対処" not in results[en].stderr and "/docs/rules/visible-devices-override.md" in results[en].stderr
        twin = tmp_path / "twin.yaml"
        twin.write_text(yaml.safe_dump(_gpu_pod(ja, "cuda-twin", [{"name": "MODEL_DIR", "value": "/models"}])))
        created = kubectl.apply_file(twin, "--dry-run=server")
        assert (created.returncode, created.stderr) == (0, ""), created.stderr
    finally:
        kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                    "app.kubernetes.io/managed-by=gpu-admission", "--wait=true", check=False)
