"""host-gpus: the GPUs the driver sees.

Every cohort. Fit: nvidia-smi lists GPUs (the count, the models and the form it was read from). Not fit: it lists
none, where a GPU cohort's node must have GPUs the driver sees. Unknown: nvidia-smi cannot run or its output is
missing; the GPU checks after this one then have no GPU to look at and say nothing."""
from __future__ import annotations

from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status
from webhook.host.nvsmi import FORMS
from webhook.host.sources import Missing
from webhook.policy.messages import Arg, T

ID = HostCheckId.GPUS


def check(host: HostInput) -> Findings:
    smi = host.facts.smi
    if isinstance(smi, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the GPUs"), smi.reason,
                             T("run on the GPU host with the NVIDIA driver installed (nvidia-smi on PATH), or give "
                               "--from a directory captured there; every GPU check below is unknown until then")),)
    if not smi.gpus:
        return (host.finding(ID, Status.FAIL, "host", T("nvidia-smi lists no GPU"),
                             T("a GPU cohort's node must have NVIDIA GPUs the driver sees"),
                             T("check the driver and the GPUs (nvidia-smi -L), or take the node out of the cohort's "
                               "labels")),)
    models = sorted({g.product_name for g in smi.gpus})
    args: dict[str, Arg] = {"count": len(smi.gpus), "models": ", ".join(models), "form": FORMS[smi.form]}
    return (host.finding(ID, Status.PASS, "host", T("{count} GPU ({models}), read from `{form}`", **args)
                         if len(smi.gpus) == 1 else T("{count} GPUs ({models}), read from `{form}`", **args)),)
