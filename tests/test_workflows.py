"""The GitHub Actions workflows: actionlint (built from its pinned module, tools/go/actionlint, by tools/gotools.py:
about 20 s the first time, then cached under build/go-tools) finds nothing in them, and finds what it should in a
copy with a mistake; the release workflow runs `make release` and publishes what it wrote, signed, by digest."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import REPO
from tools import gotools

WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yaml"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    try:
        return gotools.binary("actionlint")
    except gotools.ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def _lint(actionlint: Path, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(actionlint), "-no-color", *map(str, files)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)


def test_actionlint_finds_nothing_in_the_workflows(actionlint):
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert RELEASE in files
    done = _lint(actionlint, *files)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("change, message", [
    pytest.param(("${{ github.repository }}", "${{ github.repositry }}"), 'property "repositry" is not defined',
                 id="unknown-context-property"),
    pytest.param(("needs: build", "needs: built"), 'needs job "built" which does not exist', id="unknown-job"),
    pytest.param(("id-token: write", "id-token: sign"), '"sign" is invalid as permission of scope "id-token"',
                 id="bad-permission"),
])
def test_actionlint_reports_a_mistake_in_a_copy(actionlint, tmp_path, change, message):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    broken = tmp_path / ".github" / "workflows" / "release.yaml"
    text = RELEASE.read_text()
    assert change[0] in text
    broken.write_text(text.replace(change[0], change[1], 1))
    done = _lint(actionlint, broken)
    assert done.returncode == 1 and message in done.stdout, done.stdout


def _steps(job: str) -> list[dict]:
    return yaml.safe_load(RELEASE.read_text())["jobs"][job]["steps"]


def test_the_release_workflow_builds_with_make_release_and_publishes_by_digest_signed_keyless():
    workflow = yaml.safe_load(RELEASE.read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as true
    assert workflow["permissions"] == {}
    build = "\n".join(s.get("run", "") for s in _steps("build"))
    assert "make release-check" in build and 'pyproject.toml' in build
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"]["id-token"] == "write"  # keyless: GitHub's OIDC token for Fulcio
    run = "\n".join(s.get("run", "") for s in publish["steps"])
    assert "sha256sum --check --strict SHA256SUMS" in run
    assert "skopeo copy --all --preserve-digests" in run  # the index and both images, digests unchanged
    assert '"$COSIGN" sign --yes "$IMAGE@$IMAGE_DIGEST"' in run  # by digest, never a tag
    assert "attest --yes --type cyclonedx" in run
    assert '"$COSIGN" sign --yes "${CHARTS#oci://}/gpu-admission@$chart_digest"' in run
    assert "--key" not in run  # keyless
    assert "tools.gotools cosign" in run  # the pinned cosign, as the tests use it
    uses = [s["uses"].split("@")[0] for s in publish["steps"] if "uses" in s]
    assert "pypa/gh-action-pypi-publish" in uses
