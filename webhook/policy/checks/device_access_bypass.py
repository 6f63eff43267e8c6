import posixpath

from webhook.config.model import Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.podspec import PodView
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import message
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.DEVICE_ACCESS_BYPASS
# Host paths that hand a container GPUs or the plugins' sockets without allocation.
DEVICE_PATHS = ("/dev/nvidia", "/run/nvidia", "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins")
DEVICE_LIST_DIR = "/var/run/nvidia-container-devices"  # the toolkit's volume-mounts device list
ANNOTATION_PREFIXES = ("cdi.k8s.io/", "nvidia.cdi.k8s.io/", "cdi-devices.nri.io/")


def _normalise(path: str) -> str:
    path = posixpath.normpath("/" + path.strip())
    if path == "/var/run" or path.startswith("/var/run/"):
        path = path[len("/var"):]  # /var/run is a link to /run on every supported distribution
    return path.replace("//", "/")


def device_host_path(path: str) -> bool:
    """The path is a GPU device or plugin socket path, inside one, or a directory that contains one."""
    if ("nvidia" not in path and "kubelet" not in path and "/." not in path and "//" not in path
            and path.count("/") > 3):
        return False  # fast path: already normal, deeper than any parent of a sensitive path, names none
    p = _normalise(path)
    for sensitive in DEVICE_PATHS:
        if p.startswith(sensitive) or sensitive.startswith(p.rstrip("/") + "/") or p == "/":
            return True
    return False


def under_device_list(mount_path: str) -> bool:
    if "nvidia-container-devices" not in mount_path:
        return False
    p = _normalise(mount_path)
    d = _normalise(DEVICE_LIST_DIR)
    return p == d or p.startswith(d + "/")


def _meta_path(view: PodView) -> str:
    return "metadata" if view.is_pod else view.prefix[: -len(".spec")] + ".metadata"


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    view = facts.view
    out = []
    gpu_scope = facts.choice.cohort is not None or facts.is_gpu
    for c in view.containers:
        if gpu_scope and c.security.get("privileged") is True:
            path = f"{c.path}.securityContext.privileged"
            out.append(Finding(RULE, path, message(
                policy, RULE, view.subject, f"{c.label} is privileged ({path}) in a GPU pod",
                "a privileged container sees every GPU on the node, bypassing allocation and isolation",
                "remove privileged: true; GPUs come through resources.limits or a ResourceClaim")))
        for i, mount in enumerate(c.mounts):
            mp = mount.get("mountPath") if type(mount) is dict else None
            if type(mp) is str and mp and under_device_list(mp):
                path = f"{c.path}.volumeMounts[{i}].mountPath"
                out.append(Finding(RULE, path, message(
                    policy, RULE, view.subject, f"{c.label} mounts a volume at {mp} ({path})",
                    "the container toolkit reads that directory as the list of GPUs to expose (a file named 'all' "
                    "asks for every GPU), bypassing allocation", "remove the mount")))
    for i, vol in enumerate(as_list(view.spec.get("volumes"))):
        if type(vol) is not dict or "hostPath" not in vol:
            continue
        host = as_str(as_dict(vol["hostPath"]).get("path"))
        if host and device_host_path(host):
            path = f"{view.prefix}.volumes[{i}].hostPath.path"
            out.append(Finding(RULE, path, message(
                policy, RULE, view.subject, f'volume "{as_str(vol.get("name")) or i}" mounts the host path {host} ({path})',
                "GPU device nodes and device-plugin/DRA sockets on the host give GPUs without allocation",
                "remove the hostPath volume; GPUs come through resources.limits or a ResourceClaim")))
    annotations = view.meta.get("annotations")
    cdi = [k for k in annotations if type(k) is str and k.startswith(ANNOTATION_PREFIXES)] \
        if type(annotations) is dict else ()
    if cdi:
        for key in sorted(cdi):
            path = f'{_meta_path(view)}.annotations["{key}"]'
            out.append(Finding(RULE, path, message(
                policy, RULE, view.subject, f"annotation {key} ({path}) asks the runtime for CDI devices",
                "CDI/NRI device annotations inject devices without allocation", "remove the annotation")))
    return out
