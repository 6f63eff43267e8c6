"""What a rule id is: a string, with the rule's default action (the config fills it in where a policy names none)
and whether the rule mutates (metrics, reports and exit codes count a mutation apart from a finding). The ids
themselves are `webhook/rules.py`'s `Rule`, written by `make schema` from the rules' definitions."""
from __future__ import annotations

import enum


class Action(str, enum.Enum):
    """What a rule's finding does to the request."""

    ENFORCE = "enforce"  # deny (validation) / apply (mutation)
    WARN = "warn"  # allow, with a warning in kubectl; a mutation is applied and announced
    AUDIT = "audit"  # allow, record only; a mutation is not applied, only reported
    OFF = "off"

    def __str__(self) -> str:
        return self.value


MUTATION = True  # the third field of a mutation rule's id


class RuleId(str, enum.Enum):
    """A rule id, with its default action (enforce unless given) and whether it mutates (`MUTATION`): the base of
    `webhook.rules.Rule`, whose members are the ids."""

    default: Action
    is_mutation: bool

    def __new__(cls, value: str, default: Action = Action.ENFORCE, mutation: bool = False) -> RuleId:
        member = str.__new__(cls, value)
        member._value_ = value
        member.default = default
        member.is_mutation = mutation
        return member

    def __str__(self) -> str:
        return self.value
