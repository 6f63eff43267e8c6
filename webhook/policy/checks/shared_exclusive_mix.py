"""shared-exclusive-mix: exclusive and shared GPU forms together.

- A container requests a shared GPU resource (a `.shared` name, or one the cohort's time-slicing or MPS
  exposes) and an exclusive one under another name (one finding per container).
- The workload is marked exclusive (the policy's `exclusiveLabel` is `"true"` on the pod's, the pod
  template's or the object's metadata) and a container requests a `.shared` name, or a name the cohort
  shares without renaming, or a resolved GPU claim carries a `sharing.strategy` config."""
from typing import Any

from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, Arg, T, who
from webhook.policy.results import Finding


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
                what=T("{container} requests the exclusive {exclusive} and the shared {shared} ({path})",
                       container=who(c), exclusive=ex[0].resource, shared=sh[0].resource, path=ex[0].path),
                why=T("whole and time-shared GPUs together give unpredictable isolation and memory"),
                fix=T("keep either {exclusive} or {shared}", exclusive=ex[0].resource, shared=sh[0].resource)))
    if marked_exclusive(facts, policy):
        for use in facts.device_plugin:
            if not is_shared(use.resource, shared):
                continue
            base: dict[str, Arg] = {"container": who(use.container), "path": use.path, "label": policy.exclusive_label}
            if use.resource.endswith(".shared"):
                what = T("{container} requests the shared {resource} ({path}) in a workload labelled {label}=true",
                         resource=use.resource, **base)
                fix = T("request the exclusive {resource}, or remove the label",
                        resource=use.resource[: -len(".shared")])
            else:
                # time-slicing or MPS without renameByDefault: the shared replicas keep the exclusive name
                cohort = facts.choice.cohort
                if cohort is None:  # unreachable: the shared names are the cohort's
                    continue
                mps = cohort.mps is not None and use.resource in cohort.mps.exposed_names()
                args: dict[str, Arg] = {"resource": use.resource, "cohort": cohort.name, **base}
                what = T('{container} requests {resource} ({path}), which cohort "{cohort}" hands out as MPS '
                         "replicas, in a workload labelled {label}=true", **args) if mps else \
                    T('{container} requests {resource} ({path}), which cohort "{cohort}" hands out as time-sliced '
                      "replicas, in a workload labelled {label}=true", **args)
                fix = T("target a cohort whose GPUs are not shared, or remove the label")
            out.append(Finding(
                path=use.path,
                what=what,
                why=T("shared replicas have no memory or fault isolation from other pods"),
                fix=fix))
        for claim in facts.gpu_claims:
            for strategy in claim.sharing:
                out.append(Finding(
                    path=claim.path,
                    what=T('claim "{claim}" ({path}, {ref}) asks for {strategy} sharing in a workload labelled '
                           "{label}=true", claim=claim.name, path=claim.path, ref=claim.ref, strategy=strategy,
                           label=policy.exclusive_label),
                    why=T("shared GPUs have no memory or fault isolation from other workloads"),
                    fix=T("use a claim without a sharing config, or remove the label")))
    return out


DEFINITION = Definition(
    "shared-exclusive-mix",
    "exclusive and shared GPU forms together, or shared GPUs in a workload marked exclusive",
    "GPU sharing",
    __doc__,
    reason=N_(
        "A whole GPU and a time-shared replica are different products: a replica shares the GPU's memory and "
        "faults with every other pod on it. A container asking for both gets an unpredictable mixture, and a "
        "workload marked exclusive silently loses the isolation it was promised."),
    checks=(
        Check(POD_SPECS, check),
    ))
