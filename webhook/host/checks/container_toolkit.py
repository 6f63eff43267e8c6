"""host-container-toolkit: the NVIDIA Container Toolkit's version against the cohort's floor.

Every cohort. Fit: `nvidia-ctk --version` is 1.18+ for a DRA cohort (the DRA driver's prerequisites: it generates
and refreshes the CDI specs), 1.7+ for a device-plugin cohort (the device plugin's README). Not fit: below the
floor, a pre-release of the floor's first release (1.18.0-rc.1) included. Unknown: nvidia-ctk is not found; the
fix names where a GPU Operator install keeps it when the cohort has a manager."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status
from webhook.host.sources import Missing
from webhook.host.toolkit import dotted
from webhook.policy.messages import Arg, T

ID = HostCheckId.TOOLKIT
DRA_TOOLKIT = (1, 18)
DEVICE_PLUGIN_TOOLKIT = (1, 7)  # the device plugin's README prerequisites


def check(host: HostInput) -> Findings:
    ctk, cohort = host.facts.ctk, host.cohort
    dra = cohort.mechanism == DRA
    floor = DRA_TOOLKIT if dra else DEVICE_PLUGIN_TOOLKIT
    if isinstance(ctk, Missing):
        fix = (T("install the NVIDIA Container Toolkit {floor}+ (nvidia-ctk --version) (a GPU Operator install keeps "
                 "it in /usr/local/nvidia/toolkit), or run where nvidia-ctk is on PATH", floor=dotted(floor))
               if cohort.manager != "standalone" else
               T("install the NVIDIA Container Toolkit {floor}+ (nvidia-ctk --version), or run where nvidia-ctk is "
                 "on PATH", floor=dotted(floor)))
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the NVIDIA Container Toolkit version"),
                             ctk.reason, fix),)
    version, pre = ctk
    shown: Arg = T("{version} (a pre-release)", version=dotted(version)) if pre else dotted(version)
    # a pre-release of the floor's first release (1.18.0-rc.1) comes before it
    if version[:2] < floor or (pre and version[:2] == floor and not any(version[2:])):
        why = (T("the DRA driver's prerequisites need Toolkit 1.18+ to generate and refresh its CDI specs") if dra
               else T("the device plugin's prerequisites need nvidia-container-toolkit {floor}+", floor=dotted(floor)))
        return (host.finding(ID, Status.FAIL, "host", T("NVIDIA Container Toolkit {version} is below {floor}",
                                                        version=shown, floor=dotted(floor)), why,
                             T("upgrade the nvidia-container-toolkit packages to a {floor}+ release",
                               floor=dotted(floor))),)
    return (host.finding(ID, Status.PASS, "host", T("NVIDIA Container Toolkit {version}", version=shown),
                         T("meets {floor}+", floor=dotted(floor))),)
