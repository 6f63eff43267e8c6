"""The device-config table (docs/rules/device-config.md): the NVIDIA DRA drivers' opaque configs as the driver
reads them (kubernetes-sigs/dra-driver-nvidia-gpu, api/nvidia.com/resource/v1beta1 and the kubelet plugins'
device_state.go), failing cases beside their closest benign twins, each checked by builders.check_case
(findings, verdict, cohort, golden messages) and, by test_rules.py, again in the apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    Table,
    check_case,
    claim_template,
    device_class,
    nvidia_config,
    request,
    resource_claim,
)

TABLE = Table("device-config")
case = TABLE.case

P = "spec.spec.devices.config[0]"  # the first config of a template
PARAMS = f"{P}.opaque.parameters"
CLAIM_PARAMS = "spec.devices.config[0].opaque.parameters"
MPS = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}}
TIME_SLICING = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}
GPUS = request("gpu", "gpu.nvidia.com", count=2)
MIG = request("mig", "mig.nvidia.com")
VFIO = request("gpu", "vfio.gpu.nvidia.com")
CHANNEL_CLASS = device_class("compute-domain-default-channel.nvidia.com", driver="compute-domain.nvidia.com",
                             device_type="channel")
DAEMON_CLASS = device_class("compute-domain-daemon.nvidia.com", driver="compute-domain.nvidia.com",
                            device_type="daemon")
CHANNEL = request("channel", "compute-domain-default-channel.nvidia.com")
DOMAIN = "1f5a7f4e-2c8b-4d0e-9b1a-7e3c5d9f0a21"


MIG_OR_GPU = {"name": "dev", "firstAvailable": [{"name": "slice", "deviceClassName": "mig.nvidia.com"},
                                               {"name": "whole", "deviceClassName": "gpu.nvidia.com"}]}


def gpus(*config, req=GPUS):
    return claim_template("shared-gpus", req, config=list(config))


# ---- kinds and the strict decoder
case("device-config-gpu-config-mps-pass", gpus(nvidia_config("GpuConfig", requests=["gpu"], sharing=MPS)),
     policy="dra-demos")
case("device-config-gpu-config-without-requests-pass", gpus(nvidia_config("GpuConfig", sharing=TIME_SLICING)),
     policy="dra-demos")
case("device-config-other-driver-config-pass",
     gpus({"opaque": {"driver": "gpu.example.com", "parameters": {"anything": {"goes": True}}}}))
case("device-config-unknown-kind", gpus(nvidia_config("MigConfig", sharing=MPS)), ("device-config", f"{PARAMS}.kind"),
     policy="dra-demos")
case("device-config-kind-missing", gpus(nvidia_config(None, sharing=MPS)), ("device-config", f"{PARAMS}.kind"),
     policy="dra-demos")
case("device-config-api-version-v1", gpus(nvidia_config("GpuConfig", api_version="resource.nvidia.com/v1",
                                                        sharing=MPS)),
     ("device-config", f"{PARAMS}.apiVersion"), policy="dra-demos")
case("device-config-api-version-missing", gpus(nvidia_config("GpuConfig", api_version=None, sharing=MPS)),
     ("device-config", f"{PARAMS}.apiVersion"), policy="dra-demos")
case("device-config-metadata-is-not-a-field",
     gpus(nvidia_config("GpuConfig", sharing=MPS, metadata={"name": "shared"})),
     ("device-config", f"{PARAMS}.metadata"), policy="dra-demos")
case("device-config-field-names-are-case-sensitive",
     gpus(nvidia_config("GpuConfig", sharing={"Strategy": "MPS"})),
     ("device-config", f"{PARAMS}.sharing.Strategy"), ("device-config", f"{PARAMS}.sharing.strategy"),
     policy="dra-demos")
case("device-config-wrong-json-type",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {
         "defaultActiveThreadPercentage": "50", "multiUser": "yes"}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultActiveThreadPercentage"),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.multiUser"), policy="dra-demos")
case("device-config-parameters-not-a-mapping",
     gpus({"opaque": {"driver": "gpu.nvidia.com", "parameters": "GpuConfig"}}), ("device-config", PARAMS))
# ---- enums
case("device-config-interval-long-pass", gpus(nvidia_config("GpuConfig", sharing=TIME_SLICING)), policy="dra-demos")
case("device-config-interval-unknown",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Longer"}})),
     ("device-config", f"{PARAMS}.sharing.timeSlicingConfig.interval"), policy="dra-demos")
case("device-config-interval-missing",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {}})),
     ("device-config", f"{PARAMS}.sharing.timeSlicingConfig.interval"), policy="dra-demos")
case("device-config-time-slicing-defaults-pass", gpus(nvidia_config("GpuConfig", sharing={"strategy": "TimeSlicing"})),
     policy="dra-demos")
# a strategy the driver does not know is this rule's, on any cohort; a known one the cohort does not enable is
# sharing-not-enabled's (its table)
case("device-config-strategy-unknown", gpus(nvidia_config("GpuConfig", sharing={"strategy": "timeslicing"})),
     ("device-config", f"{PARAMS}.sharing.strategy"))
case("device-config-strategy-missing", gpus(nvidia_config("GpuConfig", sharing={"mpsConfig": {}})),
     ("device-config", f"{PARAMS}.sharing.strategy"), policy="dra-demos")
# ---- MPS limits
case("device-config-thread-percentage-hundred-pass",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 100}})),
     policy="dra-demos")
case("device-config-thread-percentage-above-hundred",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 101}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultActiveThreadPercentage"), policy="dra-demos")
case("device-config-thread-percentage-negative",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": -1}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultActiveThreadPercentage"), policy="dra-demos")
case("device-config-pinned-memory-one-mebibyte-pass",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {
         "defaultPinnedDeviceMemoryLimit": "1Mi", "defaultPerDevicePinnedMemoryLimit": {"1": "4Gi"}}})),
     policy="dra-demos")
case("device-config-pinned-memory-below-one-mebibyte",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {
         "defaultPinnedDeviceMemoryLimit": "512Ki"}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit"), policy="dra-demos")
case("device-config-pinned-memory-not-a-quantity",
     gpus(nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {
         "defaultPinnedDeviceMemoryLimit": "10 GB"}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultPinnedDeviceMemoryLimit"), policy="dra-demos")
case("device-config-per-device-index-beyond-the-claim",
     gpus(nvidia_config("GpuConfig", requests=["gpu"], sharing={"strategy": "MPS", "mpsConfig": {
         "defaultPerDevicePinnedMemoryLimit": {"2": "4Gi", "GPU-4f1e2d3c-0000-4000-8000-000000000000": "4Gi",
                                               "first": "4Gi"}}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.2"),
     ("device-config", f"{PARAMS}.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.first"), policy="dra-demos")
# ---- TimeSlicing and MPS mixed
case("device-config-time-slicing-with-mps-config",
     gpus(nvidia_config("GpuConfig", sharing={**TIME_SLICING, "mpsConfig": {}})),
     ("device-config", f"{PARAMS}.sharing.mpsConfig"), policy="dra-demos")
case("device-config-mps-with-time-slicing-config",
     gpus(nvidia_config("GpuConfig", sharing={**MPS, "timeSlicingConfig": {"interval": "Short"}})),
     ("device-config", f"{PARAMS}.sharing.timeSlicingConfig"), policy="dra-demos")
case("device-config-mig-mps-pass",
     claim_template("mig-mps", MIG, config=[nvidia_config("MigDeviceConfig", requests=["mig"], sharing=MPS)]),
     policy="dra-demos")
case("device-config-mig-time-slicing-config",
     claim_template("mig-ts", MIG, config=[nvidia_config("MigDeviceConfig", sharing=TIME_SLICING)]),
     ("device-config", f"{PARAMS}.sharing.timeSlicingConfig"), policy="dra-demos")
case("device-config-mig-time-slicing-with-mps-config",
     claim_template("mig-ts", MIG, config=[nvidia_config("MigDeviceConfig", sharing={
         "strategy": "TimeSlicing", "mpsConfig": {"defaultActiveThreadPercentage": 50}})]),
     ("device-config", f"{PARAMS}.sharing.mpsConfig"), policy="dra-demos")
# ---- requests and device types
case("device-config-requests-names-a-missing-request",
     gpus(nvidia_config("GpuConfig", requests=["gpus"], sharing=MPS)), ("device-config", f"{P}.requests[0]"),
     policy="dra-demos")
case("device-config-gpu-config-on-mig-request",
     claim_template("mig-shared", MIG, config=[nvidia_config("GpuConfig", requests=["mig"], sharing=MPS)]),
     ("device-config", f"{P}.requests[0]"), policy="dra-demos")
case("device-config-mig-config-on-gpu-request",
     gpus(nvidia_config("MigDeviceConfig", requests=["gpu"], sharing=MPS)), ("device-config", f"{P}.requests[0]"),
     policy="dra-demos")
case("device-config-first-available-alternative-pass",
     claim_template("mig-or-gpu", MIG_OR_GPU,
         config=[nvidia_config("MigDeviceConfig", requests=["dev/slice"], sharing=MPS),
                 nvidia_config("GpuConfig", requests=["dev/whole"], sharing=MPS)]), policy="dra-demos")
case("device-config-first-available-alternative-of-another-type",
     claim_template("mig-or-gpu", MIG_OR_GPU,
         config=[nvidia_config("GpuConfig", requests=["dev/slice"], sharing=MPS)]),
     ("device-config", f"{P}.requests[0]"), policy="dra-demos")
# ---- VFIO passthrough: what the driver's own webhook refuses, its kubelet plugin prepares
case("device-config-vfio-demo-pass",
     claim_template("vfio", VFIO, config=[nvidia_config("VfioDeviceConfig", requests=["gpu"], iommu={
         "backendPolicy": "LegacyOnly", "enableAPIDevice": True})]), policy="dra-demos")
case("device-config-vfio-backend-policy-unknown",
     claim_template("vfio", VFIO, config=[nvidia_config("VfioDeviceConfig", iommu={"backendPolicy": "IommuFD"})]),
     ("device-config", f"{PARAMS}.iommu.backendPolicy"), policy="dra-demos")
case("device-config-vfio-config-on-gpu-request",
     gpus(nvidia_config("VfioDeviceConfig", requests=["gpu"])), ("device-config", f"{P}.requests[0]"),
     policy="dra-demos")
# ---- ComputeDomain configs (the driver's own webhook skips them)
case("device-config-compute-domain-channel-pass",
     resource_claim("channel", CHANNEL, config=[nvidia_config(
         "ComputeDomainChannelConfig", driver="compute-domain.nvidia.com", domainID=DOMAIN)]), docs=[CHANNEL_CLASS])
case("device-config-compute-domain-channel-without-domain",
     resource_claim("channel", CHANNEL, config=[nvidia_config(
         "ComputeDomainChannelConfig", driver="compute-domain.nvidia.com")]),
     ("device-config", f"{CLAIM_PARAMS}.domainID"), docs=[CHANNEL_CLASS])
case("device-config-compute-domain-daemon-empty-domain",
     resource_claim("daemon", request("daemon", "compute-domain-daemon.nvidia.com"), config=[nvidia_config(
         "ComputeDomainDaemonConfig", driver="compute-domain.nvidia.com", domainID="")]),
     ("device-config", f"{CLAIM_PARAMS}.domainID"), docs=[DAEMON_CLASS])
case("device-config-compute-domain-channel-config-on-daemon-request",
     resource_claim("daemon", request("daemon", "compute-domain-daemon.nvidia.com"), config=[nvidia_config(
         "ComputeDomainChannelConfig", requests=["daemon"], driver="compute-domain.nvidia.com", domainID=DOMAIN)]),
     ("device-config", "spec.devices.config[0].requests[0]"), docs=[DAEMON_CLASS])
case("device-config-compute-domain-config-given-to-the-gpu-driver",
     resource_claim("channel", CHANNEL, config=[nvidia_config("ComputeDomainChannelConfig", domainID=DOMAIN)]),
     ("device-config", f"{CLAIM_PARAMS}.kind"), docs=[CHANNEL_CLASS])
# ---- every served version of resource.k8s.io reads its configs the same way
case("device-config-v1beta1-claim",
     resource_claim("beta1", request("gpu", "gpu.nvidia.com", api="v1beta1"), api="v1beta1",
                    config=[nvidia_config("GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {
                        "defaultActiveThreadPercentage": 150}})]),
     ("device-config", f"{CLAIM_PARAMS}.sharing.mpsConfig.defaultActiveThreadPercentage"), policy="dra-demos")
case("device-config-v1beta2-template",
     claim_template("beta2", request("gpu", "gpu.nvidia.com", api="v1beta2"), api="v1beta2",
                    config=[nvidia_config("GpuConfig", sharing={"strategy": "Mps"})]),
     ("device-config", f"{PARAMS}.sharing.strategy"), policy="dra-demos")
case("device-config-action-warn", gpus(nvidia_config("GpuConfig", sharing={"strategy": "timeslicing"})),
     ("device-config", "warn", f"{PARAMS}.sharing.strategy"), policy="actions")


@pytest.mark.parametrize("row", TABLE.params)
def test_device_config(row, evaluate, golden):
    check_case(row, evaluate, golden)
