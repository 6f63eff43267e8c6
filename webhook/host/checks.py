"""`host check`: a host against its cohort and the reference deployment's prerequisites (docs/architecture.md).
Pure: a function of the facts, the cohort and the policy. Each finding says what, why and the fix, with a
stable id and a docs link; what cannot be read is `unknown`, never `pass`."""
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
from webhook.policy.messages import N_, Arg, Joined, T, render

STANDALONE_DRA_DRIVER = 565  # DRA driver 0.5.0's released prerequisites (the reference deployment)
OPERATOR_DRA_DRIVER = 580  # GPU Operator's DRA (GPUCluster) workflow (the reference deployment)
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


_WHY = N_("{text}: {why}")
_FIX = N_("{text}; {fix}")


@dataclass(frozen=True, slots=True)
class Finding:
    check: Check
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


def docs_link(policy: Policy, check: Check) -> str:
    """docs/host.md#<id>, beside the rule pages that `docsBaseUrl` names (…/docs/rules)."""
    base = policy.docs_base_url
    root = base[: -len("/rules")] if base.endswith("/rules") else base
    return f"{root}/host.md#{check.value}"


def verdict(findings: list[Finding]) -> Status:
    statuses = {f.status for f in findings}
    return Status.FAIL if Status.FAIL in statuses else Status.UNKNOWN if Status.UNKNOWN in statuses else Status.PASS


class _Findings(list):
    def __init__(self, policy: Policy, language: str):
        super().__init__()
        self.policy = policy
        self.language = language

    def say(self, text: Arg) -> str:
        return render(text, self.language)

    def add(self, check: Check, status: Status, subject: str, what: Arg, why: Arg = "", fix: Arg = "") -> None:
        """A finding; what, why and fix are Text templates (or a tool's own words, quoted as they came)."""
        self.append(Finding(check=check, status=status, subject=subject, what=render(what, self.language),
                            why=render(why, self.language), fix=render(fix, self.language),
                            docs=docs_link(self.policy, check), language=self.language))


def quoted(name: str) -> str:
    return f'"{name}"'


def _gpu(g: Gpu) -> str:
    return f"GPU {g.index} ({g.product_name})"


def _uses_mps(c: Cohort) -> bool:
    return c.mps is not None or "MPS" in c.sharing_strategies


def _uses_time_slicing(c: Cohort) -> bool:
    return c.time_slicing is not None or "TimeSlicing" in c.sharing_strategies


def check_host(facts: HostFacts, cohort: Cohort, policy: Policy, *, handler: str | None = None,
               language: str | None = None) -> list[Finding]:
    """The findings, in `language` (default: the policy's)."""
    out = _Findings(policy, language or policy.language)
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
        out.add(Check.GPUS, Status.UNKNOWN, "host", T("cannot read the GPUs"), facts.smi.reason,
                T("run on the GPU host with the NVIDIA driver installed (nvidia-smi on PATH), or give --from a "
                  "directory captured there; every GPU check below is unknown until then"))
        return ()
    if not facts.smi.gpus:
        out.add(Check.GPUS, Status.FAIL, "host", T("nvidia-smi lists no GPU"),
                T("a GPU cohort's node must have NVIDIA GPUs the driver sees"),
                T("check the driver and the GPUs (nvidia-smi -L), or take the node out of the cohort's labels"))
        return ()
    models = sorted({g.product_name for g in facts.smi.gpus})
    args: dict[str, Arg] = {"count": len(facts.smi.gpus), "models": ", ".join(models), "form": FORMS[facts.smi.form]}
    out.add(Check.GPUS, Status.PASS, "host", T("{count} GPU ({models}), read from `{form}`", **args)
            if len(facts.smi.gpus) == 1 else T("{count} GPUs ({models}), read from `{form}`", **args))
    return facts.smi.gpus


