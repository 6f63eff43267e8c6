"""DRA objects read in their own API version's shape (v1/v1beta2 `exactly`, v1beta1 `deviceClassName`
directly on the request), normalised to what their v1 conversion means."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.objects.access import as_dict, as_list, as_str, integer
from webhook.objects.selectors import selector_texts

# The NVIDIA DRA driver's config kinds that share a device (kubernetes-sigs/dra-driver-nvidia-gpu,
# api/nvidia.com/resource/v1beta1/gpuconfig.go and migconfig.go)
SHARING_KINDS = frozenset({"GpuConfig", "MigDeviceConfig"})


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    path: str  # field path of the request (or of the firstAvailable alternative)
    device_class: str | None
    allocation_mode: str  # ExactCount | All
    count: int
    admin_access: bool
    has_shape: bool  # v1/v1beta2: has exactly or firstAvailable; always True for the beta1 shape
    alternatives: tuple[DeviceRequest, ...] = ()
    selectors: tuple[str, ...] = ()  # the request's own CEL selector expressions
    tolerations: tuple[Mapping[str, Any], ...] = ()  # of device taints
    capacity: tuple[tuple[str, str], ...] = ()  # capacity.requests: (name, quantity) each device must have

    def leaves(self) -> tuple[DeviceRequest, ...]:
        """The device requests that can be allocated: the request itself, or each firstAvailable entry."""
        return self.alternatives or (self,)


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    driver: str | None
    requests: tuple[str, ...]  # empty: every request of the claim
    sharing_strategy: str | None  # TimeSlicing | MPS from a GpuConfig / MigDeviceConfig
    path: str  # of the sharing strategy
    base: str = ""  # of the config entry: "spec.devices.config[0]"
    parameters: Any = None  # `opaque.parameters` as written (the driver's own API object), any JSON value


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    api_version: str
    path: str  # of the devices block's parent: "spec" (claim) or "spec.spec" (template)
    requests: tuple[DeviceRequest, ...]
    configs: tuple[OpaqueConfig, ...]
    legacy_class: str | None  # v1alpha2 spec.resourceClassName


def _request(raw: Mapping[str, Any], path: str, beta1: bool, subrequest: bool = False) -> DeviceRequest:
    name = as_str(raw.get("name")) or ""
    exactly = raw.get("exactly")
    # A firstAvailable alternative is a DeviceSubRequest, which has no firstAvailable of its own: one level,
    # however deep the input nests them.
    first = as_list(None if subrequest else raw.get("firstAvailable"))
    body = raw if beta1 or type(exactly) is not dict else exactly
    body_path = path if body is raw else f"{path}.exactly"
    alternatives = tuple(
        _request(alt, f"{path}.firstAvailable[{i}]", beta1=True, subrequest=True) for i, alt in enumerate(first)
        if type(alt) is dict
    )
    mode = as_str(body.get("allocationMode")) or "ExactCount"
    count = integer(body.get("count"))
    return DeviceRequest(
        name=name,
        path=body_path,
        device_class=as_str(body.get("deviceClassName")),
        allocation_mode=mode,
        count=1 if count is None and mode == "ExactCount" else (count or 0),
        admin_access=body.get("adminAccess") is True,
        has_shape=beta1 or type(exactly) is dict or bool(first),
        alternatives=alternatives,
        selectors=selector_texts({"spec": body}),
        tolerations=tuple(t for t in as_list(body.get("tolerations")) if type(t) is dict),
        capacity=tuple((k, v if type(v) is str else str(v)) for k, v in
                       as_dict(as_dict(body.get("capacity")).get("requests")).items()
                       if type(k) is str and type(v) in (str, int, float)),
    )


def _config(raw: Mapping[str, Any], path: str) -> OpaqueConfig | None:
    opaque = as_dict(raw.get("opaque"))
    if not opaque:
        return None
    raw_params = opaque.get("parameters")
    params = as_dict(raw_params)
    sharing = as_dict(params.get("sharing"))
    # Only the driver's sharing kinds carry a strategy: another kind's `sharing` is device-config's finding.
    strategy = as_str(sharing.get("strategy")) if as_str(params.get("kind")) in SHARING_KINDS else None
    return OpaqueConfig(
        driver=as_str(opaque.get("driver")),
        requests=tuple(r for r in as_list(raw.get("requests")) if type(r) is str),
        sharing_strategy=strategy,
        path=f"{path}.opaque.parameters.sharing.strategy",
        base=path,
        parameters=raw_params,
    )


def claim_spec(obj: Mapping[str, Any], kind: str) -> ClaimSpec:
    """The device requests of a ResourceClaim (`spec`) or a ResourceClaimTemplate (`spec.spec`)."""
    api_version = as_str(obj.get("apiVersion")) or ""
    spec = as_dict(obj.get("spec"))
    path = "spec"
    if kind == "ResourceClaimTemplate":
        spec = as_dict(spec.get("spec"))
        path = "spec.spec"
    devices = as_dict(spec.get("devices"))
    beta1 = api_version.endswith(("/v1beta1", "/v1alpha3"))
    requests = tuple(
        _request(r, f"{path}.devices.requests[{i}]", beta1)
        for i, r in enumerate(as_list(devices.get("requests")))
        if type(r) is dict
    )
    configs = tuple(
        c for i, r in enumerate(as_list(devices.get("config"))) if type(r) is dict
        if (c := _config(r, f"{path}.devices.config[{i}]"))
    )
    return ClaimSpec(api_version, path, requests, configs, as_str(spec.get("resourceClassName")))
