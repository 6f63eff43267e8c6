"""Where each pod-bearing kind keeps its pod spec and pod metadata, as CEL sees the typed object: one
ValidatingAdmissionPolicy per shape, so that every expression type-checks against the kinds it matches."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.objects.kinds import POD_BEARING, KindInfo


@dataclass(frozen=True, slots=True)
class Shape:
    name: str  # the policy name's suffix
    kinds: tuple[KindInfo, ...]
    spec: str  # CEL: the pod spec
    meta: str  # CEL: the pod's metadata (a template's may be absent: guarded by has())
    prefix: str  # field paths of messages, as the engine writes them
    pod: bool = True  # a pod spec's shape (False: a claim's, whose `spec` is the claim spec)

    @property
    def rules(self) -> list[dict[str, Any]]:
        by_group: dict[str, list[str]] = {}
        for k in self.kinds:
            by_group.setdefault(k.group, []).append(k.resource)
        return [{"apiGroups": [g], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": sorted(r)}
                for g, r in sorted(by_group.items())]

    def meta_has(self, field: str) -> str:
        """CEL: the pod metadata has `field` (a template's metadata may itself be absent)."""
        guard = "" if self.meta == "object.metadata" else f"has({self.meta}) && "
        return f"{guard}has({self.meta}.{field})"


def _kinds(*paths: tuple[str, ...]) -> tuple[KindInfo, ...]:
    return tuple(k for k in POD_BEARING if k.pod_spec_path in paths)


_TEMPLATE = ("spec", "template", "spec")
SHAPES = (
    Shape("pods", _kinds(("spec",)), "object.spec", "object.metadata", "spec"),
    Shape("workloads", _kinds(_TEMPLATE), "object.spec.template.spec", "object.spec.template.metadata",
          "spec.template.spec"),
    Shape("cronjobs", _kinds(("spec", "jobTemplate", "spec", "template", "spec")),
          "object.spec.jobTemplate.spec.template.spec", "object.spec.jobTemplate.spec.template.metadata",
          "spec.jobTemplate.spec.template.spec"),
    Shape("podtemplates", _kinds(("template", "spec")), "object.template.spec", "object.template.metadata",
          "template.spec"),
)