def _check_driver(out: _Findings, facts: HostFacts, cohort: Cohort) -> None:
    assert not isinstance(facts.smi, Missing)
    version = facts.smi.driver_version
    branch = driver_branch(version)
    if branch is None:
        out.add(Check.DRIVER, Status.UNKNOWN, "host", T("cannot read the driver version"),
                T("nvidia-smi printed {version}", version=repr(version)),
                T("capture nvidia-smi -q -x again on the host"))
        return
    if cohort.mechanism != DRA:
        out.add(Check.DRIVER, Status.PASS, "host", T("driver {version}", version=str(version)),
                T("the device-plugin path sets no driver floor of its own; the GPU model, driver branch and OS still "
                  "have to be in NVIDIA's matrix"))
        return
    operator = cohort.manager == "gpu-operator-gpucluster"
    floor = OPERATOR_DRA_DRIVER if operator else STANDALONE_DRA_DRIVER
    path = T("the GPU Operator DRA workflow (GPUCluster)") if operator else T("the standalone NVIDIA DRA driver")
    args: dict[str, Arg] = {"version": str(version), "branch": branch, "floor": floor}
    if branch < floor:
        out.add(Check.DRIVER, Status.FAIL, "host", T("driver {version} (branch {branch}) is below {floor}", **args),
                T("{path} needs driver {floor}+ (cohort {cohort}, manager {manager})", path=path, floor=floor,
                  cohort=quoted(cohort.name), manager=cohort.manager),
                T("install an approved driver of branch {floor} or later, or put the node in a device-plugin cohort",
                  floor=floor))
    else:
        out.add(Check.DRIVER, Status.PASS, "host", T("driver {version} (branch {branch}) meets {floor}+", **args),
                T("the floor of {path} (manager {manager})", path=path, manager=cohort.manager))


def _check_toolkit(out: _Findings, facts: HostFacts, cohort: Cohort) -> None:
    dra = cohort.mechanism == DRA
    floor = DRA_TOOLKIT if dra else DEVICE_PLUGIN_TOOLKIT
    if isinstance(facts.ctk, Missing):
        fix = (T("install the NVIDIA Container Toolkit {floor}+ (nvidia-ctk --version) (a GPU Operator install keeps "
                 "it in /usr/local/nvidia/toolkit), or run where nvidia-ctk is on PATH", floor=dotted(floor))
               if cohort.manager != "standalone" else
               T("install the NVIDIA Container Toolkit {floor}+ (nvidia-ctk --version), or run where nvidia-ctk is "
                 "on PATH", floor=dotted(floor)))
        out.add(Check.TOOLKIT, Status.UNKNOWN, "host", T("cannot read the NVIDIA Container Toolkit version"),
                facts.ctk.reason, fix)
        return
    version, pre = facts.ctk
    shown: Arg = T("{version} (a pre-release)", version=dotted(version)) if pre else dotted(version)
    # a pre-release of the floor's first release (1.18.0-rc.1) comes before it
    if version[:2] < floor or (pre and version[:2] == floor and not any(version[2:])):
        why = (T("the DRA driver's prerequisites need Toolkit 1.18+ to generate and refresh its CDI specs") if dra
               else T("the device plugin's prerequisites need nvidia-container-toolkit {floor}+", floor=dotted(floor)))
        out.add(Check.TOOLKIT, Status.FAIL, "host", T("NVIDIA Container Toolkit {version} is below {floor}",
                                                      version=shown, floor=dotted(floor)), why,
                T("upgrade the nvidia-container-toolkit packages to a {floor}+ release", floor=dotted(floor)))
        return
    out.add(Check.TOOLKIT, Status.PASS, "host", T("NVIDIA Container Toolkit {version}", version=shown),
            T("meets {floor}+", floor=dotted(floor)))


