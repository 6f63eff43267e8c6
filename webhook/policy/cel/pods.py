"""What several pod-spec rules' in-tree exports read, in CEL over their policy's variables (`spec`, the pod spec:
shapes.py): the containers of every section, what gpu.analyse counts as a GPU ask, the cohort a pod is pinned to
(webhook/policy/pinning.py), and where a container or a setting is, as the engine's field paths write it."""
from __future__ import annotations

from collections.abc import Callable

from webhook.config.model import Cohort, Policy
from webhook.objects.podspec import SECTIONS, SIDECAR
from webhook.policy.cel import any_of, lit, strings
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cat, Cel, If, Piece, cat, msg, text
from webhook.policy.gpu import GPU_RESOURCE_PREFIXES
from webhook.policy.messages import CONTAINER_WORDS, WHO
from webhook.policy.pinning import pinnable

S = "variables.spec"
CONTAINERS = "variables.containers"  # every container of the pod spec, in the engine's order (all_containers)


def pin(cohort: Cohort, spec: str, policy: Policy) -> str:
    """CEL: pinning.pinned(...) is `cohort` (the caller has ruled out required node affinity)."""
    labels = " && ".join(f"{lit(k)} in {spec}.nodeSelector && {spec}.nodeSelector[{lit(k)}] == {lit(v)}"
                         for k, v in sorted(cohort.node_labels.items()))
    others = set(policy.label_cohorts) - set(cohort.node_labels)
    alone = f" && {spec}.nodeSelector.all(k, !(k in {strings(others)}))" if others else ""
    return f"has({spec}.nodeSelector) && {labels}{alone}"


def no_required_affinity(spec: str) -> str:
    return (f"!(has({spec}.affinity) && has({spec}.affinity.nodeAffinity) && "
            f"has({spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution))")


def all_containers(spec: str = S) -> dict[str, str]:
    """The variable `containers`: the containers, init containers and ephemeral containers in one list (the
    last are a type of their own: read as dyn), for the checks that do not say where a container is."""
    def part(section: str) -> str:
        value = f"{spec}.{section}"
        return f"(has({value}) ? {f'dyn({value})' if section == 'ephemeralContainers' else value} : [])"
    return {"name": "containers", "expression": " + ".join(part(s) for s, _ in SECTIONS)}


def some(predicate: Callable[[str], str]) -> str:
    """CEL: some container of any section satisfies `predicate` (of the container variable `c`)."""
    return f"{CONTAINERS}.exists(c, {predicate('c')})"


def has_claims(spec: str) -> str:
    return f"(has({spec}.resourceClaims) && size({spec}.resourceClaims) > 0)"


def gpu_name(k: str) -> str:
    return " || ".join(f"{k}.startsWith({lit(p)})" for p in GPU_RESOURCE_PREFIXES)


def counted(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: a condition on the key `k` of the container `c`'s resources.<section>: gpu.analyse counts it
    (more than 0, and in requests only where the limits do not name it) and its name satisfies `name`."""
    m = f"{c}.resources.{section}"
    unlimited = "" if section == "limits" else f" && !(has({c}.resources.limits) && k in {c}.resources.limits)"
    return f"({name('k')}){unlimited} && quantity({m}[k]).isGreaterThan(quantity('0'))"


def container_asks(c: str, name: Callable[[str], str]) -> str:
    """CEL: the container `c` asks for a resource gpu.analyse counts whose name satisfies `name`."""
    return f"has({c}.resources) && (" + any_of(
        f"has({c}.resources.{section}) && {c}.resources.{section}.exists(k, {counted(c, section, name)})"
        for section in ("limits", "requests")) + ")"


def device_plugin_gpu() -> str:
    """CEL: some container of `containers` (all_containers) asks for a device plugin's GPU resource (gpu.analyse
    under a device-plugin cohort)."""
    return some(lambda c: container_asks(c, gpu_name))


def at(section: str, index: str) -> Cat:
    """`<section>[<index>]` of the pod spec's field path (index: CEL of an int)."""
    return cat(f".{section}[", Cel(f"string({index})"), "]")


def _bounds() -> list[dict[str, str]]:
    """Where the init containers and the ephemeral ones start in `containers`."""
    return [{"name": "init_at", "expression": f"has({S}.containers) ? size({S}.containers) : 0"},
            {"name": "ephemeral_at", "expression": f"variables.init_at + "
                                                   f"(has({S}.initContainers) ? size({S}.initContainers) : 0)"}]


def placed(policy: Policy) -> list[dict[str, str]]:
    """The variables `placed` (every container of the pod spec, in the engine's order, with its section's number:
    [0, container], [1, init container], [2, ephemeral container]), where the sections start in it (_bounds), and
    `who`: each container as messages name it (messages.who), in the namespace's language."""
    # (dyn: the apiserver wants a list literal's elements of one type)
    placed = " + ".join(f"(has({S}.{section}) ? {S}.{section}.map(c, [dyn({k}), c]) : [])"
                        for k, (section, _) in enumerate(SECTIONS))
    init: Piece = If("has(t[1].restartPolicy) && t[1].restartPolicy == 'Always'", CONTAINER_WORDS[SIDECAR],
                     CONTAINER_WORDS["init container"])
    word = If("t[0] == 0", CONTAINER_WORDS["container"], If("t[0] == 1", init, CONTAINER_WORDS["ephemeral container"]))
    return [{"name": "placed", "expression": placed}, *_bounds(),
            {"name": "who", "expression": f"variables.placed.map(t, "
                                          f"{text(policy, msg(WHO, word=word, name=Cel('t[1].name')))})"}]


def cohort(policy: Policy) -> dict[str, str]:
    """The variable `cohort`: pinning.pinned(...)'s name ('' where none; the caller rules out required node
    affinity)."""
    return {"name": "cohort",
            "expression": "".join(f"{pin(c, S, policy)} ? {lit(c.name)} : " for c in pinnable(policy)) + "''"}


def is_pinned(shape: Shape, policy: Policy) -> str:
    """CEL: pinning.is_pinned of the pod spec, the coverage of the rules whose policies read `cohort`."""
    return f"{no_required_affinity(S)} && variables.cohort != ''"
