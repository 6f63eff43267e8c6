"""unsatisfiable-request: a GPU request that no node or device of the pod's cohort can ever satisfy, even
empty. Reads the cluster's capacity snapshot (Nodes and ResourceSlices, `Context.inventory`) and says
nothing when those lookups are off; no allocation bookkeeping ("could it ever fit", not "is there room").

A cohort whose nodes an autoscaler adds (the policy's `autoscaling`, or a looked-up Karpenter NodePool or
Cluster API node group carrying its labels) may have no node at all until a pod asks: there, only a request
above what the pool's node can have is unsatisfiable, and a DRA request is never judged (a new node brings
devices that no slice publishes yet). DRA devices are counted as the scheduler allocates them: the request's
tolerations against device taints (DeviceTaintRules included), its `capacity.requests` against the device's
capacity, shared counters of partitionable devices, any `firstAvailable` alternative; a plain extended
resource that a DeviceClass serves (`extendedResourceName`) is checked as a claim of that class."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, DeviceClassInfo, Policy
from webhook.objects.claims import DeviceRequest
from webhook.objects.inventory import Admitted, Device, Inventory, NodeInfo, Taint
from webhook.policy import capacity
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import ClaimUse, GpuFacts, ResourceUse
from webhook.policy.messages import N_, Arg, Joined, T, who
from webhook.policy.results import Finding
from webhook.rule_id import Action


def _amount(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _nodes_phrase(nodes: Sequence[NodeInfo], cohort: Cohort) -> Arg:
    if len(nodes) == 1:
        return T('the one node of cohort "{cohort}" the pod may use',
                 cohort=cohort.name)
    return T('the {count} nodes of cohort "{cohort}" the pod may use',
             count=len(nodes), cohort=cohort.name)


def effective(uses: tuple[ResourceUse, ...]) -> dict[str, float]:
    """The pod's request per resource as the scheduler computes it (resourcehelper.PodRequests): the sum
    of the regular containers and of the sidecars (restartable init containers), or, when larger, an init
    container's request plus the sidecars started before it. Ephemeral containers request nothing."""
    regular: dict[str, float] = {}
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    inits = sorted((u for u in uses if u.container.section == "initContainers"), key=lambda u: u.container.position)
    for u in uses:
        if u.container.section == "containers":
            regular[u.resource] = regular.get(u.resource, 0.0) + u.amount
    by_init: dict[int, list[ResourceUse]] = {}
    for u in inits:
        by_init.setdefault(u.container.position, []).append(u)
    for position in sorted(by_init):
        group = by_init[position]
        sidecar = group[0].container.raw.get("restartPolicy") == "Always"
        for u in group:
            if sidecar:
                sidecars[u.resource] = sidecars.get(u.resource, 0.0) + u.amount
                init_peak[u.resource] = max(init_peak.get(u.resource, 0.0), sidecars[u.resource])
            else:
                init_peak[u.resource] = max(init_peak.get(u.resource, 0.0),
                                            u.amount + sidecars.get(u.resource, 0.0))
    names = set(regular) | set(sidecars) | set(init_peak)
    return {r: max(regular.get(r, 0.0) + sidecars.get(r, 0.0), init_peak.get(r, 0.0)) for r in names}


