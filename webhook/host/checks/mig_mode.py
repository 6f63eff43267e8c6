"""host-mig-mode: each GPU's MIG mode against what the cohort offers.

Cohorts on a host whose GPUs were read. What the cohort wants: a DRA cohort MIG where its deviceTypes name mig and
full GPUs where they name anything else; a device-plugin cohort MIG for migStrategy single or mixed, full GPUs for
none. Not fit, per GPU: a MIG mode change pending (the devices change at the next reset); MIG on where the cohort
wants no MIG; MIG off (or no MIG) where it wants MIG only. Unknown: the CSV form does not say the mode. The GPUs
that fit are named in one finding."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostFinding, HostInput, Status, gpu_name, quoted
from webhook.policy.messages import T

ID = HostCheckId.MIG_MODE


def check(host: HostInput) -> Findings:
    cohort = host.cohort
    if cohort.mechanism == DRA:
        want_mig, want_full = "mig" in cohort.device_types, any(t != "mig" for t in cohort.device_types)
        wants = T("device types {types}", types=", ".join(cohort.device_types))
    else:
        want_mig, want_full = cohort.mig_strategy != "none", cohort.mig_strategy == "none"
        wants = T("migStrategy {strategy}", strategy=cohort.mig_strategy)
    found: list[HostFinding] = []
    fine = []
    for g in host.gpus:
        s = gpu_name(g)
        if g.mig_capable is None:
            found.append(host.finding(ID, Status.UNKNOWN, s, T("MIG mode not read"),
                                      T("the CSV query does not say it"), T("capture nvidia-smi -q -x")))
        elif g.mig_current is not None and g.mig_pending is not None and g.mig_current != g.mig_pending:
            found.append(host.finding(ID, Status.FAIL, s, T("MIG mode change pending (current {current}, pending "
                                      "{pending})", current=g.mig_current, pending=g.mig_pending),
                                      T("the GPU runs its current mode until it is reset, and the node's devices "
                                        "change then"),
                                      T("finish the change in a maintenance window (GPU reset or reboot), or revert "
                                        "it")))
        elif g.mig_enabled and not want_mig:
            found.append(host.finding(ID, Status.FAIL, s, T("MIG mode is enabled"),
                                      T("cohort {cohort} has {wants}: the DRA driver then publishes MIG devices, not "
                                        "the full GPU", cohort=quoted(cohort.name), wants=wants)
                                      if cohort.mechanism == DRA else
                                      T("cohort {cohort} has {wants}: the device plugin advertises no full GPU of a "
                                        "MIG-enabled GPU", cohort=quoted(cohort.name), wants=wants),
                                      T("disable MIG (a maintenance operation, owner-controlled) or move the node to "
                                        "a cohort that offers MIG with this model's profile table")))
        elif not g.mig_enabled and want_mig and not want_full:
            why = T("the GPU has no MIG") if not g.mig_capable else T("MIG mode is disabled")
            found.append(host.finding(ID, Status.FAIL, s, why, T("cohort {cohort} has {wants}, which advertises MIG "
                                      "devices only", cohort=quoted(cohort.name), wants=wants),
                                      T("prepare the MIG geometry first (enable MIG, create instances), or move the "
                                        "node to a cohort without MIG") if g.mig_capable else
                                      T("move the node to a cohort without MIG")))
        else:
            fine.append(f"{g.index}: {host.say(g.mig_current or T('no MIG'))}")
    if fine:
        found.append(host.finding(ID, Status.PASS, "host", T("MIG mode fits {wants} (GPU {gpus})", wants=wants,
                                                             gpus="; ".join(fine))))
    return tuple(found)
