"""Results as `check --output json` gives them (and `audit` reuses), and as a readable report."""
from __future__ import annotations

from webhook.policy.messages import Arg, Joined, T, render, skip_reason
from webhook.policy.results import Evaluation
from webhook.rules import Action
from webhook.text import pad

_MARK = {Action.ENFORCE: T("deny"), Action.WARN: T("warn"), Action.AUDIT: T("audit")}
# check's and audit's JSON: 2 added formatVersion and each violation's line to the results of version 1
JSON_FORMAT_VERSION = 2


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
    language = ev.language
    subject = f'{ev.kind.lower()} "{ev.namespace}/{ev.name}"' if ev.namespace else f'{ev.kind.lower()} "{ev.name}"'
    if ev.skipped:
        return [render(T("- {subject} ({where}): skipped, {reason}", subject=subject, where=where,
                         reason=skip_reason(ev.skipped)), language)]
    extras: list[Arg] = []
    if ev.dry_run:
        extras.append(T("dry-run"))
    if ev.cohort:
        extras.append(T("cohort {cohort}", cohort=ev.cohort))
    if ev.patch:
        count = len(ev.patch)
        extras.append(T("{count} patch operation", count=count) if count == 1 else
                      T("{count} patch operations", count=count))
    state = T("allowed") if ev.allowed else T("DENIED")
    head = render(T("{mark} {subject} ({where}): {state}", mark="✓" if ev.allowed else "✗", subject=subject,
                    where=where, state=state), language)
    if extras:
        head += f" [{render(_joined(extras), language)}]"
    lines = [head]
    for v in ev.violations:
        mark = T("patch") if v.rule.is_mutation else (T("would deny") if ev.dry_run and v.action is Action.ENFORCE
                                                      else _MARK[v.action])
        lines.append(f"    {pad(render(mark, language), 10)} {v.message}")
    for e in ev.errors:
        lines.append(f"    {pad(render(T('error'), language), 10)} "
                     + render(T("rule {rule} failed internally: {error}", rule=e.rule.value, error=e.error), language))
    return lines


def summary(evaluations: list[Evaluation], skipped_kinds: int, errors: int, language: str = "en", *,
            not_manifests: int = 0, ignored: int = 0, left_out: int = 0) -> str:
    denied = sum(1 for e in evaluations if not e.allowed)
    warned = sum(1 for e in evaluations if e.allowed and e.violations)
    exempt = sum(1 for e in evaluations if e.skipped)
    checked = len(evaluations)
    parts: list[Arg] = [
        T("{count} object checked", count=checked) if checked == 1 else T("{count} objects checked", count=checked),
        T("{count} denied", count=denied),
        T("{count} allowed ({warned} with findings)", count=checked - denied - exempt, warned=warned)]
    if exempt:
        parts.append(T("{count} exempt", count=exempt))
    if skipped_kinds:
        parts.append(T("{count} of other kinds skipped", count=skipped_kinds))
    if left_out:
        parts.append(T("{count} left out by --skip-kind", count=left_out))
    if not_manifests:
        parts.append(T("{count} document without kind skipped", count=not_manifests) if not_manifests == 1 else
                     T("{count} documents without kind skipped", count=not_manifests))
    if ignored:
        parts.append(T("{count} file ignored", count=ignored) if ignored == 1 else
                     T("{count} files ignored", count=ignored))
    if errors:
        parts.append(T("{count} input error", count=errors) if errors == 1 else
                     T("{count} input errors", count=errors))
    separator = render(T("; "), language)
    return separator.join(render(p, language) for p in parts)


def _joined(values: list[Arg]) -> Arg:
    """Values separated by the language's comma (the bracketed extras of a report line)."""
    return Joined(tuple(values))
