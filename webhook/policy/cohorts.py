"""Which cohort a pod spec is bound for (docs/architecture.md, Cohort resolution)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Cohort, Policy
from webhook.objects.access import NO_DICT, as_dict, as_list, as_str
from webhook.objects.podspec import PodView
from webhook.policy.context import Context
from webhook.policy.messages import T, Text

SELECTOR = "selector"
NAMESPACE = "namespace"
INFERRED = "inferred"
AFFINITY_PATH = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(slots=True, kw_only=True)
class CohortChoice:
    cohort: Cohort | None = None
    source: str | None = None  # selector | namespace | inferred
    conflict: tuple[str, ...] = ()  # names of the cohorts a contradictory selector targets
    path: str = ""  # where the choice (or the conflict) comes from
    # `path` as messages say it where it is not a field path (a namespace's default), in their language
    origin: Text | None = None
    # Cohorts whose nodes cannot satisfy the pod's node selection although it names none: a namespace
    # default or an inferred cohort must never be one of them (the pod would never schedule there).
    excluded: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # every field that names a cohort (nodeSelector, required affinity)
    # When no cohort is chosen but the selection admits only cohort nodes: those cohorts (several)
    admitted: tuple[str, ...] = ()


NONE = CohortChoice()


def _allows(op: str, values: tuple[Any, ...], value: str | None) -> bool | None:
    """Whether a node whose label is `value` (None: absent) satisfies one requirement; None: no verdict."""
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if len(values) != 1 or type(values[0]) is not str or not values[0].lstrip("-").isdigit():
            return None  # the apiserver refuses it; no verdict
        if value is None or not value.lstrip("-").isdigit():
            return False  # Kubernetes: a label that is not an integer never matches Gt/Lt
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
    return None


def _requirements(selector: Mapping[str, Any], term: object) -> list[tuple[str, str, tuple[Any, ...]]] | None:
    """One node selector term ANDed with nodeSelector, as (key, operator, values); None: the term matches no
    node (Kubernetes skips a term with neither matchExpressions nor matchFields)."""
    reqs = [(k, "In", (v,)) for k, v in selector.items() if type(k) is str and type(v) is str]
    if term is None:
        return reqs
    term = as_dict(term)
    exprs = as_list(term.get("matchExpressions"))
    if not exprs and not as_list(term.get("matchFields")):
        return None
    for e in exprs:
        if type(e) is dict and type(e.get("key")) is str:
            reqs.append((e["key"], as_str(e.get("operator")) or "", tuple(as_list(e.get("values")))))
    return reqs  # matchFields (metadata.name): a named node, whose cohort is unknown: it narrows nothing here


def _term_cohorts(reqs: list[tuple[str, str, tuple[Any, ...]]], policy: Policy) -> tuple[frozenset[str], bool]:
    """(cohorts whose nodes the term admits, whether it also admits nodes of no cohort). A node carries a
    cohort's value of a label that tells cohorts apart only if it is that cohort's (the allocation label
    alone is enough); labels a cohort does not declare may be anything on its nodes."""
    carrying = policy.label_cohorts
    keys = policy.discriminating_labels
    admitted = policy.cohort_names
    pinned = False
    for key, op, values in reqs:
        by_value = carrying.get(key)
        if by_value is None:
            continue  # no cohort declares the key: any cohort's node may satisfy it
        if op == "In" and all(type(v) is str for v in values):
            # the common case (nodeSelector, In): set algebra on what the policy derived once
            allowed = policy.label_undeclared[key].union(*(by_value.get(v, ()) for v in values))
            if key in keys and values and all(v in keys[key] for v in values):
                pinned = True
        else:
            allowed = frozenset(c.name for c in policy.cohorts
                                if key not in c.node_labels or _allows(op, values, c.node_labels[key]) is not False)
        admitted = admitted & allowed
        if not admitted and pinned:
            break
    return admitted, not pinned


def from_selectors(view: PodView, policy: Policy) -> CohortChoice:
    """The cohort the pod's node selection binds it to. Required affinity is an OR of terms, each ANDed with
    nodeSelector: a cohort is chosen only when every term admits its nodes and no others."""
    spec = view.spec
    selector = as_dict(spec.get("nodeSelector"))
    affinity = spec.get("affinity")
    required = as_dict(as_dict(as_dict(affinity).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution")) if affinity else NO_DICT
    has_terms = "nodeSelectorTerms" in required
    if not selector and not has_terms:
        return NONE
    if has_terms:
        terms = as_list(required.get("nodeSelectorTerms"))
        if not terms:
            # No term at all (the apiserver refuses it): no node matches, and no cohort is to blame.
            return CohortChoice(path=f"{view.prefix}.{AFFINITY_PATH}", excluded=_excluded(frozenset(), policy))
        reading: Reading | None = _read(selector, terms, policy)
    else:
        # nodeSelector alone: what it means depends on its items only, and most pods share a few
        # (the cohorts' labels), so the policy keeps the readings
        try:
            key = tuple(selector.items())
            reading = policy.selector_readings.get(key)
        except TypeError:  # a value that is not hashable: not a label value anyway
            key, reading = None, None
        if reading is None:
            reading = _read(selector, None, policy)
            if key is not None:
                if len(policy.selector_readings) >= _READINGS_LIMIT:
                    policy.selector_readings.clear()
                policy.selector_readings[key] = reading
    assert reading is not None  # read above when not kept
    named, by_selector, by_affinity, admitted, open_ = reading
    selector_path = f"{view.prefix}.nodeSelector"
    affinity_path = f"{view.prefix}.{AFFINITY_PATH}"
    paths = ([selector_path] if by_selector else []) + ([affinity_path] if by_affinity else [])
    path = affinity_path if by_affinity or (has_terms and not named) else selector_path
    if not admitted and not open_:
        # Nothing can satisfy it: a contradiction when it names cohorts, else (no terms that match) no choice.
        if named:
            return CohortChoice(conflict=named, path=path, paths=tuple(paths))
        return CohortChoice(path=path, excluded=_excluded(admitted, policy))
    if len(admitted) == 1 and not open_:
        (name,) = admitted
        return CohortChoice(cohort=policy.cohort(name), source=SELECTOR, path=" and ".join(paths) or path)
    return CohortChoice(path=path, excluded=_excluded(admitted, policy),
                        admitted=() if open_ else tuple(sorted(admitted)))


_READINGS_LIMIT = 256
# What _read makes of a node selection: (cohorts it names, whether nodeSelector names one, whether the
# affinity does, cohorts some term admits, whether some term admits nodes of no cohort).
Reading = tuple[tuple[str, ...], bool, bool, frozenset[str], bool]


def _excluded(admitted: Iterable[str], policy: Policy) -> tuple[str, ...]:
    return tuple(sorted(c.name for c in policy.cohorts if c.name not in admitted))


def _read(selector: Mapping[str, Any], terms: Sequence[Any] | None, policy: Policy) -> Reading:
    """(names of the cohorts it names, whether nodeSelector names one, whether the affinity does, cohorts
    some term admits, whether some term admits nodes of no cohort). `terms` None: nodeSelector alone."""
    keys = policy.discriminating_labels
    named: set[str] = set()
    by_selector = by_affinity = False
    for k, v in selector.items():
        if type(v) is str and k in keys and v in keys[k]:
            named.add(keys[k][v].name)
            by_selector = True
    admitted: frozenset[str] = frozenset()
    open_ = False
    for term in terms if terms is not None else (None,):
        if term is not None:
            for e in as_list(as_dict(term).get("matchExpressions")):
                if type(e) is dict and e.get("operator") == "In" and type(e.get("key")) is str and e["key"] in keys:
                    for value in as_list(e.get("values")):
                        if type(value) is str and value in keys[e["key"]]:
                            named.add(keys[e["key"]][value].name)
                            by_affinity = True
        reqs = _requirements(selector, term)
        if reqs is None:
            continue  # matches no node
        cohorts_, other = _term_cohorts(reqs, policy)
        admitted = admitted | cohorts_
        open_ = open_ or other
    return tuple(sorted(named)), by_selector, by_affinity, admitted, open_


def node_selection(spec: Mapping[str, Any], policy: Policy) -> tuple[frozenset[str], bool]:
    """(cohorts whose nodes a pod spec's node selection admits, whether it also admits nodes of no cohort):
    where a DaemonSet's pods can land. No selection at all admits every node."""
    selector = as_dict(spec.get("nodeSelector"))
    required = as_dict(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    if "nodeSelectorTerms" in required:
        terms = as_list(required.get("nodeSelectorTerms"))
        if not terms:
            return frozenset(), False  # the apiserver refuses it; no node matches
        reading = _read(selector, terms, policy)
    else:
        reading = _read(selector, None, policy)
    return reading[3], reading[4]


def from_namespace(view: PodView, policy: Policy, context: Context, excluded: tuple[str, ...] = ()) -> CohortChoice:
    """The namespace's default cohort, unless the pod's own node selection rules it out."""
    name = policy.namespace_cohorts.get(view.namespace)
    if name:
        cohort = policy.cohort(name)
        if cohort is None or cohort.name in excluded:
            return NONE
        return CohortChoice(cohort=cohort, source=NAMESPACE,
                            path=f'the policy\'s default for namespace "{view.namespace}"',
                            origin=T('the policy\'s default for namespace "{namespace}"', namespace=view.namespace))
    labels = context.namespace_labels
    value = labels.get(policy.allocation_label) if labels else None
    if value:
        for c in policy.cohorts:
            if (c.node_labels.get(policy.allocation_label) == value or c.name == value) and c.name not in excluded:
                return CohortChoice(cohort=c, source=NAMESPACE,
                                    path=f'the label {policy.allocation_label}={value} of namespace "{view.namespace}"',
                                    origin=T('the label {label} of namespace "{namespace}"',
                                             label=f"{policy.allocation_label}={value}", namespace=view.namespace))
    return NONE


def inferred(mechanisms: frozenset[str], policy: Policy, excluded: tuple[str, ...] = ()) -> CohortChoice:
    """The one cohort that runs the pod's only mechanism, among those its node selection allows."""
    if len(mechanisms) != 1:
        return NONE
    (mechanism,) = mechanisms
    return policy.derived(_inferred, mechanism, excluded)  # the same for every GPU pod of that mechanism


def _inferred(policy: Policy, mechanism: str, excluded: tuple[str, ...]) -> CohortChoice:
    running = [c for c in policy.cohorts if c.mechanism == mechanism and c.name not in excluded]
    if len(running) == 1:
        return CohortChoice(cohort=running[0], source=INFERRED)
    return NONE
