"""Admission handlers: one AdmissionReview `request` in, an Outcome out. The review layer has checked the
request's shape; dispatch has already let through what is never evaluated (DELETE, CONNECT, other
subresources, updates that change nothing the rules read)."""
from __future__ import annotations

from types import MappingProxyType

from webhook.config.model import Policy
from webhook.handlers.evaluate import evaluate_object
from webhook.handlers.outcome import Outcome
from webhook.lookups.base import Resolver
from webhook.objects.access import as_dict, as_str
from webhook.policy.results import Evaluation
from webhook.rules import Action

__all__ = ["Outcome", "mutate", "validate"]


def _evaluate(request: dict, policy: Policy, resolver: Resolver, *, validating: bool) -> Evaluation | Outcome:
    obj = request.get("object")
    if type(obj) is not dict:
        return Outcome(allowed=True, reason="the request carries no object to evaluate")
    return evaluate_object(
        obj, policy=policy, resolver=resolver, operation=as_str(request.get("operation")) or "CREATE",
        namespace=as_str(request.get("namespace")), user_info=as_dict(request.get("userInfo")),
        kind=as_str(as_dict(request.get("kind")).get("kind")), validate=validating, mutate=not validating,
        sub_resource=as_str(request.get("subResource")), old=as_dict(request.get("oldObject")),
    )


def validate(request: dict, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, validating=True)
    if isinstance(ev, Outcome):
        return ev
    if ev.skipped:
        return Outcome(allowed=True, evaluation=ev, reason=ev.skipped)
    if not ev.violations and not ev.errors:  # most requests: nothing to say
        return Outcome(allowed=True, evaluation=ev)
    denials = [v.message for v in ev.denials]
    # The exception's text could quote the object: only its type goes to the user (the log has the rule).
    denials += [f"gpu-admission: rule {e.rule.value} failed internally ({e.error.split(':', 1)[0]}) and its onError is "
                "deny, so the request was refused; see the gpu-admission log" for e in ev.errors if e.denied and not ev.dry_run]
    return Outcome(
        allowed=not denials,
        message="\n".join(denials),
        warnings=tuple(_warnings(ev)),
        audit_annotations=_annotations(ev),
        evaluation=ev,
    )


def mutate(request: dict, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, validating=False)
    if isinstance(ev, Outcome):
        return ev
    if ev.skipped:
        return Outcome(allowed=True, evaluation=ev, reason=ev.skipped)
    if not ev.violations and not ev.errors:
        return Outcome(allowed=True, patch=ev.patch, evaluation=ev)
    return Outcome(allowed=True, warnings=tuple(_warnings(ev)), audit_annotations=_annotations(ev), patch=ev.patch,
                   evaluation=ev)


def _warnings(ev: Evaluation):
    for v in ev.violations:
        if ev.dry_run and v.action is Action.ENFORCE and not v.rule.is_mutation:
            yield f"dry-run, would deny: {v.message}"
        elif ev.dry_run and v.rule.is_mutation:
            yield f"dry-run: {v.message}"
        elif v.action is Action.WARN or (ev.dry_run and v.action is Action.ENFORCE):
            yield v.message
    for e in ev.errors:
        if not e.denied or ev.dry_run:
            yield f"gpu-admission could not evaluate rule {e.rule.value} (internal error); the request was allowed"


def _annotations(ev: Evaluation):
    """Audit annotations: one key per rule (the apiserver prefixes the webhook's name)."""
    out: dict[str, str] = {}
    for v in ev.violations:
        if v.action is Action.AUDIT or ev.dry_run:
            out[v.rule.value] = f"{out[v.rule.value]} | {v.message}" if v.rule.value in out else v.message
    if out and ev.dry_run:
        out["mode"] = "dry-run"
    return MappingProxyType(out)
