"""The exported rules: for each, its coverage (coverage.py's predicate, in CEL) and its validations, each
an expression that is true when the object passes and a messageExpression in the one-line shape of
docs/DESIGN section 10 (`<object>: <what, with field path>: <why>; <fix> [<rule>] <docs link>`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.intree.cel import any_of, fill, lit, strings
from webhook.intree.coverage import (
    DEVICE_LIST_MARK,
    DOTS,
    HIDDEN,
    PLAIN_PATH,
    gpu_class_resources,
    mapped_names,
    pinnable,
)
from webhook.intree.shapes import Shape
from webhook.objects.annotations import ANNOTATION_PREFIXES
from webhook.policy.checks import device_access_bypass as dab
from webhook.policy.checks import double_mechanism as dm
from webhook.policy.checks import visible_devices_override as vdo
from webhook.policy.gpu import GPU_RESOURCE_PREFIXES
from webhook.policy.messages import render
from webhook.rules import Rule

SECTIONS = (("containers", "container"), ("initContainers", "init container"),
            ("ephemeralContainers", "ephemeral container"))


@dataclass(frozen=True, slots=True)
class Validation:
    expression: str  # true: the object passes
    message: str  # a CEL string


def _word(section: str, word: str, c: str) -> str:
    if section == "initContainers":  # a restartable init container runs beside the main ones
        return f"(has({c}.restartPolicy) && {c}.restartPolicy == 'Always' ? 'sidecar container' : 'init container')"
    return lit(word)


def _sections(spec: str, predicate: Callable[[str], str]) -> str:
    """CEL: some container of any section satisfies `predicate` (of the container variable `c`)."""
    return any_of(f"has({spec}.{s}) && {spec}.{s}.exists(c, {predicate('c')})" for s, _ in SECTIONS)


def _tail(policy: Policy, rule: Rule, why: str, fix: str) -> str:
    return lit(f": {why}; {fix} [{rule.value}] {policy.docs_url(rule)}")


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
            f"e.name == 'NVIDIA_VISIBLE_DEVICES' && has(e.value) && e.value == {lit(HIDDEN)}))")) + ")"
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        containers = _sections(s, lambda c: (
            f"(has({c}.securityContext) && has({c}.securityContext.privileged) && {c}.securityContext.privileged) || "
            f"(has({c}.volumeMounts) && {c}.volumeMounts.exists(m, m.mountPath.contains({lit(DEVICE_LIST_MARK)})))"))
        paths = (f"has({s}.volumes) && {s}.volumes.exists(v, has(v.hostPath) && "
                 f"!(v.hostPath.path.matches({lit(PLAIN_PATH)})"
                 f" && !v.hostPath.path.matches({lit(DOTS)}) && !(v.hostPath.path in ['/var/run', '/proc'] || "
                 "v.hostPath.path.startsWith('/var/run/') || v.hostPath.path.startsWith('/proc/'))))")
        return f"!(({containers}) || ({paths}))"
    if rule is Rule.DOUBLE_MECHANISM:
        if policy.lookups.device_classes:
            return "false"
        mapped = mapped_names(policy)
        names = "" if not mapped else " && !(" + _sections(s, lambda c: " || ".join(
            f"(has({c}.resources) && has({c}.resources.{section}) && {c}.resources.{section}.exists(k, "
            f"k in {strings(mapped)}))" for section in ("limits", "requests"))) + ")"
        return f"!(has({s}.resourceClaims) && size({s}.resourceClaims) > 0){names}"
    raise KeyError(rule)


def validations(rule: Rule, shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """The rule's variables (beyond `spec` and `subject`) and validations. Variables are evaluated only when
    read: the positions the messages name cost nothing for an object that passes."""
    s = "variables.spec"
    head = "variables.subject + ': ' + "
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        variables = [{"name": "names", "expression": strings(policy.visible_device_variables)}]
        out = []
        for section, word in SECTIONS:
            has_var = "has(c.env) && c.env.exists(e, e.name in variables.names)"
            variables.append({"name": section, "expression": f"has({s}.{section}) ? {s}.{section}.map(c, {has_var})"
                                                             ".indexOf(true) : -1"})
            i = f"variables.{section}"
            c = f"{s}.{section}[{i}]"
            j = f"{c}.env.map(e, e.name in variables.names).indexOf(true)"
            e = f"{c}.env[{j}]"
            path = f"{lit(shape.prefix + '.' + section + '[')} + string({i}) + '].env[' + string({j}) + ']'"
            out.append(Validation(
                f"{i} < 0",
                f"{head}{_word(section, word, c)} + ' \"' + {c}.name + '\" sets ' + {e}.name + ' (' + {path} + ', ' + "
                f"(has({e}.valueFrom) ? 'with valueFrom' : 'with a literal value') + ')' + "
                f"{lit(': ' + render(vdo.WHY) + '; remove ')} + {e}.name + "
                + lit(f" and ask for GPUs with resources.limits or a ResourceClaim [{rule.value}] "
                      f"{policy.docs_url(rule)}")))
        return variables, out
    if rule is Rule.DEVICE_ACCESS_BYPASS:
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
        v = f"{s}.volumes[variables.volume]"
        meta_path = "metadata" if shape.meta == "object.metadata" else shape.prefix[: -len(".spec")] + ".metadata"
        key = "variables.annotations[0]"
        return variables, [
            Validation(
                "variables.volume < 0",
                f"{head}'volume \"' + {v}.name + '\" mounts the host path ' + {v}.hostPath.path + ' (' + "
                f"{lit(shape.prefix + '.volumes[')} + string(variables.volume) + '].hostPath.path)' + "
                + _tail(policy, rule,
                        "GPU device nodes and device-plugin/DRA sockets on the host give GPUs without allocation",
                        "remove the hostPath volume; GPUs come through resources.limits or a ResourceClaim")),
            Validation(
                "size(variables.annotations) == 0",
                f"{head}'annotation ' + {key} + ' ({meta_path}.annotations[\"' + {key} + '\"]) "
                "asks the runtime for CDI "
                "devices' + "
                + _tail(policy, rule, "CDI/NRI device annotations inject devices without allocation",
                        "remove the annotation")),
        ]
    if rule is Rule.RUN_AS_ROOT:
        return _run_as_root(shape, policy)
    if rule is Rule.RUNTIME_CLASS_CONFLICT:
        return _runtime_class_conflict(shape, policy)
    if rule is Rule.DOUBLE_MECHANISM:
        return _double_mechanism(shape, policy)
    raise KeyError(rule)


def _gpu_name(k: str) -> str:
    return " || ".join(f"{k}.startsWith({lit(p)})" for p in GPU_RESOURCE_PREFIXES)


def _counted(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: a condition on the key `k` of the container `c`'s resources.<section>: gpu.analyse counts it
    (more than 0, and in requests only where the limits do not name it) and its name satisfies `name`."""
    m = f"{c}.resources.{section}"
    unlimited = "" if section == "limits" else f" && !(has({c}.resources.limits) && k in {c}.resources.limits)"
    return f"({name('k')}){unlimited} && quantity({m}[k]).isGreaterThan(quantity('0'))"


