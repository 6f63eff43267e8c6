"""device-access-bypass: ways to reach GPUs that bypass their allocation owner.

- A container (regular, init or ephemeral) sets `securityContext.privileged: true` in a pod that
  requests a GPU or is bound for a cohort (in a `kubectl debug` update: the added ephemeral containers).
- In any pod: a `hostPath` volume whose path, resolved as the host's kernel resolves it, is under
  `/dev/nvidia`, `/run/nvidia`, `/var/lib/kubelet/device-plugins` or `/var/lib/kubelet/plugins`, or is a
  directory above one of them.
- In any pod: a mount of the host's `/dev/null` at `/var/run/nvidia-container-devices/<device>`, which the
  NVIDIA container toolkit reads as a device request.
- In any pod: a pod (or pod template) annotation under a CDI or NRI device prefix
  (`cdi.k8s.io/`, `nvidia.cdi.k8s.io/`, `cdi-devices.nri.io/`, and the policy's
  `platformDeviceAnnotations`)."""
import re

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.annotations import ANNOTATION_PREFIXES
from webhook.objects.hostpaths import clean, exposes, host_path
from webhook.objects.podspec import PodView
from webhook.policy.cel import Validation, lit, strings
from webhook.policy.cel.pods import S, all_containers, at, some
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, If, Lines, cat, msg
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition, InTree, Variables, always
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, Arg, T, who
from webhook.policy.results import Finding

# Host paths that hand a container GPUs or the plugins' sockets without allocation.
DEVICE_PATHS = ("/dev/nvidia", "/run/nvidia", "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins")
# The toolkit's volume-mounts device list: a mount of the host's /dev/null whose cleaned destination begins
# with this literal string asks for the device named by the rest (nvidia-container-toolkit,
# internal/config/image/cuda_image.go, requestsFromMounts).
DEVICE_LIST_DIR = "/var/run/nvidia-container-devices"
# What a host path's and an annotation's findings say (its in-tree export, below, writes the same for the apiserver).
VOLUME = N_('volume "{volume}" mounts the host path {host} ({path}){resolved}{above}')
RESOLVED = N_(", which the host resolves to {path}")
ABOVE = N_(", a directory above {paths}")
VOLUME_WHY = T("host GPU device nodes and plugin sockets give GPUs without allocation")
VOLUME_FIX = T("remove the hostPath volume; GPUs come through resources.limits or a ResourceClaim")
ANNOTATION = N_("annotation {key} ({path}) asks the runtime for CDI devices")
ANNOTATION_WHY = T("CDI/NRI device annotations inject devices without allocation")
ANNOTATION_FIX = T("remove the annotation")
PLATFORM = N_('annotation {key} ({path}) has the platform mount the host devices {devices} into container '
              '"{container}"')
PLATFORM_WHY = T("a platform's device injection hands the container GPUs outside any allocation owner")
PLATFORM_FIX = T("remove the GPU device paths from the annotation; GPUs come through resources.limits or a "
                 "ResourceClaim")
_HOST_PATHS = re.compile(r"/[^\s\"',\]\}]+")
MAX_LISTED_DEVICES = 8


def platform_devices(value: object) -> list[str]:
    """The GPU device paths among the host paths a platform annotation's value lists (GKE writes a YAML list of
    `- path: /dev/nvidia0` entries), recognised as the hostPath check recognises them."""
    if type(value) is not str:
        return []
    return list(dict.fromkeys(p for p in _HOST_PATHS.findall(value) if device_host_path(p)))


def device_host_path(path: str) -> bool:
    """The host path, as the kernel resolves it, is a GPU device or plugin socket path, inside one, or a
    directory above one."""
    if ("nvidia" not in path and "kubelet" not in path and "proc" not in path and "/." not in path
            and "//" not in path and path.count("/") > 3):
        return False  # fast path: already normal, deeper than any parent of a sensitive path, names none
    return exposes(host_path(path), DEVICE_PATHS)


def device_list_request(mount_path: str) -> str | None:
    """The device the toolkit reads from a /dev/null mount at `mount_path` ("all", "GPU-…"), else None."""
    if "nvidia-container-devices" not in mount_path:
        return None
    destination = clean(mount_path)
    if not destination.startswith(DEVICE_LIST_DIR):
        return None
    return destination[len(DEVICE_LIST_DIR):].strip("/") or None


def _dev_null_volumes(view: PodView) -> frozenset[str]:
    """Names of the volumes that are the host's /dev/null: the only source the toolkit reads requests from."""
    out = set()
    for vol in as_list(view.spec.get("volumes")):
        if type(vol) is dict and "hostPath" in vol:
            path = as_str(as_dict(vol["hostPath"]).get("path"))
            name = as_str(vol.get("name"))
            if path and name and host_path(path) == "/dev/null":
                out.add(name)
    return frozenset(out)


