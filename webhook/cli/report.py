"""Results as `check --output json` gives them (and `audit` reuses), and as a readable report."""
from __future__ import annotations

from webhook.policy.results import Evaluation
from webhook.rules import Action

_MARK = {Action.ENFORCE: "deny", Action.WARN: "warn", Action.AUDIT: "audit"}


def result_dict(ev: Evaluation, source) -> dict:
    return {
        "kind": ev.kind,
        "namespace": ev.namespace,
        "name": ev.name,
        "source": source,
        "allowed": ev.allowed,
        "violations": [v.as_dict() for v in ev.violations],
        "patch": list(ev.patch),
    }


def text_block(ev: Evaluation, where: str) -> list[str]:
    subject = f'{ev.kind.lower()} "{ev.namespace}/{ev.name}"' if ev.namespace else f'{ev.kind.lower()} "{ev.name}"'
    if ev.skipped:
        return [f"- {subject} ({where}): skipped, {ev.skipped}"]
    state = "allowed" if ev.allowed else "DENIED"
    extras = []
    if ev.dry_run:
        extras.append("dry-run")
    if ev.cohort:
        extras.append(f"cohort {ev.cohort}")
    if ev.patch:
        extras.append(f"{len(ev.patch)} patch operation{'s' if len(ev.patch) != 1 else ''}")
    lines = [f"{'✓' if ev.allowed else '✗'} {subject} ({where}): {state}"
             + (f" [{', '.join(extras)}]" if extras else "")]
    for v in ev.violations:
        mark = "patch" if v.rule.is_mutation else ("would deny" if ev.dry_run and v.action is Action.ENFORCE
                                                   else _MARK[v.action])
        lines.append(f"    {mark:<10} {v.message}")
    for e in ev.errors:
        lines.append(f"    {'error':<10} rule {e.rule.value} failed internally: {e.error}")
    return lines


def summary(evaluations: list[Evaluation], skipped_kinds: int, errors: int) -> str:
    denied = sum(1 for e in evaluations if not e.allowed)
    warned = sum(1 for e in evaluations if e.allowed and e.violations)
    exempt = sum(1 for e in evaluations if e.skipped)
    parts = [f"{len(evaluations)} object{'s' if len(evaluations) != 1 else ''} checked", f"{denied} denied",
             f"{len(evaluations) - denied - exempt} allowed ({warned} with findings)"]
    if exempt:
        parts.append(f"{exempt} exempt")
    if skipped_kinds:
        parts.append(f"{skipped_kinds} of other kinds skipped")
    if errors:
        parts.append(f"{errors} input error{'s' if errors != 1 else ''}")
    return "; ".join(parts)
