"""Class: host paths compared as the kernel resolves them, and the toolkit's device-list mounts as the toolkit
reads them. One normalisation function, every variant; each denied path beside its closest benign twin."""
from __future__ import annotations

import pytest

from webhook.objects.hostpaths import clean, host_path
from webhook.policy.checks.device_access_bypass import device_host_path, device_list_request


@pytest.mark.parametrize("path, resolved", [
    pytest.param("/run/nvidia", "/run/nvidia", id="plain"),
    pytest.param("/var/run/nvidia", "/run/nvidia", id="var-run-link"),
    pytest.param("//var/run/nvidia", "/run/nvidia", id="leading-double-slash"),
    pytest.param("///var//run///nvidia-persistenced/", "/run/nvidia-persistenced", id="repeated-and-trailing-slashes"),
    pytest.param("/var/./run/nvidia/mps", "/run/nvidia/mps", id="dot"),
    pytest.param("/var/lib/../run/nvidia", "/run/nvidia", id="dot-dot-before-link"),
    pytest.param("/var/run/../lib/kubelet", "/lib/kubelet", id="dot-dot-after-link-leaves-its-target"),
    pytest.param("/../../dev", "/dev", id="dot-dot-above-root"),
    pytest.param("/proc/1/root/dev/nvidia0", "/dev/nvidia0", id="proc-pid-root"),
    pytest.param("/proc/self/root/var/lib/kubelet", "/var/lib/kubelet", id="proc-self-root"),
    pytest.param("/proc/thread-self/root/", "/", id="proc-thread-self-root"),
    pytest.param("/proc/1/task/1/root/run/nvidia", "/run/nvidia", id="proc-task-root"),
    pytest.param("/proc/1/rootfs/dev", "/proc/1/rootfs/dev", id="proc-other-entry-is-not-root"),
    pytest.param("/proc/cpuinfo", "/proc/cpuinfo", id="proc-file"),
    pytest.param("dev/nvidia0", "/dev/nvidia0", id="relative-from-root"),
    pytest.param(" /dev/nvidia0 ", "/dev/nvidia0", id="surrounding-space"),
    pytest.param("/", "/", id="root"),
    pytest.param("", "/", id="empty"),
])
def test_host_path_resolves_as_the_kernel(path, resolved):
    assert host_path(path) == resolved


@pytest.mark.parametrize("path, exposed", [
    # denied: a device or socket path, however written, or a directory above one
    pytest.param("/dev/nvidia0", True, id="device-node"),
    pytest.param("/dev/nvidiactl", True, id="control-node"),
    pytest.param("/dev/nvidia-caps", True, id="mig-caps"),
    pytest.param("/var/run/nvidia", True, id="var-run-nvidia"),
    pytest.param("/var/run/nvidia-persistenced", True, id="var-run-persistenced"),
    pytest.param("/var/run/nvidia/mps", True, id="var-run-mps"),
    pytest.param("//var/run/nvidia/driver", True, id="double-slash-driver-root"),
    pytest.param("/run/nvidia-fabricmanager", True, id="fabric-manager"),
    pytest.param("/proc/1/root/dev/nvidia0", True, id="through-proc-pid-root"),
    pytest.param("/proc/self/root/var/lib/kubelet/plugins", True, id="through-proc-self-root"),
    pytest.param("/proc/1/root", True, id="proc-root-is-the-root"),
    pytest.param("/var/lib/kubelet/device-plugins/kubelet.sock", True, id="plugin-socket"),
    pytest.param("/var/lib/kubelet/plugins_registry/../plugins/gpu.nvidia.com", True, id="dra-plugin-dir-via-dot-dot"),
    pytest.param("/", True, id="root-dir"),
    pytest.param("/dev", True, id="dev-dir"),
    pytest.param("/dev/", True, id="dev-dir-trailing-slash"),
    pytest.param("/run", True, id="run-dir"),
    pytest.param("/var/run", True, id="var-run-dir"),
    pytest.param("/var", True, id="var-dir"),
    pytest.param("/var/lib", True, id="var-lib-dir"),
    pytest.param("/var/lib/kubelet", True, id="kubelet-dir"),
    pytest.param("/var/lib/kubelet/", True, id="kubelet-dir-trailing-slash"),
    # benign twins: siblings and neighbours of the above
    pytest.param("/var/log", False, id="var-log"),
    pytest.param("/var/lib/kubelet/pods", False, id="kubelet-pods-dir"),
    pytest.param("/var/lib/containerd", False, id="containerd-dir"),
    pytest.param("/run/containerd/containerd.sock", False, id="containerd-socket"),
    pytest.param("/var/run/secrets/app", False, id="var-run-other"),
    pytest.param("/dev/shm", False, id="dev-shm"),
    pytest.param("/dev/null", False, id="dev-null"),
    pytest.param("/proc", False, id="proc-dir"),
    pytest.param("/proc/1/rootfs", False, id="proc-pid-other-entry"),
    pytest.param("/etc/nvidia-container-runtime", False, id="toolkit-config-dir"),
    pytest.param("/opt/data/run/nvidia", False, id="nvidia-deep-elsewhere"),
])
def test_device_host_paths(path, exposed):
    assert device_host_path(path) is exposed


@pytest.mark.parametrize("path, cleaned", [
    pytest.param("//var/run/x", "/var/run/x", id="leading-double-slash"),
    pytest.param("/var/run/../x", "/var/x", id="lexical-dot-dot"),
    pytest.param("/a/./b/", "/a/b", id="dot-and-trailing"),
    pytest.param("/..", "/", id="above-root"),
    pytest.param("", ".", id="empty"),
    pytest.param("a/../../b", "../b", id="relative"),
])
def test_clean_is_go_filepath_clean(path, cleaned):
    assert clean(path) == cleaned


@pytest.mark.parametrize("mount_path, device", [
    pytest.param("/var/run/nvidia-container-devices/all", "all", id="all"),
    pytest.param("/var/run/nvidia-container-devices/GPU-8c2d1f4e", "GPU-8c2d1f4e", id="one-uuid"),
    pytest.param("//var/run/nvidia-container-devices/all", "all", id="leading-double-slash"),
    pytest.param("/var/run/nvidia-container-devices/./all/", "all", id="dot-and-trailing-slash"),
    pytest.param("/var/run/x/../nvidia-container-devices/all", "all", id="dot-dot"),
    pytest.param("/var/run/nvidia-container-devices/cdi/nvidia.com/gpu/all", "cdi/nvidia.com/gpu/all", id="cdi"),
    pytest.param("/var/run/nvidia-container-devicesall", "all", id="no-separator-the-toolkit-accepts-it"),
    # benign twins: what the toolkit does not read
    pytest.param("/run/nvidia-container-devices/all", None, id="run-the-toolkit-compares-the-literal"),
    pytest.param("/var/run/nvidia-container-devices", None, id="the-directory-itself-names-no-device"),
    pytest.param("/var/run/nvidia-container-devices/", None, id="the-directory-trailing-slash"),
    pytest.param("/data/nvidia-container-devices/all", None, id="elsewhere"),
])
def test_device_list_requests_as_the_toolkit_reads_them(mount_path, device):
    assert device_list_request(mount_path) == device
