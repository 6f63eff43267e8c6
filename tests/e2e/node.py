"""A real node for the e2e cluster: the kubelet from the pinned Kubernetes module (tests/e2e/build.py), Debian's
containerd and runc as its container runtime, pod networking from Debian's containernetworking-plugins on a
bridge of this machine. With kube-scheduler (tests/e2e/cluster.py, `scheduler=True`), Pods are bound to it and
their containers run.

Everything stays on this machine: the bridge's subnet and the Service CIDR are in 198.18.0.0/15 (RFC 2544's
benchmarking range, never routed), the node's InternalIP is the bridge's own address, where the apiserver of the
node's cluster listens too (`bridge_up()` comes first: tests/e2e/test_deployed.py); the apiserver dials that
address (kubelet logs) and the pods' addresses (a webhook behind its Service), and pods reach the apiserver
through the `kubernetes` Service as kube-proxy (iptables mode, removed with `--cleanup` on stop) routes it. The
containerd, kubelet and CNI state live under the node's folder; the cgroups of its pods under one cgroup of its
own in every hierarchy. `stop()` removes every pod, stops the processes, unmounts what the kubelet and containerd
mounted and removes kube-proxy's rules, the bridge, the network namespaces and the cgroups, so nothing is left
running.

What stands in for a GPU host: the node advertises `nvidia.com/gpu` by its status (as the extended-resource
documentation patches a node), not through the NVIDIA device plugin; the containerd runtime `nvidia`, behind the
`nvidia` RuntimeClass, runs plain runc where the NVIDIA container runtime would inject the GPUs.

Needs root and the cgroup controllers the kubelet uses; where they are missing, `start()` says what in one line
(NodeUnavailable).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e import images
from tests.e2e.cluster import Cluster, free_port, kubeconfig_text, terminate

NAME = "e2e-node"
BRIDGE = "gpa-e2e0"
SUBNET = "198.18.7.0/24"
NODE_IP = "198.18.7.1"
SERVICE_CIDR = "198.18.8.0/24"  # the node's cluster's Service IPs: kube-proxy turns them into endpoints
GPUS = 4
CNI_BIN = Path("/usr/lib/cni")
CGROUP_FS = Path("/sys/fs/cgroup")
# The controllers the kubelet's cgroupfs driver and runc need under cgroup v1 (this machine mounts v1 beside
# a v2 "unified" hierarchy without controllers); hugetlb and the rest are optional.
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer")
NETNS = Path("/var/run/netns")  # where containerd 1.6's CRI pins pod network namespaces, whatever its root
CONTAINER_LOGS = Path("/var/log/containers")  # the kubelet's symlinks to pod logs, a fixed path

LABELS = {"eks.amazonaws.com/compute-type": "hybrid", "workload.example.com/gpu-allocation": "device-plugin"}


class NodeUnavailable(RuntimeError):
    """The node cannot start on this machine: what is missing, in one line."""


CONTAINERD_CONFIG = """\
version = 2
root = "{root}/containerd/root"
state = "{root}/containerd/state"

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # root here lacks CAP_SYS_RESOURCE: a sandbox may not lower its OOM score adjustment below containerd's,
  # and without this every sandbox fails with "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

    # The `nvidia` RuntimeClass's handler. On a GPU node it is the NVIDIA container runtime, which injects the
    # devices that NVIDIA_VISIBLE_DEVICES names and then runs runc; here there is no GPU to inject, so runc alone.
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
        BinaryName = "runc"

  # Registry hosts (certs.d/<host>/hosts.toml): a loopback registry the e2e starts is reached over plain HTTP.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{root}/containerd/certs.d"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{root}/cni/net.d"
    max_conf_num = 1
