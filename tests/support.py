"""Helpers shared by the test suites: where the repo and the shared fixtures are, and loading manifests."""
from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# CI lays a copy of shared/ beside the clone; locate it relative to the repo, never by absolute path.
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"
REAL_MANIFESTS = FIXTURES / "real-manifests"
API_TESTDATA = FIXTURES / "k8s-api-testdata"
SEED = DATA / "seed"


def load_docs(*paths: Path) -> list[dict]:
    docs = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d)
    return docs


def seed_docs() -> list[dict]:
    return load_docs(*sorted(SEED.glob("*.yaml")))
