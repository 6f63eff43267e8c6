"""The Dockerfile read as a builder reads it: its instructions (continuation lines joined, comments dropped) and its
stages. Shared by the tests of the Dockerfile itself, of the installs that repeat its steps, and of the image."""
from __future__ import annotations

import json
import shlex

from tests.support import REPO

DOCKERFILE = REPO / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order."""
    out, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        pending += " " + stripped.rstrip("\\").strip()
        if not stripped.endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            out.append((keyword.upper(), rest.strip()))
            pending = ""
    return out


def stages() -> list[dict]:
    """Each stage: its `from`, its `platform` (FROM --platform=..., or None), its `name` (AS ...) and its `steps`,
    the (INSTRUCTION, arguments) after FROM."""
    out: list[dict] = []
    for keyword, args in instructions():
        if keyword == "FROM":
            parts = args.split()
            flags = dict(p.removeprefix("--").split("=", 1) for p in parts if p.startswith("--"))
            image, *rest = [p for p in parts if not p.startswith("--")]
            out.append({"from": image, "platform": flags.get("platform"), "name": rest[1] if len(rest) > 1 else None,
                        "steps": []})
        else:
            out[-1]["steps"].append((keyword, args))
    return out


def root(stage: dict, all_stages: list[dict]) -> str:
    """The image a stage is built on in the end, through the stages it is built from."""
    names = {s["name"]: s for s in all_stages if s["name"]}
    return root(names[stage["from"]], all_stages) if stage["from"] in names else stage["from"]


def lineage(stage: dict, all_stages: list[dict]) -> list[dict]:
    """The stage and the stages it is built from, the first one first."""
    names = {s["name"]: s for s in all_stages if s["name"]}
    return (lineage(names[stage["from"]], all_stages) if stage["from"] in names else []) + [stage]


def build_stage() -> dict:
    """The stage that installs the project (the one whose RUN installs requirements.lock with pip)."""
    (stage,) = [s for s in stages() if any(k == "RUN" and "pip" in a and "requirements.lock" in a
                                            for k, a in s["steps"])]
    return stage


def entrypoint() -> list[str]:
    (found,) = [json.loads(args) for k, args in stages()[-1]["steps"] if k == "ENTRYPOINT"]
    return found


def env(stage: dict) -> dict[str, str]:
    """The stage's ENV as KEY=VALUE pairs (values unquoted, $VAR left as written)."""
    out: dict[str, str] = {}
    for keyword, args in stage["steps"]:
        if keyword == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                out[key] = value
    return out


def label(name: str) -> str | None:
    for keyword, args in stages()[-1]["steps"]:
        if keyword == "LABEL":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                if key == name:
                    return value
    return None
