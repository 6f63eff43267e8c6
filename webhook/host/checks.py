"""`host check`: a host against its cohort and the seed's prerequisites. Pure: a function of the facts, the
cohort and the policy. Each finding says what, why and the fix, with a stable id and a docs link; what cannot
be read is `unknown`, never `pass`."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, Policy
from webhook.host import cdi, mig
from webhook.host.facts import HostFacts
from webhook.host.node import Node
from webhook.host.nvsmi import FORMS, Gpu, driver_branch
from webhook.host.sources import Missing
from webhook.host.toolkit import dotted

STANDALONE_DRA_DRIVER = 565  # DRA driver 0.5.0's released prerequisites (the seed)
OPERATOR_DRA_DRIVER = 580  # GPU Operator's DRA (GPUCluster) workflow (the seed)
DRA_TOOLKIT = (1, 18)
DEVICE_PLUGIN_TOOLKIT = (1, 7)  # the device plugin's README prerequisites
CDI_CONTAINERD = (1, 7)  # the first containerd whose CRI plugin injects CDI devices (enable_cdi)
CDI_ON_BY_DEFAULT = (2, 0)
DROP_IN_VERSION_CHECKED = (2, 3)  # refuses drop-ins of a config version above the root's
MPS_PROCESSES = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")
GENERATE_CDI = "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
CONFIGURE_CONTAINERD = "sudo nvidia-ctk runtime configure --runtime=containerd && sudo systemctl restart containerd"


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


class Check(str, Enum):
    """Finding ids: a public contract (JSON output, docs/host.md anchors)."""

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


@dataclass(frozen=True, slots=True)
class Finding:
    check: Check
    status: Status
    subject: str  # "host", "GPU 0 (NVIDIA H200)"
    what: str
    why: str = ""
    fix: str = ""
    docs: str = ""

    @property
    def message(self) -> str:
        text = f"{self.subject}: {self.what}"
        if self.why:
            text += f": {self.why}"
        if self.fix:
            text += f"; {self.fix}"
        return f"{text} [{self.check.value}] {self.docs}".rstrip()

    def as_dict(self) -> dict:
        return {"id": self.check.value, "status": self.status.value, "subject": self.subject, "what": self.what,
                "why": self.why, "fix": self.fix, "docs": self.docs, "message": self.message}


def docs_link(policy: Policy, check: Check) -> str:
    """docs/host.md#<id>, beside the rule pages that `docsBaseUrl` names (…/docs/rules)."""
    base = policy.docs_base_url
    root = base[: -len("/rules")] if base.endswith("/rules") else base
    return f"{root}/host.md#{check.value}"


def verdict(findings: list[Finding]) -> Status:
    statuses = {f.status for f in findings}
    return Status.FAIL if Status.FAIL in statuses else Status.UNKNOWN if Status.UNKNOWN in statuses else Status.PASS


class _Findings(list):
    def __init__(self, policy: Policy):
        super().__init__()
        self.policy = policy

    def add(self, check: Check, status: Status, subject: str, what: str, why: str = "", fix: str = "") -> None:
        self.append(Finding(check=check, status=status, subject=subject, what=what, why=why, fix=fix,
                            docs=docs_link(self.policy, check)))


def quoted(name: str) -> str:
    return f'"{name}"'


def _gpu(g: Gpu) -> str:
    return f"GPU {g.index} ({g.product_name})"


def _uses_mps(c: Cohort) -> bool:
    return c.mps is not None or "MPS" in c.sharing_strategies


def _uses_time_slicing(c: Cohort) -> bool:
    return c.time_slicing is not None or "TimeSlicing" in c.sharing_strategies


