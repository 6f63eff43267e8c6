"""Which cohort a pod spec is bound for (DESIGN.md section 4)."""
from __future__ import annotations

from typing import Final, Mapping

from webhook.config.model import Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.podspec import PodView
from webhook.policy.context import Context

SELECTOR = "selector"
NAMESPACE = "namespace"
INFERRED = "inferred"
AFFINITY_PATH = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


class CohortChoice:
    """A plain class with Final fields, built on every request: see podspec.Container."""

    __slots__ = ("cohort", "source", "conflict", "path", "excluded", "paths")

    def __init__(self, cohort: Cohort | None = None, source: str | None = None, conflict: tuple[str, ...] = (),
                 path: str = "", excluded: tuple[str, ...] = (), paths: tuple[str, ...] = ()) -> None:
        self.cohort: Final = cohort
        self.source: Final = source  # selector | namespace | inferred
        self.conflict: Final = conflict  # names of the cohorts a contradictory selector targets
        self.path: Final = path  # where the choice (or the conflict) comes from
        # Cohorts whose nodes cannot satisfy the pod's node selection although it names none: a namespace
        # default or an inferred cohort must never be one of them (the pod would never schedule there).
        self.excluded: Final = excluded
        self.paths: Final = paths  # every field that names a cohort (nodeSelector, required affinity)


NONE = CohortChoice()


def _expression_allows(expr: Mapping, labels) -> bool:
    key = as_str(expr.get("key"))
    op = expr.get("operator")
    values = as_list(expr.get("values"))
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return True  # Gt / Lt and anything unknown: no verdict


def from_selectors(view: PodView, policy: Policy) -> CohortChoice:
    spec = view.spec
    selector = as_dict(spec.get("nodeSelector"))
    affinity = spec.get("affinity")
    terms = as_list(as_dict(as_dict(as_dict(affinity).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution")).get("nodeSelectorTerms")) if affinity else ()
    if not selector and not terms:
        return NONE
    keys = policy.discriminating_labels
    carrying = policy.label_cohorts
    named: dict[str, Cohort] = {}
    candidates: frozenset[str] | None = None  # the cohorts whose labels the selection allows; None: all
    path = f"{view.prefix}.nodeSelector"
    paths: list[str] = []
    for k, v in selector.items():
        if type(v) is not str:
            continue  # not a label value: reads as absent
        if k in keys and v in keys[k]:
            named[keys[k][v].name] = keys[k][v]
            paths[:] = [path]
        if k in carrying:
            allowed = carrying[k].get(v, frozenset())
            candidates = allowed if candidates is None else candidates & allowed
    if terms:
        allowed_by_terms: set[str] = set()
        for term in terms:
            exprs = [e for e in as_list(as_dict(term).get("matchExpressions"))
                     if type(e) is dict and type(e.get("key")) is str]
            for e in exprs:
                if e.get("operator") == "In" and e["key"] in keys:
                    for value in as_list(e.get("values")):
                        if type(value) is str and value in keys[e["key"]]:
                            c = keys[e["key"]][value]
                            named[c.name] = c
                            path = f"{view.prefix}.{AFFINITY_PATH}"
                            if path not in paths:
                                paths.append(path)
            for c in policy.cohorts:
                if all(_expression_allows(e, c.node_labels) for e in exprs if e["key"] in carrying):
                    allowed_by_terms.add(c.name)
        candidates = frozenset(allowed_by_terms) if candidates is None else candidates & allowed_by_terms
    if not named:
        excluded = tuple(sorted(c.name for c in policy.cohorts if candidates is not None and c.name not in candidates))
        return CohortChoice(path=path if not terms else f"{view.prefix}.{AFFINITY_PATH}", excluded=excluded) \
            if excluded else NONE
    chosen = [c for n, c in named.items() if candidates is None or n in candidates]
    if len(chosen) == 1:
        return CohortChoice(chosen[0], SELECTOR, path=path)
    return CohortChoice(conflict=tuple(sorted(named)), path=path, paths=tuple(paths))


def from_namespace(view: PodView, policy: Policy, context: Context, excluded: tuple[str, ...] = ()) -> CohortChoice:
    """The namespace's default cohort, unless the pod's own node selection rules it out."""
    name = policy.namespace_cohorts.get(view.namespace)
    if name:
        cohort = policy.cohort(name)
        if cohort is None or cohort.name in excluded:
            return NONE
        return CohortChoice(cohort, NAMESPACE, path=f'the policy\'s default for namespace "{view.namespace}"')
    labels = context.namespace_labels
    value = labels.get(policy.allocation_label) if labels else None
    if value:
        for c in policy.cohorts:
            if (c.node_labels.get(policy.allocation_label) == value or c.name == value) and c.name not in excluded:
                return CohortChoice(c, NAMESPACE, path=f'the label {policy.allocation_label}={value} of namespace '
                                                       f'"{view.namespace}"')
    return NONE


def inferred(mechanisms: frozenset[str], policy: Policy, excluded: tuple[str, ...] = ()) -> CohortChoice:
    """The one cohort that runs the pod's only mechanism, among those its node selection allows."""
    if len(mechanisms) != 1:
        return NONE
    (mechanism,) = mechanisms
    running = [c for c in policy.cohorts if c.mechanism == mechanism and c.name not in excluded]
    if len(running) == 1:
        return CohortChoice(running[0], INFERRED)
    return NONE
