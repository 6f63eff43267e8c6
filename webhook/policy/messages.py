"""The one-line message shape of DESIGN.md section 10:
`<object>: <what, with field path>: <why>; <fix> [<rule>] <docs link>`."""
from __future__ import annotations

import re
from collections.abc import Iterable

from webhook.config.model import Policy
from webhook.rules import Rule

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def message(policy: Policy, rule: Rule, subject: str, what: str, why: str, fix: str) -> str:
    # Names come from user input; a control character would make the apiserver drop the warning.
    text = f"{subject}: {what}: {why}; {fix} [{rule.value}] {policy.docs_url(rule)}"
    return _CONTROL.sub("?", text)


def names(values: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    values = list(values)
    if len(values) <= 1:
        return "".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def mutation_message(policy: Policy, rule: Rule, subject: str, verb: str, what: str, path: str) -> str:
    """What a mutation set (or, in dry-run, would set): `<object>: sets <path>: <what> [<rule>] <link>`."""
    return _CONTROL.sub("?", f"{subject}: {verb} {path}: {what} [{rule.value}] {policy.docs_url(rule)}")