def check_host(facts: HostFacts, cohort: Cohort, policy: Policy, *, handler: str | None = None) -> list[Finding]:
    out = _Findings(policy)
    gpus = _check_gpus(out, facts)
    if gpus:
        _check_driver(out, facts, cohort)
    _check_toolkit(out, facts, cohort)
    _check_containerd(out, facts)
    if cohort.mechanism == DRA:
        _check_cdi_spec(out, facts, gpus)
        _check_cdi_runtime(out, facts)
    else:
        _check_handler(out, facts, handler or cohort.runtime_class_name or "nvidia")
    if gpus:
        _check_mig_mode(out, gpus, cohort)
        if cohort.mechanism == DEVICE_PLUGIN and cohort.mig_strategy != "none":
            _check_mig_profiles(out, facts, gpus, cohort)
            _check_mig_devices(out, facts, gpus, cohort)
        _check_compute_mode(out, gpus, cohort)
        _check_mps(out, facts, gpus, cohort)
    if facts.node is not None:
        _check_node_labels(out, facts.node, cohort)
    _check_sharing(out, cohort, facts.node, gpus)
    return list(out)


def _check_gpus(out: _Findings, facts: HostFacts) -> tuple[Gpu, ...]:
    if isinstance(facts.smi, Missing):
        out.add(Check.GPUS, Status.UNKNOWN, "host", "cannot read the GPUs", facts.smi.reason,
                "run on the GPU host with the NVIDIA driver installed (nvidia-smi on PATH), or give --from a "
                "directory captured there; every GPU check below is unknown until then")
        return ()
    if not facts.smi.gpus:
        out.add(Check.GPUS, Status.FAIL, "host", "nvidia-smi lists no GPU",
                "a GPU cohort's node must have NVIDIA GPUs the driver sees",
                "check the driver and the GPUs (nvidia-smi -L), or take the node out of the cohort's labels")
        return ()
    names = sorted({g.product_name for g in facts.smi.gpus})
    out.add(Check.GPUS, Status.PASS, "host", f"{len(facts.smi.gpus)} GPU{'s' if len(facts.smi.gpus) != 1 else ''} "
            f"({', '.join(names)}), read from `{FORMS[facts.smi.form]}`")
    return facts.smi.gpus


def _check_driver(out: _Findings, facts: HostFacts, cohort: Cohort) -> None:
    assert not isinstance(facts.smi, Missing)
    version = facts.smi.driver_version
    branch = driver_branch(version)
    if branch is None:
        out.add(Check.DRIVER, Status.UNKNOWN, "host", "cannot read the driver version",
                f"nvidia-smi printed {version!r}", "capture nvidia-smi -q -x again on the host")
        return
    if cohort.mechanism != DRA:
        out.add(Check.DRIVER, Status.PASS, "host", f"driver {version}",
                "the device-plugin path sets no driver floor of its own; the GPU model, driver branch and OS still "
                "have to be in NVIDIA's matrix")
        return
    operator = cohort.manager == "gpu-operator-gpucluster"
    floor = OPERATOR_DRA_DRIVER if operator else STANDALONE_DRA_DRIVER
    path = "the GPU Operator DRA workflow (GPUCluster)" if operator else "the standalone NVIDIA DRA driver"
    if branch < floor:
        out.add(Check.DRIVER, Status.FAIL, "host", f"driver {version} (branch {branch}) is below {floor}",
                f"{path} needs driver {floor}+ (cohort {quoted(cohort.name)}, manager {cohort.manager})",
                f"install an approved driver of branch {floor} or later, or put the node in a device-plugin cohort")
    else:
        out.add(Check.DRIVER, Status.PASS, "host", f"driver {version} (branch {branch}) meets {floor}+",
                f"the floor of {path} (manager {cohort.manager})")


