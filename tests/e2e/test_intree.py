"""The exported in-tree policies in a real apiserver (issue 18): accepted, type-checked without warnings,
deciding as the engine does, and `export --check` telling drift."""
from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO, wait_for

pytestmark = pytest.mark.e2e


def export(*args: str) -> list[dict]:
    result = subprocess.run([*CLI, "export", "-o", "json", *args], cwd=REPO, capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout)["items"]


def export_check(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "export", "--check", "--kubeconfig", str(cluster.kubeconfig), *args], cwd=REPO,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def in_tree(cluster, kubectl):
    objects = export()
    kubectl.apply(yaml.safe_dump_all(objects))
    yield objects
    kubectl.run("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "-l",
                "app.kubernetes.io/managed-by=gpu-admission", "--wait=true", check=False)


def test_exported_policies_type_check_without_warnings(in_tree, kubectl):
    names = [o["metadata"]["name"] for o in in_tree if o["kind"] == "ValidatingAdmissionPolicy"]
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
