"""What the CI formats (SARIF, JUnit, GitHub annotations) report on: one evaluated object with where
it came from, and the level each finding has in those formats."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from webhook.policy.results import Evaluation, Violation
from webhook.rules import DEFAULT_ACTIONS, Action, Rule


@dataclass(frozen=True, slots=True)
class Subject:
    evaluation: Evaluation
    where: str  # for people: "pods.yaml, document 2" or "pods ml/train"
    group: str  # the file, or the namespace ("(cluster)" for cluster-scoped objects)
    file: str | None = None  # the manifest file, relative to the working directory where it is under it;
    # None for stdin and the cluster
    line_of: Callable[[str], int | None] | None = None  # a field path's line in that file

    def line(self, path: str) -> int | None:
        return self.line_of(path) if self.line_of is not None else None

    @property
    def title(self) -> str:
        ev = self.evaluation
        return f"{ev.kind} {ev.namespace}/{ev.name}" if ev.namespace else f"{ev.kind} {ev.name}"


def level(v: Violation, dry_run: bool) -> str:
    """SARIF's level names (GitHub's annotation commands are error, warning and notice)."""
    if v.rule.is_mutation:
        return "note"
    if v.action is Action.ENFORCE:
        return "warning" if dry_run else "error"
    return "warning" if v.action is Action.WARN else "note"


def default_level(rule: Rule) -> str:
    if rule.is_mutation:
        return "note"
    return {Action.ENFORCE: "error", Action.WARN: "warning"}.get(DEFAULT_ACTIONS[rule], "note")


def warned(ev: Evaluation) -> bool:
    """Something `--fail-on-warn` fails on: a validating finding that does not deny (warn, audit, or
    enforce in dry-run), or a rule that failed internally. Patches the mutating webhook would make
    are not warnings."""
    return bool(ev.errors) or any(not v.rule.is_mutation for v in ev.violations)