def _check_toolkit(out: _Findings, facts: HostFacts, cohort: Cohort) -> None:
    dra = cohort.mechanism == DRA
    floor = DRA_TOOLKIT if dra else DEVICE_PLUGIN_TOOLKIT
    if isinstance(facts.ctk, Missing):
        where = (" (a GPU Operator install keeps it in /usr/local/nvidia/toolkit)" if cohort.manager != "standalone"
                 else "")
        out.add(Check.TOOLKIT, Status.UNKNOWN, "host", "cannot read the NVIDIA Container Toolkit version",
                facts.ctk.reason,
                f"install the NVIDIA Container Toolkit {dotted(floor)}+ (nvidia-ctk --version){where}, "
                "or run where nvidia-ctk is on PATH")
        return
    version, pre = facts.ctk
    shown = dotted(version) + (" (a pre-release)" if pre else "")
    # a pre-release of the floor's first release (1.18.0-rc.1) comes before it
    if version[:2] < floor or (pre and version[:2] == floor and not any(version[2:])):
        why = ("the DRA driver's prerequisites need Toolkit 1.18+ to generate and refresh its CDI specs" if dra
               else f"the device plugin's prerequisites need nvidia-container-toolkit {dotted(floor)}+")
        out.add(Check.TOOLKIT, Status.FAIL, "host", f"NVIDIA Container Toolkit {shown} is below {dotted(floor)}", why,
                f"upgrade the nvidia-container-toolkit packages to a {dotted(floor)}+ release")
        return
    out.add(Check.TOOLKIT, Status.PASS, "host", f"NVIDIA Container Toolkit {shown}", f"meets {dotted(floor)}+")


def _check_containerd(out: _Findings, facts: HostFacts) -> None:
    c = facts.containerd
    if isinstance(c, Missing):
        out.add(Check.CONTAINERD, Status.UNKNOWN, "host", "cannot read containerd's configuration", c.reason,
                _containerd_fix(c))
        return
    files = ", ".join(f.path for f in c.files)
    before = len(out)
    for error in c.errors:
        out.add(Check.CONTAINERD, Status.FAIL if "not valid TOML" in error else Status.UNKNOWN, "host",
                "a containerd drop-in cannot be used", error,
                "fix or remove the file (containerd refuses to start on a drop-in that does not parse), or run as "
                "root to read it")
    newer = c.newer_drop_ins()
    if newer:
        cv = facts.containerd_version
        detail = ", ".join(f"{f.path} (version {f.version})" for f in newer)
        why = f"the root config {c.files[0].path} is version {c.files[0].version}"
        fix = ("rewrite the drop-in in the root's version (nvidia-ctk with RUNTIME_CONFIG_SOURCE=file reads the root "
               "file)")
        if isinstance(cv, Missing):
            out.add(Check.CONTAINERD, Status.UNKNOWN, "host", f"drop-ins of a newer config version: {detail}",
                    f"{why}; containerd {dotted(DROP_IN_VERSION_CHECKED)}+ refuses to start on them, and its version "
                    f"cannot be read ({cv.reason})", fix)
        elif cv >= DROP_IN_VERSION_CHECKED:
            out.add(Check.CONTAINERD, Status.FAIL, "host", f"drop-ins of a newer config version: {detail}",
                    f"{why}, and containerd {dotted(cv)} refuses to start on a drop-in above the root's version", fix)
    if len(out) == before:
        out.add(Check.CONTAINERD, Status.PASS, "host", f"containerd configuration read: {files}")


def _containerd_fix(missing: Missing) -> str:
    if missing.absent:
        return ("give --containerd-config PATH where this host's containerd config lives (k3s, microk8s and some "
                "managed images keep it elsewhere); a containerd with no config file runs its defaults, which have "
                "no nvidia handler")
    return "run as root on the host, or give --containerd-config PATH"


