"""One handler per endpoint, chosen by its Phase: a checked AdmissionRequest in, an Outcome out (made only
through allow, deny and patch).

docs/architecture.md, Never blocked: DELETE, CONNECT, subresources other than `pods/ephemeralcontainers`, updates
that change only status or metadata, and updates of a workload that leave its pod template as it was
(replicas, suspend, parallelism: nothing the rules read) always go through, before either handler runs, so that
cleanup (claims, finalizers, Jobs) and scaling are never stuck behind a policy."""
from __future__ import annotations

from typing import Any

from webhook.admission import render
from webhook.admission.codec import AdmissionRequest
from webhook.admission.response import Outcome, allow, deny, patch
from webhook.config.model import Policy
from webhook.evaluation import evaluate_object
from webhook.objects.access import as_dict
from webhook.objects.annotations import ANNOTATION_PREFIXES
from webhook.objects.kinds import BY_RESOURCE, SUBRESOURCES
from webhook.objects.lookup import Resolver
from webhook.policy.phase import Phase
from webhook.policy.results import Evaluation

__all__ = ["AdmissionRequest", "Outcome", "handle", "mutate", "never_blocked", "validate"]


def handle(request: AdmissionRequest, phase: Phase, *, policy: Policy, resolver: Resolver) -> Outcome:
    reason = never_blocked(request)
    if reason:
        return allow(reason=reason)
    handler = mutate if phase is Phase.MUTATE else validate
    return handler(request, policy=policy, resolver=resolver)


def validate(request: AdmissionRequest, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, Phase.VALIDATE)
    if isinstance(ev, Outcome):
        return ev
    if not ev.violations and not ev.errors:  # most requests: nothing to say
        return allow(evaluation=ev)
    denials, warnings, annotations = render.denial_lines(ev), render.warning_lines(ev), render.annotation_lines(ev)
    if denials:
        return deny("\n".join(denials), warnings=warnings, audit_annotations=annotations, evaluation=ev)
    return allow(warnings=warnings, audit_annotations=annotations, evaluation=ev)


def mutate(request: AdmissionRequest, *, policy: Policy, resolver: Resolver) -> Outcome:
    ev = _evaluate(request, policy, resolver, Phase.MUTATE)
    if isinstance(ev, Outcome):
        return ev
    if not ev.violations and not ev.errors:
        return patch(ev.patch, evaluation=ev)
    return patch(ev.patch, warnings=render.warning_lines(ev), audit_annotations=render.annotation_lines(ev),
                 evaluation=ev)


def _evaluate(request: AdmissionRequest, policy: Policy, resolver: Resolver, phase: Phase) -> Evaluation | Outcome:
    """The evaluation, or the outcome when no rule ran (no object, a foreign kind, an exempt namespace)."""
    obj = request.object
    if obj is None:
        return allow(reason="the request carries no object to evaluate")
    ev = evaluate_object(
        obj, policy=policy, resolver=resolver, operation=request.operation,
        namespace=request.namespace or None, user_info=request.user_info, kind=request.kind,
        phases=phase, sub_resource=request.sub_resource or None, old=as_dict(request.old_object),
    )
    return allow(evaluation=ev, reason=ev.skipped) if ev.skipped else ev


# --- never blocked -------------------------------------------------------------------------------------

_UNREAD = frozenset({"metadata", "status"})


def never_blocked(request: AdmissionRequest) -> str:
    """Why the request is allowed without evaluation, or "" when the handlers must see it."""
    operation = request.operation
    if operation in ("DELETE", "CONNECT"):
        return f"{operation} is never blocked"
    sub = request.sub_resource
    if sub and sub not in SUBRESOURCES.get((request.group, request.resource), ()):
        return f"the {request.resource}/{sub} subresource is never blocked"
    new, old = request.object, request.old_object
    if request.group == "" and request.resource == "nodes":
        # Node updates are read for one thing: labels that move the node between cohorts (allocation-owner).
        if operation != "UPDATE" or new is None or old is None or not differ(_node_labels(new), _node_labels(old)):
            return "a node update that changes no label is never blocked"
        return ""
    if operation == "UPDATE" and new is not None and old is not None:  # the codec requires both
        if _only_status_or_metadata(new, old):
            return "the update changes only status or metadata"
        info = BY_RESOURCE.get((request.group, request.resource))
        if info is not None and info.kind != "Pod" and info.pod_spec_path is not None and not sub:
            template = info.pod_spec_path[:-1]  # spec.template, spec.jobTemplate.spec.template, template
            if _at(new, template) == _at(old, template) and _at(new, template) is not None:
                return "the update leaves the pod template unchanged"
    return ""


def _node_labels(obj: dict) -> object:
    metadata = obj.get("metadata")
    return metadata.get("labels") if isinstance(metadata, dict) else None


def _at(obj, path: tuple[str, ...]):
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _only_status_or_metadata(new: dict, old: dict) -> bool:
    for key in new.keys() | old.keys():
        if key not in _UNREAD and differ(new.get(key), old.get(key)):
            return False
    # One piece of metadata does grant devices: CDI/NRI annotations on a pod that has not started
    # its containers yet. Changing those is evaluated like any other change.
    return not differ(_device_annotations(new), _device_annotations(old))


def differ(a: object, b: object) -> bool:
    """`a != b` for JSON values, without recursion: Python's own comparison recurses in C and raises
    RecursionError on input nested about 1,000 deep (which the JSON parser accepts), and an update must
    never turn into "allowed without checks" that way. Subtrees shared by identity are equal."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        tx, ty = type(x), type(y)
        if tx is dict and ty is dict:
            if len(x) != len(y) or any(k not in y for k in x):
                return True
            stack.extend((v, y[k]) for k, v in x.items())
        elif tx is list and ty is list:
            if len(x) != len(y):
                return True
            stack.extend(zip(x, y))
        elif tx in _CONTAINERS or ty in _CONTAINERS or x != y:
            return True
    return False


_CONTAINERS = (dict, list)


def _device_annotations(obj: dict) -> dict:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return {}
    return {k: v for k, v in annotations.items() if isinstance(k, str) and k.startswith(ANNOTATION_PREFIXES)}