"""


@dataclass
class Node:
    """One kubelet node of `cluster`, in `root`."""

    cluster: Cluster
    root: Path
    # OCI archives containerd imports before the kubelet starts, each under the name given
    images: dict[str, Path] = field(default_factory=dict)
    # Registries containerd pulls from over plain HTTP (a loopback registry: tests/e2e/registry.py), by host:port
    plain_http_registries: list[str] = field(default_factory=list)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    netns_before: set[str] = field(default_factory=set)
    cgroup: str = ""

    @property
    def socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    # -------------------------------------------------------------------------------------------- start

    def start(self) -> Node:
        self._preflight()
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(exist_ok=True)
        try:
            self._network()
            self._cgroups()
            self._containerd()
            self._import(images.ensure(self.cluster.chain))
            self._kubelet()
            self._wait_ready()
            self._kube_proxy()
        except BaseException:
            self.stop()
            raise
        return self

    def _preflight(self) -> None:
        preflight()

    def _network(self) -> None:
        if _ip("link", "show", BRIDGE, check=False).returncode != 0:
            bridge_up()
        self.netns_before = set(os.listdir(NETNS)) if NETNS.is_dir() else set()
        conf = self.root / "cni" / "net.d"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "10-e2e.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "e2e",
            "plugins": [{"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
                         "hairpinMode": True,
                         # the node's address is the pods' gateway: Service IPs (kube-proxy's rules) are behind it
                         "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET, "gateway": NODE_IP}]],
                                  "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(self.root / "cni" / "ipam")}}],
        }, indent=2))

    def _cgroups(self) -> None:
        """One cgroup of the node's own in each hierarchy: the kubelet's cgroupRoot, under which it makes
        kubepods and the pods' cgroups, all removed with it."""
        self.cgroup = f"gpa-e2e-{os.getpid()}"
        for controller in _hierarchies():
            path = CGROUP_FS / controller / self.cgroup
            path.mkdir(exist_ok=True)
            if controller == "cpuset":  # a new cpuset has no CPUs or memory nodes until given its parent's
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    (path / knob).write_text((CGROUP_FS / controller / knob).read_text())

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        with open(self.root / "logs" / f"{name}.log", "ab") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.processes[name] = process
        return process

    def _containerd(self) -> None:
        config = self.root / "containerd.toml"
        config.write_text(CONTAINERD_CONFIG.format(root=self.root, socket=self.socket, pause=images.PAUSE,
                                                   cni_bin=CNI_BIN))
        for host in self.plain_http_registries:
            hosts = self.root / "containerd" / "certs.d" / host / "hosts.toml"
            hosts.parent.mkdir(parents=True, exist_ok=True)
            hosts.write_text(f'server = "http://{host}"\n\n[host."http://{host}"]\n'
                             '  capabilities = ["pull", "resolve"]\n')
        self._spawn("containerd", ["containerd", "--config", str(config), "--log-level", "warn"])
        _wait(lambda: self._ctr("version", check=False).returncode == 0, "containerd", self.processes["containerd"],
              self.root)

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
                              capture_output=True, text=True, timeout=300, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"ctr {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done

    def _import(self, built: list[images.Image]) -> None:
        """Into the CRI's namespace, unpacked for its snapshotter, as a pull would leave them (an OCI archive
        is named by skopeo first: its index need not carry the name the pods use)."""
        for image in built:
            self._ctr("images", "import", str(image.archive))
        for index, (name, archive) in enumerate(self.images.items()):
            named = self.root / "images" / f"{index}.tar"
            named.parent.mkdir(exist_ok=True)
            subprocess.run(["skopeo", "copy", "--quiet", f"oci-archive:{archive}", f"docker-archive:{named}:{name}"],
                           check=True, capture_output=True, timeout=300)
            self._ctr("images", "import", str(named))
            named.unlink()

    def _kubelet(self) -> None:
        cluster = self.cluster
        cert, key = cluster.issue("kubelet", f"system:node:{NAME}", ("system:nodes",))
        kubeconfig = self.root / "kubelet.kubeconfig"
        kubeconfig.write_text(kubeconfig_text(cluster.server, cluster.ca, cert=cert, key=key,
                                              user=f"system:node:{NAME}"))
        (self.root / "resolv.conf").write_text("# pods of the e2e node resolve no names: nothing leaves the machine\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": NODE_IP, "port": free_port(), "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": free_port(),
            # the apiserver's kubelet-client certificate is of the cluster's CA; every caller it lets in may do all
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": str(cluster.ca)}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{self.cgroup}",
            # this machine mounts cgroup v1 (the kubelet refuses it by default from 1.35) and has swap
            "failCgroupV1": False, "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "podLogsDir": str(self.root / "pod-logs"),
            "volumePluginDir": str(self.root / "volume-plugins"),
            "resolvConf": str(self.root / "resolv.conf"),
            "clusterDomain": "cluster.local",
            # the kubelet touches neither the host's iptables nor its bridge's hairpin settings
            "makeIPTablesUtilChains": False, "hairpinMode": "none",
            # a shared test machine's disk and memory are not the node's to defend: no eviction, no image GC
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                             "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100,
            "serializeImagePulls": False, "kubeAPIQPS": 50, "kubeAPIBurst": 100,
            "nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s",
            "registerNode": True,
        }
        path = self.root / "kubelet.yaml"
        path.write_text(json.dumps(config, indent=2))
        self._spawn("kubelet", [
            str(cluster.chain.binary("kubelet")), f"--config={path}", f"--kubeconfig={kubeconfig}",
            f"--root-dir={self.root / 'kubelet'}", f"--cert-dir={self.root / 'kubelet-pki'}",
            f"--node-ip={NODE_IP}", f"--hostname-override={NAME}",
            "--node-labels=" + ",".join(f"{k}={v}" for k, v in LABELS.items()), "--v=1",
        ])

    def _wait_ready(self) -> None:
        kubectl = [str(self.cluster.kubectl), f"--kubeconfig={self.cluster.kubeconfig}"]

        def ready() -> bool:
            done = subprocess.run([*kubectl, "get", "node", NAME, "-o", "json"], capture_output=True, text=True,
                                  timeout=30, check=False)
            if done.returncode != 0:
                return False
            conditions = json.loads(done.stdout)["status"].get("conditions", [])
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        _wait(ready, f"node {NAME} Ready", self.processes["kubelet"], self.root, timeout=120)
        # The kubelet registers the node with the not-ready taint, which the node lifecycle controller lifts once
        # the node is Ready. That controller is not run here (it would also taint API-only nodes, and evict pods
        # when a loaded machine delays a heartbeat): its one step is taken here.
        subprocess.run([*kubectl, "taint", "node", NAME, "node.kubernetes.io/not-ready:NoSchedule-"],
                       capture_output=True, timeout=30, check=False)
        # The GPUs, advertised as the device plugin would, by the node's status (the kubelet keeps extended
        # resources it does not manage, and copies them into allocatable).
        subprocess.run([*kubectl, "patch", "node", NAME, "--subresource=status", "--type=merge", "-p",
                        json.dumps({"status": {"capacity": {"nvidia.com/gpu": str(GPUS)}}})],
                       check=True, capture_output=True, timeout=30)

        def advertised() -> bool:
            done = subprocess.run([*kubectl, "get", "node", NAME, "-o", "jsonpath={.status.allocatable}"],
                                  capture_output=True, text=True, timeout=30, check=False)
            return done.returncode == 0 and json.loads(done.stdout or "{}").get("nvidia.com/gpu") == str(GPUS)

        _wait(advertised, f"node {NAME}'s allocatable nvidia.com/gpu", self.processes["kubelet"], self.root)
        subprocess.run([*kubectl, "apply", "-f", "-"], check=True, capture_output=True, timeout=30,
                       input=json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                         "metadata": {"name": "nvidia"}, "handler": "nvidia"}).encode())

    def _kube_proxy(self) -> None:
        """The Services' ClusterIPs on this machine's iptables, as kube-proxy keeps them on every node: pods reach
        the apiserver through the `kubernetes` Service (the audit and the uninstall hook read the cluster). It
        touches no sysctl: no conntrack tuning, no localhost NodePorts."""
        cluster = self.cluster
        cert, key = cluster.issue("kube-proxy", "system:kube-proxy")
        kubeconfig = self.root / "kube-proxy.kubeconfig"
        kubeconfig.write_text(kubeconfig_text(cluster.server, cluster.ca, cert=cert, key=key, user="system:kube-proxy"))
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)}, "hostnameOverride": NAME,
            "mode": "iptables", "clusterCIDR": SUBNET, "bindAddress": NODE_IP,
            "healthzBindAddress": f"127.0.0.1:{free_port()}", "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "iptables": {"localhostNodePorts": False},
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        }
        path = self.root / "kube-proxy.yaml"
        path.write_text(json.dumps(config, indent=2))
        self._spawn("kube-proxy", [str(cluster.chain.binary("kube-proxy")), f"--config={path}", "--v=1"])
        service = f"{cluster.kubernetes_service_ip}:443"

        def routed() -> bool:
            done = subprocess.run(["iptables", "-t", "nat", "-S", "KUBE-SERVICES"], capture_output=True, text=True,
                                  timeout=30, check=False)
            return cluster.kubernetes_service_ip in done.stdout

        _wait(routed, f"kube-proxy's rules for {service}", self.processes["kube-proxy"], self.root)

    # --------------------------------------------------------------------------------------------- stop

    def stop(self) -> None:
        """Every pod's containers stopped and removed through the CRI's own path (the kubelet, for pods deleted
        from the API), then the processes, mounts, network namespaces, bridge and cgroups."""
        kubelet = self.processes.get("kubelet")
        if kubelet is not None and kubelet.poll() is None:
            self._drain()
        for name in ("kube-proxy", "kubelet", "containerd"):
            terminate(self.processes.pop(name, None), timeout=30)
        if self.cluster.chain.binary("kube-proxy").is_file():  # its iptables chains, all of them
            subprocess.run([str(self.cluster.chain.binary("kube-proxy")), "--cleanup"], capture_output=True,
                           timeout=60, check=False)
        self._kill_leftover_tasks()
        self._unmount()
        for entry in (set(os.listdir(NETNS)) if NETNS.is_dir() else set()) - self.netns_before:
            subprocess.run(["ip", "netns", "delete", entry], capture_output=True, check=False)
        bridge_down()
        self._remove_cgroups()
        self._remove_log_links()

    def _drain(self) -> None:
        """Delete every pod on the node at once and wait (a while) for containerd to run no container."""
        kubectl = [str(self.cluster.kubectl), f"--kubeconfig={self.cluster.kubeconfig}"]
        subprocess.run([*kubectl, "delete", "pods", "--all-namespaces", "--all", "--grace-period=0", "--force",
                        "--wait=false", f"--field-selector=spec.nodeName={NAME}"], capture_output=True, timeout=60,
                       check=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = self._ctr("tasks", "list", "--quiet", check=False)
            if done.returncode != 0 or not done.stdout.strip():
                return
            time.sleep(1)

    def _kill_leftover_tasks(self) -> None:
        """Shims survive containerd: any that the drain left (a test that was killed) are ended with their
        containers, found by the containerd address on their command line."""
        address = str(self.socket)
        for pid in _pids():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and address.encode() in argv:
                for child in _children(pid):
                    _kill(child)
                _kill(pid)

    def _unmount(self) -> None:
        root = str(self.root)
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for target in sorted({m for m in mounts if m.startswith(root + "/")}, key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)

    def _remove_cgroups(self) -> None:
        if not self.cgroup:
            return
        for controller in _hierarchies():
            top = CGROUP_FS / controller / self.cgroup
            if not top.is_dir():
                continue
            for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts),
                                    reverse=True):
                _rmdir(directory)
            _rmdir(top)

    def _remove_log_links(self) -> None:
        if not CONTAINER_LOGS.is_dir():
            return
        for link in CONTAINER_LOGS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(str(self.root)):
                link.unlink(missing_ok=True)

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def preflight() -> None:
    """Root, the cgroup controllers and the tools the node runs; NodeUnavailable names what is missing."""
    if os.geteuid() != 0:
        raise NodeUnavailable("the e2e node needs root (the kubelet, containerd and runc run as root)")
    missing = [c for c in CGROUP_CONTROLLERS if not (CGROUP_FS / c / "cgroup.procs").is_file()]
    if missing:
        raise NodeUnavailable(f"the e2e node needs the cgroup v1 controllers {', '.join(missing)} mounted under "
                              f"{CGROUP_FS}")
    tools = [t for t in ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "skopeo")
             if shutil.which(t) is None]
    tools += [str(CNI_BIN / p) for p in ("bridge", "host-local", "loopback") if not (CNI_BIN / p).is_file()]
    if tools:
        raise NodeUnavailable(f"the e2e node needs {', '.join(tools)} (Debian's containerd, runc, skopeo, "
                              "iproute2 and containernetworking-plugins; .ci/run installs them)")


