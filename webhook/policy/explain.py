"""Why a GPU pod is (or would be) Pending, in GPU terms: its cohort and mechanism, what it asks for, and for
each node of its cohort why that node cannot take it: node selection, taints the pod does not tolerate,
resources the node does not offer or has too few of, free capacity (allocatable minus what bound pods
request, naming them), and for DRA the devices its claims' classes and selectors match on the node, those
claims already hold, taints and capacity; then the scheduler's own words and one fix.

Pure: the pod's facts and context, the cluster's capacity (`Inventory`) and what holds it (`Occupancy`)
come in; an `Explanation` of `Text` values goes out, rendered in a language by `render_text` / `explanation_dict`.

Verdicts: `bound` (a node was chosen), `schedulable` (a node of the cohort can take it now: what keeps it
Pending is outside GPU terms), `waits` (only capacity that others hold, or an autoscaler's new node),
`never` (no node of the cohort can ever take it), `not-gpu` (it asks for no GPU)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.claims import DeviceRequest
from webhook.objects.inventory import Device, Inventory, NodeInfo
from webhook.objects.occupancy import Occupancy, allocated_devices, pod_requests
from webhook.policy import capacity
from webhook.policy.checks.unsatisfiable_request import extended_leaf, taint_text
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Arg, Joined, T, render
from webhook.policy.mutations import default_runtime_class

VERDICTS = ("bound", "schedulable", "waits", "never", "not-gpu")
NEVER, NOW = "never", "now"
_SHOWN_HOLDERS = 5


@dataclass(slots=True, kw_only=True)
class Reason:
    kind: str  # selection | taint | condition | missing | too-big | held | devices | devices-held
    lasting: bool  # True: the node can never take the pod; False: not now (capacity held)
    text: Arg
    resource: str = ""
    amount: float = 0.0  # the most the node has (too-big), or what is free (held)


@dataclass(slots=True, kw_only=True)
class NodeReport:
    name: str
    reasons: list[Reason] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.reasons

    @property
    def lasting(self) -> bool:
        return any(r.lasting for r in self.reasons)


@dataclass(slots=True, kw_only=True)
class ClaimReport:
    claim: str  # the pod's entry name
    request: str
    device_class: str
    need: int
    matched: list[str]  # devices the class and selectors match on nodes the pod may use
    held: dict[str, list[str]]  # of those, held by claims: device -> claims
    blocked: list[tuple[str, str]]  # of those, what the request cannot get: (device, "taint: ..." | "capacity")
    allocated: list[str]  # devices the claim's own allocation holds
    alternatives: list[str]  # firstAvailable alternatives, in order


@dataclass(slots=True, kw_only=True)
class Explanation:
    pod: str  # namespace/name
    verdict: str
    node: str | None = None
    cohort: str | None = None
    mechanism: str | None = None
    asks: list[Arg] = field(default_factory=list)
    nodes: list[NodeReport] = field(default_factory=list)
    others: int = 0  # nodes outside the cohort
    claims: list[ClaimReport] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # what gpu-admission's rules say of the pod
    scheduler: list[str] = field(default_factory=list)  # the PodScheduled condition and events, quoted
    runtime: Arg | None = None
    why: Arg = ""
    fix: Arg = ""


def _amount(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _holders(occupancy: Occupancy, node: str, resource: str) -> Arg:
    held = occupancy.holders(node, resource)
    parts: list[Arg] = [f"{h.pod} ({_amount(h.amount)})" for h in held[:_SHOWN_HOLDERS]]
    if len(held) > _SHOWN_HOLDERS:
        parts.append(T("{count} more pods", count=len(held) - _SHOWN_HOLDERS))
    return Joined(tuple(parts))


def _selection(node: NodeInfo, spec: Mapping[str, Any]) -> Reason | None:
    for key, value in as_dict(spec.get("nodeSelector")).items():
        if type(key) is str and node.labels.get(key) != value:
            have = node.labels.get(key)
            return Reason(kind="selection", lasting=True, text=T(
                "nodeSelector {key}={value} does not match (the node has {have})", key=key, value=str(value),
                have=f"{key}={have}" if have is not None else T("no {key} label", key=key)))
    required = as_dict(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    if required and "nodeSelectorTerms" in required and not any(
            capacity._term_admits(as_dict(t), node) for t in as_list(required.get("nodeSelectorTerms"))):
        return Reason(kind="selection", lasting=True,
                      text=T("no term of the pod's required node affinity matches the node"))
    return None


def _taints(node: NodeInfo, spec: Mapping[str, Any]) -> Reason | None:
    allowed = [as_dict(t) for t in as_list(spec.get("tolerations"))]
    for taint in node.taints:
        if not any(capacity._tolerates(t, taint) for t in allowed):
            return Reason(kind="taint", lasting=True, resource=taint_text(taint),
                          text=T("taint {taint} is not tolerated", taint=taint_text(taint)))
    for taint in node.passing:
        if not any(capacity._tolerates(t, taint) for t in allowed):
            return Reason(kind="condition", lasting=False, resource=taint_text(taint),
                          text=T("taint {taint} is not tolerated (a passing condition of the node: not ready, "
                                 "unreachable, under pressure or cordoned)", taint=taint_text(taint)))
    return None


def _resources(node: NodeInfo, wanted: Mapping[str, float], occupancy: Occupancy) -> list[Reason]:
    out = []
    for resource in sorted(wanted):
        amount = wanted[resource]
        allocatable = node.allocatable.get(resource, 0.0)
        if allocatable <= 0:
            out.append(Reason(kind="missing", lasting=True, resource=resource,
                              text=T("offers no {resource}", resource=resource)))
        elif amount > allocatable:
            out.append(Reason(kind="too-big", lasting=True, resource=resource, amount=allocatable, text=T(
                "{resource}: the pod asks for {amount}, the node has {allocatable} allocatable", resource=resource,
                amount=_amount(amount), allocatable=_amount(allocatable))))
        else:
            free = allocatable - occupancy.used(node.name, resource)
            if amount > free:
                out.append(Reason(kind="held", lasting=False, resource=resource, amount=max(free, 0.0), text=T(
                    "{resource}: {free} free of {allocatable}, the pod asks for {amount}; held by {pods}",
                    resource=resource, free=_amount(max(free, 0.0)), allocatable=_amount(allocatable),
                    amount=_amount(amount), pods=_holders(occupancy, node.name, resource))))
    return out


@dataclass(slots=True)
class _Leaf:
    """One device request (or firstAvailable alternative) and the devices it may get, by node."""

    claim: str
    leaf: DeviceRequest
    need: int
    matched: list[Device]
    blocked: dict[tuple[str, str, str], str]
    held: dict[tuple[str, str, str], list[str]]
    by_node: dict[str, list[Device]] = field(default_factory=dict)  # matched devices by node ("": any node)
    labels: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for d in self.matched:
            self.by_node.setdefault(d.node, []).append(d)
            self.labels[d.key] = d.label


def _leaf(claim: str, leaf: DeviceRequest, inventory: Inventory, context: Context, policy: Policy,
          occupancy: Occupancy, own: set[tuple[str, str, str]]) -> _Leaf | None:
    info = context.device_class(leaf.device_class)
    if info is None or info.selectors is None or inventory.devices is None:
        return None
    verdict = capacity.verdicts(inventory, info.selectors + leaf.selectors, policy.class_selectors)
    if verdict is None:
        return None
    matched = [d for d, v in zip(inventory.devices, verdict) if v.matched]
    blocked = {}
    for d in matched:
        why = capacity.blocker(d, leaf)
        if why == "taint":
            blocked[d.key] = "taint " + ", ".join(taint_text(t) for t in d.taints)
        elif why:
            blocked[d.key] = why
    held = {d.key: occupancy.held[d.key] for d in matched
            if d.key in occupancy.held and d.key not in own and not d.view.get("allowMultipleAllocations")}
    need = 1 if leaf.allocation_mode == "All" else leaf.count
    return _Leaf(claim, leaf, need, matched, blocked, held)


def _on_node(found: _Leaf, node: str) -> tuple[int, int, int]:
    """(matching devices usable from the node, of them not held, held) for the request."""
    near = found.by_node.get(node, []) + found.by_node.get("", [])
    usable = [d for d in near if d.key not in found.blocked]
    free = [d for d in usable if d.key not in found.held]
    return len(usable), len(free), len(usable) - len(free)


def _device_reason(alternatives: list[_Leaf], node: str) -> Reason | None:
    """Why no alternative of a request fits on the node; None when one does."""
    first: Reason | None = None
    for found in alternatives:
        usable, free, _ = _on_node(found, node)
        if free >= found.need:
            return None
        if first is not None:
            continue
        if usable >= found.need:
            claims = sorted({c for d in found.by_node.get(node, []) + found.by_node.get("", [])
                             if d.key in found.held for c in found.held[d.key]})
            first = Reason(kind="devices-held", lasting=False, amount=free, text=T(
                'claim "{claim}": {free} of the {usable} matching devices are free, it asks for {need}; held by '
                "claims {claims}", claim=found.claim, free=free, usable=usable, need=found.need,
                claims=Joined(tuple(claims[:_SHOWN_HOLDERS]))))
        else:
            first = Reason(kind="devices", lasting=True, amount=usable, text=T(
                'claim "{claim}": {usable} matching devices on the node that it can get, it asks for {need}',
                claim=found.claim, usable=usable, need=found.need))
    return first


def _label(device: Device) -> str:
    return device.label


def explain(pod: Mapping[str, Any], facts: GpuFacts, context: Context, policy: Policy, occupancy: Occupancy,
            *, findings: Sequence[str] = (), scheduler: Sequence[str] = ()) -> Explanation:
    meta = as_dict(pod.get("metadata"))
    spec = facts.view.spec
    name = f"{as_str(meta.get('namespace')) or facts.view.namespace}/{as_str(meta.get('name')) or facts.view.name}"
    cohort = facts.choice.cohort
    out = Explanation(pod=name, verdict="not-gpu", cohort=cohort.name if cohort else None,
                      mechanism=cohort.mechanism if cohort else None, findings=list(findings),
                      scheduler=list(scheduler), node=as_str(spec.get("nodeName")))
    inventory = context.inventory
    wanted = {r: a for r, a in pod_requests(spec).items()
              if r not in {u.resource for u in facts.dra_resources}}
    out.asks = [T("{amount} {resource}", amount=_amount(a), resource=r) for r, a in sorted(wanted.items())]
    leaves: list[list[_Leaf]] = []
    own_claims = _own_claims(pod, occupancy, facts.view.namespace)
    for claim in facts.gpu_claims:
        if claim.spec is None:
            continue
        own = {k for c in own_claims.get(claim.name, ()) for k in allocated_devices(c)}
        for request in claim.spec.requests:
            if inventory is None:
                continue
            found = [f for leaf in request.leaves() if (f := _leaf(claim.name, leaf, inventory, context, policy,
                                                                   occupancy, own)) is not None]
            if found:
                leaves.append(found)
                out.claims.append(ClaimReport(
                    claim=claim.name, request=request.name, device_class=str(found[0].leaf.device_class),
                    need=found[0].need, matched=[_label(d) for d in found[0].matched],
                    held={_device_name(found[0], k): v for k, v in found[0].held.items()},
                    blocked=[(_device_name(found[0], k), v) for k, v in found[0].blocked.items()],
                    allocated=[f"{p}/{d}" for _, p, d in sorted(own)],
                    alternatives=[f.leaf.name for f in found] if len(found) > 1 else []))
            out.asks.append(T('claim "{claim}": {count} of DeviceClass "{device_class}" (request "{request}")',
                              claim=claim.name, count=found[0].need if found else request.count,
                              device_class=str(request.leaves()[0].device_class), request=request.name))
    for use in facts.dra_resources:
        if inventory is not None and use.device_class is not None:
            leaf = extended_leaf(use.resource, use.amount, use.device_class, use.path)
            found_one = _leaf(use.resource, leaf, inventory, context, policy, occupancy, set())
            if found_one is not None:
                leaves.append([found_one])
        out.asks.append(T("{amount} {resource} through DRA (DeviceClass {device_class})", amount=_amount(use.amount),
                          resource=use.resource, device_class=use.device_class.name if use.device_class else "?"))
    if cohort is not None and cohort.mechanism == DEVICE_PLUGIN and not facts.view.spec.get("runtimeClassName") \
            and default_runtime_class.missing(cohort, context) and facts.device_plugin:
        out.runtime = default_runtime_class.absent_finding(cohort).what
    if out.node:
        out.verdict = "bound"
        out.why = T('the pod is bound to node "{node}"', node=out.node)
        out.fix = T("nothing to fix in scheduling: the node's kubelet runs it")
        return out
    if not facts.is_gpu:
        out.why = T("the pod asks for no GPU, so gpu-admission has nothing to say of its placement")
        out.fix = T("read the scheduler's message")
        return out
    nodes = () if inventory is None or inventory.nodes is None else (
        capacity.cohort_nodes(inventory, cohort) if cohort is not None else inventory.nodes)
    out.others = (len(inventory.nodes) - len(nodes)) if inventory is not None and inventory.nodes is not None else 0
    for node in nodes:
        report = NodeReport(name=node.name)
        for found_reason in (_selection(node, spec), _taints(node, spec)):
            if found_reason is not None:
                report.reasons.append(found_reason)
        report.reasons.extend(_resources(node, wanted, occupancy) if cohort is None or
                              cohort.mechanism == DEVICE_PLUGIN or wanted else [])
        for alternatives in leaves:
            device_reason = _device_reason(alternatives, node.name)
            if device_reason is not None:
                report.reasons.append(device_reason)
        out.nodes.append(report)
    _verdict(out, cohort, facts, context, inventory)
    return out


def _device_name(found: _Leaf, key: tuple[str, str, str]) -> str:
    return found.labels.get(key) or "/".join(key[1:])


def _own_claims(pod: Mapping[str, Any], occupancy: Occupancy,
                namespace: str) -> dict[str, list[Mapping[str, Any]]]:
    """The pod's claims as they exist: by name, or generated from a template (status.resourceClaimStatuses)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    spec = as_dict(pod.get("spec"))
    for entry in as_list(spec.get("resourceClaims")):
        entry = as_dict(entry)
        name, ref = as_str(entry.get("name")), as_str(entry.get("resourceClaimName"))
        if name and ref and (namespace, ref) in occupancy.claims:
            out.setdefault(name, []).append(occupancy.claims[(namespace, ref)])
    for entry in as_list(as_dict(pod.get("status")).get("resourceClaimStatuses")):
        entry = as_dict(entry)
        name, ref = as_str(entry.get("name")), as_str(entry.get("resourceClaimName"))
        if name and ref and (namespace, ref) in occupancy.claims:
            out.setdefault(name, []).append(occupancy.claims[(namespace, ref)])
    return out


