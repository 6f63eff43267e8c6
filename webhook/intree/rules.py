"""The exported rules: for each, its coverage (webhook/policy/coverage.py's predicate, in CEL) and its
validations, each an expression that is true when the object passes and a messageExpression: the engine's line for the
finding (webhook/policy/messages.py, `<object>: <what, with field path>. Fix: <fix>. Why: <why> [<rule>] <docs link>`),
made of the check's own catalogue texts by webhook/intree/text.py, in the namespace's language. The
engine's line also escapes unsafe characters (webhook/text.py); the values these lines quote cannot hold
one where the apiserver validates them (names, keys, environment variable names) or the coverage does
(host paths), so the lines are equal without it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.intree.cel import any_of, lit, strings
from webhook.intree.shapes import Shape
from webhook.intree.text import Cat, Cel, If, Lines, Msg, Piece, cat, msg, text
from webhook.objects.annotations import ANNOTATION_PREFIXES
from webhook.objects.podspec import SECTIONS, SIDECAR
from webhook.policy.checks import device_access_bypass as dab
from webhook.policy.checks import double_mechanism as dm
from webhook.policy.checks import run_as_root as rar
from webhook.policy.checks import runtime_class_conflict as rcc
from webhook.policy.checks import visible_devices_override as vdo
from webhook.policy.coverage import (
    DEVICE_LIST_MARK,
    DOTS,
    HIDDEN,
    PLAIN_PATH,
    gpu_class_resources,
    mapped_names,
    pinnable,
)
from webhook.policy.gpu import GPU_RESOURCE_PREFIXES, IMPLICIT_PREFIX
from webhook.policy.messages import CONTAINER_WORDS, WHO, T, Text
from webhook.rules import Rule


@dataclass(frozen=True, slots=True)
class Validation:
    expression: str  # true: the object passes
    message: str  # a CEL string


def _who(section: str, word: str, c: str) -> Msg:
    """messages.who of the container `c` of `section`: a restartable init container is a sidecar."""
    words: Piece = CONTAINER_WORDS[word]
    if section == "initContainers":
        words = If(f"has({c}.restartPolicy) && {c}.restartPolicy == 'Always'", CONTAINER_WORDS[SIDECAR], words)
    return msg(WHO, word=words, name=Cel(f"{c}.name"))


def _or(value: str, default: str) -> str:
    """CEL: the string field `value`, or `default` where it is absent or empty (the engine's `or`)."""
    return f"(has({value}) && {value} != '' ? {value} : {lit(default)})"


def pin(cohort: Cohort, spec: str, policy: Policy) -> str:
    """CEL: coverage.pinned(...) is `cohort` (the caller has ruled out required node affinity)."""
    labels = " && ".join(f"{lit(k)} in {spec}.nodeSelector && {spec}.nodeSelector[{lit(k)}] == {lit(v)}"
                         for k, v in sorted(cohort.node_labels.items()))
    others = set(policy.label_cohorts) - set(cohort.node_labels)
    alone = f" && {spec}.nodeSelector.all(k, !(k in {strings(others)}))" if others else ""
    return f"has({spec}.nodeSelector) && {labels}{alone}"


def _no_required_affinity(spec: str) -> str:
    return (f"!(has({spec}.affinity) && has({spec}.affinity.nodeAffinity) && "
            f"has({spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution))")


S = "variables.spec"
CONTAINERS = "variables.containers"  # every container of the pod spec, in the engine's order (_all_containers)


def _all_containers(spec: str = S) -> dict[str, str]:
    """The variable `containers`: the containers, init containers and ephemeral containers in one list (the
    last are a type of their own: read as dyn), for the checks that do not say where a container is."""
    def part(section: str) -> str:
        value = f"{spec}.{section}"
        return f"(has({value}) ? {f'dyn({value})' if section == 'ephemeralContainers' else value} : [])"
    return {"name": "containers", "expression": " + ".join(part(s) for s, _ in SECTIONS)}


def _some(predicate: Callable[[str], str]) -> str:
    """CEL: some container of any section satisfies `predicate` (of the container variable `c`)."""
    return f"{CONTAINERS}.exists(c, {predicate('c')})"


def coverage(rule: Rule, shape: Shape, policy: Policy) -> str:
    """CEL: coverage.COVERED[rule] of the object, over the variables of the rule's policy (validations())."""
    s = S
    if rule in (Rule.RUN_AS_ROOT, Rule.RUNTIME_CLASS_CONFLICT):
        return f"{_no_required_affinity(s)} && variables.cohort != ''"
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        return "!" + _some(lambda c: (
            f"(has({c}.envFrom) && size({c}.envFrom) > 0) || (has({c}.env) && {c}.env.exists(e, "
            f"e.name == 'NVIDIA_VISIBLE_DEVICES' && has(e.value) && e.value == {lit(HIDDEN)}))")) + \
            f" && (variables.gpu || !({_claims(s)} || {_some(lambda c: _container_asks(c, _other_name))}))"
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        containers = _some(lambda c: (
            f"(has({c}.securityContext) && has({c}.securityContext.privileged) && {c}.securityContext.privileged) || "
            f"(has({c}.volumeMounts) && {c}.volumeMounts.exists(m, m.mountPath.contains({lit(DEVICE_LIST_MARK)})))"))
        paths = (f"has({s}.volumes) && {s}.volumes.exists(v, has(v.hostPath) && "
                 f"!(v.hostPath.path.matches({lit(PLAIN_PATH)})"
                 f" && !v.hostPath.path.matches({lit(DOTS)}) && !(v.hostPath.path in ['/var/run', '/proc'] || "
                 "v.hostPath.path.startsWith('/var/run/') || v.hostPath.path.startsWith('/proc/'))))")
        platform = policy.platform_device_annotations
        injected = "" if not platform else (
            f" || ({shape.meta_has('annotations')} && {shape.meta}.annotations.exists(k, "
            + " || ".join(f"k.startsWith({lit(p)})" for p in platform) + "))")
        return f"!({containers} || ({paths}){injected})"
    if rule is Rule.DOUBLE_MECHANISM:
        if policy.lookups.device_classes:
            return "false"
        mapped = mapped_names(policy)
        named = " || ".join(f"(has(t[1].resources) && has(t[1].resources.{section}) && "
                            f"t[1].resources.{section}.exists(k, k in {strings(mapped)}))"
                            for section in ("limits", "requests"))
        names = f" && !variables.placed.exists(t, {named})" if mapped else ""
        return f"!{_claims(s)}{names}"
    raise KeyError(rule)


def _claims(spec: str) -> str:
    return f"(has({spec}.resourceClaims) && size({spec}.resourceClaims) > 0)"


def _other_name(k: str) -> str:
    return f"{k}.contains('/') && !({_gpu_name(k)})"


def _gpu_name(k: str) -> str:
    return " || ".join(f"{k}.startsWith({lit(p)})" for p in GPU_RESOURCE_PREFIXES)


def _counted(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: a condition on the key `k` of the container `c`'s resources.<section>: gpu.analyse counts it
    (more than 0, and in requests only where the limits do not name it) and its name satisfies `name`."""
    m = f"{c}.resources.{section}"
    unlimited = "" if section == "limits" else f" && !(has({c}.resources.limits) && k in {c}.resources.limits)"
    return f"({name('k')}){unlimited} && quantity({m}[k]).isGreaterThan(quantity('0'))"


def _container_asks(c: str, name: Callable[[str], str]) -> str:
    """CEL: the container `c` asks for a resource gpu.analyse counts whose name satisfies `name`."""
    return f"has({c}.resources) && (" + any_of(
        f"has({c}.resources.{section}) && {c}.resources.{section}.exists(k, {_counted(c, section, name)})"
        for section in ("limits", "requests")) + ")"


def _device_plugin_gpu() -> str:
    """CEL: some container of `containers` (_all_containers) asks for a device plugin's GPU resource (gpu.analyse
    under a device-plugin cohort)."""
    return _some(lambda c: _container_asks(c, _gpu_name))


def validations(rule: Rule, shape: Shape, policy: Policy,
                lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    """The rule's variables (beyond the shape's and `subject`; `covered` reads them too) and validations, whose
    messages `lines` writes. Variables are evaluated only when read: the positions the messages name cost nothing
    for an object that passes."""
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        return _visible_devices_override(shape, policy, lines)
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        return _device_access_bypass(shape, policy, lines)
    if rule is Rule.RUN_AS_ROOT:
        return _run_as_root(shape, policy, lines)
    if rule is Rule.RUNTIME_CLASS_CONFLICT:
        return _runtime_class_conflict(shape, policy, lines)
    if rule is Rule.DOUBLE_MECHANISM:
        return _double_mechanism(shape, policy, lines)
    raise KeyError(rule)


def _source(e: str) -> Piece:
    """visible_devices_override._source of the variable `e`: where its value comes from."""
    value_from = f"{e}.valueFrom"
    how: Piece = If(f"has({value_from}.fieldRef) || has({value_from}.resourceFieldRef)", vdo.FROM_FIELD,
                    vdo.WITH_VALUE_FROM)
    for field, kind in reversed(vdo.KEY_REFS):
        ref = f"{value_from}.{field}"
        how = If(f"has({ref})", msg(vdo.FROM_KEY, key=Cel(_or(f"{ref}.key", "?")), kind=kind,
                                    name=Cel(_or(f"{ref}.name", "?"))), how)
    return If(f"has({value_from})", how, vdo.LITERAL)


def _at(section: str, index: str) -> Cat:
    """`<section>[<index>]` of the pod spec's field path (index: CEL of an int)."""
    return cat(f".{section}[", Cel(f"string({index})"), "]")


