"""host-compute-mode: each GPU's compute mode against the cohort's sharing.

Cohorts on a host whose GPUs were read. Not fit: Prohibited (no process can create a CUDA context);
Exclusive_Process on a cohort that time-slices without MPS (one process at a time may use the GPU). Fit otherwise,
the GPUs named in one finding. Unknown: the CSV form does not say the mode."""
from __future__ import annotations

from webhook.host.checks.finding import (
    Findings,
    HostCheckId,
    HostFinding,
    HostInput,
    Status,
    gpu_name,
    quoted,
    uses_mps,
    uses_time_slicing,
)
from webhook.policy.messages import T

ID = HostCheckId.COMPUTE_MODE


def check(host: HostInput) -> Findings:
    cohort = host.cohort
    found: list[HostFinding] = []
    fine = []
    for g in host.gpus:
        mode = g.compute_mode
        if mode is None:
            found.append(host.finding(ID, Status.UNKNOWN, gpu_name(g), T("compute mode not read"),
                                      T("the CSV query does not say it"), T("capture nvidia-smi -q -x")))
        elif mode == "Prohibited":
            found.append(host.finding(ID, Status.FAIL, gpu_name(g), T("compute mode is Prohibited"),
                                      T("no process can create a CUDA context on it"),
                                      T("set it back to Default (nvidia-smi -i {index} -c DEFAULT, owner-controlled)",
                                        index=g.index)))
        elif mode == "Exclusive_Process" and uses_time_slicing(cohort) and not uses_mps(cohort):
            found.append(host.finding(ID, Status.FAIL, gpu_name(g), T("compute mode is Exclusive_Process"),
                                      T("cohort {cohort} shares GPUs by time-slicing, and only one process at a time "
                                        "may use an Exclusive_Process GPU", cohort=quoted(cohort.name)),
                                      T("set it back to Default (nvidia-smi -i {index} -c DEFAULT)", index=g.index)))
        else:
            fine.append(f"{g.index}: {mode}")
    if fine:
        found.append(host.finding(ID, Status.PASS, "host", T("compute mode (GPU {gpus})", gpus="; ".join(fine))))
    return tuple(found)