def _check_containerd(out: _Findings, facts: HostFacts) -> None:
    c = facts.containerd
    if isinstance(c, Missing):
        out.add(Check.CONTAINERD, Status.UNKNOWN, "host", T("cannot read containerd's configuration"), c.reason,
                _containerd_fix(c))
        return
    files = ", ".join(f.path for f in c.files)
    before = len(out)
    for error in c.errors:
        out.add(Check.CONTAINERD, Status.FAIL if "not valid TOML" in error else Status.UNKNOWN, "host",
                T("a containerd drop-in cannot be used"), error,
                T("fix or remove the file (containerd refuses to start on a drop-in that does not parse), or run as "
                  "root to read it"))
    newer = c.newer_drop_ins()
    if newer:
        cv = facts.containerd_version
        detail = ", ".join(f"{f.path} (version {f.version})" for f in newer)
        root: dict[str, Arg] = {"path": c.files[0].path, "version": str(c.files[0].version)}
        fix = T("rewrite the drop-in in the root's version (nvidia-ctk with RUNTIME_CONFIG_SOURCE=file reads the root "
                "file)")
        what = T("drop-ins of a newer config version: {files}", files=detail)
        if isinstance(cv, Missing):
            out.add(Check.CONTAINERD, Status.UNKNOWN, "host", what,
                    T("the root config {path} is version {version}; containerd {checked}+ refuses to start on them, "
                      "and its version cannot be read ({reason})", **root, checked=dotted(DROP_IN_VERSION_CHECKED),
                      reason=cv.reason), fix)
        elif cv >= DROP_IN_VERSION_CHECKED:
            out.add(Check.CONTAINERD, Status.FAIL, "host", what,
                    T("the root config {path} is version {version}, and containerd {containerd} refuses to start on a "
                      "drop-in above the root's version", **root, containerd=dotted(cv)), fix)
    if len(out) == before:
        out.add(Check.CONTAINERD, Status.PASS, "host", T("containerd configuration read: {files}", files=files))


def _containerd_fix(missing: Missing) -> Arg:
    if missing.absent:
        return T("give --containerd-config PATH where this host's containerd config lives (k3s, microk8s and some "
                 "managed images keep it elsewhere); a containerd with no config file runs its defaults, which have "
                 "no nvidia handler")
    return T("run as root on the host, or give --containerd-config PATH")


def _check_handler(out: _Findings, facts: HostFacts, handler: str) -> None:
    c = facts.containerd
    if isinstance(c, Missing):
        out.add(Check.HANDLER, Status.UNKNOWN, "host", T("cannot tell whether containerd has the {handler} runtime "
                "handler", handler=quoted(handler)), c.reason, _containerd_fix(c))
        return
    found = c.runtime(handler)
    if found is None:
        if c.errors:
            out.add(Check.HANDLER, Status.UNKNOWN, "host", T("no {handler} runtime handler in the readable "
                    "containerd configuration", handler=quoted(handler)),
                    T("some drop-ins could not be read: {errors}", errors="; ".join(c.errors)),
                    T("run as root so that every drop-in is read"))
            return
        out.add(Check.HANDLER, Status.FAIL, "host",
                T("containerd has no {handler} runtime handler (read {files})", handler=quoted(handler),
                  files=", ".join(f.path for f in c.files)),
                T("the cohort's RuntimeClass must be backed by a configured containerd handler {handler}; a "
                  "RuntimeClass name alone configures nothing, and its pods fail with 'no runtime for "
                  "{handler} is configured'", handler=quoted(handler)),
                T("configure it: `{command}`", command=CONFIGURE_CONTAINERD))
        return
    runtime, where = found
    if runtime.binary_name is None:
        out.add(Check.HANDLER, Status.FAIL, "host", T("runtime handler {handler} in {path} names no "
                "options.BinaryName", handler=quoted(handler), path=where.path),
                T("containerd then runs plain runc for it, which injects no GPU"),
                T("reconfigure it: `{command}`", command=CONFIGURE_CONTAINERD))
        return
    runs = T("runtime handler {handler} in {path} runs {binary}", handler=quoted(handler), path=where.path,
             binary=runtime.binary_name)
    if "nvidia-container-runtime" not in runtime.binary_name:
        out.add(Check.HANDLER, Status.UNKNOWN, "host", runs,
                T("that is not the NVIDIA Container Runtime; only a wrapper around it injects GPUs"),
                T("confirm it wraps nvidia-container-runtime, or reconfigure with nvidia-ctk"))
    else:
        out.add(Check.HANDLER, Status.PASS, "host", runs)


