"""Helpers shared by the test suites: where the repo and the shared fixtures are, and loading manifests."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
# Copies of the shared fixtures (real manifests, kubernetes/api testdata, nvidia-smi output), each folder with
# its PROVENANCE.md: a fresh clone with nothing beside it runs the whole suite.
FIXTURES = DATA / "fixtures"
REAL_MANIFESTS = FIXTURES / "real-manifests"
API_TESTDATA = FIXTURES / "k8s-api-testdata"
SEED = DATA / "seed"
# `make test` runs the suite twice: against the sources, then with this variable naming the package as the
# container image builds it (`make compiled`: the request path compiled with mypyc). Relative to the repo.
BUILD_VARIABLE = "GPU_ADMISSION_TEST_BUILD"
BUILD = REPO / os.environ[BUILD_VARIABLE] if os.environ.get(BUILD_VARIABLE) else None


def group_pids(pgid: int) -> list[int]:
    """The processes of process group `pgid`: a server started in its own session (Linux /proc)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                pids.append(int(pid))
        except OSError:  # gone meanwhile
            continue
    return pids


def runs_compiled(pgid: int) -> bool:
    """Whether the server started as process group `pgid` has mypyc-compiled modules loaded."""
    maps = []
    for pid in group_pids(pgid):
        try:
            maps.append(Path(f"/proc/{pid}/maps").read_text())
        except OSError:
            continue
    assert len(maps) >= 2, "a gunicorn master and its workers"
    return any("__mypyc" in m for m in maps)


def python_env(env: dict) -> dict:
    """`env` for a Python subprocess, so that it imports the same build of the package as this test run."""
    if BUILD is None:
        return env
    path = os.pathsep.join(filter(None, (str(BUILD), env.get("PYTHONPATH"))))
    # PYTHONSAFEPATH: `python -m` from the repo must not put the sources ahead of the build.
    return {**env, "PYTHONPATH": path, "PYTHONSAFEPATH": "1"}


def load_docs(*paths: Path) -> list[dict]:
    docs = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d)
    return docs


def seed_docs() -> list[dict]:
    return load_docs(*sorted(SEED.glob("*.yaml")))


def compare_golden(lines, path: Path, *, update: bool, suite: str) -> None:
    """The lines against the golden file `path`, one per line; with `update` (pytest --update-golden) the file is
    rewritten instead. A missing or different file fails."""
    lines = list(lines)
    text = "".join(line + "\n" for line in lines)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), (f"golden file {path.relative_to(REPO)} is missing: run `pytest {suite} "
                           "--update-golden`, then read every new line before committing it")
    assert lines == path.read_text(encoding="utf-8").splitlines(), \
        f"messages differ from {path.relative_to(REPO)} (rerun with --update-golden if the change is intended)"
