"""The exported rules: for each, its coverage (coverage.py's predicate, in CEL) and its validations, each
an expression that is true when the object passes and a messageExpression in the one-line shape of
docs/DESIGN section 10 (`<object>: <what, with field path>: <why>; <fix> [<rule>] <docs link>`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Policy
from webhook.intree.cel import any_of, lit, strings
from webhook.intree.coverage import DEVICE_LIST_MARK, DOTS, HIDDEN, PLAIN_PATH
from webhook.intree.shapes import Shape
from webhook.policy.checks import device_access_bypass as dab
from webhook.policy.checks import visible_devices_override as vdo
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


def coverage(rule: Rule, shape: Shape) -> str:
    """CEL: coverage.COVERED[rule] of the object (a matchCondition: no variables there)."""
    s = shape.spec
    if rule is Rule.VISIBLE_DEVICES_OVERRIDE:
        return "!(" + _sections(s, lambda c: (
            f"(has({c}.envFrom) && size({c}.envFrom) > 0) || (has({c}.env) && {c}.env.exists(e, "
            f"e.name == 'NVIDIA_VISIBLE_DEVICES' && has(e.value) && e.value == {lit(HIDDEN)}))")) + ")"
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        containers = _sections(s, lambda c: (
            f"(has({c}.securityContext) && has({c}.securityContext.privileged) && {c}.securityContext.privileged) || "
            f"(has({c}.volumeMounts) && {c}.volumeMounts.exists(m, m.mountPath.contains({lit(DEVICE_LIST_MARK)})))"))
        paths = (f"has({s}.volumes) && {s}.volumes.exists(v, has(v.hostPath) && !(v.hostPath.path.matches({lit(PLAIN_PATH)})"
                 f" && !v.hostPath.path.matches({lit(DOTS)}) && !(v.hostPath.path in ['/var/run', '/proc'] || "
                 "v.hostPath.path.startsWith('/var/run/') || v.hostPath.path.startsWith('/proc/'))))")
        return f"!(({containers}) || ({paths}))"
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
                f"{lit(': ' + vdo.WHY + '; remove ')} + {e}.name + "
                f"{lit(' and ask for GPUs with resources.limits or a ResourceClaim [' + rule.value + '] ' + policy.docs_url(rule))}"))
        return variables, out
    if rule is Rule.DEVICE_ACCESS_BYPASS:
        exposes = any_of([f"v.hostPath.path.startsWith({lit(p)})" for p in dab.DEVICE_PATHS]
                         + [f"{lit(p)}.startsWith(v.hostPath.path + '/')" for p in dab.DEVICE_PATHS])
        prefixes = any_of(f"k.startsWith({lit(p)})" for p in dab.ANNOTATION_PREFIXES)
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
                f"{_tail(policy, rule, 'GPU device nodes and device-plugin/DRA sockets on the host give GPUs without allocation', 'remove the hostPath volume; GPUs come through resources.limits or a ResourceClaim')}"),
            Validation(
                "size(variables.annotations) == 0",
                f"{head}'annotation ' + {key} + ' ({meta_path}.annotations[\"' + {key} + '\"]) asks the runtime for CDI "
                f"devices' + {_tail(policy, rule, 'CDI/NRI device annotations inject devices without allocation', 'remove the annotation')}"),
        ]
    raise KeyError(rule)


EXPORTED = (Rule.VISIBLE_DEVICES_OVERRIDE, Rule.DEVICE_ACCESS_BYPASS)
