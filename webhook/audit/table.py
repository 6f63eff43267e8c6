"""The audit as a table for people: one row per finding, grouped by rule (in the rule table's order)
and namespace, then the kinds that could not be listed and a summary. Full messages are in `-o json`."""
from __future__ import annotations

from webhook.audit.evaluate import Audited
from webhook.audit.listing import ListFailure
from webhook.policy.messages import Arg, T, render
from webhook.rules import Action, Rule
from webhook.text import columns

_HEADER = (T("RULE"), T("NAMESPACE"), T("ACTION"), T("OBJECT"), T("PATH"))
_RULE_ORDER = {rule: i for i, rule in enumerate(Rule)}
_MARK = {Action.ENFORCE: T("deny"), Action.WARN: T("warn"), Action.AUDIT: T("audit")}


def _rows(audited: list[Audited], language: str) -> list[tuple[int, str, str, str, str, str]]:
    rows = []
    for a in audited:
        ev = a.evaluation
        subject = f"{ev.kind}/{ev.name}"
        for v in ev.violations:
            mark = render(T("would-deny") if ev.dry_run and v.action is Action.ENFORCE else _MARK[v.action], language)
            rows.append((_RULE_ORDER[v.rule], v.rule.value, ev.namespace, mark, subject, v.path))
        for e in ev.errors:
            rows.append((_RULE_ORDER[e.rule], e.rule.value, ev.namespace, render(T("error"), language), subject,
                         e.error))
    return sorted(rows, key=lambda r: (r[0], r[2], r[4], r[5]))


def render_table(audited: list[Audited], failures: tuple[ListFailure, ...], language: str = "en") -> str:
    """The table in `language` (headings, marks, summary); rule ids, namespaces, objects and paths as they are."""
    lines = []
    rows = _rows(audited, language)
    header = tuple(render(h, language) for h in _HEADER)
    if rows:
        shown: list[tuple[str, ...]] = []
        previous: tuple[str | None, str | None] = (None, None)
        for _, rule, namespace, mark, subject, path in rows:
            # A group's rule and namespace are written on its first row only.
            cells = (rule if rule != previous[0] else "",
                     (namespace or render(T("(cluster)"), language)) if (rule, namespace) != previous else "", mark,
                     subject, path)
            previous = (rule, namespace)
            shown.append(cells)
        widths = [max(columns(c[i]) for c in [header, *shown]) for i in range(len(header) - 1)]
        for row in [header, *shown]:
            lines.append("   ".join(c + " " * (w - columns(c)) for c, w in zip(row, widths)) + "   " + row[-1])
    else:
        lines.append(render(T("No findings."), language))
    if failures:
        lines.append("")
        lines.append(render(T("Could not list:"), language))
        lines.extend(f"  {f.where}: {f.reason}" for f in failures)
    lines.append("")
    lines.append(summary(audited, failures, language))
    return "\n".join(line.rstrip() for line in lines)


def summary(audited: list[Audited], failures: tuple[ListFailure, ...], language: str = "en") -> str:
    evs = [a.evaluation for a in audited]
    namespaces = {e.namespace for e in evs if e.namespace}
    denied = sum(1 for e in evs if not e.allowed)
    would_deny = sum(1 for e in evs if e.dry_run and any(v.action is Action.ENFORCE for v in e.violations))
    warned = sum(1 for e in evs if e.allowed and e.violations)
    exempt = sum(1 for e in evs if e.skipped)
    objects = (T("{count} object", count=len(evs)) if len(evs) == 1 else T("{count} objects", count=len(evs)))
    spaces = (T("{count} namespace", count=len(namespaces)) if len(namespaces) == 1 else
              T("{count} namespaces", count=len(namespaces)))
    parts: list[Arg] = [T("{objects} audited in {namespaces}", objects=objects, namespaces=spaces),
                        T("{count} would be denied", count=denied)]
    if would_deny:
        parts.append(T("{count} would be denied once enforced (dry-run)", count=would_deny))
    parts.append(T("{count} allowed with findings", count=warned))
    if exempt:
        parts.append(T("{count} exempt", count=exempt))
    if failures:
        parts.append(T("{count} kind could not be listed", count=len(failures)) if len(failures) == 1 else
                     T("{count} kinds could not be listed", count=len(failures)))
    return render(T("{parts}.", parts=render(T("; "), language).join(render(p, language) for p in parts)), language)
