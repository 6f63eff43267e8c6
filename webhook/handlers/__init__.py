"""Admission handlers: one AdmissionRequest in, an Outcome out (only through allow, deny and patch). The review layer
has checked the request's shape; dispatch has already let through what is never evaluated (DELETE, CONNECT, other
subresources, updates that change nothing the rules read)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import MappingProxyType

from webhook.config.model import Policy
from webhook.handlers.evaluate import evaluate_object
from webhook.handlers.outcome import Outcome, allow, deny, patch
from webhook.handlers.request import AdmissionRequest
from webhook.objects.access import as_dict
from webhook.objects.lookup import Resolver
from webhook.policy.messages import T, render
from webhook.policy.results import Evaluation
from webhook.rules import Action, Rule

__all__ = ["AdmissionRequest", "Outcome", "mutate", "validate"]

# Findings carried in one answer, in each of its texts (denial, warnings, audit annotations): the first
# ones in the engine's order, then one line per rule saying how many more. A Pod of 10,000 containers
# that each break a rule is answered in a few kilobytes, not megabytes; `check` lists them all.
MAX_CARRIED = 20
MAX_ANNOTATED_PER_RULE = 8  # an audit annotation's value holds 4 KiB (webhook/review.py): its count line must fit


def _evaluate(request: AdmissionRequest, policy: Policy, resolver: Resolver, *,
              validating: bool) -> Evaluation | Outcome:
    """The evaluation, or the outcome when no rule ran (no object, a foreign kind, an exempt namespace)."""
    obj = request.object
    if obj is None:
        return allow(reason="the request carries no object to evaluate")
    ev = evaluate_object(
        obj, policy=policy, resolver=resolver, operation=request.operation,
        namespace=request.namespace or None, user_info=request.user_info, kind=request.kind,
        validate=validating, mutate=not validating, sub_resource=request.sub_resource or None,
        old=as_dict(request.old_object),
    )
    return allow(evaluation=ev, reason=ev.skipped) if ev.skipped else ev


def validate(request: AdmissionRequest, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, validating=True)
    if isinstance(ev, Outcome):
        return ev
    if not ev.violations and not ev.errors:  # most requests: nothing to say
        return allow(evaluation=ev)
    denials = _bounded(((v.rule, v.message) for v in ev.denials), language=ev.language)
    # The exception's text could quote the object: only its type goes to the user (the log has the rule).
    denials += [render(T("gpu-admission: rule {rule} failed internally ({error}) and its onError is deny, so the "
                         "request was refused; see the gpu-admission log", rule=e.rule.value,
                         error=e.error.split(":", 1)[0]), ev.language)
                for e in ev.errors if e.denied and not ev.dry_run]
    warnings, annotations = _bounded_warnings(ev), _annotations(ev)
    if denials:
        return deny("\n".join(denials), warnings=warnings, audit_annotations=annotations, evaluation=ev)
    return allow(warnings=warnings, audit_annotations=annotations, evaluation=ev)


def mutate(request: AdmissionRequest, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, validating=False)
    if isinstance(ev, Outcome):
        return ev
    if not ev.violations and not ev.errors:
        return patch(ev.patch, evaluation=ev)
    return patch(ev.patch, warnings=_bounded_warnings(ev), audit_annotations=_annotations(ev), evaluation=ev)


def _bounded(findings: Iterable[tuple[Rule, str]], limit: int = MAX_CARRIED, language: str = "en") -> list[str]:
    """The first `limit` texts, then for each rule with more, one line saying how many."""
    kept: list[str] = []
    more: dict[Rule, int] = {}
    for rule, text in findings:
        if len(kept) < limit:
            kept.append(text)
        else:
            more[rule] = more.get(rule, 0) + 1
    kept.extend(_more_line(rule, n, language) for rule, n in more.items())
    return kept


def _more_line(rule: Rule, n: int, language: str = "en") -> str:
    args = {"count": n, "rule": rule.value}
    return render(T("... and {count} more {rule} finding not shown; run `gpu-admission check` on the manifest to see "
                    "them all [{rule}]", **args) if n == 1 else
                  T("... and {count} more {rule} findings not shown; run `gpu-admission check` on the manifest to see "
                    "them all [{rule}]", **args), language)


def _bounded_warnings(ev: Evaluation) -> tuple[str, ...]:
    warnings = _bounded(_warnings(ev), language=ev.language)
    warnings += [render(T("gpu-admission could not evaluate rule {rule} (internal error); the request was allowed",
                          rule=e.rule.value), ev.language)
                 for e in ev.errors if not e.denied or ev.dry_run]
    return tuple(warnings)


def _warnings(ev: Evaluation) -> Iterator[tuple[Rule, str]]:
    for v in ev.violations:
        if ev.dry_run and v.action is Action.ENFORCE and not v.rule.is_mutation:
            yield v.rule, render(T("dry-run, would deny: {message}", message=v.message), ev.language)
        elif ev.dry_run and v.rule.is_mutation:
            yield v.rule, render(T("dry-run: {message}", message=v.message), ev.language)
        elif v.action is Action.WARN or (ev.dry_run and v.action is Action.ENFORCE):
            yield v.rule, v.message


def _annotations(ev: Evaluation):
    """Audit annotations: one key per rule (the apiserver prefixes the webhook's name), its findings joined
    by " | ": the first MAX_CARRIED findings of the answer, then, in each rule's value, how many more."""
    by_rule: dict[str, list[str]] = {}
    more: dict[Rule, int] = {}
    carried = 0
    for v in ev.violations:
        if v.action is Action.AUDIT or ev.dry_run:
            lines = by_rule.setdefault(v.rule.value, [])
            if carried < MAX_CARRIED and len(lines) < MAX_ANNOTATED_PER_RULE:
                lines.append(v.message)
                carried += 1
            else:
                more[v.rule] = more.get(v.rule, 0) + 1
    if not by_rule:
        return MappingProxyType({})
    for rule, n in more.items():
        by_rule[rule.value].append(_more_line(rule, n, ev.language))
    out: dict[str, str] = {"mode": "dry-run"} if ev.dry_run else {}  # first: the total's cap must not drop it
    out.update((rule, " | ".join(lines)) for rule, lines in by_rule.items())
    return MappingProxyType(out)
