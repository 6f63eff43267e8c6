"""One parity test over every real and seed manifest in tests/: `kubectl apply` through the real apiserver
admits or denies each object, with the same rule ids in its denial and warnings, as `gpu-admission check` said
for the same file. Claim and DeviceClass lookups are on, so the webhook resolves from the cluster what `check`
resolves from the file's other documents.

One difference is known and asserted: a claim or claim template that the webhook denies never exists in the
cluster, so the pod or workload after it in the same file is judged without it there (an unresolved-claim
warning, admitted), while `check` judges it against the template it reads from the file (denied with it). The
cluster's verdicts for such a file are `check`'s over the same file without the denied claims. Kinds the cluster
does not serve (ComputeDomain, DeviceTaintRule, PodGroup, Volcano's Job) are the kinds `check` skips, and
kubectl's "no matches for kind" errors name exactly those."""
from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO
from tests.support import REAL_MANIFESTS, SEED

pytestmark = pytest.mark.e2e

CLUSTER_SCOPED = {"Namespace", "DeviceClass"}
# Files no apiserver can take as they are: kubectl refuses each before the webhook sees anything.
NOT_APPLICABLE = {
    # the GPU Operator fills in the namespace (FILLED_BY_THE_VALIDATOR is no valid name)
    "NVIDIA_gpu-operator__validator_manifests_cuda-workload-validation.yaml",
    "NVIDIA_gpu-operator__validator_manifests_plugin-workload-validation.yaml",
    # PodGroup and the pod template's schedulingGroup: the alpha Workload API the e2e clusters do not serve
    "kubernetes-sigs_dra-example-driver__demo_examples_podgroup-resourceclaimtemplate_podgroup-resourceclaimtemplate"
    ".yaml",
    # no apiVersion
    "kubernetes-sigs_dra-example-driver__demo_examples_device-taints-tolerations_device-taint-pod-noschedule_4-"
    "pod-not-scheduled.yaml",
}
CLAIMS = {"ResourceClaim", "ResourceClaimTemplate"}
UNSERVED = re.compile(r'no matches for kind "([A-Za-z]+)"')
MANIFESTS = sorted(p for p in [*REAL_MANIFESTS.glob("*.y*ml"), *SEED.glob("*.yaml"),
                               *(Path(__file__).parent / "manifests").glob("*.yaml")] if p.name not in NOT_APPLICABLE)
RULE = re.compile(r"\[([a-z0-9-]+)\] https?://\S+$")
# the object a message names: `pod "ns/name"`, `job "ns/name"`, `deviceclass "name"`
SUBJECT = re.compile(r'^(?:Warning: )?(?:dry-run(?:, would deny)?: )?([a-z]+) "([^"]+)"')
DENIAL = re.compile(r'denied the request: ([a-z]+) "([^"]+)"')
# a denial's further violations, one a line after the first
MORE = re.compile(r'^([a-z]+) "([^"]+)"')


def check(path: Path) -> list[dict]:
    result = subprocess.run([*CLI, "check", "--output", "json", str(path)], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def as_the_cluster_judges(path: Path, docs: list[dict], tmp_path: Path) -> list[dict]:
    """`check`'s results, with the objects after a denied claim or template judged without it (the known
    difference)."""
    results = check(path)
    denied = {(r["kind"], r["namespace"], r["name"]) for r in results if r["kind"] in CLAIMS and not r["allowed"]}
    if not denied:
        return results
    kept = [d for d in docs if (d["kind"], d["metadata"].get("namespace", "default"), d["metadata"]["name"])
            not in denied]
    without = tmp_path / path.name
    without.write_text(yaml.safe_dump_all(kept))
    again = {(r["kind"], r["namespace"], r["name"]): r for r in check(without)}
    return [again.get((r["kind"], r["namespace"], r["name"]), r) for r in results]


def expected(results: list[dict]) -> tuple[dict, Counter, Counter]:
    """(object -> allowed, Counter of (object, rule) warned, and denied) from `check`."""
    verdicts, warned, denied = {}, Counter(), Counter()
    for r in results:
        key = (r["kind"].lower(), f"{r['namespace']}/{r['name']}" if r["namespace"] else r["name"])
        verdicts[key] = r["allowed"]
        for v in r["violations"]:
            if v["action"] == "warn":
                warned[(key, v["rule"])] += 1
            elif v["action"] == "enforce" and not r["allowed"]:
                denied[(key, v["rule"])] += 1
    return verdicts, warned, denied


def observed(stdout: str, stderr: str, docs: list[dict]) -> tuple[dict, Counter, Counter]:
    created = {line.split()[0].split("/", 1)[1] for line in stdout.splitlines() if " created" in line}
    verdicts = {}
    for d in docs:
        ns = d["metadata"].get("namespace") or ("" if d["kind"] in CLUSTER_SCOPED else "default")
        key = (d["kind"].lower(), f"{ns}/{d['metadata']['name']}" if ns else d["metadata"]["name"])
        verdicts[key] = d["metadata"]["name"] in created
    warned, denied = Counter(), Counter()
    for line in stderr.splitlines():
        rule = RULE.search(line)
        if line.startswith("Warning: ") and (subject := SUBJECT.match(line)) and rule:
            warned[((subject.group(1), subject.group(2)), rule.group(1))] += 1
        elif ((subject := DENIAL.search(line)) or (subject := MORE.match(line))) and rule:
            denied[((subject.group(1), subject.group(2)), rule.group(1))] += 1
    return verdicts, warned, denied


def namespaces_of(docs: list[dict]) -> set[str]:
    declared = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    return {d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")} - declared


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in MANIFESTS])
def test_kubectl_apply_agrees_with_check(cluster, kubectl, lookups, webhook, path, tmp_path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for ns in namespaces_of(docs):
        cluster.namespace(ns)
    try:
        result = kubectl.apply_file(path)
        want_verdicts, want_warned, want_denied = expected(as_the_cluster_judges(path, docs, tmp_path))
        got_verdicts, got_warned, got_denied = observed(result.stdout, result.stderr, docs)
        unserved = set(UNSERVED.findall(result.stderr))
        for key, allowed in want_verdicts.items():
            if key[0] in {u.lower() for u in unserved}:
                continue  # e.g. Volcano's Job: never created, and check skipped it
            assert got_verdicts.get(key) == allowed, (key, result.stdout, result.stderr)
        assert got_warned == want_warned, result.stderr
        assert got_denied == want_denied, result.stderr
        assert unserved <= {d["kind"] for d in docs}
        assert (result.returncode == 0) == (all(want_verdicts.values()) and not unserved), result.stderr
    finally:
        subprocess.run([str(kubectl.binary), "delete", "-f", str(path), "--ignore-not-found", "--wait=true",
                        "--timeout=60s"], capture_output=True,
                        env={**os.environ, "KUBECONFIG": str(kubectl.kubeconfig)})


def test_the_files_left_out_are_real_manifests_kubectl_refuses():
    for name in NOT_APPLICABLE:
        docs = [d for d in yaml.safe_load_all((REAL_MANIFESTS / name).read_text()) if d]
        assert any("apiVersion" not in d or "FILLED_BY" in str(d.get("metadata", {}).get("namespace", ""))
                   or d.get("kind") == "PodGroup" for d in docs), name