def _device_plugin(facts: GpuFacts, inventory: Inventory, cohort: Cohort) -> list[Finding]:
    offered = cohort.offered_resources()
    uses = tuple(u for u in facts.device_plugin + facts.other_nvidia if u.resource in offered)
    if not uses:
        return []  # what the cohort does not offer at all is resource-not-offered's finding
    admitted = capacity.pod_nodes(inventory, cohort, facts.view.spec)
    nodes = admitted.nodes or ()
    out = []
    said: set[str] = set()
    where: Arg = ""
    total = 0
    spec = facts.view.spec
    for use in uses:
        if use.container.section == "ephemeralContainers":
            continue
        most, node = capacity.largest(admitted, use.resource)
        if use.amount <= max(most, _pool(inventory, cohort, spec, use.resource)):
            continue
        if not said:
            where, total = _nodes_phrase(nodes, cohort), len(capacity.cohort_nodes(inventory, cohort))
        said.add(use.resource)
        out.append(Finding(
            path=use.path,
            what=T('{container} requests {amount} {resource} ({path}) on cohort "{cohort}"',
                   container=who(use.container), amount=_amount(use.amount), resource=use.resource, path=use.path,
                   cohort=cohort.name),
            why=_largest_why(use.resource, most, node, nodes, where, cohort, total,
                             capacity.autoscaled_most(inventory, cohort, spec, use.resource)),
            fix=_fix(use.resource, max(most, _pool(inventory, cohort, spec, use.resource)), nodes, total)))
    if len(uses) == 1 and uses[0].container.section == "containers":
        return out  # one container's request is the pod's: said above if it does not fit
    pod_path = f"{facts.view.prefix}.containers"
    wanted = effective(uses)
    for resource in sorted(wanted):
        most, node = capacity.largest(admitted, resource)
        if resource in said or wanted[resource] <= max(most, _pool(inventory, cohort, spec, resource)):
            continue
        if not where:
            where, total = _nodes_phrase(nodes, cohort), len(capacity.cohort_nodes(inventory, cohort))
        said.add(resource)
        out.append(Finding(
            path=pod_path,
            what=T('the pod requests {amount} {resource} in all ({path}, init containers and sidecars counted as '
                   'the scheduler counts them) on cohort "{cohort}"', amount=_amount(wanted[resource]),
                   resource=resource, path=pod_path, cohort=cohort.name),
            why=_largest_why(resource, most, node, nodes, where, cohort, total,
                             capacity.autoscaled_most(inventory, cohort, spec, resource)),
            fix=_fix(resource, max(most, _pool(inventory, cohort, spec, resource)), nodes, total)))
    if not said and len(wanted) > 1 and nodes and not capacity.one_node_has_all(admitted, wanted) and \
            capacity.autoscaled_most(inventory, cohort, spec, next(iter(wanted))) is None:
        where = _nodes_phrase(nodes, cohort)
        listed = Joined(tuple(f"{_amount(wanted[r])} {r}" for r in sorted(wanted)))
        out.append(Finding(
            path=pod_path,
            what=T('the pod requests {resources} together ({path}) on cohort "{cohort}"', resources=listed,
                   path=pod_path, cohort=cohort.name),
            why=T("no single node among {nodes} has all of them allocatable, so the pod never schedules", nodes=where),
            fix=T("split the resources across pods, or give one node pool all of them")))
    return out


def _pool(inventory: Inventory, cohort: Cohort, spec: Mapping[str, Any], resource: str) -> float:
    """The most of `resource` a node the cohort's autoscaler adds can have; 0 when none adds nodes."""
    most = capacity.autoscaled_most(inventory, cohort, spec, resource)
    return 0.0 if most is None else most


def _largest_why(resource: str, most: float, node: NodeInfo | None, nodes: Sequence[NodeInfo],
                 where: Arg, cohort: Cohort, total: int, pooled: float | None = None) -> Arg:
    if pooled is not None:
        return T('no node of cohort "{cohort}" the pod may use, nor one its autoscaler adds, has more than '
                 "{amount} {resource}, so the pod never schedules", cohort=cohort.name,
                 amount=_amount(max(pooled, most)), resource=resource)
    if not total:
        return T('the cluster has no node of cohort "{cohort}" (none carries its node labels), so the pod never '
                 "schedules", cohort=cohort.name)
    if not nodes:
        if total == 1:
            return T('the 1 node of cohort "{cohort}" does not admit the pod (node selection, tolerations), so '
                     "the pod never schedules", cohort=cohort.name)
        return T('none of the {count} nodes of cohort "{cohort}" admits the pod (node selection, tolerations), '
                 "so the pod never schedules", count=total, cohort=cohort.name)
    if node is None:
        return T("none of {nodes} has {resource} allocatable, so the pod never schedules", nodes=where,
                 resource=resource)
    return T('the largest allocatable {resource} among {nodes} is {amount} (node "{node}"), so the pod never '
             "schedules, even on an empty node", resource=resource, nodes=where, amount=_amount(most),
             node=node.name)


def _fix(resource: str, most: float, nodes: Sequence[NodeInfo], total: int) -> Arg:
    if total and not nodes:
        return T("tolerate the cohort's taints and select its nodes (default-placement adds both when the pod "
                 "selects none itself), or target another cohort")
    if most <= 0:
        return T("target a cohort whose nodes advertise it, or have the cluster owner add such nodes")
    return T("request at most {amount} {resource} per pod (split the work across pods), or add larger nodes",
             amount=_amount(most), resource=resource)


