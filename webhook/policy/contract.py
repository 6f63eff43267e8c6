"""The one definition of a rule, and the one check contract.

Each rule is one module of `webhook/policy/checks` (validation) or `webhook/policy/mutations` (mutation)
that opens with the rule's spec (its docstring) and ends with its `DEFINITION`: the id, the summary and
category, what it applies to and the function run there, or its mutation. `definitions.DEFINITIONS`
collects them in the order of the rule ids, and every list is derived from it: the engine's checks by
target and its mutations, the docs index (`make docs`), SARIF's and PolicyReport's rule metadata, the
catalogue checks.

A check is a function of (facts, context, policy) returning a list of Findings: over a pod spec's
GpuFacts (a Pod's, or a controller's pod template's), a DRA object's ObjectFacts or an infrastructure
object's InfraFacts. A mutation edits a copy-on-write Draft of a Pod and returns (path, what it set)
records."""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.dra import ObjectFacts
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.infra import InfraFacts
from webhook.policy.messages import Said
from webhook.policy.results import Finding
from webhook.rules import Action, Rule


class Target(enum.Enum):
    POD_SPEC = "pod spec"  # every pod-bearing kind, through its pod spec (GpuFacts)
    CLAIM = "claim"  # a ResourceClaim or ResourceClaimTemplate on its own (ObjectFacts)
    DEVICE_CLASS = "device class"  # a DeviceClass, or another kind of the alpha DRA API (ObjectFacts)
    # a controller's pod template (never a Pod: the controller's object was judged), through its GpuFacts
    TEMPLATE = "pod template"
    # GPU infrastructure: the GPU Operator's objects and Node updates (InfraFacts)
    INFRASTRUCTURE = "infrastructure"


POD_SPECS = frozenset({Target.POD_SPEC})
CLAIMS = frozenset({Target.CLAIM})
DRA_OBJECTS = frozenset({Target.CLAIM, Target.DEVICE_CLASS})
DEVICE_CLASSES = frozenset({Target.DEVICE_CLASS})
TEMPLATES = frozenset({Target.TEMPLATE})
INFRASTRUCTURE = frozenset({Target.INFRASTRUCTURE})
_POD = frozenset({Target.POD_SPEC, Target.TEMPLATE})

Facts = GpuFacts | ObjectFacts | InfraFacts
CheckFunction = Callable[[Any, Context, Policy], list[Finding]]
Records = list[tuple[str, Said]]  # (field path, what was set) per edit


@dataclass(slots=True)  # not frozen: a test swaps `run` for a function that raises
class Check:
    """One check of a rule: the targets it applies to, and the function run there."""

    applies_to: frozenset[Target]
    run: CheckFunction
    # Where its findings come among those of one target: checks run by `stage`, then in the order of the
    # rule ids. Only a DRA object's checks have stages: its API first, then its shape, what its cohort
    # enables and what its cohort offers (a pod spec's run in the order of the ids).
    stage: int = 0

    def __post_init__(self) -> None:
        if self.applies_to & _POD and self.applies_to - _POD:
            raise ValueError(f"{self.run.__module__}: pod specs and DRA objects have different facts")


@dataclass(frozen=True, slots=True)
class Mutator:
    """A rule's edit of a Pod on CREATE."""

    mutate: Callable[[Draft, GpuFacts, Policy, Context], Records]
    # On an UPDATE of pods/ephemeralcontainers (`kubectl debug`), its edit of the ephemeral containers the
    # update adds (named); None: the rule leaves such an update alone.
    debug: Callable[[Draft, GpuFacts, Policy, Context, frozenset[str]], Records] | None = None
    # What it would have set but did not, said as a warning (or at audit): None where it never withholds.
    withheld: Callable[[GpuFacts, Policy, Context], list[Finding]] | None = None
    # Mutations run by `stage`, then in the order of the rule ids: a later one reads what an earlier one
    # set (hide-gpus reads the RuntimeClass that default-runtime-class sets), and the patch and the
    # announcements list their edits in that order.
    stage: int = 0


@dataclass(frozen=True, slots=True)
class Definition:
    """A rule: its id, a one-line summary (the docs index, SARIF's shortDescription; translated: the
    catalogue extracts it), the category reports group its findings by (PolicyReport and OpenReports
    `category`), and what it does: its checks, or its mutation. `spec` is its module's docstring."""

    rule: Rule
    summary: str
    category: str
    spec: str | None
    # A validation rule's reason in full, the long form of the one-clause why its findings' lines carry: shown
    # by `check --explain` and given as SARIF's rule `fullDescription` and `help`; the catalogue's msgid (N_).
    reason: str | None = None
    checks: tuple[Check, ...] = ()
    mutation: Mutator | None = None

    def __post_init__(self) -> None:
        if (self.reason is None) is not self.rule.is_mutation:
            raise ValueError(f"{self.rule}: a validation rule gives its reason in full, a mutation none")
        if (self.mutation is not None) is not self.rule.is_mutation or (self.mutation is None) is not bool(self.checks):
            raise ValueError(f"{self.rule}: a validation rule has checks, a mutation rule a mutation")
        if not self.spec or not self.spec.startswith(f"{self.rule.value}: "):
            raise ValueError(f"{self.rule}: its module's docstring, the rule's spec, must open with "
                             f"'{self.rule.value}: '")

    @property
    def default(self) -> Action:
        return self.rule.default
