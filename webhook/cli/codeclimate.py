"""Results as a GitLab Code Quality report: a JSON array of Code Climate issues (the analyzer
specification's issue format), with the fields GitLab's merge-request widget reads: `description`,
`check_name`, `fingerprint`, `severity`, `location.path` and `location.lines.begin`; `type` and
`categories`, which the specification requires, come too. A finding without a file (stdin without a
`# Source:` comment) is located at the path `-`, line 1: GitLab needs a path to show an issue."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable

from webhook.cli.subjects import Subject, level
from webhook.policy.messages import T, render

# SARIF levels (subjects.level) -> Code Climate severities: a denial blocks the merge request's change
SEVERITY = {"error": "critical", "warning": "major", "note": "info"}


def _issue(s: Subject, rule: str, path: str, description: str, severity: str) -> dict:
    ev = s.evaluation
    key = "\0".join((s.group, ev.kind, ev.namespace, ev.name, rule, path))
    return {
        "type": "issue",
        "check_name": rule,
        "description": " ".join(description.split()),  # one line, as the specification wants
        "categories": ["Security" if rule != "legacy-api" else "Compatibility"],
        "severity": severity,
        "fingerprint": hashlib.sha256(key.encode()).hexdigest(),
        "location": {"path": s.file or "-", "lines": {"begin": s.line(path) or 1}},
    }


def codeclimate_issues(subjects: Iterable[Subject], *, input_errors: Iterable[str] = ()) -> list[dict]:
    out = []
    for s in subjects:
        ev = s.evaluation
        for v in ev.violations:
            out.append(_issue(s, v.rule.value, v.path, v.message, SEVERITY[level(v, ev.dry_run)]))
        for e in ev.errors:
            text = f"{s.title}: " + render(T("rule {rule} failed internally: {error}", rule=e.rule.value,
                                                error=e.error), ev.language)
            out.append(_issue(s, e.rule.value, "", text, "major"))
    for error in input_errors:
        file = error.split(":", 1)[0]
        out.append({"type": "issue", "check_name": "input", "description": " ".join(error.split()),
                    "categories": ["Bug Risk"], "severity": "blocker",
                    "fingerprint": hashlib.sha256(error.encode()).hexdigest(),
                    "location": {"path": file, "lines": {"begin": 1}}})
    return out
