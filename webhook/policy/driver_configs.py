"""The NVIDIA DRA drivers' opaque device configs, read as the drivers read them.

Mirrors the API of kubernetes-sigs/dra-driver-nvidia-gpu (formerly NVIDIA/k8s-dra-driver-gpu) at v0.5.0-dev,
commit 95932046683719c43b6a0dd9613c2e5aad5d6703, `api/nvidia.com/resource/v1beta1/`: `api.go` (the group
version, the kinds and the StrictDecoder, which refuses unknown fields and values of the wrong JSON type),
`gpuconfig.go`, `migconfig.go`, `vfiodeviceconfig.go` with `iommu.go`, `computedomainconfig.go`, `sharing.go`
and `validate.go` (Normalize, then Validate). Where the kubelet plugins refuse more when they prepare a claim
(`cmd/gpu-kubelet-plugin/device_state.go`, `cmd/gpu-kubelet-plugin/sharing.go`,
`cmd/compute-domain-kubelet-plugin/device_state.go`), that is read here too: a TimeSlicing config with
`mpsConfig` (GetTimeSlicingConfig), an MPS one with `timeSlicingConfig` (GetMpsConfig), pinned memory limits
under 1Mi or for a device the config does not cover (MpsPerDevicePinnedMemoryLimit.Normalize), a config kind
applied to a device of another type (validateDeviceConfigType).

Feature gates are the cohort's business: a known sharing strategy the cohort does not enable is
`sharing-not-enabled`'s finding, never this module's."""
from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from webhook.objects.selectors import milli
from webhook.policy.messages import Joined, T, Text, names

GROUP_VERSION = "resource.nvidia.com/v1beta1"
GPU_DRIVER = "gpu.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
# The kinds each driver's kubelet plugin prepares, and the device type each applies to.
DRIVER_KINDS: Mapping[str, tuple[str, ...]] = {
    GPU_DRIVER: ("GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"),
    COMPUTE_DOMAIN_DRIVER: ("ComputeDomainChannelConfig", "ComputeDomainDaemonConfig"),
}
KIND_DEVICE_TYPE: Mapping[str, str] = {
    "GpuConfig": "gpu", "MigDeviceConfig": "mig", "VfioDeviceConfig": "vfio",
    "ComputeDomainChannelConfig": "channel", "ComputeDomainDaemonConfig": "daemon",
}
DEVICE_TYPE_KIND = {t: k for k, t in KIND_DEVICE_TYPE.items()}
# Every kind the StrictDecoder's scheme registers: ComputeDomain and ComputeDomainClique decode, but neither
# plugin prepares them as a device config.
DECODED_KINDS = (*KIND_DEVICE_TYPE, "ComputeDomain", "ComputeDomainClique")

STRATEGIES = ("TimeSlicing", "MPS")  # sharing.go: TimeSlicingStrategy, MpsStrategy
INTERVALS = ("Default", "Short", "Medium", "Long")  # sharing.go: TimeSliceInterval
BACKEND_POLICIES = ("LegacyOnly", "PreferIommuFD")  # iommu.go: IOMMUBackendPolicy
MIB = 2**20  # sharing.go: limit.Megabyte() must be > 0, in whole mebibytes

