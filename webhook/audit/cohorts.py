"""The audit's cohort report: the policy's picture of the cohorts checked against the live cluster, the
cluster-level twin of `host check`. For each GPU node: the allocation owners it shows (device-plugin
resources in its allocatable, `gpu.nvidia.com` ResourceSlices published for it), the sharing and MIG
labels GPU feature discovery sets, the cohort the policy assigns by its labels, and what disagrees. Each
GPU node becomes a cluster-scoped result of rule allocation-owner, so the table, JSON and reports carry it."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.audit.evaluate import Audited
from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, Policy
from webhook.lookups.resources import NODES, ApiResource
from webhook.objects.access import as_dict, as_list, as_str, quantity
from webhook.policy.infra import labels_of, node_cohort
from webhook.policy.messages import Arg, T, line, names, quoted
from webhook.policy.results import Evaluation, Violation
from webhook.rules import Action, Rule

RULE = Rule.ALLOCATION_OWNER
DRA_DRIVER = "gpu.nvidia.com"
# What GPU feature discovery labels a node with (NVIDIA/k8s-device-plugin, gpu-feature-discovery).
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"  # none | time-slicing | mps
MIG_LABEL = "nvidia.com/mig.strategy"  # none | single | mixed
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
PRESENT_LABEL = "nvidia.com/gpu.present"
_SHARING = {"time-slicing": "time_slicing", "mps": "mps"}


@dataclass(slots=True)
class NodeRow:
    name: str
    cohort: Cohort | None
    owners: list[str]  # device-plugin | dra, as the node shows them
    resources: dict[str, float]  # nvidia.com/* allocatable
    devices: int  # gpu.nvidia.com devices published for it
    labels: dict[str, str]  # the GFD labels read
    problems: list[tuple[str, Arg]] = field(default_factory=list)  # (field path, what disagrees)


@dataclass(slots=True)
class CohortReport:
    nodes: list[NodeRow]
    empty: list[str]  # cohorts with no node


def _devices_by_node(slices: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in slices:
        spec = as_dict(as_dict(s).get("spec"))
        node = as_str(spec.get("nodeName"))
        if node and spec.get("driver") == DRA_DRIVER:
            out[node] = out.get(node, 0) + len(as_list(spec.get("devices")))
    return out


def _nvidia_allocatable(node: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in as_dict(as_dict(node.get("status")).get("allocatable")).items():
        if type(name) is str and name.startswith("nvidia.com/"):
            amount = quantity(value)
            if amount:
                out[name] = amount
    return out


def _is_gpu_resource(name: str) -> bool:
    return name in ("nvidia.com/gpu", "nvidia.com/gpu.shared") or name.startswith("nvidia.com/mig-")


def build(nodes: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]] | None,
          policy: Policy) -> CohortReport:
    """The report over the listed Nodes and ResourceSlices (None: slices could not be listed, so DRA owners
    are not known and not judged)."""
    devices = _devices_by_node(slices or ())
    rows = []
    seen_cohorts: set[str] = set()
    for node in map(as_dict, nodes):
        name = as_str(as_dict(node.get("metadata")).get("name"))
        if not name:
            continue
        labels = labels_of(node)
        cohort = node_cohort(labels, policy)
        resources = {k: v for k, v in _nvidia_allocatable(node).items() if _is_gpu_resource(k)}
        published = devices.get(name, 0)
        gfd = {k: labels[k] for k in (SHARING_LABEL, MIG_LABEL, REPLICAS_LABEL) if k in labels}
        if not (resources or published or cohort or labels.get(PRESENT_LABEL) == "true"):
            continue  # not a GPU node
        if cohort is not None:
            seen_cohorts.add(cohort.name)
        owners = ([DEVICE_PLUGIN] if resources else []) + ([DRA] if published else [])
        row = NodeRow(name, cohort, owners, resources, published, gfd)
        _judge(row, policy, slices is not None)
        rows.append(row)
    empty = [c.name for c in policy.cohorts if c.name not in seen_cohorts] if rows else []
    return CohortReport(rows, empty)


def _judge(row: NodeRow, policy: Policy, slices_known: bool) -> None:
    cohort = row.cohort
    add = row.problems.append
    if len(row.owners) == 2:
        add(("status.allocatable", T("it shows two allocation owners: device-plugin resources ({resources}) and "
                                     "{count} gpu.nvidia.com devices in ResourceSlices",
                                     resources=", ".join(sorted(row.resources)), count=row.devices)))
    if cohort is None:
        add(("metadata.labels", T("it is a GPU node of no cohort (its labels match no cohort's node labels)")))
        return
    for owner in row.owners:
        if owner != cohort.mechanism and (owner == DEVICE_PLUGIN or slices_known):
            add(("status.allocatable" if owner == DEVICE_PLUGIN else "spec.nodeName",
                 T('its owner is {owner}, not the mechanism of its cohort "{cohort}" ({mechanism})', owner=owner,
                   cohort=cohort.name, mechanism=cohort.mechanism)))
    if cohort.mechanism != DEVICE_PLUGIN:
        return
    strategy = row.labels.get(SHARING_LABEL)
    declared = {k for k, attr in _SHARING.items() if getattr(cohort, attr) is not None}
    shared = any(r.endswith(".shared") for r in row.resources)
    if (strategy in _SHARING and strategy not in declared) or (shared and not declared):
        add((f'metadata.labels["{SHARING_LABEL}"]' if strategy in _SHARING else "status.allocatable",
             T('it advertises GPU sharing ({sharing}) that its cohort "{cohort}" does not declare',
               sharing=strategy if strategy in _SHARING else "nvidia.com/gpu.shared", cohort=cohort.name)))
    elif declared and (strategy == "none" or (strategy is None and DEVICE_PLUGIN in row.owners and _renamed(cohort)
                                              and not shared)):
        add((f'metadata.labels["{SHARING_LABEL}"]' if strategy else "status.allocatable",
             T('its cohort "{cohort}" declares GPU sharing ({sharing}) that the node does not advertise',
               cohort=cohort.name, sharing=names(quoted(sorted(declared))))))
    mig = sorted(r for r in row.resources if r.startswith("nvidia.com/mig-"))
    if cohort.mig_strategy == "none" and (mig or row.labels.get(MIG_LABEL) in ("single", "mixed")):
        add(("status.allocatable" if mig else f'metadata.labels["{MIG_LABEL}"]',
             T('it advertises MIG ({mig}) while its cohort "{cohort}" has migStrategy none',
               mig=", ".join(mig) or f"{MIG_LABEL}={row.labels.get(MIG_LABEL)}", cohort=cohort.name)))


def _renamed(cohort: Cohort) -> bool:
    return any(s is not None and s.rename_by_default for s in (cohort.time_slicing, cohort.mps))


WHY = T("every admission decision rests on the policy's picture of the cohorts, and this node contradicts it")
FIX = T("give the node one owner, its cohort's, and the cohort's labels; or correct the policy's cohorts")


def audited(report: CohortReport, policy: Policy, resource: ApiResource = NODES) -> list[Audited]:
    """Each GPU node as a cluster-scoped result of allocation-owner: its disagreements at the rule's action."""
    mode, actions = policy.settings_for("")
    action = actions.get(RULE, Action.ENFORCE)
    language = policy.language
    out = []
    for row in report.nodes:
        subject = f'node "{row.name}"'
        violations = tuple(Violation(RULE, action, path, line(policy, RULE, subject, what, WHY, FIX, language))
                           for path, what in row.problems) if action is not Action.OFF else ()
        ev = Evaluation(kind="Node", namespace="", name=row.name, language=language, violations=violations,
                        dry_run=mode == "audit", cohort=row.cohort.name if row.cohort else None)
        obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": row.name}}
        out.append(Audited(resource, obj, ev))
    return out


def as_json(report: CohortReport) -> dict:
    """The report as data: every GPU node with its cohort, owners and labels, and the cohorts with no node."""
    return {"nodes": [{"name": r.name, "cohort": r.cohort.name if r.cohort else None, "owners": r.owners,
                       "resources": r.resources, "draDevices": r.devices, "labels": r.labels,
                       "problems": [p for p, _ in r.problems]} for r in report.nodes],
            "cohortsWithoutNodes": report.empty}
