"""Message lengths over the test corpus, per language: median and maximum characters of a finding's line.

The corpus is what the tests hold as the product's words:
- the golden message files of the rule tables (tests/golden/rules, English and ja/), one finding a line;
- every finding the real manifests (tests/data/fixtures/real-manifests) get under the default policy, decided
  as the real-manifest table decides them, in each language of the catalogue.

For the real manifests it also prints where the fix starts in the line (the check's `fix`, rendered alone,
found in the line: what a reader passes before learning what to do) and the length of the why. Both are read
from the engine's calls, not from the line's shape, so the same script measures any version of the messages
(run it from a `git archive` of another commit for the figures before a change).

    .venv/bin/python bench/messages.py
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from webhook.config import default_policy  # noqa: E402
from webhook.evaluation import evaluate_object  # noqa: E402
from webhook.locale import LANGUAGES  # noqa: E402
from webhook.lookups.bundle import BundleResolver  # noqa: E402

GOLDEN_RULES = REPO / "tests" / "golden" / "rules"
REAL_MANIFESTS = REPO / "tests" / "data" / "fixtures" / "real-manifests"
# Kinds the real-manifest table leaves out: RBAC and namespaces, which no rule reads.
_NOT_JUDGED = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def golden_lines(language: str) -> list[str]:
    files = (GOLDEN_RULES.rglob("*.txt") if language == "en" else (GOLDEN_RULES / language).rglob("*.txt"))
    out = []
    for path in sorted(files):
        inner = path.relative_to(GOLDEN_RULES).parts
        if language == "en" and inner[0] in LANGUAGES and inner[0] != "en":
            continue
        out.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return out


class _Parts:
    """The fix and why of every finding the engine renders (webhook.policy.engine calls messages.line)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __enter__(self) -> _Parts:
        from webhook.policy import engine, messages
        self._engine, self._line = engine, engine.line

        def line(policy, rule, subject, what, why, fix, language="en"):  # type: ignore[no-untyped-def]
            self.seen.append((messages.render(fix, language), messages.render(why, language)))
            return self._line(policy, rule, subject, what, why, fix, language)

        engine.line = line
        return self

    def __exit__(self, *exc: object) -> None:
        self._engine.line = self._line


def real_manifest_lines(language: str, parts: list[tuple[int, int]] | None = None) -> list[str]:
    """The findings' lines; `parts` gets (characters before the fix, characters of the why) for each."""
    policy = default_policy().in_language(language)
    out = []
    for path in sorted(p for p in REAL_MANIFESTS.iterdir() if p.suffix in (".yaml", ".yml")):
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
        resolver = BundleResolver(docs)
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") in _NOT_JUDGED:
                continue
            with _Parts() as spy:
                ev = evaluate_object(doc, policy=policy, resolver=resolver, namespace="default")
            out.extend(v.message for v in ev.violations)
            if parts is not None:
                for v in ev.violations:
                    found = [(v.message.find(fix), len(why)) for fix, why in spy.seen if fix and fix in v.message]
                    if found:
                        parts.append(found[0])
    return out


def figures(lines: list[str]) -> str:
    lengths = [len(x) for x in lines]
    if not lengths:
        return "0 lines"
    return f"{len(lengths):4d} lines  median {statistics.median(lengths):6.1f}  max {max(lengths):5d}  " \
           f"mean {statistics.fmean(lengths):6.1f}"


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print("characters per finding line (len of the str: a Japanese character counts one)")
    for language in ("en", *sorted(set(LANGUAGES) - {"en"})):
        parts: list[tuple[int, int]] = []
        golden, real = golden_lines(language), real_manifest_lines(language, parts)
        print(f"{language}  golden files    {figures(golden)}")
        print(f"{language}  real manifests  {figures(real)}")
        print(f"{language}  all             {figures(golden + real)}")
        if parts:
            before, why = [p[0] for p in parts], [p[1] for p in parts]
            print(f"{language}  real manifests  characters before the fix: median {statistics.median(before):.0f}, "
                  f"max {max(before)}; why: median {statistics.median(why):.0f}, max {max(why)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