def _leaf_problem(leaf: DeviceRequest, inventory: Inventory, admitted: Admitted,
                  context: Context, policy: Policy) -> Arg | None:
    """Why the leaf cannot be allocated on any one node; None when it can, or when that cannot be told."""
    info = context.device_class(leaf.device_class)
    if info is None or info.selectors is None:
        return None  # a class known only by name: what it selects cannot be evaluated
    need = 1 if leaf.allocation_mode == "All" else leaf.count
    if need <= 0:
        return None
    expressions = info.selectors + leaf.selectors
    found = capacity.fit(inventory, admitted, expressions, policy.class_selectors, leaf)
    if found is None:
        return None  # a selector that does not compile: the apiserver refuses the object
    count, node = found.count, found.node
    if count >= need:
        return None
    if not count and found.blocked:
        return blocked_phrase(found.blocked)
    if count:
        if node:
            return (T("at most {count} matching device can be used from one node ({node}), and it asks for {need}",
                      count=count, node=node, need=need) if count == 1 else
                    T("at most {count} matching devices can be used from one node ({node}), and it asks for {need}",
                      count=count, node=node, need=need))
        return (T("at most {count} matching device can be used from one node, and it asks for {need}",
                  count=count, need=need) if count == 1 else
                T("at most {count} matching devices can be used from one node, and it asks for {need}",
                  count=count, need=need))
    near = found.closest
    if near is None:
        return T("no ResourceSlice publishes a device on the nodes the pod may use")
    device, v = near
    described = device.describe()
    label = f"{device.label}{f' ({described})' if described else ''}"
    n_class = len(info.selectors)
    which = T("the DeviceClass's selector {number} ({expression})", number=v.passed + 1,
              expression=info.selectors[v.passed]) if v.passed < n_class else \
        T("the request's selector {number} ({expression})", number=v.passed - n_class + 1,
          expression=leaf.selectors[v.passed - n_class])
    if v.reason == "false":
        return T("no published device matches; the closest one tried, {device}, passes {passed} of {total} "
                 "selectors: {selector} is false for it", device=label, passed=v.passed, total=len(expressions),
                 selector=which)
    return T("no published device matches; the closest one tried, {device}, passes {passed} of {total} "
             "selectors: {selector} fails on it: {error}", device=label, passed=v.passed, total=len(expressions),
             selector=which, error=v.reason)


