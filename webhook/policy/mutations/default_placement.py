"""default-placement: the cohort's node labels (`spec.nodeSelector`) and tolerations
(`spec.tolerations`) on a GPU pod that did not select its cohort itself: bound for its namespace's
default cohort, or for the only cohort that runs the mechanism it asks through. Keeps the scheduler from
placing it on another cohort's nodes, where its GPU request means nothing, and lets it tolerate the
cohort's GPU taint. Only where absent: a label the pod already selects, or a taint it already tolerates,
is left as it is. Not on a pod bound to a node already (`nodeName`), nor where the namespace's cohort
cannot give the pod's GPUs (cohort-mismatch)."""
from collections.abc import Sequence
from typing import Any

from webhook.config.model import Policy, Toleration
from webhook.objects.access import as_dict, as_list, as_str
from webhook.policy.cohorts import INFERRED, NAMESPACE
from webhook.policy.context import Context
from webhook.policy.contract import Definition, Mutator
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T, Text


def _tolerated(existing: Sequence[Any], wanted: Toleration) -> bool:
    for t in existing:
        if type(t) is not dict or t.get("effect") not in (None, "", wanted.effect):
            continue
        key, operator = t.get("key"), t.get("operator", "Equal")
        if operator == "Exists" and not key:
            return True  # tolerates every taint
        if key == wanted.key and operator == wanted.operator and t.get("value") == wanted.value:
            return True
    return False


def mutate(draft: Draft, facts: GpuFacts, policy: Policy, context: Context | None = None) -> list[tuple[str, Said]]:
    choice = facts.choice
    if choice.cohort is None or choice.source not in (NAMESPACE, INFERRED):
        return []
    if as_str(facts.view.spec.get("nodeName")):
        # Bound to a node already (static pods' mirrors, controllers that bind): past scheduling, a
        # nodeSelector that node may not satisfy would only make its kubelet reject the pod.
        return []
    cohort = choice.cohort
    mechanisms = facts.mechanisms
    if mechanisms and mechanisms != {cohort.mechanism}:
        return []  # the namespace's cohort cannot give these GPUs (cohort-mismatch): placing the pod there helps no one
    spec = facts.view.spec
    selector = as_dict(spec.get("nodeSelector"))
    missing = {k: v for k, v in cohort.node_labels.items() if k not in selector}
    existing = as_list(spec.get("tolerations"))
    tolerations = [t.as_dict() for t in cohort.tolerations if not _tolerated(existing, t)]
    records: list[tuple[str, Said]] = []
    by_default = choice.source == NAMESPACE

    def of_cohort(what: Text) -> Text:
        why = T("namespace default") if by_default else T("inferred from its GPU request")
        return T('{what} of cohort "{cohort}" ({why})', what=what, cohort=cohort.name, why=why)

    if missing:
        node = draft.node("spec", "nodeSelector")
        node.update(missing)
        records.append(("spec.nodeSelector", lambda: of_cohort(T("node labels {labels}", labels=", ".join(
            f"{k}={v}" for k, v in missing.items())))))
    if tolerations:
        draft.node("spec", "tolerations", create=list).extend(tolerations)
        records.append(("spec.tolerations", lambda: of_cohort(T("tolerations {tolerations}", tolerations=", ".join(
            f"{t.get('key', '*')} {t['operator']} {t.get('effect', '')}".strip() for t in tolerations)))))
    return records


DEFINITION = Definition(
    "default-placement",
    "adds the cohort's node labels and tolerations when the pod did not select the cohort itself",
    "GPU allocation",
    __doc__,
    mutation=Mutator(mutate, stage=0))  # where the pod runs, before how: its edits come first in the patch