def _verdict(out: Explanation, cohort: Cohort | None, facts: GpuFacts, context: Context,
             inventory: Inventory | None) -> None:
    fitting = [n for n in out.nodes if n.fits]
    autoscaled = cohort is not None and (cohort.autoscaled or bool(capacity.cohort_pools(inventory, cohort)))
    if cohort is None:
        out.verdict = "never" if not fitting and out.nodes else "schedulable"
        out.why = T("the pod is bound for no cohort (its node selection and mechanism choose none)")
        out.fix = T("select one cohort's nodes (its node labels), or ask for GPUs through one mechanism")
    elif inventory is None or inventory.nodes is None:
        out.verdict = "schedulable"
        out.why = T("the cluster's nodes are not known, so nothing can be said of capacity")
        out.fix = T("explain against a cluster, or a snapshot with its nodes")
    elif fitting:
        out.verdict = "schedulable"
        out.why = T('node "{node}" of cohort "{cohort}" can take the pod now', node=fitting[0].name,
                    cohort=cohort.name) if len(fitting) == 1 else T(
            '{count} nodes of cohort "{cohort}" can take the pod now (such as "{node}")', count=len(fitting),
            cohort=cohort.name, node=fitting[0].name)
        out.fix = T("nothing in GPU terms keeps it Pending: read the scheduler's message (CPU, memory, pod affinity, "
                    "topology spread) or wait for the scheduler's next attempt")
    elif not out.nodes:
        out.verdict = "waits" if autoscaled else "never"
        out.why = T('cohort "{cohort}" has no node yet; its autoscaler adds one when pods ask', cohort=cohort.name) \
            if autoscaled else T('the cluster has no node of cohort "{cohort}" (none carries its node labels)',
                                 cohort=cohort.name)
        out.fix = T("wait for the autoscaler's node (its events on the pod say why it does not add one)") \
            if autoscaled else T("have the cluster owner add nodes of the cohort, or set the cohort's autoscaling in "
                                 "the policy if an autoscaler adds them")
    elif all(n.lasting for n in out.nodes) and not autoscaled:
        out.verdict = "never"
        out.why = T('none of the {count} nodes of cohort "{cohort}" can ever take the pod', count=len(out.nodes),
                    cohort=cohort.name)
        out.fix = _never_fix(out, cohort)
    else:
        out.verdict = "waits"
        waiting = [n for n in out.nodes if not n.lasting] or out.nodes
        count = len([n for n in out.nodes if not n.lasting])
        out.why = (T('node "{node}" of cohort "{cohort}" could take the pod once capacity that others hold is free',
                     node=waiting[0].name, cohort=cohort.name) if count == 1 else
                   T('{count} nodes of cohort "{cohort}" could take the pod once capacity that others hold is free',
                     count=count, cohort=cohort.name)) if count else T(
            'no node of cohort "{cohort}" can take the pod; its autoscaler may add one that can', cohort=cohort.name)
        out.fix = _wait_fix(waiting[0])
    if out.runtime is not None and cohort is not None:
        out.fix = default_runtime_class.absent_finding(cohort).fix