def _check_cdi_spec(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...]) -> None:
    errors = f" ({'; '.join(facts.cdi_errors)})" if facts.cdi_errors else ""
    if isinstance(facts.cdi_specs, Missing):
        out.add(Check.CDI_SPEC, Status.UNKNOWN, "host", T("cannot read the CDI specs"), facts.cdi_specs.reason + errors,
                T("run as root on the host"))
        return
    specs = [s for s in facts.cdi_specs if s.kind == cdi.GPU_KIND and s.devices]
    if not specs:
        out.add(Check.CDI_SPEC, Status.FAIL, "host", T("no CDI spec of kind {kind} under /etc/cdi or "
                "/var/run/cdi{errors}", kind=cdi.GPU_KIND, errors=errors),
                T("a DRA cohort's GPUs reach containers through CDI, from a spec of the host's GPUs"),
                T("generate one: `{command}` (Toolkit 1.18+ also keeps /var/run/cdi/nvidia.yaml current with its "
                  "nvidia-cdi-refresh service)", command=GENERATE_CDI))
        return
    indexed = max(len([d for d in s.devices if d.isdigit()]) for s in specs)
    if gpus and 0 < indexed < len(gpus):
        out.add(Check.CDI_SPEC, Status.FAIL, "host", T("the CDI specs name {indexed} GPUs by index, the host has "
                "{count}", indexed=indexed, count=len(gpus)),
                T("a spec written before GPUs were added or replaced leaves some out"),
                T("regenerate it: `{command}`", command=GENERATE_CDI))
        return
    listed = Joined(tuple(T("{path} ({count} devices)", path=s.path, count=len(s.devices)) for s in specs))
    out.add(Check.CDI_SPEC, Status.PASS, "host", (T("CDI specs of kind {kind}: {specs}{errors}", kind=cdi.GPU_KIND,
                                                    specs=listed, errors=errors) if len(specs) > 1 else
                                                  T("CDI spec of kind {kind}: {specs}{errors}", kind=cdi.GPU_KIND,
                                                    specs=listed, errors=errors)))


def _check_cdi_runtime(out: _Findings, facts: HostFacts) -> None:
    c, cv = facts.containerd, facts.containerd_version
    if isinstance(c, Missing):
        out.add(Check.CDI_RUNTIME, Status.UNKNOWN, "host", T("cannot tell whether containerd injects CDI devices"),
                c.reason, _containerd_fix(c))
        return
    setting = c.enable_cdi
    fix = T('set enable_cdi = true in the CRI plugin\'s table (plugins."io.containerd.grpc.v1.cri" in a version 2 '
            "config) and restart containerd")
    if setting is False:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", T("containerd's CRI plugin sets enable_cdi = false"),
                T("the DRA driver needs a CDI-capable runtime"), fix)
        return
    if isinstance(cv, Missing):
        if setting:
            out.add(Check.CDI_RUNTIME, Status.PASS, "host", T("containerd's CRI plugin sets enable_cdi = true"),
                    T("(its version could not be read: {reason})", reason=cv.reason))
        else:
            out.add(Check.CDI_RUNTIME, Status.UNKNOWN, "host", T("enable_cdi is not set and containerd's version "
                    "cannot be read"),
                    T("containerd turns CDI on by default from 2.0 only ({reason})", reason=cv.reason),
                    T("capture `containerd --version`, or set enable_cdi = true"))
        return
    version = dotted(cv)
    if cv < CDI_CONTAINERD:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", T("containerd {version} has no CDI support", version=version),
                T("CDI device injection arrived in containerd {first}", first=dotted(CDI_CONTAINERD)),
                T("upgrade containerd to 1.7+ (2.x turns CDI on by default)"))
    elif setting or cv >= CDI_ON_BY_DEFAULT:
        out.add(Check.CDI_RUNTIME, Status.PASS, "host", T("containerd {version} injects CDI devices", version=version),
                "enable_cdi = true" if setting else T("on by default since 2.0"))
    else:
        out.add(Check.CDI_RUNTIME, Status.FAIL, "host", T("containerd {version} leaves CDI off", version=version),
                T("enable_cdi defaults to false before containerd 2.0, and the DRA driver needs a CDI-capable runtime"),
                fix)


