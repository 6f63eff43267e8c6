"""host-mps: MPS on the host against the cohort's sharing.

Cohorts on a host whose GPUs were read. A cohort that shares by MPS: not fit per GPU with MIG enabled where the
device plugin shares (it does not share MIG devices by MPS), fit otherwise (the plugin or DRA driver starts its own
control daemon). Any other cohort: not fit when an MPS daemon runs (CUDA processes that reach its pipe directory run
as its clients), fit when none does. Unknown: the process list cannot be read."""
from __future__ import annotations

from webhook.config.model import DEVICE_PLUGIN
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status, gpu_name, quoted, uses_mps
from webhook.host.sources import Missing
from webhook.policy.messages import T

ID = HostCheckId.MPS
MPS_PROCESSES = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")


def check(host: HostInput) -> Findings:
    facts, cohort, gpus = host.facts, host.cohort, host.gpus
    if not gpus:
        return ()
    if uses_mps(cohort):
        on_mig = [g for g in gpus if g.mig_enabled]
        if cohort.mechanism == DEVICE_PLUGIN and on_mig:
            return tuple(host.finding(ID, Status.FAIL, gpu_name(g), T("MIG is enabled on an MPS cohort"),
                                      T("the device plugin does not share MIG devices by MPS"),
                                      T("disable MIG on this node, or share by time-slicing"))
                         for g in on_mig)
        return (host.finding(ID, Status.PASS, "host", T("the GPUs can be shared by MPS (no MIG); the device plugin or "
                             "DRA driver starts its own control daemon")),)
    if isinstance(facts.processes, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot tell whether an MPS daemon runs"),
                             facts.processes.reason, T("capture `ps -e -o comm=`")),)
    running = sorted({p for p in facts.processes if p in MPS_PROCESSES})
    if running:
        return (host.finding(ID, Status.FAIL, "host", T("an MPS daemon runs ({processes})",
                                                        processes=", ".join(running)),
                             T("cohort {cohort} shares no GPU by MPS, yet CUDA processes that reach its pipe directory "
                               "run as its clients", cohort=quoted(cohort.name)),
                             T("find who owns it and stop it, or move the node to the cohort that shares by MPS "
                               "(investigate existing MPS ownership rather than clearing nvidia.com/mps.capable)")),)
    return (host.finding(ID, Status.PASS, "host", T("no MPS daemon runs"),
                         T("cohort {cohort} shares no GPU by MPS", cohort=quoted(cohort.name))),)