def _never_fix(out: Explanation, cohort: Cohort) -> Arg:
    kinds: dict[str, Reason] = {}
    for n in out.nodes:
        for r in n.reasons:
            if r.lasting:
                kinds.setdefault(r.kind, r)
    if "missing" in kinds and all(any(r.kind == "missing" for r in n.reasons) for n in out.nodes):
        resource = kinds["missing"].resource
        return T('ask for what cohort "{cohort}" offers ({offered}) instead of {resource}, or target a cohort whose '
                 "nodes offer {resource}", cohort=cohort.name,
                 offered=Joined(tuple(sorted(cohort.offered_resources()))) if cohort.mechanism == DEVICE_PLUGIN
                 else T("DRA claims of driver {driver}", driver=str(cohort.driver)), resource=resource)
    if "too-big" in kinds:
        most = max(r.amount for n in out.nodes for r in n.reasons if r.kind == "too-big")
        resource = kinds["too-big"].resource
        return T("request at most {amount} {resource} per pod (split the work across pods), or add larger nodes",
                 amount=_amount(most), resource=resource)
    if "taint" in kinds:
        return T("tolerate {taint} (default-placement adds the cohort's tolerations when the pod selects no cohort "
                 "itself)", taint=kinds["taint"].resource)
    if "selection" in kinds:
        return T('change the pod\'s node selection: it matches no node of cohort "{cohort}"', cohort=cohort.name)
    return T("ask for devices the cohort's ResourceSlices publish (loosen the selectors or lower the count), or "
             "have the cluster owner add such devices")


