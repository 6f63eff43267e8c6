"""The visible-devices-override table (docs/rules/visible-devices-override.md): failing cases beside their closest
benign twins, each checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py,
again in the apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    CUDA_ALL,
    GPU_UUID,
    KAI_ENV,
    NVIDIA_ALL,
    SEED_CLASSES,
    SEED_TEMPLATE,
    VOID,
    Table,
    check_case,
    config_map,
    container,
    pod,
    pod_spec,
    template_claim,
    workload,
)

TABLE = Table("visible-devices-override")
case = TABLE.case

case("visible-devices-override-plain-gpu-pod-pass",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "MODEL_DIR", "value": "/models"}]),
                                cohort="device-plugin")))
case("visible-devices-override-void-on-sidecar-without-gpu-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}),
                           init=[container("log-shipper", env=[VOID], restart="Always")], cohort="device-plugin")))
case("visible-devices-override-kai-scheduler-exception-pass",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin",
                                     schedulerName="kai-scheduler")), policy="kai")
case("visible-devices-override-env-from-config-map-without-variables-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[{"configMapRef": {"name": "train-env"}}]),
                           cohort="device-plugin")), docs=[config_map("train-env", "MODEL_DIR", "BATCH_SIZE")])
case("visible-devices-override-variable-not-in-configured-list-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin")),
     policy="variables")
case("visible-devices-override-cuda-on-one-device-claim",
     workload("Job", "hybrid-gpu-dra-smoke", pod_spec(container("gpu-check", claims=["gpu-resource"], env=[CUDA_ALL]),
                                                      cohort="dra", claims=[template_claim("gpu-resource")])),
     ("visible-devices-override", "spec.template.spec.containers[0].env[0]"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("visible-devices-override-nvidia-all-on-sidecar",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), container("exporter", env=[NVIDIA_ALL]),
                           cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[1].env[0]"))
case("visible-devices-override-void-on-gpu-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[VOID]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-cpu-workload",
     workload("ReplicationController", "legacy-etl", pod_spec(
         container("etl", env=[{"name": "GPU_DEVICE_ORDINAL", "value": "0"}]))),
     ("visible-devices-override", "spec.template.spec.containers[0].env[0]"), cohort=None)
case("visible-devices-override-ephemeral-debug-container",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                           ephemeral=[container("debugger", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": GPU_UUID}],
                                                cpu=False)])),
     ("visible-devices-override", "spec.ephemeralContainers[0].env[0]"))
case("visible-devices-override-value-from-secret",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "CUDA_VISIBLE_DEVICES", "valueFrom": {
         "secretKeyRef": {"name": "node-gpus", "key": "devices"}}}]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-env-from-config-map",
     workload("Deployment", "triton", pod_spec(container("triton", claims=["gpu"], env_from=[
         {"configMapRef": {"name": "cuda-env"}}]), cohort="dra", claims=[template_claim()])),
     ("visible-devices-override", "spec.template.spec.containers[0].envFrom[0]"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE, config_map("cuda-env", "CUDA_VISIBLE_DEVICES", "MODEL_DIR")])
case("visible-devices-override-env-from-prefixed-config-map",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[
         {"configMapRef": {"name": "device-env"}, "prefix": "NVIDIA_"}]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].envFrom[0]"),
     docs=[config_map("device-env", "VISIBLE_DEVICES", "DRIVER_CAPABILITIES")])
case("visible-devices-override-env-from-unreadable-secret",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env_from=[{"secretRef": {"name": "hf-token"}}]),
                           cohort="device-plugin")),
     ("visible-devices-override", "warn", "spec.containers[0].envFrom[0]"))
case("visible-devices-override-kai-env-without-exception",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin",
                                     schedulerName="kai-scheduler")),
     ("visible-devices-override", "spec.containers[0].env[0]"))
case("visible-devices-override-kai-exception-needs-kai-scheduler",
     pod("kai-gpu-sharing", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[KAI_ENV]), cohort="device-plugin")),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="kai")
case("visible-devices-override-global-dry-run",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]))),
     ("visible-devices-override", "spec.containers[0].env[0]"),
     ("default-placement", "spec.nodeSelector"), ("default-placement", "spec.tolerations"),
     ("default-runtime-class", "spec.runtimeClassName"), policy="dry-run", allowed=True, cohort="device-plugin")
case("visible-devices-override-namespace-in-audit-mode",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-a"),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="rollout", allowed=True)
case("visible-devices-override-namespace-action-warn",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-b"),
     ("visible-devices-override", "warn", "spec.containers[0].env[0]"), policy="rollout")
case("visible-devices-override-other-namespace-still-enforced",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin"),
         namespace="team-c"),
     ("visible-devices-override", "spec.containers[0].env[0]"), policy="rollout")
case("visible-devices-override-action-off-pass",
     pod("train", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[CUDA_ALL]), cohort="device-plugin")),
     policy="actions")
# Class: pods already bound to a node are validated like any other (their placement is in test_mutations.py).
case("visible-devices-override-bound-pod",
     pod("mirror", pod_spec(container(gpus={"nvidia.com/gpu": 1}, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]),
                            nodeName="gpu-node-7")),
     ("visible-devices-override", "spec.containers[0].env[0]"), cohort="device-plugin")
case("visible-devices-override-bound-pod-pass",
     pod("mirror", pod_spec(container(gpus={"nvidia.com/gpu": 1}), nodeName="gpu-node-7")), cohort="device-plugin")


@pytest.mark.parametrize("row", TABLE.params)
def test_visible_devices_override(row, evaluate, golden):
    check_case(row, evaluate, golden)
