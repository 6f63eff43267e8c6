"""Result values of the policy: what a check found, what the engine decided."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.policy.messages import Arg
from webhook.rules import Action, Rule


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """What one check found, in the words of docs/architecture.md (Messages): `what` happened (naming the field path),
    `why` it matters and the `fix`. The engine makes the one-line message, adding the object, the rule id
    and its docs link (messages.line); each is a `Text` template, rendered in the policy's language only
    then. `cap` limits the action (an `envFrom` source that could not be read
    is at most a warning)."""

    path: str
    what: Arg
    why: Arg
    fix: Arg
    cap: Action | None = None


@dataclass(frozen=True, slots=True)
class Violation:
    """A finding with the action that the configuration gives it for this request."""

    rule: Rule
    action: Action
    path: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.value, "action": self.action.value, "path": self.path, "message": self.message}


class Mutation(NamedTuple):
    """A mutation rule's edits in one decision (`applied`), or in dry-run or at audit what it would edit.
    A named tuple, not a frozen dataclass: /mutate makes one per rule on every GPU pod, and a frozen
    dataclass's constructor sets each field through object.__setattr__ (about 7,000 instructions against
    3,000, bench/README.md)."""

    rule: Rule
    action: Action
    paths: tuple[str, ...]
    applied: bool


@dataclass(frozen=True, slots=True)
class RuleError:
    """A rule raised: the engine carries on with the others; `action` is what its onError decided."""

    rule: Rule
    error: str
    denied: bool


@dataclass(slots=True, kw_only=True)
class Evaluation:
    """The decision for one object, as the webhook would give it on this operation."""

    kind: str
    namespace: str
    name: str
    violations: tuple[Violation, ...] = ()
    patch: tuple[dict[str, Any], ...] = ()  # the JSON Patch /mutate returns; empty in dry-run mode
    mutated: dict[str, Any] | None = None  # the object after the patch (None when nothing changed)
    dry_run: bool = False
    cohort: str | None = None
    errors: tuple[RuleError, ...] = ()
    skipped: str | None = None  # why the object was not evaluated at all (exempt namespace, kind, ...)
    # Every mutation this decision made (or, in dry-run or at audit, would have made); `violations` also
    # lists, with a message, those that are announced (warn, audit, dry-run), for warnings and `check`.
    mutations: tuple[Mutation, ...] = ()
    language: str = "en"  # of the messages: what reports made of this decision write in (webhook/locale)

    @property
    def allowed(self) -> bool:
        return self.dry_run or not (self.denials or any(e.denied for e in self.errors))

    @property
    def denials(self) -> tuple[Violation, ...]:
        if self.dry_run:
            return ()
        return tuple(v for v in self.violations if v.action is Action.ENFORCE and not v.rule.is_mutation)