def _wait_fix(node: NodeReport) -> Arg:
    for r in node.reasons:
        if r.kind == "held":
            if r.amount <= 0:
                return T('wait for the pods that hold {resource} on node "{node}" to finish', resource=r.resource,
                         node=node.name)
            return T('wait for the pods that hold {resource} on node "{node}" to finish, or ask for at most {free}',
                     resource=r.resource, node=node.name, free=_amount(r.amount))
        if r.kind == "devices-held":
            if r.amount <= 0:
                return T('wait for the claims that hold the matching devices on node "{node}" to be released',
                         node=node.name)
            return T('wait for the claims that hold the matching devices on node "{node}" to be released, or ask '
                     "for at most {free} devices", node=node.name, free=int(r.amount))
        if r.kind == "condition":
            return T('wait for node "{node}" to be ready again ({taint})', node=node.name, taint=r.resource)
    return T("wait for the autoscaler's node (its events on the pod say why it does not add one)")


# -- rendering -------------------------------------------------------------------------------------------

_NODES_SHOWN = 20


def _grouped(nodes: Sequence[NodeReport], language: str) -> list[tuple[list[str], str]]:
    """Nodes with the same reasons, together: a large cohort reads as a few lines."""
    groups: dict[str, list[str]] = {}
    for n in nodes:
        text = render(T("fits"), language) if n.fits else "; ".join(render(r.text, language) for r in n.reasons)
        groups.setdefault(text, []).append(n.name)
    return [(names, text) for text, names in groups.items()]


