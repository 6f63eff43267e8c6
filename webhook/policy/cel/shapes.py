"""Where the objects a policy matches keep what its rule reads, as CEL sees them. One policy per pod-spec rule
matches every pod-bearing kind (Pods; Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers
and Jobs; CronJobs; PodTemplates): its `template` variable picks, by kind, the pod (a Pod itself) or the pod
template, and `spec` its pod spec, once; every other expression reads those. The kinds keep the template at
different paths, so `template` reads the object as `dyn`: the apiserver's type checker, which reads each
expression against each kind's schema, takes what it reads as dyn too. device-config's one policy matches
ResourceClaims and ResourceClaimTemplates alike, the claim spec picked by kind the same way."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.objects.kinds import BY_KIND, POD_BEARING, KindInfo
from webhook.policy.cel import lit
from webhook.policy.cel.text import Cel, Piece, cat


@dataclass(frozen=True, slots=True)
class Shape:
    name: str  # the policy name's suffix
    kinds: tuple[KindInfo, ...]
    variables: tuple[tuple[str, str], ...]  # the shape's own variables: `spec` (the pod or claim spec) and its helpers
    inline: str  # CEL: the spec without variables (matchConditions cannot read them)
    meta: str  # CEL: the pod's metadata (a template's may be absent: guarded by has())
    path: Piece  # the spec's field path, as the engine's messages write it
    meta_path: Piece  # the pod metadata's field path
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

    @property
    def pods_only(self) -> bool:
        return all(k.pod_spec_path == ("spec",) for k in self.kinds)


def _by_kind(paths: Mapping[str, tuple[str, ...]], make: Callable[[tuple[str, ...]], str]) -> str:
    """CEL: `make(path)` of the object's kind, the most common path last (the one no kind test picks)."""
    by_path: dict[tuple[str, ...], list[str]] = {}
    for kind, path in paths.items():
        by_path.setdefault(path, []).append(kind)
    ordered = sorted(by_path.items(), key=lambda kv: len(kv[1]))
    out = make(ordered[-1][0])
    for path, kinds in reversed(ordered[:-1]):
        test = " || ".join(f"object.kind == {lit(k)}" for k in sorted(kinds))
        out = f"{test} ? {make(path)} : {out}"
    return out


def _dyn(path: tuple[str, ...]) -> str:
    return "dyn(object)." + ".".join(path)


# where each kind keeps its pod (a Pod: itself) or pod template
_PATHS = {k.kind: (k.pod_spec_path or ("spec",))[:-1] for k in POD_BEARING}


def _path(path: tuple[str, ...]) -> str:
    return lit("".join(p + "." for p in path))


PODS = Shape(
    "pods", POD_BEARING,
    (("template", _by_kind(_PATHS, lambda p: _dyn(p) if p else "dyn(object)")), ("spec", "variables.template.spec"),
     ("path", _by_kind(_PATHS, _path))),
    f"({_by_kind(_PATHS, lambda p: _dyn((*p, 'spec')))})", "variables.template.metadata",
    cat(Cel("variables.path"), "spec"), cat(Cel("variables.path"), "metadata"))
POD = Shape("pods", tuple(k for k in POD_BEARING if k.pod_spec_path == ("spec",)), (), "object.spec", "object.metadata",
            "spec", "metadata")  # the Pods alone (the mutating policies')

_CLAIM_PATHS = {"ResourceClaim": ("spec",), "ResourceClaimTemplate": ("spec", "spec")}
CLAIMS = Shape(
    "claims", (BY_KIND["ResourceClaim"], BY_KIND["ResourceClaimTemplate"]),
    (("spec", _by_kind(_CLAIM_PATHS, _dyn)), ("path", _by_kind(_CLAIM_PATHS, lambda p: lit(".".join(p))))),
    f"({_by_kind(_CLAIM_PATHS, _dyn)})", "object.metadata", Cel("variables.path"), "metadata", pod=False)
