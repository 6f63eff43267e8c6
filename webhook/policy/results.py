"""Result values of the policy: what a check found, what the engine decided."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from webhook.rules import Action, Rule


@dataclass(frozen=True, slots=True)
class Finding:
    """What one check found: `message` is the complete one-line message (rule id and docs link included).

    `cap` limits the action (an `envFrom` source that could not be read is at most a warning)."""

    rule: Rule
    path: str
    message: str
    cap: Action | None = None


@dataclass(frozen=True, slots=True)
class Violation:
    """A finding with the action that the configuration gives it for this request."""

    rule: Rule
    action: Action
    path: str
    message: str

    def as_dict(self) -> dict:
        return {"rule": self.rule.value, "action": self.action.value, "path": self.path, "message": self.message}


@dataclass(frozen=True, slots=True)
class Mutation:
    """A mutation rule's edits in one decision (`applied`), or in dry-run or at audit what it would edit."""

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


class Evaluation:
    """The decision for one object, as the webhook would give it on this operation.

    A plain slotted class with Final fields (mypy refuses any reassignment), not a frozen dataclass like
    the other results: one is built for every admission request."""

    __slots__ = ("kind", "namespace", "name", "violations", "patch", "mutated", "dry_run", "cohort", "errors",
                 "skipped", "mutations")

    def __init__(self, kind: str, namespace: str, name: str, violations: tuple[Violation, ...] = (),
                 patch: tuple[dict, ...] = (), mutated: dict | None = None, dry_run: bool = False,
                 cohort: str | None = None, errors: tuple[RuleError, ...] = (), skipped: str | None = None,
                 mutations: tuple[Mutation, ...] = ()) -> None:
        self.kind: Final = kind
        self.namespace: Final = namespace
        self.name: Final = name
        self.violations: Final = violations
        self.patch: Final = patch  # the JSON Patch /mutate returns; empty in dry-run mode
        self.mutated: Final = mutated  # the object after the patch (None when nothing changed)
        self.dry_run: Final = dry_run
        self.cohort: Final = cohort
        self.errors: Final = errors
        self.skipped: Final = skipped  # why the object was not evaluated at all (exempt namespace, kind, ...)
        # Every mutation this decision made (or, in dry-run or at audit, would have made); `violations` also
        # lists, with a message, those that are announced (warn, audit, dry-run), for warnings and `check`.
        self.mutations: Final = mutations

    @property
    def allowed(self) -> bool:
        return self.dry_run or not (self.denials or any(e.denied for e in self.errors))

    @property
    def denials(self) -> tuple[Violation, ...]:
        if self.dry_run:
            return ()
        return tuple(v for v in self.violations if v.action is Action.ENFORCE and not v.rule.is_mutation)