def render_text(e: Explanation, language: str = "en") -> str:
    def r(value: Arg) -> str:
        return render(value, language)

    lines = [f'pod "{e.pod}": ' + r(T(_VERDICT_WORDS[e.verdict]))]
    if e.cohort:
        lines.append("  " + r(T('cohort "{cohort}" ({mechanism})', cohort=e.cohort, mechanism=str(e.mechanism))))
    else:
        lines.append("  " + r(T("no cohort")))
    if e.asks:
        lines.append("  " + r(T("asks for: {asks}", asks=Joined(tuple(e.asks)))))
    if e.node:
        lines.append("  " + r(T('bound to node "{node}"', node=e.node)))
    groups = _grouped(e.nodes, language)
    if groups:
        lines.append("  " + r(T("nodes of the cohort:")))
        for names, text in groups[:_NODES_SHOWN]:
            shown = ", ".join(names[:3]) + (r(T(" and {count} more", count=len(names) - 3)) if len(names) > 3 else "")
            lines.append(f"    {shown}: {text}")
        if len(groups) > _NODES_SHOWN:
            lines.append("    " + r(T("... {count} more groups of nodes (-o json lists every node)",
                                      count=len(groups) - _NODES_SHOWN)))
    if e.others:
        lines.append("  " + r(T("1 other node is not of the cohort (it lacks its node labels)") if e.others == 1
                              else T("{count} other nodes are not of the cohort (they lack its node labels)",
                                     count=e.others)))
    for c in e.claims:
        lines.append("  " + r(T('claim "{claim}", request "{request}", DeviceClass "{device_class}": {matched} '
                                "matching devices, {held} held by other claims, {blocked} it cannot get; it asks "
                                "for {need}", claim=c.claim, request=c.request, device_class=c.device_class,
                                matched=len(c.matched), held=len(c.held), blocked=len(c.blocked), need=c.need)))
        if c.alternatives:
            lines.append("    " + r(T("firstAvailable alternatives, in order: {names}",
                                      names=Joined(tuple(c.alternatives)))))
        if c.matched:
            lines.append("    " + r(T("matching: {devices}", devices=Joined(tuple(c.matched[:8]) + (
                (r(T("{count} more", count=len(c.matched) - 8)),) if len(c.matched) > 8 else ())))))
        for device, claims in list(c.held.items())[:8]:
            lines.append("    " + r(T("{device} is held by {claims}", device=device, claims=Joined(tuple(claims)))))
        for device, why in c.blocked[:8]:
            lines.append(f"    {device}: {why}")
        if c.allocated:
            lines.append("    " + r(T("allocated: {devices}", devices=Joined(tuple(c.allocated)))))
    if e.runtime is not None and not any("[default-runtime-class]" in f for f in e.findings):
        lines.append("  " + r(e.runtime))
    for f in e.findings:
        lines.append("  gpu-admission: " + f)
    for s in e.scheduler:
        lines.append("  " + r(T("scheduler: {message}", message=s)))
    lines.append("  " + r(T("why: {why}", why=e.why)))
    lines.append("  " + r(T("fix: {fix}", fix=e.fix)))
    return "\n".join(lines)