def _resolved(host: str) -> tuple[Arg, Arg]:
    """What the host's kernel makes of the path, where that is not what it says, and which sensitive paths a
    directory above them hands over."""
    normal = host_path(host)
    resolved: Arg = T(RESOLVED, path=normal) \
        if normal.rstrip("/") != host.strip().rstrip("/") else ""
    below = [s for s in DEVICE_PATHS if s.startswith(normal.rstrip("/") + "/")]
    above: Arg = T(ABOVE, paths=", ".join(s + "*" if s.endswith("nvidia") else s for s in below)) if below else ""
    return resolved, above


def _meta_path(view: PodView) -> str:
    return "metadata" if view.is_pod else view.prefix[: -len(".spec")] + ".metadata"


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    view = facts.view
    out = []
    gpu_scope = facts.choice.cohort is not None or facts.is_gpu
    # Say what is true: a GPU pod, or a pod that asks for no GPU but runs on a GPU cohort's nodes.
    where: Arg = T("a GPU pod") if facts.is_gpu else \
        T('a pod bound for the GPU cohort "{cohort}"', cohort=facts.choice.cohort.name) if facts.choice.cohort else ""
    dev_null = None
    for c in view.containers:
        if gpu_scope and c.security.get("privileged") is True:
            path = f"{c.path}.securityContext.privileged"
            out.append(Finding(
                path=path,
                what=T("{container} is privileged ({path}) in {where}", container=who(c), path=path, where=where),
                why=T("a privileged container sees every GPU on the node"),
                fix=T("remove privileged: true; GPUs come through resources.limits or a ResourceClaim")))
        for i, mount in enumerate(c.mounts):
            mp = mount.get("mountPath") if type(mount) is dict else None
            if type(mp) is not str or not mp:
                continue
            device = device_list_request(mp)
            if device is None:
                continue
            if dev_null is None:
                dev_null = _dev_null_volumes(view)
            if mount.get("name") in dev_null:
                path = f"{c.path}.volumeMounts[{i}].mountPath"
                out.append(Finding(
                    path=path,
                    what=T("{container} mounts the host's /dev/null at {mount} ({path})", container=who(c), mount=mp,
                           path=path),
                    why=T('the NVIDIA container toolkit reads the mount as a request for device "{device}", '
                          "bypassing allocation", device=device),
                    fix=T("remove the mount")))
    for i, vol in enumerate(as_list(view.spec.get("volumes"))):
        if type(vol) is not dict or "hostPath" not in vol:
            continue
        host = as_str(as_dict(vol["hostPath"]).get("path"))
        if host and device_host_path(host):
            path = f"{view.prefix}.volumes[{i}].hostPath.path"
            resolved, above = _resolved(host)
            out.append(Finding(
                path=path,
                what=T(VOLUME, volume=as_str(vol.get("name")) or str(i), host=host, path=path, resolved=resolved,
                       above=above),
                why=VOLUME_WHY,
                fix=VOLUME_FIX))
    annotations = view.meta.get("annotations")
    cdi = [k for k in annotations if type(k) is str and k.startswith(ANNOTATION_PREFIXES)] \
        if type(annotations) is dict else ()
    platform = policy.platform_device_annotations
    injected = [k for k in annotations if type(k) is str and k.startswith(platform)] \
        if platform and annotations and type(annotations) is dict else ()
    if injected and type(annotations) is dict:
        for key in sorted(injected):
            devices = platform_devices(annotations[key])
            if not devices:
                continue
            prefix = next(p for p in platform if key.startswith(p))
            path = f'{_meta_path(view)}.annotations["{key}"]'
            shown = devices[:MAX_LISTED_DEVICES] + (["…"] if len(devices) > MAX_LISTED_DEVICES else [])
            out.append(Finding(
                path=path,
                what=T(PLATFORM, key=key, path=path, devices=", ".join(shown), container=key[len(prefix):]),
                why=PLATFORM_WHY,
                fix=PLATFORM_FIX))
    if cdi:
        for key in sorted(cdi):
            path = f'{_meta_path(view)}.annotations["{key}"]'
            out.append(Finding(
                path=path,
                what=T(ANNOTATION, key=key, path=path),
                why=ANNOTATION_WHY,
                fix=ANNOTATION_FIX))
    return out


# ----------------------------------------------------------------------------------- its in-tree export's coverage

DEVICE_LIST_MARK = "nvidia-container-devices"
# A host path the kernel resolves to itself: absolute, no `.`/`..`/empty parts, no link (/var/run, /proc/<pid>/root).
PLAIN_PATH = r"^(/[A-Za-z0-9_.@+:,=~-]+)+$"
_PLAIN = re.compile(PLAIN_PATH)
DOTS = r"(^|/)\.\.?(/|$)"
_DOTS = re.compile(DOTS)


def plain_path(path: str) -> bool:
    return bool(_PLAIN.fullmatch(path)) and not _DOTS.search(path) and not (
        path in ("/var/run", "/proc") or path.startswith(("/var/run/", "/proc/")))


