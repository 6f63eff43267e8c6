"""Results as GitHub Actions workflow commands (`::error file=...,line=...,title=...::message`), which
the runner turns into annotations on the pull request's files. Escaping as the runner's
toolkit (@actions/core `issueCommand`) does: `%`, CR and LF in the message; also `:` and `,` in
property values.

GitHub shows at most 10 annotations of each kind (error, warning, notice) per step: the first 10 of each
are annotations, the rest plain lines in a collapsed group that says how many there are. With
`GITHUB_STEP_SUMMARY` set (every Actions step has it), a Markdown table of every finding is appended to the
step's summary page, where none is capped."""
from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterable

from webhook.cli.subjects import Subject, level
from webhook.policy.messages import T, render

_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}
CAP = 10  # annotations of each kind GitHub shows per step


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, message: str, **properties: object) -> str:
    props = ",".join(f"{k}={_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{_data(message)}"


def _findings(subjects: Iterable[Subject], input_errors: Iterable[str]):
    """(command, message, file, line, rule) for every finding."""
    for s in subjects:
        ev = s.evaluation
        for v in ev.violations:
            yield _COMMAND[level(v, ev.dry_run)], v.message, s.file, s.line(v.path), v.rule.value
        for e in ev.errors:
            yield ("warning", f"{s.title}: " + render(T("rule {rule} failed internally: {error}", rule=e.rule.value,
                                                        error=e.error), ev.language), s.file, None, e.rule.value)
    for text in input_errors:
        yield "error", text, None, None, "input"


def github_lines(subjects: Iterable[Subject], *, input_errors: Iterable[str] = ()) -> list[str]:
    out: list[str] = []
    overflow: list[str] = []
    seen: Counter[str] = Counter()
    for command, message, file, line, rule in _findings(subjects, input_errors):
        seen[command] += 1
        if seen[command] <= CAP:
            out.append(_command(command, message, file=file, line=line, title=f"gpu-admission {rule}"))
        else:
            where = f"{file}:{line}: " if file and line else f"{file}: " if file else ""
            overflow.append(f"{command}: {where}{message} [{rule}]")
    if overflow:
        over = ", ".join(f"{n - CAP} {c}" for c, n in seen.items() if n > CAP)
        out.append(_command("group", f"gpu-admission: {over} more (GitHub shows {CAP} annotations of each kind "
                                     "per step; all are in the step summary)"))
        out.extend(_data(line) for line in overflow)
        out.append("::endgroup::")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary(subjects: list[Subject], *, input_errors: Iterable[str] = (), title: str) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: the counts, then every finding."""
    findings = list(_findings(subjects, input_errors))
    counts = Counter(c for c, *_ in findings)
    denied = sum(1 for s in subjects if not s.evaluation.allowed)
    lines = [f"### {title}", "",
             f"{len(subjects)} objects checked, {denied} denied; findings: {counts['error']} errors, "
             f"{counts['warning']} warnings, {counts['notice']} notices", ""]
    if findings:
        lines += ["| level | file | line | rule | message |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {c} | {_cell(f or '')} | {ln or ''} | {r} | {_cell(m)} |" for c, m, f, ln, r in findings]
    return "\n".join(lines) + "\n"


def write_step_summary(subjects: list[Subject], *, input_errors: Iterable[str] = (), title: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(step_summary(subjects, input_errors=input_errors, title=title))
    except OSError as exc:
        print(f"gpu-admission: GITHUB_STEP_SUMMARY {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
