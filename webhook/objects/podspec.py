"""A pod-bearing object seen through its pod spec, with the field path prefix kept for messages."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.objects.access import NO_DICT, NO_LIST, as_dict, as_list, as_str
from webhook.objects.kinds import BY_KIND, KindInfo

SIDECAR = "sidecar container"  # a restartable init container runs beside the main ones
SECTIONS = (("containers", "container"), ("initContainers", "init container"),
            ("ephemeralContainers", "ephemeral container"))


# Built for every container of every request, in the view's loop: positional, as CPython 3.11 makes
# each keyword call of a class build a dict (bench/README.md has the cost).
@dataclass(slots=True)
class Container:
    name: str
    label: str  # 'container "trainer"' as messages say it
    path: str  # spec.containers[0]
    raw: dict[str, Any]
    section: str  # containers | initContainers | ephemeralContainers
    position: int  # in its section
    # The fields the rules read, each read once here, of the right type or empty: every check and
    # mutation walks the containers, and a re-read per rule is most of what a rule costs.
    resources: Mapping[str, Any]
    env: Sequence[Any]
    env_from: Sequence[Any]
    security: Mapping[str, Any]  # securityContext
    mounts: Sequence[Any]  # volumeMounts


@dataclass(slots=True)  # positional, as Container: one per request, and keyword calls of a class cost a dict
class PodView:
    kind: KindInfo
    namespace: str
    name: str  # display name: generateName + "*" when the apiserver has not named it yet
    obj: dict[str, Any]
    spec: Mapping[str, Any]
    meta: Mapping[str, Any]  # the pod's own metadata: the object's for a Pod, the template's for workloads
    prefix: str  # "spec" or "spec.template.spec"
    containers: tuple[Container, ...]

    @property
    def subject(self) -> str:
        return f'{self.kind.kind.lower()} "{self.namespace}/{self.name}"' if self.namespace else \
            f'{self.kind.kind.lower()} "{self.name}"'

    @property
    def is_pod(self) -> bool:
        return self.kind.kind == "Pod"


def display_name(obj: Mapping[str, Any]) -> str:
    meta = as_dict(obj.get("metadata"))
    name = as_str(meta.get("name"))
    if name:
        return name
    generate = as_str(meta.get("generateName"))
    return f"{generate}*" if generate else "(unnamed)"


def pod_view(obj: dict[str, Any], kind: str, namespace: str) -> PodView | None:
    """The object's pod view; None for kinds without a pod spec."""
    info = BY_KIND.get(kind)
    if info is None or info.pod_spec_path is None:
        return None
    return view_of(obj, info, namespace)


def view_of(obj: dict[str, Any], info: KindInfo, namespace: str) -> PodView:
    """The pod view of an object of `info`'s kind, which has a pod spec."""
    spec, meta = _locate(obj, info)
    prefix = ".".join(info.pod_spec_path or ())
    containers = []
    for section, plain in SECTIONS:
        listed = spec.get(section)
        if type(listed) is not list:
            continue
        for i, c in enumerate(listed):
            if type(c) is dict:
                containers.append(_container(c, section, plain, i, prefix))
    return PodView(info, namespace, display_name(obj), obj, spec, meta, prefix, tuple(containers))


def revised_view(view: PodView, obj: dict[str, Any]) -> PodView:
    """The view of `obj`, a copy-on-write revision of `view.obj` (a mutated Pod: every dict it did not
    change is the original's object): what view_of gives, reusing each Container whose dict is the same
    object at the same place, so the mutated Pod is not read again."""
    info = view.kind
    spec, meta = _locate(obj, info)
    if spec is view.spec:
        return PodView(info, view.namespace, view.name if meta is view.meta else display_name(obj), obj, spec, meta,
                       view.prefix, view.containers)
    before = view.containers  # in the order view_of read them, which is the order read here
    prefix = view.prefix
    containers: list[Container] = []
    for section, plain in SECTIONS:
        listed = spec.get(section)
        if type(listed) is not list:
            continue
        for i, c in enumerate(listed):
            if type(c) is dict:
                # the original's container at the same place, kept where its dict is the same object (where
                # the lists changed, a mismatch only means reading the container again)
                kept = before[len(containers)] if len(containers) < len(before) else None
                containers.append(kept if kept is not None and kept.raw is c and kept.position == i and
                                  kept.section == section else _container(c, section, plain, i, prefix))
    return PodView(info, view.namespace, view.name if meta is view.meta else display_name(obj), obj, spec, meta,
                   prefix, tuple(containers))


def _locate(obj: dict[str, Any], info: KindInfo) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the pod spec, the pod's metadata) of an object of `info`'s kind; empty where absent."""
    node: Any = obj  # Any: a node on the way may be absent (an empty mapping) or of another type
    parent: Any = obj
    for key in info.pod_spec_path or ():
        parent = node
        node = as_dict(node.get(key)) if type(node) is dict else {}
    spec = node if type(node) is dict else {}
    meta = as_dict(obj.get("metadata")) if info.kind == "Pod" else as_dict(parent.get("metadata"))
    return spec, meta


def _container(c: dict[str, Any], section: str, plain: str, i: int, prefix: str) -> Container:
    name = c.get("name")
    if type(name) is not str or not name:
        name = f"#{i}"
    word = SIDECAR if section == "initContainers" and c.get("restartPolicy") == "Always" else plain
    get = c.get
    resources, env, env_from, security, mounts = (
        get("resources"), get("env"), get("envFrom"), get("securityContext"), get("volumeMounts"))
    return Container(
        name, f'{word} "{name}"', f"{prefix}.{section}[{i}]", c, section, i,
        resources if type(resources) is dict else NO_DICT, env if type(env) is list else NO_LIST,
        env_from if type(env_from) is list else NO_LIST, security if type(security) is dict else NO_DICT,
        mounts if type(mounts) is list else NO_LIST)


def claim_reference(entry: Mapping[str, Any]) -> tuple[str | None, str | None, bool]:
    """(kind, name, legacy) that one `resourceClaims` entry refers to. The template wins when both are set
    (the apiserver refuses that; the CLI may see it); `legacy` is the alpha API's `source` wrapper."""
    legacy = "source" in entry
    source = as_dict(entry.get("source")) if legacy else entry
    name = as_str(source.get("resourceClaimTemplateName"))
    if name:
        return "ResourceClaimTemplate", name, legacy
    name = as_str(source.get("resourceClaimName"))
    if name:
        return "ResourceClaim", name, legacy
    return None, None, legacy


def added_ephemeral_containers(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> frozenset[str]:
    """Names of the ephemeral containers `obj` has and `old` has not (ephemeral containers are never changed
    nor removed once added, so a name tells a new one)."""
    def names(o: Mapping[str, Any] | None) -> set[str]:
        spec = as_dict(as_dict(o).get("spec"))
        return {c["name"] for c in as_list(spec.get("ephemeralContainers"))
                if type(c) is dict and type(c.get("name")) is str}
    return frozenset(names(obj) - names(old or {}))
