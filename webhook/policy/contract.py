"""The one definition of a rule, and the one check contract.

Each rule is one module of `webhook/policy/checks` (validation) or `webhook/policy/mutations` (mutation)
that opens with the rule's spec (its docstring) and ends with its `DEFINITION`: the id, the summary and
category, its default action, what it applies to and the function run there, or its mutation, and where
the apiserver can decide it, its in-tree export (its coverage, and its policy in CEL). `definitions.DEFINITIONS`
collects them in the order of the rule ids, and every list is derived from it: the rule-id table
(webhook/rules.py) and the schemas' rule-id enum (`make schema`), the engine's checks by target and its
mutations, the in-tree coverage (webhook/policy/coverage.py) and export (webhook/intree), the docs index (`make
docs`), SARIF's and PolicyReport's rule metadata, the catalogue checks.

A check is a function of (facts, context, policy) returning a list of Findings: over a pod spec's
GpuFacts (a Pod's, or a controller's pod template's), a DRA object's ObjectFacts or an infrastructure
object's InfraFacts. A mutation edits a copy-on-write Draft of a Pod and returns (path, what it set)
records."""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Cohort, Policy
from webhook.objects.claims import ClaimSpec
from webhook.objects.podspec import PodView
from webhook.policy.cel import Validation
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Lines
from webhook.policy.context import Context
from webhook.policy.dra import ObjectFacts
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.infra import InfraFacts
from webhook.policy.messages import Said
from webhook.policy.results import Finding
from webhook.rule_id import Action
from webhook.rules import Rule


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
Variables = list[dict[str, Any]]  # a policy's variables, each {"name": ..., "expression": ...}


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


def always(policy: Policy) -> bool:
    """An in-tree export that every configuration gets (where a binding applies it)."""
    return True


@dataclass(frozen=True, slots=True)
class InTree:
    """Where the apiserver decides a rule itself, as the engine reads it: for which configurations `export` writes
    the rule's ValidatingAdmissionPolicy or MutatingAdmissionPolicy, and for which objects that policy decides (its
    coverage); and the same in CEL, as the policy says it to the apiserver: a validation's coverage and its
    validations, a mutation's JSONPatch (written with webhook/policy/cel's string builders, in the rule's module).
    The engine leaves a covered object to the apiserver; outside the coverage a rule's verdict or its message needs
    what CEL cannot do (a lookup, a path as the host resolves it, the pod's GPU allocation), and the webhook keeps
    the rule. The exporter (webhook/intree) assembles the policies and their bindings from these; the parity tests
    (tests/intree) hold the Python and the CEL equal. The engine never calls the CEL writers."""

    # Whether `export` writes the rule's policies for this configuration (given a binding that applies them).
    exported: Callable[[Policy], bool]
    # The pod-bearing objects its policy decides, through their pod spec.
    covers: Callable[[PodView, Policy], bool] | None = None
    # The ResourceClaims and ResourceClaimTemplates its policy decides.
    covers_claim: Callable[[ClaimSpec, Policy], bool] | None = None
    # A mutation's: the cohorts whose Pods its policy decides (a Pod it covers is pinned to one of them).
    cohorts: Callable[[Policy], tuple[Cohort, ...]] | None = None
    # Where its policies come in `export`'s output: by `order`, then in the order of the rule ids.
    order: int = 0
    # A validation's, in CEL over its policy's variables for objects of `shape` (webhook/policy/cel/shapes.py: the
    # pod specs for `covers`, the claims for `covers_claim`): its coverage (the variable `covered`, which every
    # validation reads first) ...
    cel_covered: Callable[[Shape, Policy], str] | None = None
    # ... and its own variables and validations, their messages written through the policy's `Lines`.
    cel_validations: Callable[[Shape, Policy, Lines], tuple[Variables, list[Validation]]] | None = None
    # A mutation's: its variables and its JSONPatch expression, for the Pods its `cohorts` cover.
    cel_patch: Callable[[Policy], tuple[Variables, str]] | None = None

    def __post_init__(self) -> None:
        if (self.covers is None) is (self.covers_claim is None):
            raise ValueError("an in-tree export covers pod specs or claims")
        mutation = self.cohorts is not None
        if {self.cel_patch is not None, self.cel_covered is None, self.cel_validations is None} != {mutation}:
            raise ValueError("an in-tree export says its policy in CEL: a validation's coverage and validations, "
                             "a mutation's patch")


@dataclass(frozen=True, slots=True)
class Definition:
    """A rule: its id, a one-line summary (the docs index, SARIF's shortDescription; translated: the
    catalogue extracts it), the category reports group its findings by (PolicyReport and OpenReports
    `category`), its default action (the config's where a policy names none), and what it does: its checks,
    or its mutation (a rule with a mutation mutates). `spec` is its module's docstring.

    The id is a string, which `make schema` writes into the rule-id table (`webhook.rules.Rule`, what the layers
    below the policy read) with the default action and whether the rule mutates: so a new rule's module is read
    before its id is in the table, and `rule`, the table's member, exists from then on."""

    id: str
    summary: str
    category: str
    spec: str | None
    default: Action = Action.ENFORCE
    # A validation rule's reason in full, the long form of the one-clause why its findings' lines carry: shown
    # by `check --explain` and given as SARIF's rule `fullDescription` and `help`; the catalogue's msgid (N_).
    reason: str | None = None
    checks: tuple[Check, ...] = ()
    mutation: Mutator | None = None
    # Its in-tree export, where the apiserver can decide it (webhook/intree assembles the policies from it).
    in_tree: InTree | None = None

    def __post_init__(self) -> None:
        if (self.mutation is None) is not bool(self.checks):
            raise ValueError(f"{self.id}: a validation rule has checks, a mutation rule a mutation")
        if (self.reason is None) is not self.mutates:
            raise ValueError(f"{self.id}: a validation rule gives its reason in full, a mutation none")
        if not self.spec or not self.spec.startswith(f"{self.id}: "):
            raise ValueError(f"{self.id}: its module's docstring, the rule's spec, must open with '{self.id}: '")
        if self.in_tree is not None and (self.in_tree.cohorts is not None) is not self.mutates:
            raise ValueError(f"{self.id}: a mutation's in-tree export names its cohorts, a validation's none")

    @property
    def mutates(self) -> bool:
        return self.mutation is not None

    @property
    def rule(self) -> Rule:
        """The id's member of the rule-id table (a ValueError until `make schema` has written it there)."""
        return Rule(self.id)
