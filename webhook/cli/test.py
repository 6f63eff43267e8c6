"""`gpu-admission test DIR`: declarative policy tests that a platform team keeps beside its policy, as
`kyverno test` and `gator verify` give their users. Every `gpu-admission-test.yaml` under DIR (hidden
folders left out) names the policy overlays, the manifests, and the verdict each object must get:

    name: team GPU pods                  # shown in the report
    policy: [../policy/gpu.yaml]         # overlays over the shipped default, relative to this file (optional)
    base: ../policy/full.yaml            # a complete policy instead of the default (optional)
    namespace: default                   # for documents that name none (optional)
    resources: [pods.yaml]               # the manifests, relative to this file
    results:
      - kind: Pod
        name: override
        namespace: ai                    # optional: any namespace
        allowed: false
        rules: [visible-devices-override] # optional: exactly the validating rules that speak
        patch: true                      # optional: whether the mutating webhook would patch it

Exit 0 when every expected result holds, 1 when one does not (each printed as FAIL with what came
instead), 2 when a test file, its policy or its manifests cannot be read."""
from __future__ import annotations

import sys
from pathlib import Path

from webhook import yamlread
from webhook.cli.common import EXIT_DENIED, EXIT_ERROR, EXIT_OK, evaluate_inputs
from webhook.cli.inputs import read_inputs
from webhook.config import ConfigError, load_layers

FILE_NAME = "gpu-admission-test.yaml"
_RESULT_KEYS = {"kind", "name", "namespace", "allowed", "rules", "patch"}
_KEYS = {"name", "policy", "base", "namespace", "resources", "results"}


class TestFileError(Exception):
    """A test file that cannot be run: one line naming the file."""


def register(sub) -> None:
    p = sub.add_parser("test", help="run declarative policy tests (gpu-admission-test.yaml files)",
                       description="Run every gpu-admission-test.yaml under the given folders: each names policy "
                       "overlays, manifests and the verdict each object must get (allowed, rules, patch). Exit 0: "
                       "all hold; 1: one does not; 2: a test file, its policy or its manifests cannot be read.")
    p.add_argument("dirs", nargs="+", metavar="DIR|FILE")
    p.set_defaults(func=run)


def _test_files(args: list[str]) -> list[Path]:
    out = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            out += sorted(p for p in path.rglob(FILE_NAME)
                          if not any(part.startswith(".") for part in p.relative_to(path).parts))
        elif path.is_file():
            out.append(path)
        else:
            raise TestFileError(f"{arg}: no such file or directory")
    if not out:
        raise TestFileError(f"{', '.join(args)}: no {FILE_NAME} found")
    return out


def _strings(value, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TestFileError(f"{where}: expected a string or a list of strings")


def _read(path: Path) -> dict:
    try:
        doc = yamlread.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TestFileError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except Exception as exc:  # yaml.YAMLError and its kin: one line
        raise TestFileError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise TestFileError(f"{path}: expected a mapping with resources and results")
    unknown = set(doc) - _KEYS
    if unknown:
        raise TestFileError(f"{path}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(_KEYS))})")
    if not isinstance(doc.get("results"), list) or not doc["results"]:
        raise TestFileError(f"{path}: results: expected a non-empty list")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not {"kind", "name", "allowed"} <= set(r) or set(r) - _RESULT_KEYS:
            raise TestFileError(f"{path}: results[{i}]: expected kind, name and allowed (and namespace, rules, "
                                "patch)")
        if not isinstance(r["allowed"], bool) or not isinstance(r.get("patch", False), bool):
            raise TestFileError(f"{path}: results[{i}]: allowed and patch are true or false")
    return doc


def _run_file(path: Path) -> tuple[list[str], int, int]:
    """(report lines, passed, failed)."""
    doc = _read(path)
    here = path.parent
    try:
        policy = load_layers([here / p for p in _strings(doc.get("policy"), f"{path}: policy")],
                             base=here / doc["base"] if isinstance(doc.get("base"), str) else None)
    except ConfigError as exc:
        raise TestFileError(f"{path}: policy: {exc.source}: {exc.errors[0]}") from None
    resources = _strings(doc.get("resources"), f"{path}: resources")
    if not resources:
        raise TestFileError(f"{path}: resources: name at least one manifest file")
    inputs = read_inputs([str(here / r) for r in resources])
    if inputs.errors:
        raise TestFileError(f"{path}: {inputs.errors[0]}")
    namespace = doc["namespace"] if isinstance(doc.get("namespace"), str) else "default"
    evaluations = [ev for _, ev in evaluate_inputs(inputs, policy, namespace)]
    title = doc.get("name") if isinstance(doc.get("name"), str) else str(path)
    lines, passed, failed = [], 0, 0
    for want in doc["results"]:
        found = [ev for ev in evaluations if ev.kind == want["kind"] and ev.name == want["name"]
                 and ("namespace" not in want or ev.namespace == want["namespace"])]
        subject = f"{want['kind']} {want.get('namespace', '*')}/{want['name']}"
        if len(found) != 1:
            problems = [f"{len(found)} objects match, expected one"]
        else:
            ev = found[0]
            rules = sorted({v.rule.value for v in ev.violations if not v.rule.is_mutation})
            problems = []
            if ev.allowed is not want["allowed"]:
                problems.append(f"allowed is {str(ev.allowed).lower()}, expected {str(want['allowed']).lower()}")
            if "rules" in want and rules != sorted(_strings(want["rules"], f"{path}: rules")):
                problems.append(f"rules {rules}, expected {sorted(_strings(want['rules'], ''))}")
            if "patch" in want and bool(ev.patch) is not want["patch"]:
                problems.append(f"patch {'made' if ev.patch else 'none'}, expected "
                                f"{'one' if want['patch'] else 'none'}")
        if problems:
            failed += 1
            lines.append(f"FAIL {title}: {subject}: {'; '.join(problems)}")
        else:
            passed += 1
            lines.append(f"PASS {title}: {subject}")
    return lines, passed, failed


def run(args) -> int:
    try:
        files = _test_files(args.dirs)
        reports = [_run_file(f) for f in files]
    except TestFileError as exc:
        print(f"gpu-admission test: {exc}", file=sys.stderr)
        return EXIT_ERROR
    passed = sum(p for _, p, _ in reports)
    failed = sum(f for _, _, f in reports)
    for lines, _, _ in reports:
        print("\n".join(lines))
    print(f"{len(files)} test file{'s' if len(files) != 1 else ''}; {passed} passed; {failed} failed")
    return EXIT_DENIED if failed else EXIT_OK