def _check_handler(out: _Findings, facts: HostFacts, handler: str) -> None:
    c = facts.containerd
    if isinstance(c, Missing):
        out.add(Check.HANDLER, Status.UNKNOWN, "host",
                f"cannot tell whether containerd has the {quoted(handler)} runtime "
                "handler", c.reason, _containerd_fix(c))
        return
    found = c.runtime(handler)
    if found is None:
        if c.errors:
            out.add(Check.HANDLER, Status.UNKNOWN, "host", f"no {quoted(handler)} runtime handler in the readable "
                    "containerd configuration", "some drop-ins could not be read: " + "; ".join(c.errors),
                    "run as root so that every drop-in is read")
            return
        out.add(Check.HANDLER, Status.FAIL, "host", f"containerd has no {quoted(handler)} runtime handler "
                f"(read {', '.join(f.path for f in c.files)})",
                f"the cohort's RuntimeClass must be backed by a configured containerd handler {quoted(handler)}; a "
                "RuntimeClass name alone configures nothing, and its pods fail with 'no runtime for "
                f"\"{handler}\" is configured'", f"configure it: `{CONFIGURE_CONTAINERD}`")
        return
    runtime, where = found
    if runtime.binary_name is None:
        out.add(Check.HANDLER, Status.FAIL, "host", f"runtime handler {quoted(handler)} in {where.path} names no "
                "options.BinaryName", "containerd then runs plain runc for it, which injects no GPU",
                f"reconfigure it: `{CONFIGURE_CONTAINERD}`")
    elif "nvidia-container-runtime" not in runtime.binary_name:
        out.add(Check.HANDLER, Status.UNKNOWN, "host", f"runtime handler {quoted(handler)} in {where.path} runs "
                f"{runtime.binary_name}", "that is not the NVIDIA Container Runtime; only a wrapper around it injects "
                "GPUs", "confirm it wraps nvidia-container-runtime, or reconfigure with nvidia-ctk")
    else:
        out.add(Check.HANDLER, Status.PASS, "host", f"runtime handler {quoted(handler)} in {where.path} runs "
                f"{runtime.binary_name}")


def _check_cdi_spec(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...]) -> None:
    errors = f" ({'; '.join(facts.cdi_errors)})" if facts.cdi_errors else ""
    if isinstance(facts.cdi_specs, Missing):
        out.add(Check.CDI_SPEC, Status.UNKNOWN, "host", "cannot read the CDI specs", facts.cdi_specs.reason + errors,
                "run as root on the host")
        return
    specs = [s for s in facts.cdi_specs if s.kind == cdi.GPU_KIND and s.devices]
    if not specs:
        out.add(Check.CDI_SPEC, Status.FAIL, "host", f"no CDI spec of kind {cdi.GPU_KIND} under /etc/cdi or "
                f"/var/run/cdi{errors}", "a DRA cohort's GPUs reach containers through CDI, from a spec of the "
                "host's GPUs", f"generate one: `{GENERATE_CDI}` (Toolkit 1.18+ also keeps /var/run/cdi/nvidia.yaml "
                "current with its nvidia-cdi-refresh service)")
        return
    indexed = max(len([d for d in s.devices if d.isdigit()]) for s in specs)
    if gpus and 0 < indexed < len(gpus):
        out.add(Check.CDI_SPEC, Status.FAIL, "host", f"the CDI specs name {indexed} GPUs by index, the host has "
                f"{len(gpus)}", "a spec written before GPUs were added or replaced leaves some out",
                f"regenerate it: `{GENERATE_CDI}`")
        return
    out.add(Check.CDI_SPEC, Status.PASS, "host", f"CDI spec{'s' if len(specs) > 1 else ''} of kind {cdi.GPU_KIND}: "
            + ", ".join(f"{s.path} ({len(s.devices)} devices)" for s in specs) + errors)


