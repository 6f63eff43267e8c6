"""One parity test over every real and seed manifest in tests/: `kubectl apply` through the real apiserver
admits or denies each object, with the same rule ids in its denial and warnings, as `gpu-admission check` said
for the same file. Claim and DeviceClass lookups are on, so the webhook resolves from the cluster what `check`
resolves from the file's other documents."""
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

MANIFESTS = sorted([*REAL_MANIFESTS.glob("*.yaml"), *SEED.glob("*.yaml"),
                    *(Path(__file__).parent / "manifests").glob("*.yaml")])
CLUSTER_SCOPED = {"Namespace", "DeviceClass"}
RULE = re.compile(r"\[([a-z0-9-]+)\] https?://\S+$")
# the object a message names: `pod "ns/name"`, `job "ns/name"`, `deviceclass "name"`
SUBJECT = re.compile(r'^(?:Warning: )?(?:dry-run(?:, would deny)?: )?([a-z]+) "([^"]+)"')
DENIAL = re.compile(r'denied the request: ([a-z]+) "([^"]+)"')
CONTINUED = re.compile(r'^([a-z]+) "([^"]+)": ')


def check(path: Path) -> list[dict]:
    result = subprocess.run([*CLI, "check", "--output", "json", str(path)], cwd=REPO, capture_output=True,
                            text=True)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


# What later objects of a file resolve: a refused one of these kinds is never created, so they cannot.
RESOLVED_KINDS = {"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}


def check_as_applied(path: Path, docs: list[dict], tmp_path: Path) -> list[dict]:
    """`check` as `kubectl apply` meets the file: a claim, template or DeviceClass the webhook refuses is never
    created, so the objects that use it find nothing (unresolved-claim) where `check` resolved them from the
    file. Their verdicts come from `check` over the file without the refused documents."""
    results = check(path)
    refused = {(r["kind"], r["namespace"], r["name"]) for r in results
               if not r["allowed"] and r["kind"] in RESOLVED_KINDS}
    if not refused:
        return results

    def key(d: dict) -> tuple[str, str, str]:
        ns = "" if d["kind"] in CLUSTER_SCOPED else d["metadata"].get("namespace") or "default"
        return d["kind"], ns, d["metadata"]["name"]

    kept = tmp_path / path.name
    kept.write_text(yaml.safe_dump_all([d for d in docs if key(d) not in refused]), encoding="utf-8")
    return [r for r in results if (r["kind"], r["namespace"], r["name"]) in refused] + check(kept)


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
    in_denial = False  # a denial with several findings: one per line, the first after kubectl's prefix
    for line in stderr.splitlines():
        rule = RULE.search(line)
        if line.startswith("Warning: ") and (subject := SUBJECT.match(line)) and rule:
            warned[((subject.group(1), subject.group(2)), rule.group(1))] += 1
            in_denial = False
        elif (subject := DENIAL.search(line)) and rule:
            denied[((subject.group(1), subject.group(2)), rule.group(1))] += 1
            in_denial = True
        elif in_denial and (subject := CONTINUED.match(line)) and rule:
            denied[((subject.group(1), subject.group(2)), rule.group(1))] += 1
        else:
            in_denial = False
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
        want_verdicts, want_warned, want_denied = expected(check_as_applied(path, docs, tmp_path))
        got_verdicts, got_warned, got_denied = observed(result.stdout, result.stderr, docs)
        for key, allowed in want_verdicts.items():
            assert got_verdicts.get(key) == allowed, (key, result.stdout, result.stderr)
        assert got_warned == want_warned, result.stderr
        assert got_denied == want_denied, result.stderr
        assert (result.returncode == 0) == all(want_verdicts.values()), result.stderr
    finally:
        subprocess.run([str(kubectl.binary), "delete", "-f", str(path), "--ignore-not-found", "--wait=true",
                        "--timeout=60s"], capture_output=True,
                        env={**os.environ, "KUBECONFIG": str(kubectl.kubeconfig)})
