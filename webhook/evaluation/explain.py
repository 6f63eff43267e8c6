"""One pod through `explain`: the engine's findings on it (as on CREATE, mutated first when it was never
created, so that the placement the webhook adds is the one explained), then its explanation against the
cluster's capacity and what holds it."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from webhook.config.model import Policy
from webhook.evaluation import evaluate_object
from webhook.evaluation.context import build_context
from webhook.objects.access import as_dict, as_str
from webhook.objects.lookup import Resolver
from webhook.objects.occupancy import Occupancy
from webhook.objects.podspec import pod_view
from webhook.policy.context import Context
from webhook.policy.explain import Explanation, explain
from webhook.policy.gpu import analyse
from webhook.policy.phase import Phase


def explain_pod(pod: dict, *, policy: Policy, resolver: Resolver, occupancy: Occupancy, namespace: str,
                created: bool, scheduler: Sequence[str] = (),
                vet: Callable[[Context], None] | None = None) -> Explanation:
    """`created`: the pod exists in the cluster (the mutating webhook has run on it); else it is explained as
    the webhook would leave it. `vet` sees the pod's context before the explanation (and may raise)."""
    namespace = as_str(as_dict(pod.get("metadata")).get("namespace")) or namespace
    ev = evaluate_object(pod, policy=policy, resolver=resolver, namespace=namespace,
                        phases=Phase.VALIDATE if created else Phase.BOTH)
    obj = ev.mutated if ev.mutated is not None else pod
    view = pod_view(obj, "Pod", namespace)
    assert view is not None  # a Pod always has a pod view
    context = build_context(obj, "Pod", namespace, policy=policy, resolver=resolver, view=view)
    if vet is not None:
        vet(context)
    facts = analyse(view, policy, context)
    return explain(obj, facts, context, policy, occupancy, findings=[v.message for v in ev.violations],
                   scheduler=scheduler)