_VERDICT_WORDS = {
    "bound": "bound to a node",
    "schedulable": "a node can take it now",
    "waits": "waits for capacity",
    "never": "never schedules as it is",
    "not-gpu": "not a GPU pod",
}
# the verdict words, for `make messages` to extract
_ = (T("bound to a node"), T("a node can take it now"), T("waits for capacity"), T("never schedules as it is"),
     T("not a GPU pod"))


def explanation_dict(e: Explanation, language: str = "en") -> dict[str, Any]:
    def r(value: Arg) -> str:
        return render(value, language)

    return {
        "pod": e.pod, "verdict": e.verdict, "node": e.node, "cohort": e.cohort, "mechanism": e.mechanism,
        "asks": [r(a) for a in e.asks],
        "nodes": [{"name": n.name, "fits": n.fits,
                   "reasons": [{"kind": x.kind, "lasting": x.lasting, "message": r(x.text)} for x in n.reasons]}
                  for n in e.nodes],
        "otherNodes": e.others,
        "claims": [{"claim": c.claim, "request": c.request, "deviceClass": c.device_class, "count": c.need,
                    "matched": c.matched, "held": c.held, "blocked": [{"device": d, "why": w} for d, w in c.blocked],
                    "allocated": c.allocated, "firstAvailable": c.alternatives} for c in e.claims],
        "runtimeClass": r(e.runtime) if e.runtime is not None else None,
        "findings": e.findings, "scheduler": e.scheduler, "why": r(e.why), "fix": r(e.fix),
    }


__all__ = ["VERDICTS", "Explanation", "explain", "explanation_dict", "render_text"]
