"""What the review layer hands on of one AdmissionReview `request`, its shape already checked."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, kw_only=True)
class AdmissionRequest:
    """The fields the webhook reads, typed (webhook.review.parse makes one). Optional strings the request
    leaves out (or sends as null, which Go reads as the zero value) are ""."""

    uid: str
    kind: str  # request.kind.kind: the object's kind, as the apiserver names it
    group: str  # request.resource.group
    resource: str  # request.resource.resource ("pods", "deployments", ...)
    operation: str  # CREATE, UPDATE, DELETE or CONNECT
    namespace: str = ""
    name: str = ""
    sub_resource: str = ""
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    user_info: dict[str, Any] = field(default_factory=dict)