def _check_cdi_runtime(out: _Findings, facts: HostFacts) -> None:
    c, cv = facts.containerd, facts.containerd_version
    if isinstance(c, Missing):
        out.add(Check.CDI_RUNTIME, Status.UNKNOWN, "host", "cannot tell whether containerd injects CDI devices",
                c.reason, _containerd_fix(c))
        return
    setting = c.enable_cdi
    fix = ('set enable_cdi = true in the CRI plugin\'s table (plugins."io.containerd.grpc.v1.cri" in a version 2 '
           "config) and restart containerd")
    if setting is False:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", "containerd's CRI plugin sets enable_cdi = false",
                "the DRA driver needs a CDI-capable runtime", fix)
        return
    if isinstance(cv, Missing):
        if setting:
            out.add(Check.CDI_RUNTIME, Status.PASS, "host", "containerd's CRI plugin sets enable_cdi = true",
                    f"(its version could not be read: {cv.reason})")
        else:
            out.add(Check.CDI_RUNTIME, Status.UNKNOWN, "host", "enable_cdi is not set and containerd's version "
                    "cannot be read", f"containerd turns CDI on by default from 2.0 only ({cv.reason})",
                    "capture `containerd --version`, or set enable_cdi = true")
        return
    if cv < CDI_CONTAINERD:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", f"containerd {dotted(cv)} has no CDI support",
                f"CDI device injection arrived in containerd {dotted(CDI_CONTAINERD)}", "upgrade containerd to 1.7+ "
                "(2.x turns CDI on by default)")
    elif setting or cv >= CDI_ON_BY_DEFAULT:
        out.add(Check.CDI_RUNTIME, Status.PASS, "host", f"containerd {dotted(cv)} injects CDI devices",
                "enable_cdi = true" if setting else "on by default since 2.0")
    else:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", f"containerd {dotted(cv)} leaves CDI off",
                "enable_cdi defaults to false before containerd 2.0, and the DRA driver needs a CDI-capable runtime",
                fix)