def bridge_up() -> None:
    """The node's bridge with its address, before the cluster whose apiserver listens there and before the
    kubelet that reports it; the CNI bridge plugin then attaches each pod's veth to it."""
    bridge_down()  # one left by a run that was killed
    _ip("link", "add", "name", BRIDGE, "type", "bridge")
    _ip("addr", "add", f"{NODE_IP}/24", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")


def bridge_down() -> None:
    if _ip("link", "show", BRIDGE, check=False).returncode == 0:
        _ip("link", "delete", BRIDGE, check=False)


def _hierarchies() -> list[str]:
    """Every cgroup hierarchy mounted (the named systemd one and v2's unified included: the kubelet checks
    that its cgroupRoot exists in each)."""
    return sorted(p.name for p in CGROUP_FS.iterdir() if (p / "cgroup.procs").is_file())


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise NodeUnavailable(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _wait(ready, what: str, process: subprocess.Popen, root: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {process.returncode}; see {root / 'logs'}")
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what}: not within {timeout:.0f} s; see {root / 'logs'}")


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _children(pid: int) -> list[int]:
    out = []
    for candidate in _pids():
        try:
            stat = Path(f"/proc/{candidate}/stat").read_text()
        except OSError:
            continue
        if int(re.sub(r"^.*\) ", "", stat).split()[1]) == pid:
            out += [candidate, *_children(candidate)]
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:  # still in use by a process that is dying: its cgroup goes when it does
        pass
