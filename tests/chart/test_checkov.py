"""checkov (Prisma Cloud's scanner of Kubernetes manifests, run from its own virtualenv: `make install` builds
.venv-checkov) over the rendered chart: no failed check, and every finding the chart means is skipped by a
`checkov.io/skipN` annotation on the object, with its reason. A value that removes the cause (image.digest,
networkPolicy.enabled) removes the exception too."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import REPO, VALUE_SETS, render_values

pytestmark = pytest.mark.slow
CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"

EVERYTHING = {**VALUE_SETS["audit-cronjob"], **VALUE_SETS["extras-on"], **VALUE_SETS["lookups-on"],
              "prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}}
# The uninstall hook (webhooksCleanup) is in every set: it mounts a token to delete the webhook configurations
# (CKV_K8S_38) and, accepting no connections, has no NetworkPolicy (CKV2_K8S_6).
SCANNED = {
    "default": ({}, {"CKV_K8S_11", "CKV_K8S_15", "CKV_K8S_43", "CKV2_K8S_6", "CKV_K8S_38"}),
    # digest pinned and NetworkPolicy on: those two exceptions go for the webhook; the audit and the lookups
    # mount a token
    "everything-on": (EVERYTHING, {"CKV_K8S_11", "CKV_K8S_15", "CKV_K8S_38", "CKV2_K8S_6"}),
    "host-network": (VALUE_SETS["host-network"], {"CKV_K8S_11", "CKV_K8S_15", "CKV_K8S_43", "CKV2_K8S_6",
                                                  "CKV_K8S_19", "CKV_K8S_26", "CKV_K8S_38"}),
    # runAsUser null: the platform picks the user
    "minimal": (VALUE_SETS["minimal"], {"CKV_K8S_11", "CKV_K8S_15", "CKV_K8S_43", "CKV2_K8S_6", "CKV_K8S_40",
                                        "CKV_K8S_38"}),
}


@pytest.fixture(scope="module")
def scan(tmp_path_factory) -> dict[str, dict]:
    """One checkov run over one file per value set: file stem -> its results."""
    assert os.access(CHECKOV, os.X_OK), f"checkov is not installed at {CHECKOV}: run `make install`"
    directory = tmp_path_factory.mktemp("rendered")
    for name, (values, _) in SCANNED.items():
        docs = [text for path, text in sorted(render_values(values).items()) if not path.endswith("NOTES.txt")]
        (directory / f"{name}.yaml").write_text("\n---\n".join(docs))
    result = subprocess.run([str(CHECKOV), "--directory", str(directory), "--framework", "kubernetes", "--output",
                             "json", "--skip-download", "--compact"], capture_output=True, text=True, timeout=300,
                            cwd=directory, env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})
    assert result.returncode in (0, 1), result.stderr[-2000:]
    report = json.loads(result.stdout)
    report = report[0] if isinstance(report, list) else report
    by_file: dict[str, dict] = {name: {"passed": [], "failed": [], "skipped": []} for name in SCANNED}
    for outcome in ("passed", "failed", "skipped"):
        for check in report["results"][f"{outcome}_checks"]:
            by_file[os.path.basename(check["file_path"]).removesuffix(".yaml")][outcome].append(check)
    return by_file


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in SCANNED])
def test_checkov_passes_the_rendered_chart_with_its_exceptions_stated(scan, name):
    results = scan[name]
    assert len(results["passed"]) > 50  # the scan ran over the objects
    failed = [f"{c['check_id']} {c['resource']}: {c['check_name']}" for c in results["failed"]]
    assert failed == []
    assert {c["check_id"] for c in results["skipped"]} == SCANNED[name][1]
    for check in results["skipped"]:
        reason = check["check_result"].get("suppress_comment", "")
        assert len(reason) > 40 and "=" not in reason[:3], f"{check['check_id']} on {check['resource']}: {reason!r}"
