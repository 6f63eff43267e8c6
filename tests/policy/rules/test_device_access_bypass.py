"""The device-access-bypass table (docs/rules/device-access-bypass.md): failing cases beside their closest benign twins,
each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    DEVICE_PLUGIN_SOCKETS,
    DP_NODES,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    container,
    pod,
    pod_spec,
    template_claim,
    workload,
)

TABLE = Table("device-access-bypass")
case = TABLE.case

case("device-access-bypass-gpu-pod-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[{"name": "data", "mountPath": "/data"}]),
                                cohort="device-plugin", volumes=[{"name": "data", "emptyDir": {}}])))
case("device-access-bypass-log-host-path-pass",
     workload("DaemonSet", "log-agent", pod_spec(
         container("agent", mounts=[{"name": "logs", "mountPath": "/var/log", "readOnly": True}]),
         volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}]), namespace="logging"), cohort=None)
case("device-access-bypass-privileged-cpu-pod-pass",
     # privileged matters on GPU cohorts; a CPU DaemonSet is not this service's business
     workload("DaemonSet", "node-tuner", pod_spec(container("tuner", sc={"privileged": True})), namespace="ops"),
     cohort=None)
case("device-access-bypass-device-plugin-in-exempt-namespace-pass",
     workload("DaemonSet", "nvidia-device-plugin", pod_spec(
         container("plugin", sc={"privileged": True}, mounts=[{"name": "device-plugin",
                                                               "mountPath": "/var/lib/kubelet/device-plugins"}]),
         volumes=[DEVICE_PLUGIN_SOCKETS]), namespace="gpu-system"), cohort=None)
case("device-access-bypass-exception-by-service-account-pass",
     workload("Job", "gpu-validator", pod_spec(
         container("validate", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin",
         serviceAccountName="gpu-validator"), namespace="gpu-validation"), policy="exceptions")
case("device-access-bypass-exception-by-group-pass",
     pod("debug-node-gpu", pod_spec(container("debug", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}),
                                    cohort="device-plugin")),
     policy="exceptions", user={"username": "oncall@example.com", "groups": ["gpu-sre", "system:authenticated"]})
case("device-access-bypass-privileged-gpu-container",
     pod("cuda-smoke",
         pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin")),
     ("device-access-bypass", "spec.containers[0].securityContext.privileged"))
case("device-access-bypass-privileged-sidecar-in-dra-job",
     workload("Job", "train", pod_spec(
         container("train", claims=["gpu"]),
         init=[container("dcgm-exporter", sc={"privileged": True}, restart="Always")],
         cohort="dra", claims=[template_claim()])),
     ("device-access-bypass", "spec.template.spec.initContainers[0].securityContext.privileged"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("device-access-bypass-privileged-ephemeral-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                           ephemeral=[container("debugger", sc={"privileged": True}, cpu=False)])),
     ("device-access-bypass", "spec.ephemeralContainers[0].securityContext.privileged"))
case("device-access-bypass-dev-nvidia-host-path-cpu-pod",
     pod("sneaky", pod_spec(container("app", mounts=[{"name": "gpu0", "mountPath": "/dev/nvidia0"}]),
                            volumes=[{"name": "gpu0", "hostPath": {"path": "/dev/nvidia0", "type": "CharDevice"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-device-plugin-socket-daemon-set",
     workload("DaemonSet", "gpu-monitor", pod_spec(
         container("monitor", mounts=[{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]),
         volumes=[DEVICE_PLUGIN_SOCKETS]), namespace="monitoring"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-driver-root-and-dev",
     workload("StatefulSet", "driver-probe", pod_spec(
         container("probe"), volumes=[{"name": "driver", "hostPath": {"path": "/run/nvidia/driver"}},
                                      {"name": "dev", "hostPath": {"path": "/dev/"}}])),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"),
     ("device-access-bypass", "spec.template.spec.volumes[1].hostPath.path"), cohort=None)
case("device-access-bypass-device-list-volume-mount",
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "/var/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev/null"}}])),
     ("device-access-bypass", "spec.containers[0].volumeMounts[0].mountPath"))
case("device-access-bypass-cdi-annotation-on-template",
     workload("Deployment", "cdi-app", pod_spec(container("app")),
              annotations={"cdi.k8s.io/gpus": "nvidia.com/gpu=all"}),
     ("device-access-bypass", 'spec.template.metadata.annotations["cdi.k8s.io/gpus"]'), cohort=None)
case("device-access-bypass-nri-annotation-on-cron-job",
     workload("CronJob", "nightly", pod_spec(container("app")),
              annotations={"cdi-devices.nri.io/container.app": "nvidia.com/gpu=0"}),
     ("device-access-bypass",
      'spec.jobTemplate.spec.template.metadata.annotations["cdi-devices.nri.io/container.app"]'), cohort=None)
case("device-access-bypass-exception-other-service-account",
     workload("Job", "gpu-validator", pod_spec(
         container("validate", gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin",
         serviceAccountName="default"), namespace="gpu-validation"),
     ("device-access-bypass", "spec.template.spec.containers[0].securityContext.privileged"), policy="exceptions")
case("device-access-bypass-action-audit",
     pod("cuda-smoke",
         pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={"privileged": True}), cohort="device-plugin")),
     ("device-access-bypass", "audit", "spec.containers[0].securityContext.privileged"), policy="actions")
# Class: host paths after normalisation, as the kernel resolves them; device-list mounts as the toolkit reads them.
case("device-access-bypass-var-run-persistenced-host-path",
     workload("DaemonSet", "persistenced-probe", pod_spec(container("probe"), volumes=[
         {"name": "persistenced", "hostPath": {"path": "/var/run/nvidia-persistenced"}}]), namespace="monitoring"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-var-run-other-host-path-pass",
     workload("DaemonSet", "csi-node", pod_spec(container("driver"), volumes=[
         {"name": "csi", "hostPath": {"path": "/var/run/csi-example"}}]), namespace="storage"), cohort=None)
case("device-access-bypass-double-slash-mps-host-path",
     pod("mps-client", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", volumes=[
         {"name": "mps", "hostPath": {"path": "//var/run/nvidia/mps"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"))
case("device-access-bypass-proc-root-host-path",
     pod("escape", pod_spec(container("app"), volumes=[{"name": "dev", "hostPath": {"path": "/proc/1/root/dev"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-proc-host-path-pass",
     # node-exporter's /proc: reaching /proc/1/root through it needs ptrace rights the pod does not have
     workload("DaemonSet", "node-exporter", pod_spec(container("exporter"), volumes=[
         {"name": "proc", "hostPath": {"path": "/proc"}}]), namespace="monitoring"), cohort=None)
case("device-access-bypass-host-root-node-debug",
     # what `kubectl debug node/...` creates: the host's / at /host
     pod("node-debugger-gpu-node-7-x7k2p",
         pod_spec(container("debugger", mounts=[{"name": "host-root", "mountPath": "/host"}]),
                                                    nodeName="gpu-node-7",
                                                    volumes=[{"name": "host-root", "hostPath": {"path": "/"}}])),
     ("device-access-bypass", "spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-kubelet-dir-ancestor",
     workload("DaemonSet", "csi-plugin", pod_spec(container("plugin"), volumes=[
         {"name": "kubelet", "hostPath": {"path": "/var/lib/kubelet/"}}]), namespace="storage"),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"), cohort=None)
case("device-access-bypass-kubelet-pods-dir-pass",
     workload("DaemonSet", "csi-plugin", pod_spec(container("plugin"), volumes=[
         {"name": "pods", "hostPath": {"path": "/var/lib/kubelet/pods"}}]), namespace="storage"), cohort=None)
case("device-access-bypass-device-list-double-slash-mount",
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "//var/run/nvidia-container-devices/./all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev//null"}}])),
     ("device-access-bypass", "spec.containers[0].volumeMounts[0].mountPath"))
case("device-access-bypass-device-list-under-run-pass",
     # the toolkit compares the literal /var/run/...: a mount under /run asks it for nothing
     pod("all-gpus", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "null", "mountPath": "/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "null", "hostPath": {"path": "/dev/null"}}])))
case("device-access-bypass-device-list-empty-dir-pass",
     # only a /dev/null mount is read as a request
     pod("scratch", pod_spec(container(gpus={"nvidia.com/gpu": 1}, mounts=[
         {"name": "scratch", "mountPath": "/var/run/nvidia-container-devices/all"}]), cohort="device-plugin",
         volumes=[{"name": "scratch", "emptyDir": {}}])))
case("device-access-bypass-privileged-cpu-pod-on-gpu-cohort",
     pod("node-tuner", pod_spec(container("tuner", sc={"privileged": True}), nodeSelector=dict(DP_NODES))),
     ("device-access-bypass", "spec.containers[0].securityContext.privileged"), cohort="device-plugin")

# Class: a platform's device injection (GKE's devices.gke.io/container.<name>, as GPUDirect-TCPX manifests write it:
# the named container requests no GPU and gets the host's GPU device nodes).
TCPX_DEVICES = "- path: /dev/nvidia0\n- path: /dev/nvidia1\n- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n" \
               "- path: /dev/dmabuf_import_helper\n"
case("device-access-bypass-gke-device-annotation-gpu-paths",
     workload("Deployment", "tcpx-receiver", pod_spec(container("tcpx-daemon", cpu=False)),
              annotations={"devices.gke.io/container.tcpx-daemon": TCPX_DEVICES}, namespace="net"),
     ("device-access-bypass", 'spec.template.metadata.annotations["devices.gke.io/container.tcpx-daemon"]'),
     cohort=None)
case("device-access-bypass-gke-device-annotation-other-devices-pass",
     pod("fuse-mounter", pod_spec(container("mounter")),
         annotations={"devices.gke.io/container.mounter": "- path: /dev/fuse\n"}), cohort=None)
case("device-access-bypass-gke-device-annotation-odd-value-pass",
     # not a list of paths at all: nothing is read as a device
     pod("odd", pod_spec(container("app")), annotations={"devices.gke.io/container.app": "{}"}), cohort=None)


@pytest.mark.parametrize("row", TABLE.params)
def test_device_access_bypass(row, evaluate, golden):
    check_case(row, evaluate, golden)
