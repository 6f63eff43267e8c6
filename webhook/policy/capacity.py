"""Questions to the cluster's capacity snapshot (`webhook.objects.inventory.Inventory`): which nodes of a
cohort a pod can ever run on, the largest allocatable of a resource among them, and the devices a set of
CEL selectors matches. Each answer is kept in the snapshot, so a warm snapshot answers a request from
dicts; a new snapshot (the caches changed) starts empty.

Node selection honoured, as the scheduler's filters do it: the cohort's node labels (a node is the
cohort's when it carries every one), the pod's `nodeSelector`, its required node affinity (terms ORed,
`matchExpressions` with In, NotIn, Exists, DoesNotExist, Gt, Lt, and `matchFields` on `metadata.name`)
and its tolerations against the node's NoSchedule and NoExecute taints. Not honoured (so the rule may
stay silent where a pod still cannot schedule, never the reverse): `spec.unschedulable` (cordoning is
temporary), pod (anti-)affinity, topology spread, and resources other than the extended ones."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.config.model import Cohort
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.claims import DeviceRequest
from webhook.objects.inventory import Admitted, Device, Inventory, NodeInfo, NodePool, Taint
from webhook.objects.selectors import ClassSelectors, evaluate, milli
from webhook.policy.cohorts import AFFINITY_PATH, _allows

_REQUIRED = AFFINITY_PATH.rsplit(".", 1)[1]  # requiredDuringSchedulingIgnoredDuringExecution
_LIMIT = 512  # kept answers per snapshot: node selections and selector sets come from requests


def _keep(memo: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(memo) >= _LIMIT:
        memo.clear()
    memo[key] = value
    return value


def cohort_nodes(inventory: Inventory, cohort: Cohort) -> tuple[NodeInfo, ...]:
    """The nodes carrying every node label of the cohort."""
    key = (cohort.name, tuple(cohort.node_labels.items()))
    found = inventory.cohort_nodes.get(key)
    if found is None:
        labels = cohort.node_labels.items()
        found = _keep(inventory.cohort_nodes, key, tuple(
            n for n in inventory.nodes or () if all(n.labels.get(k) == v for k, v in labels)))
    return found


def pod_nodes(inventory: Inventory, cohort: Cohort, spec: Mapping[str, Any]) -> Admitted:
    """The cohort's nodes that the pod's node selection and tolerations admit; every node when Node
    lookups are off."""
    if inventory.nodes is None:
        if inventory.everywhere is None:
            inventory.everywhere = Admitted(None, None)
        return inventory.everywhere
    selector = spec.get("nodeSelector")
    affinity = spec.get("affinity")
    required = as_dict(as_dict(as_dict(affinity).get("nodeAffinity")).get(_REQUIRED)) if affinity else None
    tolerations = spec.get("tolerations")
    key = (cohort.name, repr(selector), repr(required) if required else None, repr(tolerations))
    found = inventory.eligible.get(key)
    if found is None:
        terms = as_list(required.get("nodeSelectorTerms")) if required is not None and \
            "nodeSelectorTerms" in required else None
        wanted = {k: v for k, v in as_dict(selector).items() if type(k) is str}
        allowed = [as_dict(t) for t in as_list(tolerations)]
        nodes = tuple(
            n for n in cohort_nodes(inventory, cohort)
            if all(n.labels.get(k) == v for k, v in wanted.items())
            and (terms is None or any(_term_admits(as_dict(t), n) for t in terms))
            and all(any(_tolerates(t, taint) for t in allowed) for taint in n.taints))
        found = _keep(inventory.eligible, key, Admitted(nodes, frozenset(n.name for n in nodes)))
    return found


def _term_admits(term: Mapping[str, Any], node: NodeInfo) -> bool:
    exprs, fields = as_list(term.get("matchExpressions")), as_list(term.get("matchFields"))
    if not exprs and not fields:
        return False  # the scheduler: a term with neither matches no node
    for e in exprs:
        e = as_dict(e)
        key = as_str(e.get("key"))
        if key is None or _allows(as_str(e.get("operator")) or "", tuple(as_list(e.get("values"))),
                                  node.labels.get(key)) is not True:
            return False
    for e in fields:
        e = as_dict(e)
        if as_str(e.get("key")) != "metadata.name" or _allows(
                as_str(e.get("operator")) or "", tuple(as_list(e.get("values"))), node.name) is not True:
            return False
    return True


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """v1 Toleration.ToleratesTaint."""
    effect, key = as_str(toleration.get("effect")), as_str(toleration.get("key"))
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    op = as_str(toleration.get("operator")) or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (as_str(toleration.get("value")) or "") == taint.value


def largest(admitted: Admitted, resource: str) -> tuple[float, NodeInfo | None]:
    """The largest allocatable of `resource` among the admitted nodes and a node that has it (None: no node
    has any)."""
    found = admitted.largest.get(resource)
    if found is None:
        best: tuple[float, NodeInfo | None] = (0.0, None)
        for n in admitted.nodes or ():
            amount = n.allocatable.get(resource, 0.0)
            if amount > best[0]:
                best = (amount, n)
        found = _keep(admitted.largest, resource, best)
    return found


@dataclass(frozen=True, slots=True)
class Verdict:
    """One device under a list of selectors: how many of them, in order, it passes; why the next rejects it."""

    passed: int
    matched: bool
    reason: str  # "" when matched; "false" when a selector is false; the runtime's error otherwise


def verdicts(inventory: Inventory, expressions: tuple[str, ...],
             selectors: ClassSelectors) -> tuple[Verdict, ...] | None:
    """The verdict of every device of the snapshot, in order; None when a selector does not compile."""
    found = inventory.matches.get(expressions)
    if found is None and expressions not in inventory.matches:
        programs = [selectors.program(text) for text in expressions]
        if any(p is None for p in programs):
            found = None
        else:
            out = []
            by_view: dict[int, Verdict] = {}  # devices of one model share their view (inventory.read_slice)
            for device in inventory.devices or ():
                verdict = by_view.get(id(device.view))
                if verdict is None:
                    passed, reason = 0, ""
                    for program in programs:
                        result = evaluate(program, device.view)
                        if result is True:
                            passed += 1
                            continue
                        reason = "false" if result is False else str(result)
                        break
                    verdict = by_view[id(device.view)] = Verdict(passed, passed == len(programs), reason)
                out.append(verdict)
            found = tuple(out)
        _keep(inventory.matches, expressions, found)
    return found


def one_node_has_all(admitted: Admitted, wanted: Mapping[str, float]) -> bool:
    """Whether one admitted node has every resource in the amount wanted, kept per selection."""
    key = ("all", tuple(sorted(wanted.items())))
    found = admitted.fits.get(key)
    if found is None:
        found = _keep(admitted.fits, key, any(all(amount <= n.allocatable.get(r, 0.0) for r, amount in wanted.items())
                                               for n in admitted.nodes or ()))
    return bool(found)


@dataclass(frozen=True, slots=True)
class Fit:
    """What a list of selectors finds among the devices usable from the admitted nodes."""

    count: int  # the most matching devices usable from one node
    node: str  # that node ("" when only node-independent devices match)
    closest: tuple[Device, Verdict] | None  # when none matches: the device that passed the most selectors
    blocked: tuple[tuple[Device, str], ...] = ()  # matching devices the request cannot get: (device, "taint"|...)


def tolerates_device(tolerations: Sequence[Mapping[str, Any]], taint: Taint) -> bool:
    """A device request's tolerations against a device taint (the pod toleration's rules)."""
    return any(_tolerates(as_dict(t), taint) for t in tolerations)


def blocker(device: Device, leaf: DeviceRequest | None) -> str:
    """Why a request cannot get a device its selectors match: "taint" (a taint it does not tolerate),
    "capacity" (less than its capacity.requests), "" when it can."""
    if device.taints and not all(tolerates_device(leaf.tolerations if leaf else (), t) for t in device.taints):
        return "taint"
    if leaf is not None and leaf.capacity:
        have = as_dict(device.view.get("capacity"))
        for name, amount in leaf.capacity:
            domain, sep, short = name.partition("/")
            domain, short = (domain, short) if sep else (device.driver, name)
            try:
                wanted = milli(amount)
            except ValueError:
                return "capacity"
            held = as_dict(have.get(domain)).get(short)
            if type(held) is not int or held < wanted:
                return "capacity"
    return ""


def fit(inventory: Inventory, admitted: Admitted, expressions: tuple[str, ...],
        selectors: ClassSelectors, leaf: DeviceRequest | None = None) -> Fit | None:
    """The Fit of `expressions` (and of the request's tolerations and capacity requests) for this node
    selection, kept per selection; None when a selector does not compile."""
    key = (expressions, repr(leaf.tolerations), leaf.capacity) if leaf is not None and (
        leaf.tolerations or leaf.capacity) else expressions
    if key in admitted.fits:
        found: Fit | None = admitted.fits[key]
        return found
    verdict = verdicts(inventory, expressions, selectors)
    if verdict is None:
        found = None
    else:
        devices = inventory.devices or ()
        blocked = tuple((d, why) for d, v in zip(devices, verdict) if v.matched and (why := blocker(d, leaf)))
        gone = {d.key for d, _ in blocked}
        ok = [v.matched and (not gone or d.key not in gone) for d, v in zip(devices, verdict)]
        count, node = per_node(devices, ok, admitted.names, inventory.counters)
        found = Fit(count, node, None if count or blocked else closest(devices, verdict, admitted.names), blocked)
    return _keep(admitted.fits, key, found)  # type: ignore[no-any-return]


def per_node(devices: Sequence[Device], ok: Sequence[Any], names: frozenset[str] | None,
             counters: Mapping[tuple[str, str, str], Mapping[str, int]] | None = None) -> tuple[int, str]:
    """The most matching devices usable from one node (devices of node-independent slices count on
    every node), and that node's name. `ok[i]` (a bool, or a Verdict's `matched`) says device i matches.
    `names` None: every node that publishes devices counts. Partitionable devices that consume one shared
    counter count only as many as the counter holds, smallest first (an upper bound of what fits at once)."""
    shared = 0
    by_node: dict[str, list[Device]] = {}
    for device, v in zip(devices, ok):
        if not (v.matched if isinstance(v, Verdict) else v):
            continue
        if not device.node:
            shared += 1
        elif names is None or device.node in names:
            by_node.setdefault(device.node, []).append(device)
    counts = {node: _bounded(found, counters) for node, found in by_node.items()}
    if not counts or not any(counts.values()):
        if shared and (names is None or names):
            return shared, ""
        return 0, ""
    node = max(sorted(counts), key=lambda k: counts[k])
    return counts[node] + shared, node


def _bounded(devices: list[Device], counters: Mapping[tuple[str, str, str], Mapping[str, int]] | None) -> int:
    if not counters or not any(d.consumes for d in devices):
        return len(devices)
    most = len(devices)
    uses: dict[tuple[str, str, str, str], list[int]] = {}
    for d in devices:
        for counter_set, counter, amount in d.consumes:
            uses.setdefault((d.driver, d.pool, counter_set, counter), []).append(amount)
    for (driver, pool, counter_set, counter), amounts in uses.items():
        held = counters.get((driver, pool, counter_set), {}).get(counter)
        if held is None:
            continue
        taken = total = 0
        for amount in sorted(amounts):
            if total + amount > held:
                break
            total += amount
            taken += 1
        most = min(most, len(devices) - len(amounts) + taken)
    return most


def closest(devices: Sequence[Device], verdict: Sequence[Verdict],
            names: frozenset[str] | None) -> tuple[Device, Verdict] | None:
    """The device that passes the most selectors in order (on a node the pod may use), first wins."""
    best: tuple[Device, Verdict] | None = None
    for device, v in zip(devices, verdict):
        if names is not None and device.node and device.node not in names:
            continue
        if best is None or v.passed > best[1].passed:
            best = (device, v)
    return best


def autoscaled_most(inventory: Inventory | None, cohort: Cohort, spec: Mapping[str, Any],
                    resource: str) -> float | None:
    """The most of `resource` one node an autoscaler adds to the cohort can have (inf: not known); None when
    no autoscaler adds the cohort's nodes (the policy's `autoscaling`, or a looked-up pool whose template
    carries the cohort's node labels and that the pod's node selection and tolerations admit)."""
    most: float | None = None
    if cohort.autoscaled:
        most = cohort.autoscaled_allocatable.get(resource, math.inf)
    for pool in cohort_pools(inventory, cohort):
        if pool_admits(pool, spec):
            most = max(most or 0.0, pool.allocatable.get(resource, math.inf))
    return most


def cohort_pools(inventory: Inventory | None, cohort: Cohort) -> tuple[NodePool, ...]:
    """The looked-up pools whose nodes carry every node label of the cohort."""
    if inventory is None or not inventory.pools:
        return ()
    labels = cohort.node_labels.items()
    return tuple(p for p in inventory.pools if all(p.labels.get(k) == v for k, v in labels))


def pool_admits(pool: NodePool, spec: Mapping[str, Any]) -> bool:
    """The pod's nodeSelector and tolerations against the node the pool adds (affinity terms are not read:
    a pool's labels are a template, and saying less here only keeps a warning back)."""
    wanted = as_dict(spec.get("nodeSelector"))
    if any(type(k) is str and pool.labels.get(k, v) != v for k, v in wanted.items()):
        return False
    allowed = [as_dict(t) for t in as_list(spec.get("tolerations"))]
    return all(any(_tolerates(t, taint) for t in allowed) for taint in pool.taints)
