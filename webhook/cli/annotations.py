"""Results as GitHub Actions workflow commands (`::error file=...,line=...,title=...::message`), which
the runner turns into annotations on the pull request's files. Escaping as the runner's
toolkit (@actions/core `issueCommand`) does: `%`, CR and LF in the message; also `:` and `,` in
property values."""
from __future__ import annotations

from collections.abc import Iterable

from webhook.cli.subjects import Subject, level
from webhook.policy.messages import T, render

_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, message: str, **properties: object) -> str:
    props = ",".join(f"{k}={_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{_data(message)}"


def github_lines(subjects: Iterable[Subject], *, input_errors: Iterable[str] = ()) -> list[str]:
    out = []
    for s in subjects:
        ev = s.evaluation
        for v in ev.violations:
            out.append(_command(_COMMAND[level(v, ev.dry_run)], v.message, file=s.file,
                                line=s.line(v.path), title=f"gpu-admission {v.rule.value}"))
        for e in ev.errors:
            out.append(_command("warning", f"{s.title}: " + render(T("rule {rule} failed internally: {error}",
                                                                    rule=e.rule.value, error=e.error),
                                                                  s.evaluation.language),
                                file=s.file, title=f"gpu-admission {e.rule.value}"))
    out.extend(_command("error", e, title="gpu-admission input") for e in input_errors)
    return out