def _visible_devices_override(shape: Shape, policy: Policy,
                              lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    """One validation per section, failing for its first container that sets a listed variable; the container
    and the variable's entry are variables of their own, so that the message reads them by name, and where each
    section's entry takes its value from is said once for all three (`how`, in the order of the sections)."""
    why = If("variables.gpu", vdo.WHY, vdo.WHY_NO_GPU)  # the coverage leaves no other case
    variables: list[dict[str, Any]] = [{"name": "names", "expression": strings(policy.visible_device_variables)},
                                       _all_containers(),
                                       {"name": "gpu", "expression": _device_plugin_gpu()}]
    out = []
    found = []
    for n, (section, word) in enumerate(SECTIONS):
        has_var = "has(c.env) && c.env.exists(e, e.name in variables.names)"
        i, c, j, e = (f"variables.{section}{suffix}" for suffix in ("_i", "_c", "_j", "_e"))
        variables += [
            {"name": f"{section}_i", "expression": f"has({S}.{section}) ? {S}.{section}.map(c, {has_var})"
                                                   ".indexOf(true) : -1"},
            {"name": f"{section}_c", "expression": f"{S}.{section}[{i}]"},
            {"name": f"{section}_j", "expression": f"{c}.env.map(e, e.name in variables.names).indexOf(true)"},
            {"name": f"{section}_e", "expression": f"{c}.env[{j}]"},
        ]
        found.append(f"({i} >= 0 ? [{e}] : [])")
        # the entry's place in `how`: the sections before it that have one
        place = " + ".join(f"(variables.{s}_i >= 0 ? 1 : 0)" for s, _ in SECTIONS[:n]) or "0"
        path = cat(shape.path, _at(section, i), ".env[", Cel(f"string({j})"), "]")
        name = Cel(f"{e}.name")
        out.append(Validation(f"{i} < 0", lines.line(
            msg(vdo.SETS, container=_who(section, word, c), variable=name, path=path,
                how=Cel(f"variables.how[{place}]")), why, msg(vdo.FIX, variable=name))))
    variables += [{"name": "found", "expression": " + ".join(found)},
                  {"name": "how", "expression": f"variables.found.map(e, {text(policy, _source('e'))})"}]
    return variables, out


def _device_access_bypass(shape: Shape, policy: Policy,
                          lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    exposes = "variables.device_paths.exists(p, v.hostPath.path.startsWith(p) || p.startsWith(v.hostPath.path + '/'))"
    prefixes = f"{strings(ANNOTATION_PREFIXES)}.exists(p, k.startsWith(p))"
    meta = shape.meta
    variables: list[dict[str, Any]] = [
        _all_containers(),
        {"name": "device_paths", "expression": "[" + ", ".join(lit(p) for p in dab.DEVICE_PATHS) + "]"},
        {"name": "volume", "expression": f"has({S}.volumes) ? {S}.volumes.map(v, has(v.hostPath) && {exposes})"
                                         ".indexOf(true) : -1"},
        {"name": "annotations", "expression": f"{shape.meta_has('annotations')} ? "
                                              f"{meta}.annotations.filter(k, {prefixes}) : []"},
        {"name": "volume_v", "expression": f"{S}.volumes[variables.volume]"},
    ]
    v = "variables.volume_v"
    host = f"{v}.hostPath.path"
    # the sensitive paths below the mounted directory, as dab._resolved names them (a plain path, which the
    # coverage leaves alone, resolves to itself)
    variables.append({"name": "below", "expression": f"variables.device_paths.filter(p, p.startsWith({host} + '/'))"
                                                     ".map(p, p.endsWith('nvidia') ? p + '*' : p)"})
    above = If("size(variables.below) > 0", msg(dab.ABOVE, paths=Cel("variables.below.join(', ')")), "")
    key = Cel("variables.annotations[0]")
    return variables, [
        Validation("variables.volume < 0", lines.line(
            msg(dab.VOLUME, volume=Cel(f"{v}.name"), host=Cel(host),
                path=cat(shape.path, _at("volumes", "variables.volume"), ".hostPath.path"), resolved="", above=above),
            dab.VOLUME_WHY, dab.VOLUME_FIX)),
        Validation("size(variables.annotations) == 0", lines.line(
            msg(dab.ANNOTATION, key=key, path=cat(shape.meta_path, '.annotations["', key, '"]')),
            dab.ANNOTATION_WHY, dab.ANNOTATION_FIX)),
    ]


def _filtered(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: the keys of `c`'s resources.<section> that `_counted` holds for."""
    return f"(has({c}.resources.{section}) ? {c}.resources.{section}.filter(k, {_counted(c, section, name)}) : [])"


def _bounds() -> list[dict[str, str]]:
    """Where the init containers and the ephemeral ones start in `containers`."""
    return [{"name": "init_at", "expression": f"has({S}.containers) ? size({S}.containers) : 0"},
            {"name": "ephemeral_at", "expression": f"variables.init_at + "
                                                   f"(has({S}.initContainers) ? size({S}.initContainers) : 0)"}]


def _placed(policy: Policy) -> list[dict[str, str]]:
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


def _where(j: str) -> Cel:
    """`<section>[<index>]` of the container at `j` of `containers` (_bounds)."""
    return Cel(f"({j} < variables.init_at ? 'containers[' + string({j}) : {j} < variables.ephemeral_at ? "
               f"'initContainers[' + string({j} - variables.init_at) : "
               f"'ephemeralContainers[' + string({j} - variables.ephemeral_at)) + ']'")


def _double_mechanism(shape: Shape, policy: Policy,
                      lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    """double_mechanism.check for a pod without claims: the first device-plugin GPU resource and the first
    DRA-served one, in gpu.analyse's order: sections, containers, limits then requests, and within one the
    keys as the apiserver writes them (sorted: the first is the least)."""
    classes = gpu_class_resources(policy)
    variables: list[dict[str, Any]] = [{"name": "dra_names", "expression": strings(r for r, _ in classes)},
                                       *_placed(policy)]
    sides = {"dp": _gpu_name, "dra": lambda k: f"{k} in variables.dra_names"}
    for side, name in sides.items():
        j, c, limits, requests = (f"variables.{side}{v}" for v in ("", "_c", "_limits", "_requests"))
        variables += [
            {"name": side, "expression": f"variables.placed.map(t, {_container_asks('t[1]', name)}).indexOf(true)"},
            {"name": f"{side}_c", "expression": f"variables.placed[{j}][1]"},
            {"name": f"{side}_limits", "expression": _filtered(c, "limits", name)},
            {"name": f"{side}_requests", "expression": _filtered(c, "requests", name)},
            {"name": f"{side}_resource", "expression": f"(size({limits}) > 0 ? {limits} : {requests}).min()"},
            {"name": f"{side}_path", "expression": text(policy, cat(
                shape.path, ".", _where(j), ".resources.", Cel(f"(size({limits}) > 0 ? 'limits' : 'requests')")))},
            {"name": f"{side}_who", "expression": f"variables.who[{j}]"},
        ]
    # the class a deviceclass.resource.kubernetes.io/<class> resource names (a class name holds no slash)
    named = all(r == IMPLICIT_PREFIX + n and "/" not in n for r, n in classes)
    variables.append({"name": "dra_class", "expression": "variables.dra_resource.split('/')[1]" if named else
                      "{" + ", ".join(f"{lit(r)}: {lit(n)}" for r, n in classes) + "}[variables.dra_resource]"})
    args: dict[str, Piece] = {"container": Cel("variables.dp_who"), "resource": Cel("variables.dp_resource"),
                              "path": Cel("variables.dp_path"), "other": Cel("variables.dra_resource"),
                              "device_class": Cel("variables.dra_class"), "other_path": Cel("variables.dra_path")}
    what = If("variables.dp == variables.dra", msg(dm.RESOURCES_IN_ONE, **args),
              msg(dm.RESOURCES_IN_TWO, user=Cel("variables.dra_who"), **args))
    return variables, [Validation("variables.dp < 0 || variables.dra < 0",
                                  lines.line(what, dm.WHY, dm.KEEP_ONE_RESOURCE))]


def _runtime_class_conflict(shape: Shape, policy: Policy,
                            lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    path = cat(shape.path, ".runtimeClassName")
    variables: list[dict[str, Any]] = [_cohort(policy), _all_containers(),
                                       {"name": "gpu", "expression": _device_plugin_gpu()}]
    out = []
    for c in pinnable(policy):
        if c.mechanism != DEVICE_PLUGIN:
            continue
        same = f" || {S}.runtimeClassName == {lit(c.runtime_class_name)}" if c.runtime_class_name else ""
        runtime = str(c.runtime_class_name)
        out.append(Validation(
            f"variables.cohort != {lit(c.name)} || !has({S}.runtimeClassName){same} || !variables.gpu",
            lines.line(msg(rcc.WHAT, runtime=Cel(f"{S}.runtimeClassName"), path=path),
                       T(rcc.WHY, cohort=c.name, runtime=runtime), T(rcc.FIX, runtime=runtime))))
    return variables, out


def _cohort(policy: Policy) -> dict[str, str]:
    """The variable `cohort`: coverage.pinned(...)'s name ('' where none; the caller rules out required node
    affinity)."""
    return {"name": "cohort",
            "expression": "".join(f"{pin(c, S, policy)} ? {lit(c.name)} : " for c in pinnable(policy)) + "''"}


def _contradictions(sc: str, container: bool, policy: Policy) -> list[tuple[str, str, Piece, Text]]:
    """(field, condition on the securityContext `sc`, the setting, fix): run_as_root._contradictions in CEL."""
    security = policy.security
    out: list[tuple[str, str, Piece, Text]] = []
    if security.run_as_non_root:
        out.append(("runAsUser", f"has({sc}.runAsUser) && {sc}.runAsUser == 0", "runAsUser: 0",
                    T(rar.FIX_USER, uid=str(security.run_as_user))))
        out.append(("runAsNonRoot", f"has({sc}.runAsNonRoot) && {sc}.runAsNonRoot == false", "runAsNonRoot: false",
                    rar.FIX_NON_ROOT))
    if container:
        if security.allow_privilege_escalation is False:
            out.append(("allowPrivilegeEscalation",
                        f"has({sc}.allowPrivilegeEscalation) && {sc}.allowPrivilegeEscalation == true",
                        "allowPrivilegeEscalation: true", rar.FIX_ESCALATION))
        if security.drop_capabilities:
            added = f"{sc}.capabilities.add"
            out.append(("capabilities.add", f"has({sc}.capabilities) && has({added}) && size({added}) > 0",
                        Cel(f"'capabilities.add: [' + {added}.join(', ') + ']'"), rar.FIX_CAPABILITIES))
    return out


def _run_as_root(shape: Shape, policy: Policy, lines: Lines) -> tuple[list[dict[str, Any]], list[Validation]]:
    """One validation per setting the pod's securityContext contradicts, and per section and setting its
    containers' do: the first container that does, the first of the section's number in `root<n>` (each
    container of `placed` with its setting n: its section's number, or -1), named by `who`."""
    why = msg(rar.WHY, cohort=Cel("variables.cohort"), uid=str(policy.security.run_as_user))
    variables: list[dict[str, Any]] = [_cohort(policy), *_placed(policy)]
    out = []
    subject: Piece = rar.THE_POD if shape.pods_only else If("object.kind == 'Pod'", rar.THE_POD, rar.THE_TEMPLATE)
    for field, cond, setting, fix in _contradictions(f"{S}.securityContext", False, policy):
        path = cat(shape.path, f".securityContext.{field}")
        out.append(Validation(f"!(has({S}.securityContext) && {cond})",
                              lines.line(msg(rar.SETS, who=subject, setting=setting, path=path), why, fix)))
    settings = _contradictions("t[1].securityContext", True, policy)
    for n, (_, cond, _, _) in enumerate(settings):
        variables.append({"name": f"root{n}", "expression": f"variables.placed.map(t, has(t[1].securityContext) && "
                                                            f"{cond} ? t[0] : -1)"})
    offsets = ("0", "variables.init_at", "variables.ephemeral_at")
    for k, (section, _) in enumerate(SECTIONS):
        for n, (field, _, _, fix) in enumerate(settings):
            j = f"variables.root{n}.indexOf({k})"  # the first container of the section with the setting
            setting = _contradictions(f"variables.placed[{j}][1].securityContext", True, policy)[n][2]
            at = cat(shape.path, _at(section, j + (f" - {offsets[k]}" if k else "")), f".securityContext.{field}")
            out.append(Validation(f"{j} < 0", lines.line(
                msg(rar.SETS, who=Cel(f"variables.who[{j}]"), setting=setting, path=at), why, fix)))
    return variables, out