def covers(view: PodView, policy: Policy) -> bool:
    """No platform device annotation, privileged container or device-list mount, and every hostPath volume's path
    one the host resolves to itself."""
    platform = policy.platform_device_annotations
    annotations = view.meta.get("annotations")
    if platform and type(annotations) is dict and any(type(k) is str and k.startswith(platform) for k in annotations):
        return False  # which device paths its value lists needs a parser CEL does not have
    for c in view.containers:
        if c.security.get("privileged") is True:
            return False
        for mount in c.mounts:
            mp = mount.get("mountPath") if type(mount) is dict else None
            if type(mp) is str and DEVICE_LIST_MARK in mp:
                return False
    for vol in as_list(view.spec.get("volumes")):
        if type(vol) is dict and "hostPath" in vol:
            path = as_str(as_dict(vol["hostPath"]).get("path"))
            if path is None or not plain_path(path):
                return False
    return True


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The same coverage and findings' lines in CEL (webhook/policy/cel), over the policy's variables.

def cel_covered(shape: Shape, policy: Policy) -> str:
    """CEL: covers(...)."""
    s = S
    containers = some(lambda c: (
        f"(has({c}.securityContext) && has({c}.securityContext.privileged) && {c}.securityContext.privileged) || "
        f"(has({c}.volumeMounts) && {c}.volumeMounts.exists(m, m.mountPath.contains({lit(DEVICE_LIST_MARK)})))"))
    paths = (f"has({s}.volumes) && {s}.volumes.exists(v, has(v.hostPath) && "
             f"!(v.hostPath.path.matches({lit(PLAIN_PATH)})"
             f" && !v.hostPath.path.matches({lit(DOTS)}) && !(v.hostPath.path in ['/var/run', '/proc'] || "
             "v.hostPath.path.startsWith('/var/run/') || v.hostPath.path.startsWith('/proc/'))))")
    platform = policy.platform_device_annotations
    injected = "" if not platform else (
        f" || ({shape.meta_has('annotations')} && {shape.meta}.annotations.exists(k, "
        + " || ".join(f"k.startsWith({lit(p)})" for p in platform) + "))")
    return f"!({containers} || ({paths}){injected})"


def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    exposing = "variables.device_paths.exists(p, v.hostPath.path.startsWith(p) || p.startsWith(v.hostPath.path + '/'))"
    prefixes = f"{strings(ANNOTATION_PREFIXES)}.exists(p, k.startsWith(p))"
    meta = shape.meta
    variables: Variables = [
        all_containers(),
        {"name": "device_paths", "expression": "[" + ", ".join(lit(p) for p in DEVICE_PATHS) + "]"},
        {"name": "volume", "expression": f"has({S}.volumes) ? {S}.volumes.map(v, has(v.hostPath) && {exposing})"
                                         ".indexOf(true) : -1"},
        {"name": "annotations", "expression": f"{shape.meta_has('annotations')} ? "
                                              f"{meta}.annotations.filter(k, {prefixes}) : []"},
        {"name": "volume_v", "expression": f"{S}.volumes[variables.volume]"},
    ]
    v = "variables.volume_v"
    host = f"{v}.hostPath.path"
    # the sensitive paths below the mounted directory, as _resolved names them (a plain path, which the
    # coverage leaves alone, resolves to itself)
    variables.append({"name": "below", "expression": f"variables.device_paths.filter(p, p.startsWith({host} + '/'))"
                                                     ".map(p, p.endsWith('nvidia') ? p + '*' : p)"})
    above = If("size(variables.below) > 0", msg(ABOVE, paths=Cel("variables.below.join(', ')")), "")
    key = Cel("variables.annotations[0]")
    return variables, [
        Validation("variables.volume < 0", lines.line(
            msg(VOLUME, volume=Cel(f"{v}.name"), host=Cel(host),
                path=cat(shape.path, at("volumes", "variables.volume"), ".hostPath.path"), resolved="", above=above),
            VOLUME_WHY, VOLUME_FIX)),
        Validation("size(variables.annotations) == 0", lines.line(
            msg(ANNOTATION, key=key, path=cat(shape.meta_path, '.annotations["', key, '"]')),
            ANNOTATION_WHY, ANNOTATION_FIX)),
    ]


DEFINITION = Definition(
    "device-access-bypass",
    "privileged GPU containers, device hostPaths, device-list mounts or CDI annotations",
    "GPU device access",
    __doc__,
    reason=N_(
        "Privileged containers, hostPaths of GPU device nodes and plugin sockets, the container toolkit's "
        "device-list mounts and CDI/NRI device annotations hand a container GPUs without allocation, so nothing "
        "accounts for them and two workloads can use the same device."),
    checks=(
        Check(POD_SPECS, check),
    ),
    in_tree=InTree(always, covers=covers, order=2, cel_covered=cel_covered, cel_validations=cel_validations))
