"""host-driver-branch: the driver branch against the cohort's DRA path.

Cohorts on a host whose GPUs were read. A DRA cohort needs driver 565+ with the standalone NVIDIA DRA driver
(0.5.0's released prerequisites) and 580+ with the GPU Operator's DRA workflow (manager gpu-operator-gpucluster);
below the floor is not fit. A device-plugin cohort sets no floor of its own: fit, with the version said. Unknown:
the version nvidia-smi printed cannot be read as a branch."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status, quoted
from webhook.host.nvsmi import driver_branch
from webhook.host.sources import Missing
from webhook.policy.messages import Arg, T

ID = HostCheckId.DRIVER
STANDALONE_DRA_DRIVER = 565  # DRA driver 0.5.0's released prerequisites (the reference deployment)
OPERATOR_DRA_DRIVER = 580  # GPU Operator's DRA (GPUCluster) workflow (the reference deployment)


def check(host: HostInput) -> Findings:
    smi, cohort = host.facts.smi, host.cohort
    if isinstance(smi, Missing) or not smi.gpus:
        return ()
    version = smi.driver_version
    branch = driver_branch(version)
    if branch is None:
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the driver version"),
                             T("nvidia-smi printed {version}", version=repr(version)),
                             T("capture nvidia-smi -q -x again on the host")),)
    if cohort.mechanism != DRA:
        return (host.finding(ID, Status.PASS, "host", T("driver {version}", version=str(version)),
                             T("the device-plugin path sets no driver floor of its own; the GPU model, driver branch "
                               "and OS still have to be in NVIDIA's matrix")),)
    operator = cohort.manager == "gpu-operator-gpucluster"
    floor = OPERATOR_DRA_DRIVER if operator else STANDALONE_DRA_DRIVER
    path = T("the GPU Operator DRA workflow (GPUCluster)") if operator else T("the standalone NVIDIA DRA driver")
    args: dict[str, Arg] = {"version": str(version), "branch": branch, "floor": floor}
    if branch < floor:
        return (host.finding(ID, Status.FAIL, "host", T("driver {version} (branch {branch}) is below {floor}", **args),
                             T("{path} needs driver {floor}+ (cohort {cohort}, manager {manager})", path=path,
                               floor=floor, cohort=quoted(cohort.name), manager=cohort.manager),
                             T("install an approved driver of branch {floor} or later, or put the node in a "
                               "device-plugin cohort", floor=floor)),)
    return (host.finding(ID, Status.PASS, "host", T("driver {version} (branch {branch}) meets {floor}+", **args),
                         T("the floor of {path} (manager {manager})", path=path, manager=cohort.manager)),)
