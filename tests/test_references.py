"""The project's docs and code stand alone: every file they point at is in the repository, and they cite no
document a user does not have (a design document outside the repository, issue numbers)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import REPO

SOURCES = sorted([REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("webhook/**/*.py"),
                  *REPO.glob("webhook/**/*.md"), REPO / "pyproject.toml", REPO / "charts" / "gpu-admission" /
                  "values.yaml", *REPO.glob("charts/gpu-admission/*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a path into the repository as the docs and code write it: docs/rules/x.md, webhook/config/default.yaml
PATH = re.compile(r"(?<![\w./-])((?:docs|webhook|tests|charts|bench|tools)/[\w./-]*\w\.(?:md|py|yaml|yml|json|txt))")
FORBIDDEN = re.compile(r"DESIGN\.md|seed chapter|integration chapter|\bissue \d+|\(#\d+\)|サーバー統合の章")


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("source", [pytest.param(p, id=_rel(p)) for p in SOURCES])
def test_references_point_at_files_that_exist(source):
    text = source.read_text(encoding="utf-8")
    missing = []
    if source.suffix == ".md":
        for target in LINK.findall(text):
            target = target.split("#", 1)[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue
            if not (source.parent / target).exists():
                missing.append(target)
    for target in PATH.findall(text):
        if not (REPO / target).exists() and not (source.parent / target).exists():
            missing.append(target)
    assert missing == [], missing
    assert FORBIDDEN.findall(text) == []


def test_the_check_bites(tmp_path):
    """The patterns find what they are for."""
    assert LINK.findall("see [x](docs/nope.md#a)") == ["docs/nope.md#a"]
    assert PATH.findall("(webhook/audit/nope.py)") == ["webhook/audit/nope.py"]
    assert FORBIDDEN.findall("see DESIGN.md, issue 18") == ["DESIGN.md", "issue 18"]
    assert SOURCES and all(p.exists() for p in SOURCES)
