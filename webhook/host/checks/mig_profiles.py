"""host-mig-profiles: each MIG-capable GPU's profile table against the cohort's.

Device-plugin cohorts of migStrategy single or mixed, on a host whose GPUs were read. Fit: `nvidia-smi mig -lgip`'s
table for the GPU equals the cohort's `mig` table (the one the webhook admits nvidia.com/mig-* requests by). Not fit:
it differs; the fix names the model whose table it is, when one is known. Unknown: -lgip cannot be read, or lists
no profile for the GPU (older drivers list them only with MIG enabled)."""
from __future__ import annotations

from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.config.model import DEVICE_PLUGIN
from webhook.host import mig
from webhook.host.checks.finding import Findings, HostCheckId, HostFinding, HostInput, Status, gpu_name, quoted
from webhook.host.sources import Missing
from webhook.policy.messages import Arg, T

ID = HostCheckId.MIG_PROFILES


def check(host: HostInput) -> Findings:
    facts, cohort = host.facts, host.cohort
    if not host.gpus or cohort.mechanism != DEVICE_PLUGIN or cohort.mig_strategy == "none":
        return ()
    want = dict(cohort.mig_profiles)
    if isinstance(facts.profiles, Missing):
        return (host.finding(ID, Status.UNKNOWN, "host", T("cannot read the MIG profile table"),
                             facts.profiles.reason, T("capture `nvidia-smi mig -lgip`")),)
    tables = mig.tables(facts.profiles)
    found: list[HostFinding] = []
    fine = []
    for g in host.gpus:
        if not g.mig_capable:
            continue
        table = tables.get(g.index)
        if table is None:
            found.append(host.finding(ID, Status.UNKNOWN, gpu_name(g), T("nvidia-smi mig -lgip lists no profile"),
                                      facts.profiles_text.splitlines()[0] if facts.profiles_text else
                                      T("no table for this GPU"),
                                      T("run it again with MIG enabled (older drivers list profiles only then)")))
            continue
        have, _ = mig.policy_table(table)
        if have == want:
            fine.append(str(g.index))
            continue
        found.append(host.finding(ID, Status.FAIL, gpu_name(g), T("the GPU's MIG profiles differ from the cohort's "
                                  "table ({difference})", difference=_difference(host, have, want)),
                                  T("cohort {cohort}'s table decides which nvidia.com/mig-* requests the webhook "
                                    "admits; a wrong table admits pods that never schedule or denies ones that could",
                                    cohort=quoted(cohort.name)),
                                  T("give the cohort {table}", table=_fix(have))))
    if fine:
        found.append(host.finding(ID, Status.PASS, "host", T("the MIG profile table of GPU {gpus} equals cohort "
                                  "{cohort}'s", gpus=", ".join(fine), cohort=quoted(cohort.name))))
    return tuple(found)


def _difference(host: HostInput, have: dict[str, int], want: dict[str, int]) -> Arg:
    if not set(have) & set(want):
        shown = lambda t: ", ".join(f"{p}×{n}" for p, n in t.items())
        return T("the host has {host}; the cohort has {cohort}", host=shown(have), cohort=shown(want))
    none = host.say(T("none"))
    return "; ".join(host.say(T("{profile}: host {host}, cohort {cohort}", profile=p, host=have.get(p, none),
                                  cohort=want.get(p, none)))
                     for p in sorted(set(have) | set(want)) if have.get(p) != want.get(p))


def _fix(have: dict[str, int]) -> Arg:
    model = next((name for name, table in MIG_PROFILE_TABLES.items() if dict(table) == have), None)
    if model:
        return f"mig: {{model: {model}}}"
    return T("the mig: profiles that `gpu-admission host inventory` prints for this model")