def _check_mig_mode(out: _Findings, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    if cohort.mechanism == DRA:
        want_mig, want_full = "mig" in cohort.device_types, any(t != "mig" for t in cohort.device_types)
        wants = T("device types {types}", types=", ".join(cohort.device_types))
    else:
        want_mig, want_full = cohort.mig_strategy != "none", cohort.mig_strategy == "none"
        wants = T("migStrategy {strategy}", strategy=cohort.mig_strategy)
    fine = []
    for g in gpus:
        s = _gpu(g)
        if g.mig_capable is None:
            out.add(Check.MIG_MODE, Status.UNKNOWN, s, T("MIG mode not read"), T("the CSV query does not say it"),
                    T("capture nvidia-smi -q -x"))
        elif g.mig_current is not None and g.mig_pending is not None and g.mig_current != g.mig_pending:
            out.add(Check.MIG_MODE, Status.FAIL, s, T("MIG mode change pending (current {current}, pending "
                    "{pending})", current=g.mig_current, pending=g.mig_pending),
                    T("the GPU runs its current mode until it is reset, and the node's devices change then"),
                    T("finish the change in a maintenance window (GPU reset or reboot), or revert it"))
        elif g.mig_enabled and not want_mig:
            out.add(Check.MIG_MODE, Status.FAIL, s, T("MIG mode is enabled"),
                    T("cohort {cohort} has {wants}: the DRA driver then publishes MIG devices, not the full GPU",
                      cohort=quoted(cohort.name), wants=wants) if cohort.mechanism == DRA else
                    T("cohort {cohort} has {wants}: the device plugin advertises no full GPU of a MIG-enabled GPU",
                      cohort=quoted(cohort.name), wants=wants),
                    T("disable MIG (a maintenance operation, owner-controlled) or move the node to a cohort that "
                      "offers MIG with this model's profile table"))
        elif not g.mig_enabled and want_mig and not want_full:
            why = T("the GPU has no MIG") if not g.mig_capable else T("MIG mode is disabled")
            out.add(Check.MIG_MODE, Status.FAIL, s, why, T("cohort {cohort} has {wants}, which advertises MIG "
                    "devices only", cohort=quoted(cohort.name), wants=wants),
                    T("prepare the MIG geometry first (enable MIG, create instances), or move the node "
                      "to a cohort without MIG") if g.mig_capable else T("move the node to a cohort without MIG"))
        else:
            fine.append(f"{g.index}: {out.say(g.mig_current or T('no MIG'))}")
    if fine:
        out.add(Check.MIG_MODE, Status.PASS, "host", T("MIG mode fits {wants} (GPU {gpus})", wants=wants,
                                                       gpus="; ".join(fine)))


def _check_mig_profiles(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    want = dict(cohort.mig_profiles)
    if isinstance(facts.profiles, Missing):
        out.add(Check.MIG_PROFILES, Status.UNKNOWN, "host", T("cannot read the MIG profile table"),
                facts.profiles.reason, T("capture `nvidia-smi mig -lgip`"))
        return
    tables = mig.tables(facts.profiles)
    fine = []
    for g in gpus:
        if not g.mig_capable:
            continue
        table = tables.get(g.index)
        if table is None:
            out.add(Check.MIG_PROFILES, Status.UNKNOWN, _gpu(g), T("nvidia-smi mig -lgip lists no profile"),
                    facts.profiles_text.splitlines()[0] if facts.profiles_text else T("no table for this GPU"),
                    T("run it again with MIG enabled (older drivers list profiles only then)"))
            continue
        have, _ = mig.policy_table(table)
        if have == want:
            fine.append(str(g.index))
            continue
        out.add(Check.MIG_PROFILES, Status.FAIL, _gpu(g), T("the GPU's MIG profiles differ from the cohort's table "
                "({difference})", difference=_table_difference(out, have, want)),
                T("cohort {cohort}'s table decides which nvidia.com/mig-* requests the webhook admits; a wrong table "
                  "admits pods that never schedule or denies ones that could", cohort=quoted(cohort.name)),
                T("give the cohort {table}", table=_table_fix(have)))
    if fine:
        out.add(Check.MIG_PROFILES, Status.PASS, "host", T("the MIG profile table of GPU {gpus} equals cohort "
                "{cohort}'s", gpus=", ".join(fine), cohort=quoted(cohort.name)))


def _table_difference(out: _Findings, have: dict[str, int], want: dict[str, int]) -> Arg:
    if not set(have) & set(want):
        shown = lambda t: ", ".join(f"{p}×{n}" for p, n in t.items())
        return T("the host has {host}; the cohort has {cohort}", host=shown(have), cohort=shown(want))
    none = out.say(T("none"))
    return "; ".join(out.say(T("{profile}: host {host}, cohort {cohort}", profile=p, host=have.get(p, none),
                                 cohort=want.get(p, none)))
                     for p in sorted(set(have) | set(want)) if have.get(p) != want.get(p))


def _table_fix(have: dict[str, int]) -> Arg:
    model = next((name for name, table in MIG_PROFILE_TABLES.items() if dict(table) == have), None)
    if model:
        return f"mig: {{model: {model}}}"
    return T("the mig: profiles that `gpu-admission host inventory` prints for this model")


def _check_mig_devices(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    enabled = [g for g in gpus if g.mig_enabled]
    if not enabled:
        return
    if isinstance(facts.listing, Missing):
        out.add(Check.MIG_DEVICES, Status.UNKNOWN, "host", T("cannot read the MIG devices"), facts.listing.reason,
                T("capture `nvidia-smi -L`"))
        return
    listed = {g.index: g.mig_devices or () for g in facts.listing.gpus}
    seen_profiles = set()
    for g in enabled:
        devices = listed.get(g.index, ())
        if not devices:
            out.add(Check.MIG_DEVICES, Status.FAIL, _gpu(g), T("MIG is enabled with no GPU instances"),
                    T("the device plugin advertises nothing for it"), T("create the cohort's MIG geometry "
                    "(owner-controlled, e.g. with the MIG manager), or disable MIG"))
            continue
        profiles = {d.profile for d in devices if d.profile}
        seen_profiles |= profiles
        foreign = sorted(p for p in profiles if p.split("+")[0] not in {q.split("+")[0] for q in cohort.mig_profiles})
        if cohort.mig_strategy == "mixed" and foreign:
            out.add(Check.MIG_DEVICES, Status.FAIL, _gpu(g), T("MIG devices of profiles {profiles}",
                                                               profiles=", ".join(foreign)),
                    T("not in cohort {cohort}'s table, so the webhook denies the nvidia.com/mig-* resources this node "
                      "advertises", cohort=quoted(cohort.name)),
                    T("fix the cohort's table from `gpu-admission host inventory`, or the geometry"))
    seen = ", ".join(sorted(seen_profiles))
    if cohort.mig_strategy == "single" and len(seen_profiles) > 1:
        out.add(Check.MIG_DEVICES, Status.FAIL, "host", T("MIG devices of several profiles ({profiles})",
                                                          profiles=seen),
                T("migStrategy single needs every MIG device of a node to be of one profile"),
                T("make the geometry uniform, or use migStrategy mixed"))
    elif not any(f.check is Check.MIG_DEVICES and f.status is not Status.PASS for f in out):
        out.add(Check.MIG_DEVICES, Status.PASS, "host", T("MIG devices fit migStrategy {strategy} ({profiles})",
                                                          strategy=cohort.mig_strategy, profiles=seen))


def _check_compute_mode(out: _Findings, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    fine = []
    for g in gpus:
        mode = g.compute_mode
        if mode is None:
            out.add(Check.COMPUTE_MODE, Status.UNKNOWN, _gpu(g), T("compute mode not read"),
                    T("the CSV query does not say it"), T("capture nvidia-smi -q -x"))
        elif mode == "Prohibited":
            out.add(Check.COMPUTE_MODE, Status.FAIL, _gpu(g), T("compute mode is Prohibited"),
                    T("no process can create a CUDA context on it"),
                    T("set it back to Default (nvidia-smi -i {index} -c DEFAULT, owner-controlled)", index=g.index))
        elif mode == "Exclusive_Process" and _uses_time_slicing(cohort) and not _uses_mps(cohort):
            out.add(Check.COMPUTE_MODE, Status.FAIL, _gpu(g), T("compute mode is Exclusive_Process"),
                    T("cohort {cohort} shares GPUs by time-slicing, and only one process at a time may use an "
                      "Exclusive_Process GPU", cohort=quoted(cohort.name)),
                    T("set it back to Default (nvidia-smi -i {index} -c DEFAULT)", index=g.index))
        else:
            fine.append(f"{g.index}: {mode}")
    if fine:
        out.add(Check.COMPUTE_MODE, Status.PASS, "host", T("compute mode (GPU {gpus})", gpus="; ".join(fine)))


def _check_mps(out: _Findings, facts: HostFacts, gpus: tuple[Gpu, ...], cohort: Cohort) -> None:
    if _uses_mps(cohort):
        on_mig = [g for g in gpus if g.mig_enabled]
        if cohort.mechanism == DEVICE_PLUGIN and on_mig:
            for g in on_mig:
                out.add(Check.MPS, Status.FAIL, _gpu(g), T("MIG is enabled on an MPS cohort"),
                        T("the device plugin does not share MIG devices by MPS"),
                        T("disable MIG on this node, or share by time-slicing"))
        else:
            out.add(Check.MPS, Status.PASS, "host", T("the GPUs can be shared by MPS (no MIG); the device plugin or "
                    "DRA driver starts its own control daemon"))
        return
    if isinstance(facts.processes, Missing):
        out.add(Check.MPS, Status.UNKNOWN, "host", T("cannot tell whether an MPS daemon runs"), facts.processes.reason,
                T("capture `ps -e -o comm=`"))
        return
    running = sorted({p for p in facts.processes if p in MPS_PROCESSES})
    if running:
        out.add(Check.MPS, Status.FAIL, "host", T("an MPS daemon runs ({processes})", processes=", ".join(running)),
                T("cohort {cohort} shares no GPU by MPS, yet CUDA processes that reach its pipe directory run as its "
                  "clients", cohort=quoted(cohort.name)),
                T("find who owns it and stop it, or move the node to the cohort that shares by MPS (investigate "
                  "existing MPS ownership rather than clearing nvidia.com/mps.capable)"))
    else:
        out.add(Check.MPS, Status.PASS, "host", T("no MPS daemon runs"),
                T("cohort {cohort} shares no GPU by MPS", cohort=quoted(cohort.name)))


def _check_node_labels(out: _Findings, node: Node, cohort: Cohort) -> None:
    wrong = [f"{k}={v}" for k, v in cohort.node_labels.items() if node.labels.get(k) != v]
    if wrong:
        out.add(Check.NODE_LABELS, Status.FAIL, f"node {quoted(node.name)}", T("lacks the cohort's labels {labels}",
                                                                              labels=", ".join(wrong)),
                T("cohort {cohort}'s pods are placed by those labels, so they never land here",
                  cohort=quoted(cohort.name)),
                T("label the node as its cohort's (the GPU owner's inventory process), or check it against the cohort "
                  "it is labelled for"))
    else:
        out.add(Check.NODE_LABELS, Status.PASS, f"node {quoted(node.name)}", T("carries the cohort's labels"))


def _check_sharing(out: _Findings, cohort: Cohort, node: Node | None, gpus: tuple[Gpu, ...]) -> None:
    if cohort.mechanism == DRA:
        if cohort.sharing_strategies:
            gates = {"TimeSlicing": "TimeSlicingSettings", "MPS": "MPSSupport"}
            out.add(Check.SHARING, Status.UNKNOWN, "host", T("DRA sharing ({strategies}) is the DRA driver's feature "
                    "gates, not the host's", strategies=", ".join(cohort.sharing_strategies)),
                    T("they are set in the driver's Helm values"),
                    T("check featureGates: {gates} in the DRA driver's release",
                      gates=", ".join(gates[s] for s in cohort.sharing_strategies)))
        return
    sharing = cohort.time_slicing or cohort.mps
    kind = "time-slicing" if cohort.time_slicing else "MPS"
    units = len(gpus) if gpus and cohort.mig_strategy == "none" else None
    if node is None:
        if sharing is not None:
            replicas = ", ".join(f"{r.name} × {r.replicas}" for r in sharing.resources)
            out.add(Check.SHARING, Status.UNKNOWN, "host", T("the device plugin's {kind} config ({replicas}, "
                    "renameByDefault {rename}) is not on the host", kind=kind, replicas=replicas,
                    rename=str(sharing.rename_by_default).lower()),
                    T("it lives in the plugin's ConfigMap and shows in the node's capacity, which a host cannot read"),
                    T("give --node with `kubectl get node NODE -o json` to compare them"))
        return
    subject = f"node {quoted(node.name)}"
    before = len(out)
    if sharing is None:
        if node.labels.get("nvidia.com/mps.capable") == "true":
            out.add(Check.SHARING, Status.FAIL, subject, T("is labelled nvidia.com/mps.capable=true"),
                    T("cohort {cohort} shares no GPU, and the device plugin chart runs its MPS daemon on nodes with "
                      "that label", cohort=quoted(cohort.name)),
                    T("investigate who owns MPS on this node rather than clearing the label"))
        shared = sorted(k for k in node.capacity if k.startswith("nvidia.com/") and k.endswith(".shared"))
        if shared:
            out.add(Check.SHARING, Status.FAIL, subject, T("offers shared GPUs ({resources})",
                                                           resources=", ".join(shared)),
                    T("cohort {cohort} shares no GPU", cohort=quoted(cohort.name)),
                    T("remove the sharing config from the plugin's config for this node, or declare it in the cohort"))
        for name in cohort.resources:
            have = node.count(name)
            if have is None:
                out.add(Check.SHARING, Status.FAIL, subject, T("offers no {resource}", resource=name),
                        T("the device plugin advertises nothing here: it is not running on the node, or failed to "
                          "start"), T("check the device plugin's pod on this node"))
            elif units is not None and have != units:
                out.add(Check.SHARING, Status.FAIL, subject, T("offers {resource}: {count}, the host has {units} GPUs",
                                                               resource=name, count=have, units=units),
                        T("cohort {cohort} shares no GPU, so each advertised {resource} must be one GPU",
                          cohort=quoted(cohort.name), resource=name),
                        T("find the sharing or MIG config the plugin applies here"))
        if len(out) == before:
            offered = ", ".join(f"{n}: {node.count(n)}" for n in cohort.resources)
            out.add(Check.SHARING, Status.PASS, subject, T("offers {offered}", offered=offered) if units is None else
                    T("offers {offered} for {units} GPUs", offered=offered, units=units))
        return
    for name, r in zip(sharing.exposed_names(), sharing.resources):
        have = node.count(name)
        if have is None:
            out.add(Check.SHARING, Status.FAIL, subject, T("offers no {resource}", resource=name),
                    T("cohort {cohort} shares {shared} by {kind} ({replicas} replicas), but the plugin's sharing "
                      "config is not applied to this node", cohort=quoted(cohort.name), shared=r.name, kind=kind,
                      replicas=r.replicas),
                    T("select the plugin's sharing config for the node (its config label), with the cohort's replicas "
                      "and renameByDefault"))
        elif units is None:
            out.add(Check.SHARING, Status.UNKNOWN, subject, T("offers {resource}: {count}", resource=name, count=have),
                    T("the replicas per device cannot be told without the GPU count (or with MIG devices)"),
                    T("compare by hand: {replicas} × the devices", replicas=r.replicas))
        elif have != r.replicas * units:
            out.add(Check.SHARING, Status.FAIL, subject, T("offers {resource}: {count}, not {replicas} × {units} GPUs",
                                                           resource=name, count=have, replicas=r.replicas, units=units),
                    T("cohort {cohort} declares {replicas} replicas per GPU; the webhook's limits on shared requests "
                      "follow the cohort", cohort=quoted(cohort.name), replicas=r.replicas),
                    T("make the plugin's replicas and the cohort's the same"))
    if len(out) == before:
        out.add(Check.SHARING, Status.PASS, subject, T("offers the cohort's {kind} replicas ({offered})", kind=kind,
                offered=", ".join(f"{n}: {node.count(n)}" for n in sharing.exposed_names())))
