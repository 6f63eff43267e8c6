"""A pod-bearing object seen through its pod spec, with the field path prefix kept for messages."""
from __future__ import annotations

from typing import Any, Final, Mapping, Sequence

from webhook.objects.access import NO_DICT, NO_LIST, as_dict, as_list, as_str
from webhook.objects.kinds import BY_KIND, KindInfo

SECTIONS = (("containers", "container"), ("initContainers", "init container"), ("ephemeralContainers", "ephemeral container"))


# Views are built on every admission request: plain slotted classes with Final fields (mypy refuses any
# reassignment), cheaper to build than NamedTuples or frozen dataclasses.
class Container:
    __slots__ = ("name", "label", "path", "raw", "section", "position", "resources", "env", "env_from", "security",
                 "mounts")

    def __init__(self, name: str, label: str, path: str, raw: dict, section: str, position: int, resources: Mapping,
                 env: Sequence, env_from: Sequence, security: Mapping, mounts: Sequence) -> None:
        self.name: Final = name
        self.label: Final = label  # 'container "trainer"' as messages say it
        self.path: Final = path  # spec.containers[0]
        self.raw: Final = raw
        self.section: Final = section  # containers | initContainers | ephemeralContainers
        self.position: Final = position  # in its section
        # The fields the rules read, each read once here, of the right type or empty: every check and
        # mutation walks the containers, and a re-read per rule is most of what a rule costs.
        self.resources: Final = resources
        self.env: Final = env
        self.env_from: Final = env_from
        self.security: Final = security  # securityContext
        self.mounts: Final = mounts  # volumeMounts


class PodView:
    __slots__ = ("kind", "namespace", "name", "obj", "spec", "meta", "prefix", "containers")

    def __init__(self, kind: KindInfo, namespace: str, name: str, obj: dict, spec: Mapping, meta: Mapping, prefix: str,
                 containers: tuple[Container, ...]) -> None:
        self.kind: Final = kind
        self.namespace: Final = namespace
        self.name: Final = name  # display name: generateName + "*" when the apiserver has not named it yet
        self.obj: Final = obj
        self.spec: Final = spec
        self.meta: Final = meta  # the pod's own metadata: the object's for a Pod, the template's for workloads
        self.prefix: Final = prefix  # "spec" or "spec.template.spec"
        self.containers: Final = containers

    @property
    def subject(self) -> str:
        return f'{self.kind.kind.lower()} "{self.namespace}/{self.name}"' if self.namespace else \
            f'{self.kind.kind.lower()} "{self.name}"'

    @property
    def is_pod(self) -> bool:
        return self.kind.kind == "Pod"


def display_name(obj: Mapping) -> str:
    meta = as_dict(obj.get("metadata"))
    name = as_str(meta.get("name"))
    if name:
        return name
    generate = as_str(meta.get("generateName"))
    return f"{generate}*" if generate else "(unnamed)"


def pod_view(obj: dict, kind: str, namespace: str) -> PodView | None:
    """The object's pod view; None for kinds without a pod spec."""
    info = BY_KIND.get(kind)
    if info is None or info.pod_spec_path is None:
        return None
    return view_of(obj, info, namespace)


def view_of(obj: dict, info: KindInfo, namespace: str) -> PodView:
    """The pod view of an object of `info`'s kind, which has a pod spec."""
    node: Any = obj  # Any: a node on the way may be absent (an empty mapping) or of another type
    parent: Any = obj
    for key in info.pod_spec_path or ():
        parent = node
        node = as_dict(node.get(key)) if type(node) is dict else {}
    spec = node if type(node) is dict else {}
    meta = as_dict(obj.get("metadata")) if info.kind == "Pod" else as_dict(parent.get("metadata"))
    prefix = ".".join(info.pod_spec_path or ())
    containers = []
    for section, plain in SECTIONS:
        for i, c in enumerate(as_list(spec.get(section))):
            if type(c) is not dict:
                continue
            name = c.get("name")
            if type(name) is not str or not name:
                name = f"#{i}"
            if section == "initContainers" and c.get("restartPolicy") == "Always":
                word = "sidecar container"  # a restartable init container runs beside the main ones
            else:
                word = plain
            get = c.get
            resources, env, env_from, security, mounts = (
                get("resources"), get("env"), get("envFrom"), get("securityContext"), get("volumeMounts"))
            containers.append(Container(
                name, f'{word} "{name}"', f"{prefix}.{section}[{i}]", c, section, i,
                resources if type(resources) is dict else NO_DICT, env if type(env) is list else NO_LIST,
                env_from if type(env_from) is list else NO_LIST, security if type(security) is dict else NO_DICT,
                mounts if type(mounts) is list else NO_LIST))
    return PodView(info, namespace, display_name(obj), obj, spec, meta, prefix, tuple(containers))


def claim_reference(entry: Mapping) -> tuple[str | None, str | None, bool]:
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


def added_ephemeral_containers(obj: Mapping, old: Mapping | None) -> frozenset[str]:
    """Names of the ephemeral containers `obj` has and `old` has not (ephemeral containers are never changed
    nor removed once added, so a name tells a new one)."""
    def names(o) -> set:
        spec = as_dict(as_dict(o).get("spec"))
        return {c["name"] for c in as_list(spec.get("ephemeralContainers")) if type(c) is dict and type(c.get("name")) is str}
    return frozenset(names(obj) - names(old or {}))