def _check_mig_mode(out: _Findings, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    if cohort.mechanism == DRA:
        want_mig, want_full = "mig" in cohort.device_types, any(t != "mig" for t in cohort.device_types)
        wants = f"device types {', '.join(cohort.device_types)}"
    else:
        want_mig, want_full = cohort.mig_strategy != "none", cohort.mig_strategy == "none"
        wants = f"migStrategy {cohort.mig_strategy}"
    fine = []
    for g in gpus:
        s = _gpu(g)
        if g.mig_capable is None:
            out.add(Check.MIG_MODE, Status.UNKNOWN, s, "MIG mode not read", "the CSV query does not say it",
                    "capture nvidia-smi -q -x")
        elif g.mig_current is not None and g.mig_pending is not None and g.mig_current != g.mig_pending:
            out.add(Check.MIG_MODE, Status.FAIL, s, f"MIG mode change pending (current {g.mig_current}, pending "
                    f"{g.mig_pending})",
                    "the GPU runs its current mode until it is reset, and the node's devices change "
                    "then", "finish the change in a maintenance window (GPU reset or reboot), or revert it")
        elif g.mig_enabled and not want_mig:
            out.add(Check.MIG_MODE, Status.FAIL, s, "MIG mode is enabled", f"cohort {quoted(cohort.name)} has {wants}: "
                    + ("the DRA driver then publishes MIG devices, not the full GPU" if cohort.mechanism == DRA else
                       "the device plugin advertises no full GPU of a MIG-enabled GPU"),
                    "disable MIG (a maintenance operation, owner-controlled) or move the node to a cohort that "
                    "offers MIG with this model's profile table")
        elif not g.mig_enabled and want_mig and not want_full:
            why = "the GPU has no MIG" if not g.mig_capable else "MIG mode is disabled"
            out.add(Check.MIG_MODE, Status.FAIL, s, why,
                    f"cohort {quoted(cohort.name)} has {wants}, which advertises MIG "
                    "devices only", "prepare the MIG geometry first (enable MIG, create instances), or move the node "
                    "to a cohort without MIG" if g.mig_capable else "move the node to a cohort without MIG")
        else:
            fine.append(f"{g.index}: {g.mig_current or 'no MIG'}")
    if fine:
        out.add(Check.MIG_MODE, Status.PASS, "host", f"MIG mode fits {wants} (GPU {'; '.join(fine)})")


def _check_mig_profiles(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    want = dict(cohort.mig_profiles)
    if isinstance(facts.profiles, Missing):
        out.add(Check.MIG_PROFILES, Status.UNKNOWN, "host", "cannot read the MIG profile table", facts.profiles.reason,
                "capture `nvidia-smi mig -lgip`")
        return
    tables = mig.tables(facts.profiles)
    fine = []
    for g in gpus:
        if not g.mig_capable:
            continue
        table = tables.get(g.index)
        if table is None:
            out.add(Check.MIG_PROFILES, Status.UNKNOWN, _gpu(g), "nvidia-smi mig -lgip lists no profile",
                    facts.profiles_text.splitlines()[0] if facts.profiles_text else "no table for this GPU",
                    "run it again with MIG enabled (older drivers list profiles only then)")
            continue
        have, _ = mig.policy_table(table)
        if have == want:
            fine.append(str(g.index))
            continue
        out.add(Check.MIG_PROFILES, Status.FAIL, _gpu(g), "the GPU's MIG profiles differ from the cohort's table ("
                + _table_difference(have, want) + ")", f"cohort {quoted(cohort.name)}'s table decides which "
                "nvidia.com/mig-* requests the webhook admits; a wrong table admits pods that never schedule or denies "
                "ones that could", "give the cohort " + _table_fix(have))
    if fine:
        out.add(Check.MIG_PROFILES, Status.PASS, "host", f"the MIG profile table of GPU {', '.join(fine)} equals "
                f"cohort {quoted(cohort.name)}'s")


def _table_difference(have: dict[str, int], want: dict[str, int]) -> str:
    if not set(have) & set(want):
        shown = lambda t: ", ".join(f"{p}×{n}" for p, n in t.items())
        return f"the host has {shown(have)}; the cohort has {shown(want)}"
    return "; ".join(f"{p}: host {have.get(p, 'none')}, cohort {want.get(p, 'none')}"
                     for p in sorted(set(have) | set(want)) if have.get(p) != want.get(p))


def _table_fix(have: dict[str, int]) -> str:
    model = next((name for name, table in MIG_PROFILE_TABLES.items() if dict(table) == have), None)
    if model:
        return f"mig: {{model: {model}}}"
    return "the mig: profiles that `gpu-admission host inventory` prints for this model"


def _check_mig_devices(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    enabled = [g for g in gpus if g.mig_enabled]
    if not enabled:
        return
    if isinstance(facts.listing, Missing):
        out.add(Check.MIG_DEVICES, Status.UNKNOWN, "host", "cannot read the MIG devices", facts.listing.reason,
                "capture `nvidia-smi -L`")
        return
    listed = {g.index: g.mig_devices or () for g in facts.listing.gpus}
    seen_profiles = set()
    for g in enabled:
        devices = listed.get(g.index, ())
        if not devices:
            out.add(Check.MIG_DEVICES, Status.FAIL, _gpu(g), "MIG is enabled with no GPU instances",
                    "the device plugin advertises nothing for it",
                    "create the cohort's MIG geometry (owner-controlled, "
                    "e.g. with the MIG manager), or disable MIG")
            continue
        profiles = {d.profile for d in devices if d.profile}
        seen_profiles |= profiles
        foreign = sorted(p for p in profiles if p.split("+")[0] not in {q.split("+")[0] for q in cohort.mig_profiles})
        if cohort.mig_strategy == "mixed" and foreign:
            out.add(Check.MIG_DEVICES, Status.FAIL, _gpu(g), f"MIG devices of profiles {', '.join(foreign)}",
                    f"not in cohort {quoted(cohort.name)}'s table, so the webhook denies the nvidia.com/mig-* "
                    "resources "
                    "this node advertises",
                    "fix the cohort's table from `gpu-admission host inventory`, or the geometry")
    if cohort.mig_strategy == "single" and len(seen_profiles) > 1:
        out.add(Check.MIG_DEVICES, Status.FAIL, "host",
                f"MIG devices of several profiles ({', '.join(sorted(seen_profiles))})",
                "migStrategy single needs every MIG device of a node to be of one profile",
                "make the geometry uniform, or use migStrategy mixed")
    elif not any(f.check is Check.MIG_DEVICES and f.status is not Status.PASS for f in out):
        out.add(Check.MIG_DEVICES, Status.PASS, "host", f"MIG devices fit migStrategy {cohort.mig_strategy} ("
                + ", ".join(sorted(seen_profiles)) + ")")


def _check_compute_mode(out: _Findings, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    fine = []
    for g in gpus:
        mode = g.compute_mode
        if mode is None:
            out.add(Check.COMPUTE_MODE, Status.UNKNOWN, _gpu(g), "compute mode not read", "the CSV query does not "
                    "say it", "capture nvidia-smi -q -x")
        elif mode == "Prohibited":
            out.add(Check.COMPUTE_MODE, Status.FAIL, _gpu(g), "compute mode is Prohibited",
                    "no process can create a CUDA context on it", "set it back to Default (nvidia-smi -i "
                    f"{g.index} -c DEFAULT, owner-controlled)")
        elif mode == "Exclusive_Process" and _uses_time_slicing(cohort) and not _uses_mps(cohort):
            out.add(Check.COMPUTE_MODE, Status.FAIL, _gpu(g), "compute mode is Exclusive_Process",
                    f"cohort {quoted(cohort.name)} shares GPUs by time-slicing, and only one process at a time may use "
                    "an "
                    "Exclusive_Process GPU", f"set it back to Default (nvidia-smi -i {g.index} -c DEFAULT)")
        else:
            fine.append(f"{g.index}: {mode}")
    if fine:
        out.add(Check.COMPUTE_MODE, Status.PASS, "host", f"compute mode (GPU {'; '.join(fine)})")


def _check_mps(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    if _uses_mps(cohort):
        on_mig = [g for g in gpus if g.mig_enabled]
        if cohort.mechanism == DEVICE_PLUGIN and on_mig:
            for g in on_mig:
                out.add(Check.MPS, Status.FAIL, _gpu(g), "MIG is enabled on an MPS cohort",
                        "the device plugin does not share MIG devices by MPS", "disable MIG on this node, or share "
                        "by time-slicing")
        else:
            out.add(Check.MPS, Status.PASS, "host", "the GPUs can be shared by MPS (no MIG); the device plugin or "
                    "DRA driver starts its own control daemon")
        return
    if isinstance(facts.processes, Missing):
        out.add(Check.MPS, Status.UNKNOWN, "host", "cannot tell whether an MPS daemon runs", facts.processes.reason,
                "capture `ps -e -o comm=`")
        return
    running = sorted({p for p in facts.processes if p in MPS_PROCESSES})
    if running:
        out.add(Check.MPS, Status.FAIL, "host", f"an MPS daemon runs ({', '.join(running)})",
                f"cohort {quoted(cohort.name)} shares no GPU by MPS, yet CUDA processes that reach its pipe directory "
                "run as "
                "its clients", "find who owns it and stop it, or move the node to the cohort that shares by MPS "
                "(investigate existing MPS ownership rather than clearing nvidia.com/mps.capable)")
    else:
        out.add(Check.MPS, Status.PASS, "host", "no MPS daemon runs",
                f"cohort {quoted(cohort.name)} shares no GPU by MPS")


def _check_node_labels(out: _Findings, node: Node, cohort: Cohort) -> None:
    wrong = [f"{k}={v}" for k, v in cohort.node_labels.items() if node.labels.get(k) != v]
    if wrong:
        out.add(Check.NODE_LABELS, Status.FAIL, f"node {quoted(node.name)}", "lacks the cohort's labels "
                + ", ".join(wrong), f"cohort {quoted(cohort.name)}'s pods are placed by those labels, so they never "
                "land here", "label the node as its cohort's (the GPU owner's inventory process), or check it "
                "against the cohort it is labelled for")
    else:
        out.add(Check.NODE_LABELS, Status.PASS, f"node {quoted(node.name)}", "carries the cohort's labels")


def _check_sharing(out: _Findings, cohort: Cohort, node: Node | None, gpus: tuple[Gpu, ...]) -> None:
    if cohort.mechanism == DRA:
        if cohort.sharing_strategies:
            gates = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
            out.add(Check.SHARING, Status.UNKNOWN, "host", f"DRA sharing ({', '.join(cohort.sharing_strategies)}) is "
                    "the DRA driver's feature gates, not the host's", "they are set in the driver's Helm values",
                    "check featureGates: " + ", ".join(gates[s] for s in cohort.sharing_strategies) + " in the DRA "
                    "driver's release")
        return
    sharing = cohort.time_slicing or cohort.mps
    kind = "time-slicing" if cohort.time_slicing else "MPS"
    units = len(gpus) if gpus and cohort.mig_strategy == "none" else None
    if node is None:
        if sharing is not None:
            replicas = ", ".join(f"{r.name} × {r.replicas}" for r in sharing.resources)
            out.add(Check.SHARING, Status.UNKNOWN, "host", f"the device plugin's {kind} config ({replicas}, "
                    f"renameByDefault {str(sharing.rename_by_default).lower()}) is not on the host",
                    "it lives in the plugin's ConfigMap and shows in the node's capacity, which a host cannot read",
                    "give --node with `kubectl get node NODE -o json` to compare them")
        return
    subject = f"node {quoted(node.name)}"
    before = len(out)
    if sharing is None:
        if node.labels.get("nvidia.com/mps.capable") == "true":
            out.add(Check.SHARING, Status.FAIL, subject, "is labelled nvidia.com/mps.capable=true",
                    f"cohort {quoted(cohort.name)} shares no GPU, and the device plugin chart runs its MPS daemon on "
                    "nodes with that label", "investigate who owns MPS on this node rather than clearing the label")
        shared = sorted(k for k in node.capacity if k.startswith("nvidia.com/") and k.endswith(".shared"))
        if shared:
            out.add(Check.SHARING, Status.FAIL, subject, f"offers shared GPUs ({', '.join(shared)})",
                    f"cohort {quoted(cohort.name)} shares no GPU", "remove the sharing config from the plugin's "
                    "config for this node, or declare it in the cohort")
        for name in cohort.resources:
            have = node.count(name)
            if have is None:
                out.add(Check.SHARING, Status.FAIL, subject, f"offers no {name}", "the device plugin advertises "
                        "nothing here: it is not running on the node, or failed to start", "check the device "
                        "plugin's pod on this node")
            elif units is not None and have != units:
                out.add(Check.SHARING, Status.FAIL, subject, f"offers {name}: {have}, the host has {units} GPUs",
                        f"cohort {quoted(cohort.name)} shares no GPU, so each advertised {name} must be one GPU",
                        "find the sharing or MIG config the plugin applies here")
        if len(out) == before:
            out.add(Check.SHARING, Status.PASS, subject,
                    f"offers {', '.join(f'{n}: {node.count(n)}' for n in cohort.resources)}"
                    + (f" for {units} GPUs" if units is not None else ""))
        return
    for name, r in zip(sharing.exposed_names(), sharing.resources):
        have = node.count(name)
        if have is None:
            out.add(Check.SHARING, Status.FAIL, subject, f"offers no {name}", f"cohort {quoted(cohort.name)} shares "
                    f"{r.name} by {kind} ({r.replicas} replicas), but the plugin's sharing config is not applied to "
                    "this node", "select the plugin's sharing config for the node (its config label), with the "
                    "cohort's replicas and renameByDefault")
        elif units is None:
            out.add(Check.SHARING, Status.UNKNOWN, subject, f"offers {name}: {have}", "the replicas per device "
                    "cannot be told without the GPU count (or with MIG devices)", "compare by hand: "
                    f"{r.replicas} × the devices")
        elif have != r.replicas * units:
            out.add(Check.SHARING, Status.FAIL, subject, f"offers {name}: {have}, not {r.replicas} × {units} GPUs",
                    f"cohort {quoted(cohort.name)} declares {r.replicas} replicas per GPU; the webhook's limits on "
                    "shared requests follow the cohort", "make the plugin's replicas and the cohort's the same")
    if len(out) == before:
        out.add(Check.SHARING, Status.PASS, subject, f"offers the cohort's {kind} replicas ("
                + ", ".join(f"{n}: {node.count(n)}" for n in sharing.exposed_names()) + ")")
