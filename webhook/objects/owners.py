"""Which containers are a node's GPU allocation owner: the NVIDIA device plugin (it advertises
`nvidia.com/gpu` through the kubelet's device-plugin socket directory) or the NVIDIA DRA driver's kubelet
plugin (it publishes `gpu.nvidia.com` ResourceSlices through the kubelet's plugin directory).

Recognised by what runs, not by the image alone: NVIDIA ships the device plugin, GPU feature discovery,
the MPS control daemon and the config manager in one image (`k8s-device-plugin`), and the DRA driver's
image runs its GPU kubelet plugin, its ComputeDomain plugin, its controller and its webhook. So the program
decides (the command, or the program a shell script starts, or the image's entrypoint when no command is
given), and an image that is NVIDIA's without a known program is an owner only when the container mounts
the plugin socket directory that owner needs. GFD, DCGM and its exporter, the MPS control daemon, the
validator, the MIG manager and the ComputeDomain components are never owners."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.hostpaths import host_path

DEVICE_PLUGIN = "device-plugin"
DRA = "dra"

# Programs that are an allocation owner, by mechanism.
OWNER_PROGRAMS = {"nvidia-device-plugin": DEVICE_PLUGIN, "gpu-kubelet-plugin": DRA}
# Programs of the same images (or of NVIDIA's stack) that advertise no GPU.
NOT_OWNERS = frozenset({
    "gpu-feature-discovery", "mps-control-daemon", "config-manager", "dcgm-exporter", "nv-hostengine", "dcgm",
    "nvidia-validator", "gpu-operator-validator", "nvidia-mig-manager", "nvidia-mig-parted",
    "compute-domain-kubelet-plugin", "compute-domain-controller", "compute-domain-daemon", "webhook",
    "kubelet-plugin-prestart.sh", "nvidia-ctk", "nvidia-smi", "k8s-driver-manager",
})
# Image repositories (the last path element, without tag or digest) whose entrypoint is the owner, and
# those that are NVIDIA's images of an owner that also run other programs.
OWNER_IMAGES = {"k8s-device-plugin": DEVICE_PLUGIN, "k8s-dra-driver-gpu": DRA, "dra-driver-nvidia-gpu": DRA,
                "k8s-dra-driver": DRA}
NOT_OWNER_IMAGES = frozenset({"gpu-feature-discovery", "dcgm-exporter", "dcgm", "gpu-operator-validator",
                              "k8s-mig-manager", "container-toolkit", "driver", "k8s-driver-manager",
                              "gpu-operator"})
# The kubelet's socket directories each owner registers in (as the host resolves them).
SOCKETS = {DEVICE_PLUGIN: "/var/lib/kubelet/device-plugins", DRA: "/var/lib/kubelet/plugins"}
SHELLS = frozenset({"sh", "bash", "ash", "dash", "busybox"})
_WORD = re.compile(r"[A-Za-z0-9_./+-]+")


@dataclass(frozen=True, slots=True)
class Owner:
    mechanism: str  # device-plugin | dra
    container: str  # its name
    path: str  # the container's field path, e.g. spec.template.spec.containers[0]
    program: str  # what it was recognised by: a program name or an image repository


def _base(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def image_repository(image: str | None) -> str:
    """`nvcr.io/nvidia/k8s-device-plugin:v0.20.0` -> `k8s-device-plugin` (digest and tag dropped)."""
    if not image:
        return ""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def _programs(container: Mapping[str, Any]) -> list[str]:
    """The programs a container runs, first what its command starts: a shell's script is read for the
    programs it names (the DRA driver's chart runs `bash -c '... gpu-kubelet-plugin -v ...'`)."""
    words = [w for w in as_list(container.get("command")) if type(w) is str]
    args = [w for w in as_list(container.get("args")) if type(w) is str]
    if not words:
        return []
    first = _base(words[0])
    if first not in SHELLS:
        return [first]
    text = " ".join(words[1:] + args)
    return [b for w in _WORD.findall(text) if (b := _base(w)) in OWNER_PROGRAMS or b in NOT_OWNERS]


def _mounted_hosts(container: Mapping[str, Any], volumes: Mapping[str, str]) -> list[str]:
    out = []
    for m in as_list(container.get("volumeMounts")):
        name = as_str(as_dict(m).get("name"))
        if name and name in volumes:
            out.append(volumes[name])
    return out


def _mounts_socket(hosts: list[str], mechanism: str) -> bool:
    sockets = SOCKETS[mechanism]
    return any(h == sockets or h.startswith(sockets + "/") for h in hosts)


def owner_of(container: Mapping[str, Any], volumes: Mapping[str, str], path: str) -> Owner | None:
    """The allocation owner `container` runs, or None. `volumes`: the pod's hostPath volumes, name -> host
    path as the host resolves it."""
    name = as_str(container.get("name")) or ""
    for key in ("command", "args"):
        if key in container and type(container[key]) is not list:
            return None  # a shape no apiserver accepts: what runs is not known
    programs = _programs(container)
    for program in programs:
        if program in OWNER_PROGRAMS:
            return Owner(OWNER_PROGRAMS[program], name, path, program)
    if programs:
        return None  # a known other program, or one that is neither: not an owner by its command
    repo = image_repository(as_str(container.get("image")))
    if repo in NOT_OWNER_IMAGES or repo not in OWNER_IMAGES:
        return None
    mechanism = OWNER_IMAGES[repo]
    # No command: the image's entrypoint runs. NVIDIA's device plugin image starts the plugin; the DRA
    # driver's has no single entrypoint, so the socket directory it mounts says which component it is.
    if mechanism == DEVICE_PLUGIN and not as_list(container.get("args")):
        return Owner(mechanism, name, path, repo)
    if _mounts_socket(_mounted_hosts(container, volumes), mechanism):
        return Owner(mechanism, name, path, repo)
    return None


def owners(spec: Mapping[str, Any], prefix: str) -> tuple[Owner, ...]:
    """The allocation owners among a pod spec's containers (and sidecars: init containers that keep running)."""
    volumes = {}
    for v in as_list(spec.get("volumes")):
        v = as_dict(v)
        name, host = as_str(v.get("name")), as_str(as_dict(v.get("hostPath")).get("path"))
        if name and host:
            volumes[name] = host_path(host)
    out = []
    for section in ("initContainers", "containers"):
        for i, c in enumerate(as_list(spec.get(section))):
            c = as_dict(c)
            if section == "initContainers" and c.get("restartPolicy") != "Always":
                continue
            found = owner_of(c, volumes, f"{prefix}.{section}[{i}]")
            if found is not None:
                out.append(found)
    return tuple(out)
