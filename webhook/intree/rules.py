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
from webhook.intree.text import Cel, If, Msg, Piece, line, msg, text
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
from webhook.policy.gpu import GPU_RESOURCE_PREFIXES
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


def _sections(spec: str, predicate: Callable[[str], str]) -> str:
    """CEL: some container of any section satisfies `predicate` (of the container variable `c`)."""
    return any_of(f"has({spec}.{s}) && {spec}.{s}.exists(c, {predicate('c')})" for s, _ in SECTIONS)


def _or(value: str, default: str) -> str:
    """CEL: the string field `value`, or `default` where it is absent or empty (the engine's `or`)."""
    return f"(has({value}) && {value} != '' ? {value} : {lit(default)})"


def pin(cohort: Cohort, spec: str, policy: Policy) -> str:
    """CEL: coverage.pinned(...) is `cohort` (the caller has ruled out required node affinity)."""
    labels = " && ".join(f"{lit(k)} in {spec}.nodeSelector && {spec}.nodeSelector[{lit(k)}] == {lit(v)}"
                         for k, v in sorted(cohort.node_labels.items()))
    declared = strings(set(policy.label_cohorts) - set(cohort.node_labels))
    return f"has({spec}.nodeSelector) && {labels} && {spec}.nodeSelector.all(k, !(k in {declared}))"


def _no_required_affinity(spec: str) -> str:
    return (f"!(has({spec}.affinity) && has({spec}.affinity.nodeAffinity) && "
            f"has({spec}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution))")


