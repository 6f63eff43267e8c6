"""Messages are made here, in the one-line shape of DESIGN.md section 10:
`<object>: <what, with field path>: <why>; <fix> [<rule>] <docs link>`; checks give what, why and fix."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from webhook.config.model import Policy
from webhook.rules import Rule
from webhook.text import safe


def line(policy: Policy, rule: Rule, subject: str, what: str, why: str, fix: str) -> str:
    """A finding's message. Names and values come from the object: a control character would make the
    apiserver drop the warning, a line separator would start a line that looks like another finding
    (webhook/text.py)."""
    return safe(f"{subject}: {what}: {why}; {fix} [{rule.value}] {policy.docs_url(rule)}")


def mutation_line(policy: Policy, rule: Rule, subject: str, verb: str, what: str, path: str) -> str:
    """What a mutation set (or, in dry-run, would set): `<object>: sets <path>: <what> [<rule>] <link>`."""
    return safe(f"{subject}: {verb} {path}: {what} [{rule.value}] {policy.docs_url(rule)}")


def names(values: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    values = list(values)
    if len(values) <= 1:
        return "".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def quoted(values: Iterable[str]) -> list[str]:
    """Each value in double quotes, as messages name objects: ['"a"', '"b"']."""
    return [f'"{v}"' for v in values]


def plural(values: Sequence[object], word: str, suffix: str = "s") -> str:
    """`word`, with `suffix` when there are several values: plural(classes, "DeviceClass", "es")."""
    return word + suffix if len(values) > 1 else word
