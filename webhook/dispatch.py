"""Which handler answers a checked AdmissionReview request, and which requests no rule may block.

DESIGN.md section 7: DELETE, CONNECT, subresources other than `pods/ephemeralcontainers`, and updates
that change only status or metadata always go through, so that cleanup (claims, finalizers, Jobs)
is never stuck behind a policy."""
from __future__ import annotations

from webhook import handlers
from webhook.config import Policy
from webhook.handlers.outcome import Outcome
from webhook.lookups.base import Resolver
from webhook.objects.kinds import SUBRESOURCES
from webhook.policy.checks.device_access_bypass import ANNOTATION_PREFIXES

_UNREAD = frozenset({"metadata", "status"})


def decide(request: dict, *, mutating: bool, policy: Policy, resolver: Resolver) -> Outcome:
    reason = never_blocked(request)
    if reason:
        return Outcome(allowed=True, reason=reason)
    handler = handlers.mutate if mutating else handlers.validate
    return handler(request, policy=policy, resolver=resolver)


def never_blocked(request: dict) -> str:
    """Why the request is allowed without evaluation, or "" when the handlers must see it."""
    operation = request["operation"]
    if operation in ("DELETE", "CONNECT"):
        return f"{operation} is never blocked"
    sub = request.get("subResource")
    if sub:
        resource = request["resource"]
        if sub not in SUBRESOURCES.get((resource["group"], resource["resource"]), ()):
            return f"the {resource['resource']}/{sub} subresource is never blocked"
    if operation == "UPDATE" and _only_status_or_metadata(request["object"], request["oldObject"]):
        return "the update changes only status or metadata"
    return ""


def _only_status_or_metadata(new: dict, old: dict) -> bool:
    for key in new.keys() | old.keys():
        if key not in _UNREAD and new.get(key) != old.get(key):
            return False
    # One piece of metadata does grant devices: CDI/NRI annotations on a pod that has not started
    # its containers yet. Changing those is evaluated like any other change.
    return _device_annotations(new) == _device_annotations(old)


def _device_annotations(obj: dict) -> dict:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return {}
    return {k: v for k, v in annotations.items() if isinstance(k, str) and k.startswith(ANNOTATION_PREFIXES)}