def taint_text(taint: Taint) -> str:
    """A taint as kubectl describes one: key=value:effect, or key:effect."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def blocked_phrase(blocked: Sequence[tuple[Device, str]]) -> Arg:
    """Why the devices the selectors match cannot be had: their taints, or their capacity."""
    device, why = blocked[0]
    if why == "taint":
        if len(blocked) == 1:
            return T("the one matching device, {device}, carries a taint the request does not tolerate ({taint})",
                     device=device.label, taint=taint_text(device.taints[0]))
        return T("the {count} matching devices carry taints the request does not tolerate (device {device}: "
                 "{taint})", count=len(blocked), device=device.label, taint=taint_text(device.taints[0]))
    if len(blocked) == 1:
        return T("the one matching device, {device}, has less capacity than the request's capacity.requests",
                 device=device.label)
    return T("the {count} matching devices have less capacity than the request's capacity.requests "
             "(device {device})", count=len(blocked), device=device.label)


def _request_problem(request: DeviceRequest, inventory: Inventory, admitted: Admitted,
                     context: Context, policy: Policy) -> tuple[DeviceRequest, Arg] | None:
    """The first alternative and why, when no alternative of the request fits (firstAvailable: any one)."""
    first: tuple[DeviceRequest, Arg] | None = None
    for leaf in request.leaves():
        problem = _leaf_problem(leaf, inventory, admitted, context, policy)
        if problem is None:
            return None
        if first is None:
            first = (leaf, problem)
    return first


def _dra(facts: GpuFacts, inventory: Inventory, cohort: Cohort, context: Context, policy: Policy) -> list[Finding]:
    if cohort.autoscaled or capacity.cohort_pools(inventory, cohort):
        return []  # a node the autoscaler adds publishes devices no slice shows yet
    admitted = capacity.pod_nodes(inventory, cohort, facts.view.spec)
    out = []
    for claim in facts.gpu_claims:
        out.extend(_claim(claim, inventory, admitted, cohort, context, policy))
    if facts.dra_resources:
        out.extend(_extended(facts, inventory, admitted, cohort, context, policy))
    return out


def extended_leaf(resource: str, amount: float, info: DeviceClassInfo, path: str) -> DeviceRequest:
    """The request the scheduler makes for an extended resource a DeviceClass serves (KEP-5004): that many
    devices of the class."""
    return DeviceRequest(name=resource, path=path, device_class=info.name, allocation_mode="ExactCount",
                         count=int(amount), admin_access=False, has_shape=True)


def _extended(facts: GpuFacts, inventory: Inventory, admitted: Admitted, cohort: Cohort, context: Context,
              policy: Policy) -> list[Finding]:
    wanted = effective(facts.dra_resources)
    served = {u.resource: u for u in facts.dra_resources}
    out = []
    for resource in sorted(wanted):
        use = served[resource]
        if use.device_class is None:
            continue
        leaf = extended_leaf(resource, wanted[resource], use.device_class, use.path)
        problem = _leaf_problem(leaf, inventory, admitted, context, policy)
        if problem is None:
            continue
        out.append(Finding(
            path=use.path,
            what=T('the pod requests {amount} {resource} ({path}), which DeviceClass "{device_class}" serves '
                   'through DRA (its extendedResourceName) on cohort "{cohort}"', amount=_amount(wanted[resource]),
                   resource=resource, path=use.path, device_class=use.device_class.name, cohort=cohort.name),
            why=T("{problem}, so the pod never schedules, even on an empty node", problem=problem),
            fix=T("ask for devices the cohort's ResourceSlices publish (loosen the selectors or lower the count), "
                  "or have the cluster owner add such devices")))
    return out


def _claim(claim: ClaimUse, inventory: Inventory, admitted: Admitted, cohort: Cohort,
           context: Context, policy: Policy) -> list[Finding]:
    if claim.spec is None:
        return []
    gpu = {leaf.path for leaf in claim.gpu_requests}
    template = claim.ref_kind == "ResourceClaimTemplate"
    out = []
    for request in claim.spec.requests:
        if not any(leaf.path in gpu for leaf in request.leaves()):
            continue
        found = _request_problem(request, inventory, admitted, context, policy)
        if found is None:
            continue
        leaf, problem = found
        many = len(request.alternatives)
        amount = T("all matching devices") if leaf.allocation_mode == "All" else \
            T("{count} device", count=leaf.count) if leaf.count == 1 else T("{count} devices", count=leaf.count)
        alternatives: Arg = T(' in its first firstAvailable alternative "{name}" (none of the {count} fits)',
                              name=leaf.name, count=many) if many else ""
        args: dict[str, Arg] = {
            "claim": claim.name, "path": claim.path, "ref": str(claim.ref_name), "request": request.name,
            "request_path": request.path, "amount": amount, "device_class": str(leaf.device_class),
            "alternatives": alternatives, "cohort": cohort.name}
        out.append(Finding(
            path=claim.path,
            what=T('claim "{claim}" ({path}) uses template "{ref}", whose request "{request}" ({request_path}) '
                   'asks for {amount} of DeviceClass "{device_class}"{alternatives} on cohort "{cohort}"', **args)
            if template else
            T('claim "{claim}" ({path}) uses ResourceClaim "{ref}", whose request "{request}" ({request_path}) '
              'asks for {amount} of DeviceClass "{device_class}"{alternatives} on cohort "{cohort}"', **args),
            why=T("{problem}, so the pod never schedules, even on an empty node", problem=problem),
            fix=T("ask for devices the cohort's ResourceSlices publish (loosen the selectors or lower the count), "
                  "or have the cluster owner add such devices")))
    return out


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    inventory = context.inventory
    cohort = facts.choice.cohort
    if inventory is None or cohort is None:
        return []
    if cohort.mechanism == DEVICE_PLUGIN and inventory.nodes is not None:
        return _device_plugin(facts, inventory, cohort)
    if cohort.mechanism == DRA and inventory.devices is not None and (facts.gpu_claims or facts.dra_resources):
        return _dra(facts, inventory, cohort, context, policy)
    return []


DEFINITION = Definition(
    "unsatisfiable-request",
    "a GPU request that no node or device of the cohort can ever satisfy (with Node/ResourceSlice lookups)",
    "GPU allocation",
    __doc__,
    default=Action.WARN,
    reason=N_(
        "A pod can pass every other rule and still never schedule, because no node or device of its cohort "
        "could ever hold the request, even empty; the developer would learn it from a Pending pod long after "
        "admission. Capacity changes (a node pool may scale up), so the rule warns."),
    checks=(
        Check(POD_SPECS, check),
    ))
