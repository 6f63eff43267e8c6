"""host-mig-devices: the MIG instances of the GPUs with MIG on, against the cohort's strategy and table.

Device-plugin cohorts of migStrategy single or mixed, on a host with a GPU whose MIG mode is enabled. Not fit: a
GPU with MIG enabled and no instance (the device plugin advertises nothing for it); with mixed, instances of
profiles outside the cohort's table (their nvidia.com/mig-* resources are denied); with single, instances of more
than one profile on the node. Fit otherwise, naming the profiles seen. Unknown: `nvidia-smi -L` cannot be read."""
from __future__ import annotations

from webhook.config.model import DEVICE_PLUGIN
from webhook.host.checks.finding import Findings, HostCheckId, HostFinding, HostInput, Status, gpu_name, quoted
from webhook.host.sources import Missing
from webhook.policy.messages import T

ID = HostCheckId.MIG_DEVICES


def check(host: HostInput) -> Findings:
    facts, cohort = host.facts, host.cohort
    if cohort.mechanism != DEVICE_PLUGIN or cohort.mig_strategy == "none":
        return ()
    enabled = [g for g in host.gpus if g.mig_enabled]
    if not enabled:
        return ()
    if isinstance(facts.listing, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the MIG devices"), facts.listing.reason,
                             T("capture `nvidia-smi -L`")),)
    listed = {g.index: g.mig_devices or () for g in facts.listing.gpus}
    found: list[HostFinding] = []
    seen_profiles = set()
    for g in enabled:
        devices = listed.get(g.index, ())
        if not devices:
            found.append(host.finding(ID, Status.FAIL, gpu_name(g), T("MIG is enabled with no GPU instances"),
                                      T("the device plugin advertises nothing for it"),
                                      T("create the cohort's MIG geometry (owner-controlled, e.g. with the MIG "
                                        "manager), or disable MIG")))
            continue
        profiles = {d.profile for d in devices if d.profile}
        seen_profiles |= profiles
        foreign = sorted(p for p in profiles if p.split("+")[0] not in {q.split("+")[0] for q in cohort.mig_profiles})
        if cohort.mig_strategy == "mixed" and foreign:
            found.append(host.finding(ID, Status.FAIL, gpu_name(g), T("MIG devices of profiles {profiles}",
                                                                      profiles=", ".join(foreign)),
                                      T("not in cohort {cohort}'s table, so the webhook denies the nvidia.com/mig-* "
                                        "resources this node advertises", cohort=quoted(cohort.name)),
                                      T("fix the cohort's table from `gpu-admission host inventory`, or the "
                                        "geometry")))
    seen = ", ".join(sorted(seen_profiles))
    if cohort.mig_strategy == "single" and len(seen_profiles) > 1:
        found.append(host.finding(ID, Status.FAIL, "host", T("MIG devices of several profiles ({profiles})",
                                                             profiles=seen),
                                  T("migStrategy single needs every MIG device of a node to be of one profile"),
                                  T("make the geometry uniform, or use migStrategy mixed")))
    elif not found:
        found.append(host.finding(ID, Status.PASS, "host", T("MIG devices fit migStrategy {strategy} ({profiles})",
                                                             strategy=cohort.mig_strategy, profiles=seen)))
    return tuple(found)
