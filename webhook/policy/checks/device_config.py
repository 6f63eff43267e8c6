"""device-config: the opaque configs of the NVIDIA DRA drivers in a ResourceClaim or ResourceClaimTemplate, read
as the drivers read them (webhook/policy/driver_configs.py), and matched to the claim's requests as the
kubelet plugins match them (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin/device_state.go:
getConfigResultsMap, validateDeviceConfigType; cmd/compute-domain-kubelet-plugin/device_state.go): a config
naming a request applies to it and must be of its device type; one naming none applies to every device of
its own type. Configs of other drivers are theirs: never read."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from webhook.config.model import Policy
from webhook.objects.claims import ClaimSpec, DeviceRequest
from webhook.policy.context import Context
from webhook.policy.contract import CLAIMS, Check, Definition, InTree
from webhook.policy.dra import ObjectFacts
from webhook.policy.driver_configs import DEVICE_TYPE_KIND, DRIVER_KINDS, KIND_DEVICE_TYPE, read
from webhook.policy.messages import N_, T, names, quoted
from webhook.policy.results import Finding


def _requests(spec: ClaimSpec) -> dict[str, tuple[DeviceRequest, ...]]:
    """Every name a config's `requests` may give: a request, or `<request>/<alternative>` of a firstAvailable
    one, with the device requests it stands for (a firstAvailable request: its alternatives)."""
    out: dict[str, tuple[DeviceRequest, ...]] = {}
    for req in spec.requests:
        out[req.name] = req.leaves()
        for alt in req.alternatives:
            out[f"{req.name}/{alt.name}"] = (alt,)
    return out


def _device_type(leaf: DeviceRequest, driver: str, context: Context) -> str | None:
    """The device type the request's DeviceClass selects from `driver`; None when it is another driver's or
    not known."""
    info = context.device_class(leaf.device_class)
    if info is None or info.driver != driver:
        return None
    return info.device_type


def _devices(leaves: list[DeviceRequest]) -> int | None:
    """How many devices the requests allocate, where each says it exactly."""
    total = 0
    for leaf in leaves:
        if leaf.allocation_mode != "ExactCount" or leaf.alternatives:
            return None
        total += leaf.count
    return total


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    spec = facts.claim
    if spec is None or not spec.configs:
        return []
    by_name = _requests(spec)
    out: list[Finding] = []
    for config in spec.configs:
        driver = config.driver
        if driver is None or driver not in DRIVER_KINDS:
            continue
        # the device requests the config applies to, as the plugin picks them
        named: list[DeviceRequest] = []
        for i, name in enumerate(config.requests):
            path = f"{config.base}.requests[{i}]"
            if name not in by_name:
                out.append(Finding(
                    path=path,
                    what=T('{path} names request "{request}", which the claim does not have', path=path,
                           request=name),
                    why=T("a config applies only to requests of its own claim"),
                    fix=T("name one of {requests}", requests=names(quoted(by_name))) if by_name else
                    T("remove the config's requests")))
            else:
                named.extend(by_name[name])
        kind = config.parameters.get("kind") if type(config.parameters) is dict else None
        wanted = KIND_DEVICE_TYPE.get(kind) if type(kind) is str else None
        if config.requests:
            covered = named
        else:
            covered = [leaf for req in spec.requests for leaf in req.leaves()
                       if wanted is not None and _device_type(leaf, driver, context) == wanted]
        _, problems = read(config.parameters, config.base, driver, _devices(covered) if covered else None)
        out.extend(Finding(path=p.path, what=p.what, why=p.why, fix=p.fix) for p in problems)
        if wanted is None or kind not in DRIVER_KINDS[driver]:
            continue
        for i, name in enumerate(config.requests):
            for leaf in by_name.get(name, ()):
                found = _device_type(leaf, driver, context)
                if found is None or found == wanted or found not in DEVICE_TYPE_KIND:
                    continue
                path = f"{config.base}.requests[{i}]"
                out.append(Finding(
                    path=path,
                    what=T('{kind} ({path}) applies to request "{request}", whose DeviceClass "{device_class}" '
                           "gives {type} devices", kind=kind, path=path, request=leaf.name,
                           device_class=leaf.device_class or "", type=found),
                    why=T("the driver applies {kind} only to {wanted} devices and fails the claim on the node",
                          kind=kind, wanted=wanted),
                    fix=T("use {right} for that request, or name a request of {wanted} devices",
                          right=DEVICE_TYPE_KIND[found], wanted=wanted)))
                break
    return out


# ----------------------------------------------------------------------------------- its in-tree export's coverage

def exported(policy: Policy) -> bool:
    """Its in-tree policy reads the policy's DeviceClasses (not the cluster's: no DeviceClass lookups)."""
    return not policy.lookups.device_classes


PRINTABLE = r"^[ -~]*$"  # printable ASCII: what the webhook's line writes unescaped (RE2: `$` is the end)
_PRINTABLE = re.compile(r"[ -~]*")  # fullmatch: Python's `$` would also match before a final newline
INT64 = range(-(2**63), 2**63)  # a JSON integer beyond int64 reaches CEL as a double
SHARING_KINDS = ("GpuConfig", "MigDeviceConfig")


def _text(value: object, printable: bool) -> bool:
    """Absent, or a string (printable: one a message may quote)."""
    return value is _ABSENT or (type(value) is str and (not printable or bool(_PRINTABLE.fullmatch(value))))


_ABSENT = object()


def _keys(value: Mapping[str, Any]) -> bool:
    return all(_PRINTABLE.fullmatch(k) for k in value)


def _map(obj: Mapping[str, Any], key: str, then: Callable[[Mapping[str, Any]], bool]) -> bool:
    value = obj.get(key, _ABSENT)
    return value is _ABSENT or (type(value) is dict and _keys(value) and then(value))


def _typed(obj: Mapping[str, Any], key: str, kind: type) -> bool:
    value = obj.get(key, _ABSENT)
    return value is _ABSENT or (type(value) is kind and (kind is not int or value in INT64))


def _mps(m: Mapping[str, Any]) -> bool:
    return (_typed(m, "defaultActiveThreadPercentage", int) and _typed(m, "multiUser", bool)
            and "defaultPinnedDeviceMemoryLimit" not in m and "defaultPerDevicePinnedMemoryLimit" not in m)


def plain(parameters: object, driver: str) -> bool:
    """Whether the device-config policy decides this config's parameters exactly as the webhook does."""
    if type(parameters) is not dict:
        return False
    p: dict[str, Any] = parameters
    if not (_text(p.get("apiVersion", _ABSENT), True) and _text(p.get("kind", _ABSENT), True)):
        return False
    kind = p.get("kind")
    if kind not in DRIVER_KINDS[driver]:
        return True  # the driver stops at the kind: nothing else is read
    if not _keys(p):
        return False
    if kind in SHARING_KINDS:
        return _map(p, "sharing", lambda s: _text(s.get("strategy", _ABSENT), True) and _map(s, "mpsConfig", _mps) and (
            kind != "GpuConfig" or _map(s, "timeSlicingConfig", lambda t: _text(t.get("interval", _ABSENT), True))))
    if kind == "VfioDeviceConfig":
        return _map(p, "iommu", lambda i: _text(i.get("backendPolicy", _ABSENT), True)
                    and _typed(i, "enableAPIDevice", bool))
    return _text(p.get("domainID", _ABSENT), False) and (
        kind != "ComputeDomainChannelConfig" or _text(p.get("allocationMode", _ABSENT), False))


def claim_covered(spec: ClaimSpec, policy: Policy) -> bool:
    """The device-config policy decides this claim or template: every NVIDIA config is plain."""
    for config in spec.configs:
        driver = config.driver
        if driver is None or driver not in DRIVER_KINDS:
            continue
        if not plain(config.parameters, driver):
            return False
    return True


DEFINITION = Definition(
    "device-config",
    "an opaque config of the NVIDIA DRA drivers that the driver refuses (kind, fields, values, requests)",
    "DRA claims",
    __doc__,
    reason=N_(
        "Kubernetes stores a claim's opaque driver configs unread, and the NVIDIA DRA driver decodes them "
        "strictly only when it prepares the claim on a node: a typo or a value it refuses leaves the pod "
        "scheduled, holding its devices, in ContainerCreating."),
    checks=(
        Check(CLAIMS, check_object, stage=1),  # a DRA object's shape, after its API
    ),
    in_tree=InTree(exported, covers_claim=claim_covered, order=6))