def coverage(rule: Rule, shape: Shape, policy: Policy) -> str:
    """CEL: coverage.COVERED[rule] of the object (a matchCondition: no variables there)."""
    s = shape.spec
    if rule in (Rule.RUN_AS_ROOT, Rule.RUNTIME_CLASS_CONFLICT):
        return f"{_no_required_affinity(s)} && ({any_of(pin(c, s, policy) for c in pinnable(policy))})"
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        return "!(" + _sections(s, lambda c: (
            f"(has({c}.envFrom) && size({c}.envFrom) > 0) || (has({c}.env) && {c}.env.exists(e, "
            f"e.name == 'NVIDIA_VISIBLE_DEVICES' && has(e.value) && e.value == {lit(HIDDEN)}))")) + \
            f") && ({_asks_gpus_plainly(s)})"
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        containers = _sections(s, lambda c: (
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
        return f"!(({containers}) || ({paths}){injected})"
    if rule is Rule.DOUBLE_MECHANISM:
        if policy.lookups.device_classes:
            return "false"
        mapped = mapped_names(policy)
        names = "" if not mapped else " && !(" + _sections(s, lambda c: " || ".join(
            f"(has({c}.resources) && has({c}.resources.{section}) && {c}.resources.{section}.exists(k, "
            f"k in {strings(mapped)}))" for section in ("limits", "requests"))) + ")"
        return f"!(has({s}.resourceClaims) && size({s}.resourceClaims) > 0){names}"
    raise KeyError(rule)


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


def _asks(spec: str, gpu: bool) -> str:
    """CEL: coverage.asked(...): some container asks for more than 0 of an extended resource (gpu: of one
    named as the device plugin's GPUs), in its limits or in requests the limits do not name."""
    name = _gpu_name if gpu else (lambda k: f"{k}.contains('/') && !({_gpu_name(k)})")
    return _sections(spec, lambda c: _container_asks(c, name))


def _asks_gpus_plainly(spec: str) -> str:
    """CEL: coverage._asks_gpus_plainly(...)."""
    return (f"({_asks(spec, True)}) || !((has({spec}.resourceClaims) && size({spec}.resourceClaims) > 0) || "
            f"({_asks(spec, False)}))")


def _device_plugin_gpu(spec: str) -> str:
    """CEL: some container asks for a device plugin's GPU resource (gpu.analyse under a device-plugin cohort)."""
    return _asks(spec, True)


def validations(rule: Rule, shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """The rule's variables (beyond `spec` and `subject`) and validations. Variables are evaluated only when
    read: the positions the messages name cost nothing for an object that passes."""
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        return _visible_devices_override(shape, policy)
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        return _device_access_bypass(shape, policy)
    if rule is Rule.RUN_AS_ROOT:
        return _run_as_root(shape, policy)
    if rule is Rule.RUNTIME_CLASS_CONFLICT:
        return _runtime_class_conflict(shape, policy)
    if rule is Rule.DOUBLE_MECHANISM:
        return _double_mechanism(shape, policy)
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


def _visible_devices_override(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """One validation per section, failing for its first container that sets a listed variable; the container,
    the variable's index and the variable are variables of their own, so that the message reads them by name."""
    s = "variables.spec"
    rule = Rule.VISIBLE_DEVICES_OVERRIDE
    why = If("variables.gpu", vdo.WHY, vdo.WHY_NO_GPU)  # the coverage leaves no other case
    variables: list[dict[str, Any]] = [{"name": "names", "expression": strings(policy.visible_device_variables)},
                                       {"name": "gpu", "expression": _asks(s, True)}]
    out = []
    for section, word in SECTIONS:
        has_var = "has(c.env) && c.env.exists(e, e.name in variables.names)"
        i, c, j, e = (f"variables.{section}{suffix}" for suffix in ("", "_c", "_j", "_e"))
        variables += [
            {"name": section, "expression": f"has({s}.{section}) ? {s}.{section}.map(c, {has_var}).indexOf(true) : -1"},
            {"name": f"{section}_c", "expression": f"{s}.{section}[{i}]"},
            {"name": f"{section}_j", "expression": f"{c}.env.map(e, e.name in variables.names).indexOf(true)"},
            {"name": f"{section}_e", "expression": f"{c}.env[{j}]"},
            {"name": f"{section}_how", "expression": text(policy, _source(e))},
        ]
        path = Cel(f"{lit(shape.prefix + '.' + section + '[')} + string({i}) + '].env[' + string({j}) + ']'")
        name = Cel(f"{e}.name")
        out.append(Validation(f"{i} < 0", line(
            policy, rule, msg(vdo.SETS, container=_who(section, word, c), variable=name, path=path,
                              how=Cel(f"variables.{section}_how")), why, msg(vdo.FIX, variable=name))))
    return variables, out


def _device_access_bypass(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    s = "variables.spec"
    rule = Rule.DEVICE_ACCESS_BYPASS
    exposes = any_of([f"v.hostPath.path.startsWith({lit(p)})" for p in dab.DEVICE_PATHS]
                     + [f"{lit(p)}.startsWith(v.hostPath.path + '/')" for p in dab.DEVICE_PATHS])
    prefixes = any_of(f"k.startsWith({lit(p)})" for p in ANNOTATION_PREFIXES)
    meta = shape.meta
    variables = [
        {"name": "volume", "expression": f"has({s}.volumes) ? {s}.volumes.map(v, has(v.hostPath) && ({exposes}))"
                                         ".indexOf(true) : -1"},
        {"name": "annotations", "expression": f"{shape.meta_has('annotations')} ? "
                                              f"{meta}.annotations.filter(k, {prefixes}) : []"},
    ]
    variables.append({"name": "volume_v", "expression": f"{s}.volumes[variables.volume]"})
    v = "variables.volume_v"
    host = f"{v}.hostPath.path"
    # the sensitive paths below the mounted directory, as dab._resolved names them (a plain path, which the
    # coverage leaves alone, resolves to itself)
    listed = "[" + ", ".join(lit(p) for p in dab.DEVICE_PATHS) + "]"
    variables.append({"name": "below", "expression": f"{listed}.filter(p, p.startsWith({host} + '/'))"
                                                     ".map(p, p.endsWith('nvidia') ? p + '*' : p)"})
    above = If("size(variables.below) > 0", msg(dab.ABOVE, paths=Cel("variables.below.join(', ')")), "")
    meta_path = "metadata" if shape.meta == "object.metadata" else shape.prefix[: -len(".spec")] + ".metadata"
    key = Cel("variables.annotations[0]")
    return variables, [
        Validation("variables.volume < 0", line(
            policy, rule, msg(dab.VOLUME, volume=Cel(f"{v}.name"), host=Cel(host), path=Cel(
                f"{lit(shape.prefix + '.volumes[')} + string(variables.volume) + '].hostPath.path'"),
                resolved="", above=above),
            dab.VOLUME_WHY, dab.VOLUME_FIX)),
        Validation("size(variables.annotations) == 0", line(
            policy, rule, msg(dab.ANNOTATION, key=key, path=Cel(
                f"{lit(meta_path + '.annotations[' + chr(34))} + {key.expression} + '\"]'")),
            dab.ANNOTATION_WHY, dab.ANNOTATION_FIX)),
    ]


def _filtered(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: the keys of `c`'s resources.<section> that `_counted` holds for."""
    return f"(has({c}.resources.{section}) ? {c}.resources.{section}.filter(k, {_counted(c, section, name)}) : [])"


def _first(chain: list[tuple[str, Piece]]) -> Piece:
    """The piece of the first section whose index variable is set (the last one otherwise)."""
    out = chain[-1][1]
    for i, piece in reversed(chain[:-1]):
        out = If(f"{i} >= 0", piece, out)
    return out


def _double_mechanism(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """double_mechanism.check for a pod without claims: the first device-plugin GPU resource and the first
    DRA-served one, in gpu.analyse's order: sections, containers, limits then requests, and within one the
    keys as the apiserver writes them (sorted: the first is the least)."""
    s = "variables.spec"
    rule = Rule.DOUBLE_MECHANISM
    classes = gpu_class_resources(policy)
    variables: list[dict[str, Any]] = [{"name": "dra_names", "expression": strings(r for r, _ in classes)}]
    sides = {"dp": _gpu_name, "dra": lambda k: f"{k} in variables.dra_names"}
    for side, name in sides.items():
        for section, _ in SECTIONS:
            found = f"{s}.{section}.map(c, {_container_asks('c', name)}).indexOf(true)"
            variables.append({"name": f"{side}_{section}", "expression": f"has({s}.{section}) ? {found} : -1"})
    for side, name in sides.items():
        pieces: dict[str, list[tuple[str, str]]] = {"name": [], "resource": [], "path": []}
        whos: list[tuple[str, Piece]] = []
        for section, word in SECTIONS:
            i = f"variables.{side}_{section}"
            c, limits, requests = (f"variables.{side}_{section}_{v}" for v in ("c", "limits", "requests"))
            variables += [{"name": f"{side}_{section}_c", "expression": f"{s}.{section}[{i}]"},
                          {"name": f"{side}_{section}_limits", "expression": _filtered(c, "limits", name)},
                          {"name": f"{side}_{section}_requests", "expression": _filtered(c, "requests", name)}]
            whos.append((i, _who(section, word, c)))
            pieces["name"].append((i, f"{c}.name"))
            pieces["resource"].append((i, f"(size({limits}) > 0 ? {limits} : {requests}).min()"))
            pieces["path"].append((i, f"{lit(shape.prefix + '.' + section + '[')} + string({i}) + '].resources.' + "
                                      f"(size({limits}) > 0 ? 'limits' : 'requests')"))
        for piece, chain in pieces.items():
            expression = "".join(f"{i} >= 0 ? {e} : " for i, e in chain[:-1]) + chain[-1][1]
            variables.append({"name": f"{side}_{piece}", "expression": expression})
        variables.append({"name": f"{side}_who", "expression": text(policy, _first(whos))})
    variables.append({"name": "dra_class", "expression": "{" + ", ".join(f"{lit(r)}: {lit(n)}" for r, n in classes)
                                                         + "}[variables.dra_resource]"})
    asks = {side: " || ".join(f"variables.{side}_{section} >= 0" for section, _ in SECTIONS) for side in sides}
    args: dict[str, Piece] = {"container": Cel("variables.dp_who"), "resource": Cel("variables.dp_resource"),
                              "path": Cel("variables.dp_path"), "other": Cel("variables.dra_resource"),
                              "device_class": Cel("variables.dra_class"), "other_path": Cel("variables.dra_path")}
    what = If("variables.dp_name == variables.dra_name", msg(dm.RESOURCES_IN_ONE, **args),
              msg(dm.RESOURCES_IN_TWO, user=Cel("variables.dra_who"), **args))
    return variables, [Validation(f"!(({asks['dp']}) && ({asks['dra']}))",
                                  line(policy, rule, what, dm.WHY, dm.KEEP_ONE_RESOURCE))]


def _runtime_class_conflict(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    s = "variables.spec"
    rule = Rule.RUNTIME_CLASS_CONFLICT
    path = f"{shape.prefix}.runtimeClassName"
    variables: list[dict[str, Any]] = [{"name": "gpu", "expression": _device_plugin_gpu(s)}]
    out = []
    for c in pinnable(policy):
        if c.mechanism != DEVICE_PLUGIN:
            continue
        same = f" || {s}.runtimeClassName == {lit(c.runtime_class_name)}" if c.runtime_class_name else ""
        runtime = str(c.runtime_class_name)
        out.append(Validation(
            f"!({pin(c, s, policy)}) || !has({s}.runtimeClassName){same} || !variables.gpu",
            line(policy, rule, msg(rcc.WHAT, runtime=Cel(f"{s}.runtimeClassName"), path=path),
                 T(rcc.WHY, cohort=c.name, runtime=runtime), T(rcc.FIX, runtime=runtime))))
    return variables, out


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


def _run_as_root(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """One validation per setting the pod's securityContext contradicts, and per section and setting its
    containers' do (the first container that does: a variable of its own, which the message reads)."""
    s = "variables.spec"
    rule = Rule.RUN_AS_ROOT
    chain = "".join(f"{pin(c, s, policy)} ? {lit(c.name)} : " for c in pinnable(policy)) + "''"
    why = msg(rar.WHY, cohort=Cel("variables.cohort"), uid=str(policy.security.run_as_user))
    variables: list[dict[str, Any]] = [{"name": "cohort", "expression": chain}]
    out = []
    subject = rar.THE_POD if shape.meta == "object.metadata" else rar.THE_TEMPLATE
    for field, cond, setting, fix in _contradictions(f"{s}.securityContext", False, policy):
        path = f"{shape.prefix}.securityContext.{field}"
        out.append(Validation(f"!(has({s}.securityContext) && {cond})",
                              line(policy, rule, msg(rar.SETS, who=subject, setting=setting, path=path), why, fix)))
    for section, word in SECTIONS:
        for n, (field, cond, _, fix) in enumerate(_contradictions("c.securityContext", True, policy)):
            name = f"{section}{n}"
            variables.append({"name": name, "expression": f"has({s}.{section}) ? {s}.{section}.map(c, "
                                                          f"has(c.securityContext) && {cond}).indexOf(true) : -1"})
            variables.append({"name": f"{name}_c", "expression": f"{s}.{section}[variables.{name}]"})
            c = f"variables.{name}_c"
            setting = _contradictions(f"{c}.securityContext", True, policy)[n][2]
            at = Cel(f"{lit(shape.prefix + '.' + section + '[')} + string(variables.{name}) + "
                     f"{lit('].securityContext.' + field)}")
            out.append(Validation(f"variables.{name} < 0", line(
                policy, rule, msg(rar.SETS, who=_who(section, word, c), setting=setting, path=at), why, fix)))
    return variables, out
