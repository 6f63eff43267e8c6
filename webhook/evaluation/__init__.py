"""One object through the engine, as the CLI, the audit and both webhooks see it: what it refers to resolved
first (webhook.evaluation.context: claims, classes, namespace labels, through the Resolver), then the pure
policy. Below the request path, above the policy."""
from __future__ import annotations

from collections.abc import Mapping

from webhook.config.model import Policy
from webhook.evaluation.context import build_context, infrastructure_context
from webhook.objects.access import as_dict, as_str
from webhook.objects.kinds import foreign_kind
from webhook.objects.lookup import Resolver
from webhook.objects.podspec import added_ephemeral_containers, display_name, pod_view
from webhook.policy.engine import evaluate, exempt, object_namespace
from webhook.policy.phase import Phase
from webhook.policy.results import Evaluation
from webhook.rules import Action, Rule


def evaluate_object(obj: dict, *, policy: Policy, resolver: Resolver, operation: str = "CREATE",
                    namespace: str | None = None, user_info: dict | None = None, kind: str | None = None,
                    phases: Phase = Phase.BOTH, sub_resource: str | None = None,
                    old: Mapping | None = None) -> Evaluation:
    """`sub_resource` and `old` as the request gives them: an UPDATE of pods/ephemeralcontainers (`kubectl
    debug`) is judged by the ephemeral containers it adds, which are those of `obj` that `old` lacks."""
    kind = as_str(obj.get("kind")) or kind or ""
    foreign = foreign_kind(obj, kind)
    if foreign:
        return Evaluation(kind=kind, namespace=as_str(as_dict(obj.get("metadata")).get("namespace")) or namespace or "",
                          name=display_name(obj), skipped=foreign)
    namespace = object_namespace(obj, kind, namespace or "")
    skipped = exempt(obj, kind, namespace, policy)
    if skipped is not None:
        # Before any lookup: exempt namespaces cost nothing, but for a controller that runs a GPU allocation
        # owner (infrastructure lives there), judged by the allocation-owner rule alone.
        if kind == "Pod" or not phases.validates or \
                policy.settings_for(namespace)[1].get(Rule.ALLOCATION_OWNER) is Action.OFF:
            return skipped
        view = pod_view(obj, kind, namespace)
        if view is None:
            return skipped
        context = infrastructure_context(view, policy=policy, resolver=resolver, user=user_info)
        if context is None:
            return skipped  # no allocation owner in it
        ev = evaluate(obj, kind=kind, namespace=namespace, policy=policy, context=context, operation=operation,
                      phases=Phase.VALIDATE, view=view, infrastructure_only=True)
        return ev if ev.violations or ev.errors else skipped
    view = pod_view(obj, kind, namespace)  # None for kinds without a pod spec; built once, read by both
    context = build_context(obj, kind, namespace, policy=policy, resolver=resolver, user=user_info, view=view,
                            old=old)
    added = added_ephemeral_containers(obj, old) if sub_resource == "ephemeralcontainers" and kind == "Pod" else None
    return evaluate(obj, kind=kind, namespace=namespace, policy=policy, context=context, operation=operation,
                    phases=phases, view=view, added_ephemeral=added)
