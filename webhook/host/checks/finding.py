"""What a host check reads (`HostInput`) and what it returns (`HostFinding`): the types every check module shares."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from webhook.config.model import Cohort, Policy
from webhook.host.facts import HostFacts
from webhook.host.nvsmi import Gpu
from webhook.host.sources import Missing
from webhook.policy.messages import N_, Arg, T, render


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


class HostCheckId(str, Enum):
    """The host checks' ids: a public contract (JSON output, docs/host.md anchors)."""

    GPUS = "host-gpus"
    DRIVER = "host-driver-branch"
    TOOLKIT = "host-container-toolkit"
    CDI_SPEC = "host-cdi-spec"
    CDI_RUNTIME = "host-cdi-runtime"
    CONTAINERD = "host-containerd-config"
    HANDLER = "host-runtime-handler"
    MIG_MODE = "host-mig-mode"
    MIG_PROFILES = "host-mig-profiles"
    MIG_DEVICES = "host-mig-devices"
    COMPUTE_MODE = "host-compute-mode"
    MPS = "host-mps"
    SHARING = "host-sharing-config"
    NODE_LABELS = "host-node-labels"


_WHY = N_("{text}: {why}")
_FIX = N_("{text}; {fix}")


@dataclass(frozen=True, slots=True)
class HostFinding:
    check: HostCheckId
    status: Status
    subject: str  # "host", "GPU 0 (NVIDIA H200)": names, never translated
    what: str  # what, why and fix are rendered in `language`
    why: str = ""
    fix: str = ""
    docs: str = ""
    language: str = "en"

    @property
    def message(self) -> str:
        text = f"{self.subject}: {self.what}"
        if self.why:
            text = render(T(_WHY, text=text, why=self.why), self.language)
        if self.fix:
            text = render(T(_FIX, text=text, fix=self.fix), self.language)
        return f"{text} [{self.check.value}] {self.docs}".rstrip()

    def as_dict(self) -> dict:
        return {"id": self.check.value, "status": self.status.value, "subject": self.subject, "what": self.what,
                "why": self.why, "fix": self.fix, "docs": self.docs, "message": self.message}


Findings = tuple[HostFinding, ...]


def docs_link(policy: Policy, check: HostCheckId) -> str:
    """docs/host.md#<id>, beside the rule pages that `docsBaseUrl` names (…/docs/rules)."""
    base = policy.docs_base_url
    root = base[: -len("/rules")] if base.endswith("/rules") else base
    return f"{root}/host.md#{check.value}"


def verdict(findings: Findings | list[HostFinding]) -> Status:
    statuses = {f.status for f in findings}
    return Status.FAIL if Status.FAIL in statuses else Status.UNKNOWN if Status.UNKNOWN in statuses else Status.PASS


@dataclass(frozen=True, slots=True)
class HostInput:
    """What every check reads: the host's facts, the cohort it is checked against, the policy (for docs links), the
    runtime handler a device-plugin cohort's RuntimeClass names, and the language findings are written in."""

    facts: HostFacts
    cohort: Cohort
    policy: Policy
    handler: str
    language: str

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """The GPUs nvidia-smi lists; none when it could not be read (host-gpus says so)."""
        return () if isinstance(self.facts.smi, Missing) else self.facts.smi.gpus

    def say(self, text: Arg) -> str:
        return render(text, self.language)

    def finding(self, check: HostCheckId, status: Status, subject: str, what: Arg, why: Arg = "",
                fix: Arg = "") -> HostFinding:
        """A finding; what, why and fix are Text templates (or a tool's own words, quoted as they came)."""
        return HostFinding(check=check, status=status, subject=subject, what=self.say(what), why=self.say(why),
                           fix=self.say(fix), docs=docs_link(self.policy, check), language=self.language)


def quoted(name: str) -> str:
    return f'"{name}"'


def gpu_name(g: Gpu) -> str:
    return f"GPU {g.index} ({g.product_name})"


def uses_mps(c: Cohort) -> bool:
    return c.mps is not None or "MPS" in c.sharing_strategies


def uses_time_slicing(c: Cohort) -> bool:
    return c.time_slicing is not None or "TimeSlicing" in c.sharing_strategies


def containerd_fix(missing: Missing) -> Arg:
    """The fix where containerd's configuration could not be read (three checks read it)."""
    if missing.absent:
        return T("give --containerd-config PATH where this host's containerd config lives (k3s, microk8s and some "
                 "managed images keep it elsewhere); a containerd with no config file runs its defaults, which have "
                 "no nvidia handler")
    return T("run as root on the host, or give --containerd-config PATH")
