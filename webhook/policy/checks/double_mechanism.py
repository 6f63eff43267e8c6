"""double-mechanism: one pod asking for GPUs through both allocation owners. A GPU has
exactly one: the device plugin (`nvidia.com/gpu`, `nvidia.com/mig-*`) or the DRA driver (claims), and no
cohort runs both, so such a pod never schedules. One finding per pod, at its first device-plugin
resource, when some container requests a device-plugin GPU resource that DRA does not serve for this pod,
and the pod also asks for a GPU through DRA: a resolved claim with a GPU request, or an extended resource
that a GPU DeviceClass serves (`deviceclass.resource.kubernetes.io/<class>`, an `extendedResourceName`).
Unresolved claims do not count (unresolved-claim reports them)."""
from collections.abc import Callable

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list
from webhook.objects.podspec import PodView
from webhook.policy.cel import Validation, lit, strings
from webhook.policy.cel.pods import S, container_asks, counted, gpu_name, has_claims, placed
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, If, Lines, Piece, cat, msg, text
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree, Variables
from webhook.policy.gpu import IMPLICIT_PREFIX, GpuFacts
from webhook.policy.messages import N_, Arg, T, names, who
from webhook.policy.results import Finding

WHY = T("a GPU comes from one mechanism only, the device plugin or DRA")
KEEP_ONE_RESOURCE = T("keep one of the two resources")
# a device-plugin resource and a DRA-served one (its in-tree export, below, fills these in CEL)
RESOURCES_IN_ONE = N_('{container} requests {resource} ({path}) and {other} (DRA, DeviceClass "{device_class}", '
                      "{other_path})")
RESOURCES_IN_TWO = N_('{container} requests {resource} ({path}) while {user} requests {other} (DRA, DeviceClass '
                      '"{device_class}", {other_path})')


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.device_plugin or not (facts.gpu_claims or facts.dra_resources):
        return []
    dp = facts.device_plugin[0]
    base: dict[str, Arg] = {"container": who(dp.container), "resource": dp.resource, "path": dp.path}
    if facts.gpu_claims:
        claim = facts.gpu_claims[0]
        other = T('claim "{claim}" (DRA, {ref})', claim=claim.name, ref=claim.ref)
        users = [c for c in claim.containers if c.name != dp.container.name]
        if dp.container.name in {c.name for c in claim.containers} or not users:
            what = T("{container} requests {resource} ({path}) and {other}", other=other, **base)
        elif len(users) == 1:
            what = T("{container} requests {resource} ({path}) while {users} uses {other}", users=who(users[0]),
                     other=other, **base)
        else:
            what = T("{container} requests {resource} ({path}) while {users} use {other}",
                     users=names([who(c) for c in users]), other=other, **base)
        # the resource is named where the user wrote it: limits, or requests only
        keep = T("keep either the limit or the claim") if dp.path.endswith(".limits") else \
            T("keep either the request or the claim")
    else:
        use = facts.dra_resources[0]
        served_by = use.device_class.name if use.device_class else "?"  # always set on a DRA-served resource
        if use.container.name == dp.container.name:
            what = T(RESOURCES_IN_ONE, other=use.resource, device_class=served_by, other_path=use.path, **base)
        else:
            what = T(RESOURCES_IN_TWO, user=who(use.container), other=use.resource, device_class=served_by,
                     other_path=use.path, **base)
        keep = KEEP_ONE_RESOURCE
    return [Finding(
        path=dp.path,
        what=what,
        why=WHY,
        fix=keep)]


# ----------------------------------------------------------------------------------- its in-tree export's coverage

def exported(policy: Policy) -> bool:
    """Its in-tree policy reads the policy's DeviceClasses (not the cluster's: no DeviceClass lookups), and some
    of them give GPUs."""
    return not policy.lookups.device_classes and bool(gpu_class_resources(policy))


def _mapped(policy: Policy) -> frozenset[str]:
    return frozenset(i.extended_resource_name for i in policy.device_classes.values() if i.extended_resource_name)


def mapped_names(policy: Policy) -> frozenset[str]:
    """Resource names a listed DeviceClass serves through extendedResourceName: whether such a name means the
    device plugin or DRA depends on the cohort the pod is bound for (gpu.analyse)."""
    return policy.derived(_mapped)