# The fields of each Go type, as the decoder matches them (case-sensitive).
_TYPE_META = ("apiVersion", "kind")
FIELDS: Mapping[str, tuple[str, ...]] = {
    "GpuConfig": (*_TYPE_META, "sharing"),
    "MigDeviceConfig": (*_TYPE_META, "sharing"),
    "VfioDeviceConfig": (*_TYPE_META, "iommu"),
    "ComputeDomainChannelConfig": (*_TYPE_META, "domainID", "allocationMode"),
    "ComputeDomainDaemonConfig": (*_TYPE_META, "domainID"),
    "GpuSharing": ("strategy", "timeSlicingConfig", "mpsConfig"),
    "MigDeviceSharing": ("strategy", "mpsConfig"),
    "TimeSlicingConfig": ("interval",),
    "MpsConfig": ("defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                  "defaultPerDevicePinnedMemoryLimit", "multiUser"),
    "IOMMUConfig": ("backendPolicy", "enableAPIDevice"),
}

# What the JSON types are called in messages (the driver's Go types, as a user writes them).
A_STRING = T("a string")
AN_INTEGER = T("an integer")
A_BOOLEAN = T("true or false")
A_MAPPING = T("a mapping")
A_QUANTITY = T("a quantity such as 10Gi")
_VALUE_WORDS = {bool: T("a boolean"), int: T("a number"), float: T("a number"), str: T("a string"),
                list: T("a list"), dict: T("a mapping"), type(None): T("null")}

STRICT = T("the driver decodes its configs strictly and refuses what its API does not have (names are "
           "case-sensitive)")
_DECODE_WHY = T("the driver decodes a config by its apiVersion and kind, and knows only {group_version}",
                group_version=GROUP_VERSION)
_UUID_KEY = re.compile(r"^(GPU|MIG)-[0-9A-Za-z-/]+$")
_INDEX_KEY = re.compile(r"^[+-]?\d+$")  # strconv.Atoi


class Problem:
    """One thing the driver refuses: the field path, what is wrong, why and the fix (Finding's parts)."""

    __slots__ = ("fix", "path", "what", "why")

    def __init__(self, path: str, what: Text, why: Text, fix: Text) -> None:
        self.path, self.what, self.why, self.fix = path, what, why, fix


def _word(value: object) -> Text:
    return _VALUE_WORDS.get(type(value), T("a value"))


class _Reader:
    """Walks one `parameters` object as the StrictDecoder would, collecting every problem at once."""

    def __init__(self) -> None:
        self.out: list[Problem] = []

    def wrong_type(self, path: str, value: object, expected: Text) -> None:
        self.out.append(Problem(path, T("{path} is {actual}, not {expected}", path=path, actual=_word(value),
                                        expected=expected),
                                T("the driver decodes its configs strictly and refuses a value of another type"),
                                T("write {path} as {expected}", path=path, expected=expected)))

    def mapping(self, value: object, path: str, go_type: str) -> Mapping[str, Any] | None:
        """The object at `path` (None: absent or null, which the decoder leaves unset), its unknown fields
        reported."""
        if value is None:
            return None
        if type(value) is not dict:
            self.wrong_type(path, value, A_MAPPING)
            return None
        known = FIELDS[go_type]
        for key in value:
            if key not in known:
                at = f"{path}.{key}"
                self.out.append(Problem(at, T("{path} is not a field of {type}", path=at, type=go_type), STRICT,
                                        T("remove it; {type} has {fields}", type=go_type, fields=names(known))))
        return value

    def string(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        value = obj.get(key)
        if value is None or type(value) is str:
            return value
        self.wrong_type(f"{path}.{key}", value, A_STRING)
        return None

    def one_of(self, obj: Mapping[str, Any], key: str, path: str, values: tuple[str, ...], what: Text,
               required: bool = False) -> str | None:
        at = f"{path}.{key}"
        value = self.string(obj, key, path)
        if value is None and key in obj and obj[key] is not None:
            return None  # of the wrong type: said
        if value in values or (value in (None, "") and not required):
            return value
        listed = Joined(values)
        what_text = T("{path} is missing", path=at) if value in (None, "") else \
            T('{path} is "{value}"', path=at, value=value)
        self.out.append(Problem(at, what_text, T("the driver knows only these {what}: {values}", what=what,
                                                 values=listed),
                                T("use one of: {values}", values=listed)))
        return None

    def boolean(self, obj: Mapping[str, Any], key: str, path: str) -> None:
        value = obj.get(key)
        if value is not None and type(value) is not bool:
            self.wrong_type(f"{path}.{key}", value, A_BOOLEAN)


_WHOLE = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_SCALES = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def _quantity(value: object) -> int | None:
    """A resource.Quantity's Value() (whole units, rounded up), as it unmarshals from JSON; None when it
    does not parse."""
    if type(value) is int:
        return value
    text = repr(value) if type(value) is float else value.strip() if type(value) is str else None
    if text is None:
        return None
    whole = _WHOLE.match(text)  # the usual shape ("10Gi"), in integers
    if whole:
        return int(whole.group(1)) * _SCALES[whole.group(2)]
    try:
        thousandths = milli(text)
    except ValueError:
        return None
    return math.ceil(thousandths / 1000)


def _absent(obj: Mapping[str, Any], key: str) -> bool:
    """The string field reads as "" in Go: absent, null or empty (a value of another type was said)."""
    value = obj.get(key)
    return value is None or value == ""


def read(parameters: object, base: str, driver: str, devices: int | None) -> tuple[str | None, list[Problem]]:
    """(the kind, every problem) of one config's `opaque.parameters` at `base` (the config entry's path),
    given to `driver`. `devices`: how many devices the config covers, where every request it applies to has
    an exact count (the pinned memory limits' device indexes are checked against it)."""
    r = _Reader()
    path = f"{base}.opaque.parameters"
    if type(parameters) is not dict:
        r.wrong_type(path, parameters, A_MAPPING)
        return None, r.out
    api_version = r.string(parameters, "apiVersion", path)
    kind = r.string(parameters, "kind", path)
    kinds = DRIVER_KINDS[driver]
    if api_version != GROUP_VERSION and (api_version or _absent(parameters, "apiVersion")):
        at = f"{path}.apiVersion"
        r.out.append(Problem(at, T('{path} is "{value}"', path=at, value=api_version) if api_version else
                             T("{path} is missing", path=at), _DECODE_WHY,
                             T("set apiVersion: {group_version}", group_version=GROUP_VERSION)))
    if not kind:
        if _absent(parameters, "kind"):
            r.out.append(Problem(f"{path}.kind", T("{path} is missing", path=f"{path}.kind"), _DECODE_WHY,
                                 T("set kind to one of: {kinds}", kinds=Joined(kinds))))
        return None, r.out
    if kind not in DECODED_KINDS:
        r.out.append(Problem(f"{path}.kind", T('{path} is "{value}"', path=f"{path}.kind", value=kind),
                             T("the driver {driver} knows only the config kinds {kinds}", driver=driver,
                               kinds=Joined(kinds)),
                             T("use one of: {kinds}", kinds=Joined(kinds))))
        return None, r.out
    if kind not in kinds:
        other = next((d for d, ks in DRIVER_KINDS.items() if kind in ks), None)
        r.out.append(Problem(
            f"{path}.kind", T('{path} is {kind}, a config given to the driver {driver}', path=f"{path}.kind",
                              kind=kind, driver=driver),
            T("only {other} prepares {kind}; {driver} fails the claim on it, or ignores it", other=other, kind=kind,
              driver=driver) if other else
            T("{kind} is an object of the cluster, not a device config", kind=kind),
            T("set {path} to {other}", path=f"{base}.opaque.driver", other=other) if other else
            T("use one of: {kinds}", kinds=Joined(kinds))))
        return kind, r.out
    if r.mapping(parameters, path, kind) is None:
        return kind, r.out
    if kind in ("GpuConfig", "MigDeviceConfig"):
        _sharing(r, parameters, path, kind, devices)
    elif kind == "VfioDeviceConfig":
        iommu = r.mapping(parameters.get("iommu"), f"{path}.iommu", "IOMMUConfig")
        if iommu is not None:
            # Normalize: an empty backendPolicy reads as LegacyOnly
            r.one_of(iommu, "backendPolicy", f"{path}.iommu", BACKEND_POLICIES, T("IOMMU backend policies"))
            r.boolean(iommu, "enableAPIDevice", f"{path}.iommu")
    else:
        domain = r.string(parameters, "domainID", path)
        if not domain and _absent(parameters, "domainID"):
            at = f"{path}.domainID"
            r.out.append(Problem(at, T("{path} is empty", path=at) if domain == "" else T("{path} is missing", path=at),
                                 T("the driver refuses a ComputeDomain config without the domain it joins"),
                                 T("set domainID to the ComputeDomain's UID, or use the ResourceClaimTemplate "
                                   "that the ComputeDomain's controller writes")))
        if kind == "ComputeDomainChannelConfig":
            r.string(parameters, "allocationMode", path)  # any string: only All changes what is injected
    return kind, r.out


def _sharing(r: _Reader, parameters: Mapping[str, Any], path: str, kind: str, devices: int | None) -> None:
    go_type = "GpuSharing" if kind == "GpuConfig" else "MigDeviceSharing"
    at = f"{path}.sharing"
    sharing = r.mapping(parameters.get("sharing"), at, go_type)
    if sharing is None:
        return
    strategy = r.one_of(sharing, "strategy", at, STRATEGIES, T("sharing strategies"), required=True)
    ts_raw, mps_raw = sharing.get("timeSlicingConfig"), sharing.get("mpsConfig")
    if kind == "GpuConfig":
        ts = r.mapping(ts_raw, f"{at}.timeSlicingConfig", "TimeSlicingConfig")
        if ts is not None:
            interval = r.one_of(ts, "interval", f"{at}.timeSlicingConfig", INTERVALS, T("time-slice intervals"))
            if strategy == "TimeSlicing" and interval is None and ts.get("interval") is None:
                # Normalize fills in the interval only where timeSlicingConfig is absent; Validate then reads it
                ipath = f"{at}.timeSlicingConfig.interval"
                r.out.append(Problem(ipath, T("{path} is missing", path=ipath),
                                     T("the driver fails to validate a timeSlicingConfig without its interval"),
                                     T("set interval to one of: {values}, or remove timeSlicingConfig",
                                       values=Joined(INTERVALS))))
    mps = r.mapping(mps_raw, f"{at}.mpsConfig", "MpsConfig")
    if mps is not None:
        _mps(r, mps, f"{at}.mpsConfig", devices)
    if strategy == "TimeSlicing" and mps_raw is not None:
        r.out.append(Problem(f"{at}.mpsConfig", T("{path} is set with strategy {strategy}", path=f"{at}.mpsConfig",
                                                  strategy=strategy),
                             T("the driver refuses mpsConfig under TimeSlicing when it prepares the claim on the node")
                             if kind == "GpuConfig" else
                             T("the driver ignores mpsConfig under TimeSlicing: the MIG device is not shared by MPS"),
                             T("remove mpsConfig, or use strategy MPS")))
    if strategy == "MPS" and kind == "GpuConfig" and ts_raw is not None:
        r.out.append(Problem(f"{at}.timeSlicingConfig",
                             T("{path} is set with strategy {strategy}", path=f"{at}.timeSlicingConfig",
                               strategy=strategy),
                             T("the driver refuses timeSlicingConfig under MPS when it prepares the claim on the node"),
                             T("remove timeSlicingConfig, or use strategy TimeSlicing")))


def _mps(r: _Reader, mps: Mapping[str, Any], at: str, devices: int | None) -> None:
    value = mps.get("defaultActiveThreadPercentage")
    path = f"{at}.defaultActiveThreadPercentage"
    if value is not None:
        if type(value) is not int:
            r.wrong_type(path, value, AN_INTEGER)
        elif not 0 <= value <= 100:
            r.out.append(Problem(path, T("{path} is {value}", path=path, value=value),
                                 T("the driver accepts an active thread percentage from 0 to 100"),
                                 T("use a percentage from 0 to 100")))
    r.boolean(mps, "multiUser", at)
    for key, limit in _limits(r, mps, at):
        _limit(r, limit, key)
    per = mps.get("defaultPerDevicePinnedMemoryLimit")
    if type(per) is dict:
        for key in per:
            device = str(key) if type(key) is int else key
            kpath = f"{at}.defaultPerDevicePinnedMemoryLimit.{device}"
            if type(device) is not str:
                continue
            if _INDEX_KEY.match(device):
                index = int(device)
                if index < 0 or (devices is not None and index >= devices):
                    r.out.append(Problem(kpath, T('{path} names device index {index}', path=kpath, index=index),
                                         T("the config covers {count} devices, indexed from 0", count=devices)
                                         if devices is not None else
                                         T("device indexes count from 0"),
                                         T("use a device index from 0 to {last}, or a device UUID",
                                           last=devices - 1) if devices else
                                         T("use a device index from 0, or a device UUID")))
            elif not _UUID_KEY.match(device):
                r.out.append(Problem(kpath, T('{path} names device "{key}"', path=kpath, key=device),
                                     T("the driver takes a device index or the UUID of a device the config covers"),
                                     T("use a device index (0, 1, ...) or a GPU-/MIG- UUID")))


def _limits(r: _Reader, mps: Mapping[str, Any], at: str) -> Iterator[tuple[str, object]]:
    """(path, value) of every pinned memory limit of an MpsConfig."""
    if "defaultPinnedDeviceMemoryLimit" in mps and mps["defaultPinnedDeviceMemoryLimit"] is not None:
        yield f"{at}.defaultPinnedDeviceMemoryLimit", mps["defaultPinnedDeviceMemoryLimit"]
    per = mps.get("defaultPerDevicePinnedMemoryLimit")
    if per is None:
        return
    if type(per) is not dict:
        r.wrong_type(f"{at}.defaultPerDevicePinnedMemoryLimit", per, A_MAPPING)
        return
    for key, value in per.items():
        yield f"{at}.defaultPerDevicePinnedMemoryLimit.{key}", value


def _limit(r: _Reader, value: object, path: str) -> None:
    if type(value) not in (str, int, float):
        r.wrong_type(path, value, A_QUANTITY)
        return
    amount = _quantity(value)
    if amount is None:
        r.out.append(Problem(path, T('{path} is "{value}"', path=path, value=str(value)),
                             T("the driver decodes it as a Kubernetes quantity, and this is none"),
                             T("write a quantity such as 10Gi")))
    elif amount < MIB:
        r.out.append(Problem(path, T("{path} is {value}", path=path, value=str(value)),
                             T("the driver sets pinned memory limits in whole mebibytes and refuses one under 1Mi"),
                             T("give 1Mi or more, e.g. 10Gi")))
