"""The audit as a table for people: one row per finding, grouped by rule (in the rule table's order)
and namespace, then the kinds that could not be listed and a summary. Full messages are in `-o json`."""
from __future__ import annotations

from webhook.audit.evaluate import Audited
from webhook.audit.listing import ListFailure
from webhook.rules import Action, Rule

_HEADER = ("RULE", "NAMESPACE", "ACTION", "OBJECT", "PATH")
_RULE_ORDER = {rule: i for i, rule in enumerate(Rule)}
_MARK = {Action.ENFORCE: "deny", Action.WARN: "warn", Action.AUDIT: "audit"}


def _rows(audited: list[Audited]) -> list[tuple[int, str, str, str, str, str]]:
    rows = []
    for a in audited:
        ev = a.evaluation
        subject = f"{ev.kind}/{ev.name}"
        for v in ev.violations:
            mark = "would-deny" if ev.dry_run and v.action is Action.ENFORCE else _MARK[v.action]
            rows.append((_RULE_ORDER[v.rule], v.rule.value, ev.namespace, mark, subject, v.path))
        for e in ev.errors:
            rows.append((_RULE_ORDER[e.rule], e.rule.value, ev.namespace, "error", subject, e.error))
    return sorted(rows, key=lambda r: (r[0], r[2], r[4], r[5]))


def render_table(audited: list[Audited], failures: tuple[ListFailure, ...]) -> str:
    lines = []
    rows = _rows(audited)
    if rows:
        shown = []
        previous: tuple[str | None, str | None] = (None, None)
        for _, rule, namespace, mark, subject, path in rows:
            # A group's rule and namespace are written on its first row only.
            cells = (rule if rule != previous[0] else "",
                     (namespace or "(cluster)") if (rule, namespace) != previous else "", mark, subject, path)
            previous = (rule, namespace)
            shown.append(cells)
        widths = [max(len(c[i]) for c in [_HEADER, *shown]) for i in range(len(_HEADER) - 1)]
        for cells in [_HEADER, *shown]:
            lines.append("   ".join(c.ljust(w) for c, w in zip(cells, widths)) + "   " + cells[-1])
    else:
        lines.append("No findings.")
    if failures:
        lines.append("")
        lines.append("Could not list:")
        lines.extend(f"  {f.where}: {f.reason}" for f in failures)
    lines.append("")
    lines.append(summary(audited, failures))
    return "\n".join(line.rstrip() for line in lines)


def summary(audited: list[Audited], failures: tuple[ListFailure, ...]) -> str:
    evs = [a.evaluation for a in audited]
    namespaces = {e.namespace for e in evs if e.namespace}
    denied = sum(1 for e in evs if not e.allowed)
    would_deny = sum(1 for e in evs if e.dry_run and any(v.action is Action.ENFORCE for v in e.violations))
    warned = sum(1 for e in evs if e.allowed and e.violations)
    exempt = sum(1 for e in evs if e.skipped)
    parts = [f"{len(evs)} object{'s' if len(evs) != 1 else ''} audited in {len(namespaces)} "
             f"namespace{'s' if len(namespaces) != 1 else ''}", f"{denied} would be denied"]
    if would_deny:
        parts.append(f"{would_deny} would be denied once enforced (dry-run)")
    parts.append(f"{warned} allowed with findings")
    if exempt:
        parts.append(f"{exempt} exempt")
    if failures:
        parts.append(f"{len(failures)} kind{'s' if len(failures) != 1 else ''} could not be listed")
    return "; ".join(parts) + "."
