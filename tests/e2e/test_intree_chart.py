"""A release's own policy with the chart's inTree (issue 18): refused with the shipped default's export,
installed with the export `gpu-admission export --chart-values` wrote from the policy the release renders
(`export --check` of that policy against the real apiserver is clean, in the cluster's MutatingAdmissionPolicy
API version), and refused again once the policy changed after the export."""
from __future__ import annotations

import base64
import gzip
import subprocess

import helm_python
import pytest
import yaml

from tests.e2e.conftest import CHART, CLI, NAMESPACE, RELEASE, REPO

pytestmark = pytest.mark.e2e

OWN = {"rules": {"run-as-root": "warn"},
       "policy": {"namespaceOverrides": [{"namespaces": ["ml"], "mode": "dry-run"}],
                  "exceptions": [{"name": "ci", "namespaces": ["ci"], "rules": ["run-as-root"]}]}}


def _rendered_policy(values: dict) -> str:
    """The policy.yaml the release would render (`helm template`, as docs/deployment.md says to get it)."""
    for name, text in helm_python.Chart.load(str(CHART)).render(values, name=RELEASE, namespace=NAMESPACE).items():
        if not name.endswith(".yaml"):
            continue  # NOTES.txt
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "ConfigMap" and "policy.yaml" in (doc.get("data") or {}):
                return doc["data"]["policy.yaml"]
    raise AssertionError("no policy ConfigMap rendered")


def _release_size(kubectl) -> tuple[int, int]:
    """The deployed release's Secret: its `release` field's bytes (what the apiserver stores, limited to
    1 MiB per Secret) and the release JSON's bytes once decoded."""
    secrets = kubectl.json("get", "secret", "-n", NAMESPACE, "-l", f"owner=helm,name={RELEASE},status=deployed")
    (secret,) = secrets["items"]
    stored = base64.b64decode(secret["data"]["release"])  # Kubernetes' own base64 of the Secret data
    return len(stored), len(gzip.decompress(base64.b64decode(stored)))


def test_a_releases_own_policy_installs_its_export_through_the_chart(cluster, kubectl, release, tmp_path):
    with pytest.raises(helm_python.HelmError, match="this release's policy differs from it"):
        release.upgrade({**OWN, "inTree": {"validation": True}})  # the shipped default's export: refused
    base = tmp_path / "policy.yaml"
    base.write_text(_rendered_policy(release.values(OWN)), encoding="utf-8")
    minor = ".".join(cluster.version.removeprefix("v").split(".")[:2])
    printed = subprocess.run([*CLI, "export", "--chart-values", "--base", str(base),
                              "--kubernetes-version", minor], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout
    exported = helm_python.values_from_yaml(printed)["inTree"]
    try:
        release.upgrade({**OWN, "inTree": {"validation": True, "mutation": True, **exported}})
        check = subprocess.run([*CLI, "export", "--check", "--kubeconfig", str(cluster.kubeconfig),
                                "--base", str(base)], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr
        live = kubectl.json("get", "validatingadmissionpolicybinding", "-l", "gpu-admission.io/rule=run-as-root")
        actions = sorted(tuple(i["spec"]["validationActions"]) for i in live["items"])
        assert ("Warn",) in actions  # the release's own policy, not the shipped default's (enforce: Deny)
        stored, decoded = _release_size(kubectl)
        print(f"\nrelease Secret with its own export: values file {len(printed)} B, release field {stored} B, "
              f"release JSON {decoded} B")
        assert stored < 1024 * 1024
        # the policy changed after the export: refused, and the release stays as it was
        with pytest.raises(helm_python.HelmError, match=r"inTree\.exported was exported from"):
            release.upgrade({**OWN, "rules": {"run-as-root": "enforce"},
                             "inTree": {"validation": True, **exported}})
        after = kubectl.json("get", "validatingadmissionpolicybinding", "-l", "gpu-admission.io/rule=run-as-root")
        assert after["items"] == live["items"]
    finally:
        release.upgrade()
