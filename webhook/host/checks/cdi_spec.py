"""host-cdi-spec: a CDI spec of the host's GPUs for the DRA driver.

DRA cohorts. Fit: a spec of kind nvidia.com/gpu with devices under /etc/cdi or /var/run/cdi. Not fit: none, or
the specs name fewer GPUs by index than the host has (written before GPUs were added or replaced). Unknown: the
folders cannot be read. Specs that could not be parsed are named beside the verdict."""
from __future__ import annotations

from webhook.config.model import DRA
from webhook.host import cdi
from webhook.host.checks.finding import Findings, HostCheckId, HostInput, Status
from webhook.host.sources import Missing
from webhook.policy.messages import Joined, T

ID = HostCheckId.CDI_SPEC
GENERATE_CDI = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"


def check(host: HostInput) -> Findings:
    if host.cohort.mechanism != DRA:
        return ()
    facts, gpus = host.facts, host.gpus
    errors = f" ({'; '.join(facts.cdi_errors)})" if facts.cdi_errors else ""
    if isinstance(facts.cdi_specs, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the CDI specs"),
                             facts.cdi_specs.reason + errors, T("run as root on the host")),)
    specs = [s for s in facts.cdi_specs if s.kind == cdi.GPU_KIND and s.devices]
    if not specs:
        return (host.finding(ID, Status.FAIL, "host", T("no CDI spec of kind {kind} under /etc/cdi or "
                             "/var/run/cdi{errors}", kind=cdi.GPU_KIND, errors=errors),
                             T("a DRA cohort's GPUs reach containers through CDI, from a spec of the host's GPUs"),
                             T("generate one: `{command}` (Toolkit 1.18+ also keeps /var/run/cdi/nvidia.yaml current "
                               "with its nvidia-cdi-refresh service)", command=GENERATE_CDI)),)
    indexed = max(len([d for d in s.devices if d.isdigit()]) for s in specs)
    if gpus and 0 < indexed < len(gpus):
        return (host.finding(ID, Status.FAIL, "host", T("the CDI specs name {indexed} GPUs by index, the host has "
                             "{count}", indexed=indexed, count=len(gpus)),
                             T("a spec written before GPUs were added or replaced leaves some out"),
                             T("regenerate it: `{command}`", command=GENERATE_CDI)),)
    listed = Joined(tuple(T("{path} ({count} devices)", path=s.path, count=len(s.devices)) for s in specs))
    return (host.finding(ID, Status.PASS, "host", (T("CDI specs of kind {kind}: {specs}{errors}", kind=cdi.GPU_KIND,
                                                     specs=listed, errors=errors) if len(specs) > 1 else
                                                   T("CDI spec of kind {kind}: {specs}{errors}", kind=cdi.GPU_KIND,
                                                     specs=listed, errors=errors))),)