def _asks(c: str, name: Callable[[str], str]) -> str:
    """CEL: the container `c` asks for a resource gpu.analyse counts whose name satisfies `name`."""
    return f"has({c}.resources) && (" + any_of(
        f"has({c}.resources.{section}) && {c}.resources.{section}.exists(k, {_counted(c, section, name)})"
        for section in ("limits", "requests")) + ")"


def _device_plugin_gpu(spec: str) -> str:
    """CEL: some container asks for more than 0 of a device plugin's GPU resource (gpu.analyse under a
    device-plugin cohort: limits, or requests the limits do not name)."""
    return _sections(spec, lambda c: _asks(c, _gpu_name))


def _filtered(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: the keys of `c`'s resources.<section> that `_counted` holds for."""
    return f"(has({c}.resources.{section}) ? {c}.resources.{section}.filter(k, {_counted(c, section, name)}) : [])"


def _double_mechanism(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    """double_mechanism.check for a pod without claims: the first device-plugin GPU resource and the first
    DRA-served one, in gpu.analyse's order: sections, containers, limits then requests, and within one the
    keys as the apiserver writes them (sorted: the first is the least)."""
    s = "variables.spec"
    rule = Rule.DOUBLE_MECHANISM
    classes = gpu_class_resources(policy)
    sides = {"dp": _gpu_name, "dra": lambda k: f"{k} in {strings(r for r, _ in classes)}"}
    variables: list[dict[str, Any]] = []
    for side, name in sides.items():
        for section, _ in SECTIONS:
            variables.append({"name": f"{side}_{section}", "expression": f"has({s}.{section}) ? {s}.{section}.map("
                                                                          f"c, {_asks('c', name)}).indexOf(true) : -1"})
    for side, name in sides.items():
        pieces: dict[str, list[tuple[str, str]]] = {"who": [], "name": [], "resource": [], "path": []}
        for section, word in SECTIONS:
            i = f"variables.{side}_{section}"
            variables.append({"name": f"{side}_{section}_c", "expression": f"{s}.{section}[{i}]"})
            c = f"variables.{side}_{section}_c"
            variables.append({"name": f"{side}_{section}_limits", "expression": _filtered(c, "limits", name)})
            limits = f"variables.{side}_{section}_limits"
            pieces["who"].append((i, f"{_word(section, word, c)} + ' \"' + {c}.name + '\"'"))
            pieces["name"].append((i, f"{c}.name"))
            pieces["resource"].append((i, f"(size({limits}) > 0 ? {limits}.min() : "
                                          f"{_filtered(c, 'requests', name)}.min())"))
            pieces["path"].append((i, f"{lit(shape.prefix + '.' + section + '[')} + string({i}) + '].resources.' + "
                                      f"(size({limits}) > 0 ? 'limits' : 'requests')"))
        for piece, chain in pieces.items():
            expression = "".join(f"{i} >= 0 ? {e} : " for i, e in chain[:-1]) + chain[-1][1]
            variables.append({"name": f"{side}_{piece}", "expression": expression})
    variables.append({"name": "dra_class", "expression": "{" + ", ".join(f"{lit(r)}: {lit(n)}" for r, n in classes)
                                                         + "}[variables.dra_resource]"})
    asks = {side: " || ".join(f"variables.{side}_{section} >= 0" for section, _ in SECTIONS) for side in sides}
    args = {"container": "variables.dp_who", "resource": "variables.dp_resource", "path": "variables.dp_path",
            "user": "variables.dra_who", "other": "variables.dra_resource", "device_class": "variables.dra_class",
            "other_path": "variables.dra_path"}
    what = (f"(variables.dp_name == variables.dra_name ? {fill(dm.RESOURCES_IN_ONE, args)} : "
            f"{fill(dm.RESOURCES_IN_TWO, args)})")
    return variables, [Validation(
        f"!(({asks['dp']}) && ({asks['dra']}))",
        f"variables.subject + ': ' + {what} + {_tail(policy, rule, render(dm.WHY), render(dm.KEEP_ONE_RESOURCE))}")]


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
        why = (f'cohort "{c.name}" injects GPUs through the {c.runtime_class_name} RuntimeClass (its containerd '
               "handler); another runtime starts the container without them")
        fix = f"set runtimeClassName: {c.runtime_class_name}, or remove it and let the webhook set it"
        out.append(Validation(
            f"!({pin(c, s, policy)}) || !has({s}.runtimeClassName){same} || !variables.gpu",
            f"variables.subject + ': runtimeClassName is \"' + {s}.runtimeClassName + "
            f"{lit(chr(34) + ' (' + path + ') in a device-plugin GPU pod')} + {_tail(policy, rule, why, fix)}"))
    return variables, out


def _contradictions(sc: str, container: bool, policy: Policy) -> list[tuple[str, str, str, str]]:
    """(field, condition on the securityContext `sc`, what, fix): run_as_root._contradictions in CEL."""
    security = policy.security
    out = []
    if security.run_as_non_root:
        out.append(("runAsUser", f"has({sc}.runAsUser) && {sc}.runAsUser == 0", "runAsUser: 0",
                    f"remove runAsUser or set {security.run_as_user}"))
        out.append(("runAsNonRoot", f"has({sc}.runAsNonRoot) && {sc}.runAsNonRoot == false", "runAsNonRoot: false",
                    "remove runAsNonRoot: false"))
    if container:
        if security.allow_privilege_escalation is False:
            out.append(("allowPrivilegeEscalation",
                        f"has({sc}.allowPrivilegeEscalation) && {sc}.allowPrivilegeEscalation == true",
                        "allowPrivilegeEscalation: true", "set it to false"))
        if security.drop_capabilities:
            out.append(("capabilities.add", f"has({sc}.capabilities) && has({sc}.capabilities.add) && "
                                            f"size({sc}.capabilities.add) > 0", "", "remove the added capabilities"))
    return out


def _run_as_root(shape: Shape, policy: Policy) -> tuple[list[dict[str, Any]], list[Validation]]:
    s = "variables.spec"
    security = policy.security
    chain = "".join(f"{pin(c, s, policy)} ? {lit(c.name)} : " for c in pinnable(policy)) + "''"
    variables: list[dict[str, Any]] = [{"name": "cohort", "expression": chain}]

    def tail(fix: str) -> str:
        why = (f'" run as non-root (UID {security.run_as_user}) without privilege escalation or added '
               f"capabilities; {fix} [{Rule.RUN_AS_ROOT.value}] {policy.docs_url(Rule.RUN_AS_ROOT)}")
        return "': workloads on GPU cohort \"' + variables.cohort + " + lit(why)

    out = []
    who = "the pod" if shape.meta == "object.metadata" else "the pod template"
    for field, cond, what, fix in _contradictions(f"{s}.securityContext", False, policy):
        path = f"{shape.prefix}.securityContext.{field}"
        out.append(Validation(f"!(has({s}.securityContext) && {cond})",
                              f"variables.subject + {lit(': ' + who + ' sets ' + what + ' (' + path + ')')} + "
                              f"{tail(fix)}"))
    for section, word in SECTIONS:
        for n, (field, cond, what, fix) in enumerate(_contradictions("c.securityContext", True, policy)):
            name = f"{section}{n}"
            variables.append({"name": name, "expression": f"has({s}.{section}) ? {s}.{section}.map(c, "
                                                          f"has(c.securityContext) && {cond}).indexOf(true) : -1"})
            c = f"{s}.{section}[variables.{name}]"
            added = f"{c}.securityContext.capabilities.add"
            shown = (f"'capabilities.add: [' + {added}[0] + (size({added}) > 1 ? ', ...' : '') + ']'"
                     if field == "capabilities.add" else lit(what))
            out.append(Validation(
                f"variables.{name} < 0",
                f"variables.subject + ': ' + {_word(section, word, c)} + ' \"' + {c}.name + '\" sets ' + {shown} + "
                f"' (' + {lit(shape.prefix + '.' + section + '[')} + string(variables.{name}) + "
                f"{lit('].securityContext.' + field + ')')} + {tail(fix)}"))
    return variables, out


EXPORTED = (Rule.VISIBLE_DEVICES_OVERRIDE, Rule.DEVICE_ACCESS_BYPASS, Rule.RUN_AS_ROOT, Rule.RUNTIME_CLASS_CONFLICT,
            Rule.DOUBLE_MECHANISM)
