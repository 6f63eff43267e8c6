from typing import Any

from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.SHARED_EXCLUSIVE_MIX


def shared_names(facts: GpuFacts) -> frozenset[str]:
    cohort = facts.choice.cohort
    return cohort.shared_resources() if cohort is not None else frozenset()


def is_shared(name: str, shared: frozenset[str]) -> bool:
    return name in shared or name.endswith(".shared")


def marked_exclusive(facts: GpuFacts, policy: Policy) -> bool:
    label = policy.exclusive_label
    for meta in (facts.view.meta, facts.view.obj.get("metadata")):
        if type(meta) is dict and type(meta.get("labels")) is dict and meta["labels"].get(label) == "true":
            return True
    return False


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.device_plugin and not facts.claims:
        return []
    shared = shared_names(facts)
    out = []
    per_container: dict[str, list[Any]] = {}
    if len(facts.device_plugin) > 1:  # a mix needs two resources
        for use in facts.device_plugin:
            per_container.setdefault(use.container.name, []).append(use)
    for uses in per_container.values():
        sh = [u for u in uses if is_shared(u.resource, shared)]
        ex = [u for u in uses if not is_shared(u.resource, shared)]
        # Without renaming, time-sliced replicas keep the exclusive name: the two forms are one resource.
        if sh and ex and sh[0].resource != ex[0].resource:
            c = uses[0].container
            out.append(Finding(
                path=ex[0].path,
                what=f"{c.label} requests the exclusive {ex[0].resource} and the shared {sh[0].resource} "
                     f"({ex[0].path})",
                why="a container gets either a whole GPU or time-shared replicas; together they give unpredictable "
                    "isolation and memory",
                fix=f"keep either {ex[0].resource} or {sh[0].resource}"))
    if marked_exclusive(facts, policy):
        for use in facts.device_plugin:
            if not is_shared(use.resource, shared):
                continue
            if use.resource.endswith(".shared"):
                what = f"the shared {use.resource} ({use.path})"
                fix = f"request the exclusive {use.resource[: -len('.shared')]}, or remove the label"
            else:
                # time-slicing or MPS without renameByDefault: the shared replicas keep the exclusive name
                cohort = facts.choice.cohort
                if cohort is None:  # unreachable: the shared names are the cohort's
                    continue
                how = "MPS" if cohort.mps is not None and use.resource in cohort.mps.exposed_names() else "time-sliced"
                what = f'{use.resource} ({use.path}), which cohort "{cohort.name}" hands out as {how} replicas,'
                fix = "target a cohort whose GPUs are not shared, or remove the label"
            out.append(Finding(
                path=use.path,
                what=f"{use.container.label} requests {what} in a workload labelled {policy.exclusive_label}=true",
                why="shared replicas have no memory or fault isolation from other pods",
                fix=fix))
        for claim in facts.gpu_claims:
            for strategy in claim.sharing:
                out.append(Finding(
                    path=claim.path,
                    what=f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for {strategy} sharing in a workload '
                         f"labelled {policy.exclusive_label}=true",
                    why="shared GPUs have no memory or fault isolation from other workloads",
                    fix="use a claim without a sharing config, or remove the label"))
    return out