def _gpu_classes(policy: Policy) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((IMPLICIT_PREFIX + name, info.name) for name, info in policy.device_classes.items()
                        if policy.selects_gpus(info)))


def gpu_class_resources(policy: Policy) -> tuple[tuple[str, str], ...]:
    """(deviceclass.resource.kubernetes.io/<class>, the class's name) for each listed GPU class: the
    implicit extended resources that DRA serves with GPUs (KEP-5004)."""
    return policy.derived(_gpu_classes)


def covers(view: PodView, policy: Policy) -> bool:
    """No claims and no name a listed class maps: the pod's mechanisms are then its resource names alone, read
    against the policy's DeviceClasses. With DeviceClass lookups on, the cluster's classes replace those,
    and the rule is not exported (exported_rules); False here too, so that nothing depends on that."""
    if policy.lookups.device_classes or as_list(view.spec.get("resourceClaims")):
        return False
    mapped = mapped_names(policy)
    if not mapped:
        return True
    for c in view.containers:
        resources = c.resources
        for section in ("limits", "requests"):
            if any(name in mapped for name in as_dict(resources.get(section))):
                return False
    return True


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The same coverage and finding's line in CEL (webhook/policy/cel), over the policy's variables.

def cel_covered(shape: Shape, policy: Policy) -> str:
    """CEL: covers(...)."""
    if policy.lookups.device_classes:
        return "false"
    mapped = mapped_names(policy)
    named = " || ".join(f"(has(t[1].resources) && has(t[1].resources.{section}) && "
                        f"t[1].resources.{section}.exists(k, k in {strings(mapped)}))"
                        for section in ("limits", "requests"))
    others = f" && !variables.placed.exists(t, {named})" if mapped else ""
    return f"!{has_claims(S)}{others}"


def _filtered(c: str, section: str, name: Callable[[str], str]) -> str:
    """CEL: the keys of `c`'s resources.<section> that `counted` holds for."""
    return f"(has({c}.resources.{section}) ? {c}.resources.{section}.filter(k, {counted(c, section, name)}) : [])"


def _where(j: str) -> Cel:
    """`<section>[<index>]` of the container at `j` of `containers` (pods.placed's bounds)."""
    return Cel(f"({j} < variables.init_at ? 'containers[' + string({j}) : {j} < variables.ephemeral_at ? "
               f"'initContainers[' + string({j} - variables.init_at) : "
               f"'ephemeralContainers[' + string({j} - variables.ephemeral_at)) + ']'")


def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    """check for a pod without claims: the first device-plugin GPU resource and the first DRA-served one, in
    gpu.analyse's order: sections, containers, limits then requests, and within one the keys as the apiserver
    writes them (sorted: the first is the least)."""
    classes = gpu_class_resources(policy)
    variables: Variables = [{"name": "dra_names", "expression": strings(r for r, _ in classes)}, *placed(policy)]
    sides: dict[str, Callable[[str], str]] = {"dp": gpu_name, "dra": lambda k: f"{k} in variables.dra_names"}
    for side, name in sides.items():
        j, c, limits, requests = (f"variables.{side}{v}" for v in ("", "_c", "_limits", "_requests"))
        variables += [
            {"name": side, "expression": f"variables.placed.map(t, {container_asks('t[1]', name)}).indexOf(true)"},
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
    what = If("variables.dp == variables.dra", msg(RESOURCES_IN_ONE, **args),
              msg(RESOURCES_IN_TWO, user=Cel("variables.dra_who"), **args))
    return variables, [Validation("variables.dp < 0 || variables.dra < 0", lines.line(what, WHY, KEEP_ONE_RESOURCE))]


DEFINITION = Definition(
    "double-mechanism",
    "one pod asks for GPUs through device-plugin resources and DRA claims at once",
    "GPU allocation",
    __doc__,
    reason=N_(
        "A GPU has exactly one allocation owner: the device plugin hands out nvidia.com/gpu, the DRA driver "
        "hands out devices through ResourceClaims, and neither knows of the other. Each cohort runs one of them, "
        "so a pod asking through both is never satisfied on any node."),
    checks=(
        Check(POD_SPECS, check),
    ),
    in_tree=InTree(exported, covers=covers, order=5, cel_covered=cel_covered, cel_validations=cel_validations))
