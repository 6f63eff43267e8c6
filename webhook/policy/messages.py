"""The one-line message shape of DESIGN.md section 10:
`<object>: <what, with field path>: <why>; <fix> [<rule>] <docs link>`."""
from __future__ import annotations

from webhook.config.model import Policy
from webhook.rules import Rule
from webhook.text import safe


def message(policy: Policy, rule: Rule, subject: str, what: str, why: str, fix: str) -> str:
    # Names and values come from the object: a control character would make the apiserver drop the
    # warning, a line separator would start a line that looks like another finding (webhook/text.py).
    return safe(f"{subject}: {what}: {why}; {fix} [{rule.value}] {policy.docs_url(rule)}")


def names(values) -> str:
    """'a', 'a and b', 'a, b and c'."""
    values = list(values)
    if len(values) <= 1:
        return "".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def mutation_message(policy: Policy, rule: Rule, subject: str, verb: str, what: str, path: str) -> str:
    """What a mutation set (or, in dry-run, would set): `<object>: sets <path>: <what> [<rule>] <link>`."""
    return safe(f"{subject}: {verb} {path}: {what} [{rule.value}] {policy.docs_url(rule)}")
