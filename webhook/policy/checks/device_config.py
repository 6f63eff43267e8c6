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
from webhook.policy.cel import Validation, lit, strings
from webhook.policy.cel.shapes import Shape
from webhook.policy.cel.text import Cel, CelNames, If, Lines, Lookup, Piece, cat, msg
from webhook.policy.context import Context
from webhook.policy.contract import CLAIMS, Check, Definition, InTree, Variables
from webhook.policy.dra import ObjectFacts
from webhook.policy.driver_configs import (
    _DECODE_WHY,
    BACKEND_POLICIES,
    DECODED_KINDS,
    DEVICE_TYPE_KIND,
    DRIVER_KINDS,
    FIELDS,
    GROUP_VERSION,
    INTERVALS,
    KIND_DEVICE_TYPE,
    STRATEGIES,
    STRICT,
    read,
)
from webhook.policy.messages import N_, Joined, T, names, quoted
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


# -------------------------------------------------------------------------------- its in-tree export, in CEL
# The apiserver hands the policy the claim converted to resource.k8s.io/v1 (matchPolicy Equivalent: a v1beta1 or
# v1beta2 request is converted first), and `opaque.parameters` (a RawExtension) as the JSON it holds: a map whose
# keys an expression can list, with JSON's types (int, double, string, bool, null, map, list). So the strict
# decoder's unknown fields, case-sensitive, are said in CEL too. What is not, the coverage leaves to the webhook
# for the whole object (`plain` above, and `cel_covered` below: the same predicate in Python and in CEL):
# - a config with pinned memory limits: the driver reads them as quantities rounded its own way, and checks
#   device indexes against the devices the config covers (counts, firstAvailable);
# - a value of the wrong JSON type (or null) where the driver reads a field: said by the webhook alone, so that
#   one validation per field is not needed;
# - a value or unknown key that a message quotes and that is not printable ASCII: the webhook's line escapes
#   unsafe characters, and CEL has no such escape.
# The device type a request's DeviceClass gives is read from the policy's DeviceClasses, written into the policy:
# with DeviceClass lookups on, the cluster's classes replace them, and the rule is not exported (`exported`), as
# the chart leaves its objects out.

COMPUTE_DOMAIN_KINDS = DRIVER_KINDS["compute-domain.nvidia.com"]
CLUSTER_KINDS = tuple(k for k in DECODED_KINDS if k not in KIND_DEVICE_TYPE)


# ---------------------------------------------------------------------------------------------- coverage (CEL)

NV = f"has(c.opaque) && c.opaque.driver in {strings(DRIVER_KINDS)}"


def _c_text(m: str, key: str, printable: bool) -> str:
    v = f"{m}.{key}"
    check = f"type({v}) == string" + (f" && {v}.matches({lit(PRINTABLE)})" if printable else "")
    return f"(!has({v}) || ({check}))"


def _c_keys(m: str) -> str:
    return f"{m}.all(k, k.matches({lit(PRINTABLE)}))"


def _c_map(m: str, key: str, then: str) -> str:
    v = f"{m}.{key}"
    return f"(!has({v}) || (type({v}) == map && {_c_keys(v)} && {then}))"


def _c_typed(m: str, key: str, kind: str) -> str:
    return f"(!has({m}.{key}) || type({m}.{key}) == {kind})"


def _c_plain(c: str) -> str:
    """CEL: plain(c.opaque.parameters, c.opaque.driver)."""
    p = f"{c}.opaque.parameters"
    s, m, t, i = f"{p}.sharing", f"{p}.sharing.mpsConfig", f"{p}.sharing.timeSlicingConfig", f"{p}.iommu"
    mps = (f"{_c_typed(m, 'defaultActiveThreadPercentage', 'int')} && {_c_typed(m, 'multiUser', 'bool')} && "
           f"!has({m}.defaultPinnedDeviceMemoryLimit) && !has({m}.defaultPerDevicePinnedMemoryLimit)")
    time_slicing = _c_map(s, "timeSlicingConfig", _c_text(t, "interval", True))
    sharing = _c_map(p, "sharing", f"{_c_text(s, 'strategy', True)} && {_c_map(s, 'mpsConfig', mps)} && "
                                   f"({p}.kind != 'GpuConfig' || {time_slicing})")
    vfio = _c_map(p, "iommu", f"{_c_text(i, 'backendPolicy', True)} && {_c_typed(i, 'enableAPIDevice', 'bool')}")
    domain = (f"{_c_text(p, 'domainID', False)} && ({p}.kind != 'ComputeDomainChannelConfig' || "
              f"{_c_text(p, 'allocationMode', False)})")
    by_kind = (f"{p}.kind in {strings(SHARING_KINDS)} ? {sharing} : {p}.kind == 'VfioDeviceConfig' ? {vfio} : "
               f"{domain}")
    return (f"type({p}) == map && {_c_text(p, 'apiVersion', True)} && {_c_text(p, 'kind', True)} && "
            f"(!(has({p}.kind) && {p}.kind in variables.kinds[{c}.opaque.driver]) || ({_c_keys(p)} && ({by_kind})))")


SPEC = "variables.spec"


def cel_covered(shape: Shape, policy: Policy) -> str:
    """CEL: claim_covered(...), over the policy's variables (cel_validations())."""
    return f"variables.configs.all(c, !({NV}) || {_c_plain('c')})"


# ------------------------------------------------------------------------------------------------ validations

def _class_types(policy: Policy) -> dict[str, dict[str, str]]:
    """driver -> {DeviceClass -> device type} of the policy's classes that a config kind applies to."""
    out: dict[str, dict[str, str]] = {d: {} for d in DRIVER_KINDS}
    for name, info in sorted(policy.device_classes.items()):
        if info.driver in out and info.device_type in DEVICE_TYPE_KIND:
            out[info.driver][name] = info.device_type
    return out


def _cel_map(values: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in sorted(values.items())) + "}"


def _by_driver(driver: str, make: Callable[[str], Piece]) -> Piece:
    gpu, cd = DRIVER_KINDS
    return If(f"{driver} == {lit(gpu)}", make(gpu), make(cd))


def cel_validations(shape: Shape, policy: Policy, lines: Lines) -> tuple[Variables, list[Validation]]:
    """check_object's findings: one validation per kind of finding, each failing for the first
    NVIDIA config that has it (the webhook says every one; each in-tree line is one of its lines)."""
    variables: list[dict[str, Any]] = [
        {"name": "kinds", "expression": "{" + ", ".join(f"{lit(d)}: {strings(k)}" for d, k in DRIVER_KINDS.items())
                                        + "}"},
        {"name": "configs", "expression": f"has({SPEC}.devices) && has({SPEC}.devices.config) ? "
                                          f"{SPEC}.devices.config : []"},
        {"name": "requests", "expression": f"has({SPEC}.devices) && has({SPEC}.devices.requests) ? "
                                           f"{SPEC}.devices.requests : []"},
        # the NVIDIA configs, and those of a kind their driver prepares, in place ({} for the others)
        {"name": "nv", "expression": f"variables.configs.map(c, {NV} ? c : {{}})"},
        {"name": "own", "expression": "variables.nv.map(c, size(c) > 0 && has(c.opaque.parameters.kind) && "
                                      "c.opaque.parameters.kind in variables.kinds[c.opaque.driver] ? c : {})"},
    ]
    out: list[Validation] = []

    def check(name: str, fails: Callable[[str], str],
              message: Callable[[str, Callable[[str], Piece]], tuple[Piece, Piece, Piece]]) -> None:
        """A validation: the first NVIDIA config for which `fails` (CEL of the config `c`) holds, its message
        made by `message` of the config's CEL and a path maker (suffix -> the field path). A condition that
        starts with `own` reads the `own` configs, the others the `nv` ones."""
        condition, owned = fails("c"), own("c") + " && "
        listed = "variables.own" if condition.startswith(owned) else "variables.nv"
        condition = condition.removeprefix(owned)
        variables.append({"name": name, "expression": f"{listed}.map(c, size(c) > 0 && ({condition})).indexOf(true)"})
        index = f"variables.{name}"
        variables.append({"name": f"{name}_c", "expression": f"variables.configs[{index}]"})
        config = f"variables.{name}_c"  # the failing config, which the message reads

        def path(suffix: str) -> Piece:
            return cat(shape.path, ".devices.config[", Cel(f"string({index})"), "]" + suffix)

        what, why, fix = message(config, path)
        out.append(Validation(f"{index} < 0", lines.line(what, why, fix)))

    def params(c: str) -> str:
        return f"{c}.opaque.parameters"

    def own(c: str) -> str:  # the kind is one the config's driver prepares: the driver reads on
        p = params(c)
        return f"has({p}.kind) && {p}.kind in variables.kinds[{c}.opaque.driver]"

    # ---- requests naming no request of the claim (the names computed once: a claim may have 32 configs of
    # 32 names each, and 32 requests of 8 alternatives; `in` over a list is the library's, not a comprehension)
    variables.extend([
        {"name": "request_names", "expression": REQUEST_NAMES},
        {"name": "names", "expression": "variables.request_names.map(n, '\"' + n + '\"')"},
    ])

    def missing_request(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        j = "variables.missing_request_at"
        at = cat(path(".requests["), Cel(f"string({j})"), "]")
        listed = If("size(variables.names) == 0", T("remove the config's requests"),
                    msg("name one of {requests}", requests=CelNames("variables.names")))
        return (msg('{path} names request "{request}", which the claim does not have', path=at,
                    request=Cel(f"{c}.requests[{j}]")),
                T("a config applies only to requests of its own claim"), listed)

    check("missing_request", lambda c: f"has({c}.requests) && {c}.requests.exists(n, !(n in variables.request_names))",
          missing_request)
    variables.append({"name": "missing_request_at", "expression": "variables.missing_request_c"
                                                                  ".requests.map(n, !(n in variables.request_names))"
                                                                  ".indexOf(true)"})

    # ---- apiVersion and kind
    def api_version(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        p, at = params(c), path(".opaque.parameters.apiVersion")
        return (If(f"has({p}.apiVersion) && {p}.apiVersion != ''",
                   msg('{path} is "{value}"', path=at, value=Cel(f"{p}.apiVersion")),
                   msg("{path} is missing", path=at)),
                _DECODE_WHY, T("set apiVersion: {group_version}", group_version=GROUP_VERSION))

    check("api_version", lambda c: f"!has({params(c)}.apiVersion) || {params(c)}.apiVersion != {lit(GROUP_VERSION)}",
          api_version)

    def kind_missing(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        return (msg("{path} is missing", path=path(".opaque.parameters.kind")), _DECODE_WHY,
                _by_driver(f"{c}.opaque.driver", lambda d: T("set kind to one of: {kinds}",
                                                              kinds=Joined(DRIVER_KINDS[d]))))

    check("kind_missing", lambda c: f"!has({params(c)}.kind) || {params(c)}.kind == ''", kind_missing)

    def kind_unknown(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        p = params(c)
        return (msg('{path} is "{value}"', path=path(".opaque.parameters.kind"), value=Cel(f"{p}.kind")),
                _by_driver(f"{c}.opaque.driver", lambda d: T("the driver {driver} knows only the config kinds "
                                                              "{kinds}", driver=d, kinds=Joined(DRIVER_KINDS[d]))),
                _by_driver(f"{c}.opaque.driver", lambda d: T("use one of: {kinds}", kinds=Joined(DRIVER_KINDS[d]))))

    check("kind_unknown", lambda c: f"has({params(c)}.kind) && {params(c)}.kind != '' && "
                                    f"!({params(c)}.kind in {strings(DECODED_KINDS)})", kind_unknown)

    def kind_other(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        p, driver = params(c), f"{c}.opaque.driver"
        kind = Cel(f"{p}.kind")
        cluster = f"{p}.kind in {strings(CLUSTER_KINDS)}"
        gpu, cd = DRIVER_KINDS
        other = If(f"{driver} == {lit(gpu)}", cd, gpu)  # the kind is the other driver's, where not the cluster's
        return (msg("{path} is {kind}, a config given to the driver {driver}", path=path(".opaque.parameters.kind"),
                    kind=kind, driver=Cel(driver)),
                If(cluster, msg("{kind} is an object of the cluster, not a device config", kind=kind),
                   msg("only {other} prepares {kind}; {driver} fails the claim on it, or ignores it", other=other,
                       kind=kind, driver=Cel(driver))),
                If(cluster, _by_driver(driver, lambda d: T("use one of: {kinds}", kinds=Joined(DRIVER_KINDS[d]))),
                   msg("set {path} to {other}", path=path(".opaque.driver"), other=other)))

    check("kind_other", lambda c: f"has({params(c)}.kind) && {params(c)}.kind in {strings(DECODED_KINDS)} && "
                                  f"!({own(c)})", kind_other)

    # ---- unknown fields (the strict decoder), at each level the driver reads
    kinds_fields = {k: FIELDS[k] for k in KIND_DEVICE_TYPE}
    variables.append({"name": "fields", "expression": "{" + ", ".join(f"{lit(k)}: {strings(v)}"
                                                                      for k, v in kinds_fields.items()) + "}"})

    def unknown(name: str, where: Callable[[str], str], level: Callable[[str], str], suffix: str,
                go_type: Callable[[str], Piece], allowed: Callable[[str], str],
                listed: Callable[[str], Piece]) -> None:
        def fails(c: str) -> str:
            m = level(c)
            return f"{own(c)} && ({where(c)}) && {m}.exists(k, !(k in {allowed(c)}))"

        def message(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
            m = level(c)
            key = f"{m}.filter(k, !(k in {allowed(c)})).min()"
            at = cat(path(suffix), ".", Cel(key))
            return (msg("{path} is not a field of {type}", path=at, type=go_type(c)), STRICT,
                    msg("remove it; {type} has {fields}", type=go_type(c), fields=listed(c)))

        check(name, fails, message)

    def kind_of(c: str) -> str:
        return f"{params(c)}.kind"

    unknown("unknown_field", lambda c: "true", params, ".opaque.parameters", lambda c: Cel(kind_of(c)),
            lambda c: f"variables.fields[{kind_of(c)}]",
            lambda c: Lookup(kind_of(c), {k: names(v) for k, v in kinds_fields.items()}))
    sharing_type = {"GpuConfig": "GpuSharing", "MigDeviceConfig": "MigDeviceSharing"}

    def has_sharing(c: str) -> str:
        return f"{kind_of(c)} in {strings(SHARING_KINDS)} && has({params(c)}.sharing)"

    unknown("unknown_sharing_field", has_sharing, lambda c: f"{params(c)}.sharing", ".opaque.parameters.sharing",
            lambda c: Lookup(kind_of(c), sharing_type),
            lambda c: f"({kind_of(c)} == 'GpuConfig' ? {strings(FIELDS['GpuSharing'])} : "
                      f"{strings(FIELDS['MigDeviceSharing'])})",
            lambda c: Lookup(kind_of(c), {k: names(FIELDS[t]) for k, t in sharing_type.items()}))
    unknown("unknown_time_slicing_field",
            lambda c: f"{kind_of(c)} == 'GpuConfig' && has({params(c)}.sharing) && "
                      f"has({params(c)}.sharing.timeSlicingConfig)",
            lambda c: f"{params(c)}.sharing.timeSlicingConfig", ".opaque.parameters.sharing.timeSlicingConfig",
            lambda c: "TimeSlicingConfig", lambda c: strings(FIELDS["TimeSlicingConfig"]),
            lambda c: names(FIELDS["TimeSlicingConfig"]))
    unknown("unknown_mps_field", lambda c: f"{has_sharing(c)} && has({params(c)}.sharing.mpsConfig)",
            lambda c: f"{params(c)}.sharing.mpsConfig", ".opaque.parameters.sharing.mpsConfig",
            lambda c: "MpsConfig", lambda c: strings(FIELDS["MpsConfig"]), lambda c: names(FIELDS["MpsConfig"]))
    unknown("unknown_iommu_field",
            lambda c: f"{kind_of(c)} == 'VfioDeviceConfig' && has({params(c)}.iommu)",
            lambda c: f"{params(c)}.iommu", ".opaque.parameters.iommu",
            lambda c: "IOMMUConfig", lambda c: strings(FIELDS["IOMMUConfig"]), lambda c: names(FIELDS["IOMMUConfig"]))

    # ---- enums
    def one_of(name: str, where: Callable[[str], str], field: Callable[[str], str], suffix: str,
               values: tuple[str, ...], what: Any, required: bool) -> None:
        def fails(c: str) -> str:
            v = field(c)
            wrong = f"{v} != '' && !({v} in {strings(values)})"
            return (f"{own(c)} && ({where(c)}) && " +
                    (f"(!has({v}) || {v} == '' || !({v} in {strings(values)}))" if required
                     else f"has({v}) && {wrong}"))

        def message(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
            v, at = field(c), path(suffix)
            listed = Joined(values)
            said: Piece = msg('{path} is "{value}"', path=at, value=Cel(v))
            if required:
                said = If(f"has({v}) && {v} != ''", said, msg("{path} is missing", path=at))
            return (said, T("the driver knows only these {what}: {values}", what=what, values=listed),
                    T("use one of: {values}", values=listed))

        check(name, fails, message)

    one_of("strategy", has_sharing, lambda c: f"{params(c)}.sharing.strategy", ".opaque.parameters.sharing.strategy",
           STRATEGIES, T("sharing strategies"), True)

    def has_time_slicing(c: str) -> str:
        return (f"{kind_of(c)} == 'GpuConfig' && has({params(c)}.sharing) && "
                f"has({params(c)}.sharing.timeSlicingConfig)")

    one_of("interval", has_time_slicing, lambda c: f"{params(c)}.sharing.timeSlicingConfig.interval",
           ".opaque.parameters.sharing.timeSlicingConfig.interval", INTERVALS, T("time-slice intervals"), False)
    one_of("backend_policy", lambda c: f"{kind_of(c)} == 'VfioDeviceConfig' && has({params(c)}.iommu)",
           lambda c: f"{params(c)}.iommu.backendPolicy", ".opaque.parameters.iommu.backendPolicy", BACKEND_POLICIES,
           T("IOMMU backend policies"), False)

    def strategy_is(c: str, value: str) -> str:
        s = f"{params(c)}.sharing"
        return f"has({s}.strategy) && {s}.strategy == {lit(value)}"

    at_interval = ".opaque.parameters.sharing.timeSlicingConfig.interval"
    check("interval_missing",
          lambda c: f"{own(c)} && {has_time_slicing(c)} && {strategy_is(c, 'TimeSlicing')} && "
                    f"!has({params(c)}.sharing.timeSlicingConfig.interval)",
          lambda c, path: (msg("{path} is missing", path=path(at_interval)),
                           T("the driver fails to validate a timeSlicingConfig without its interval"),
                           T("set interval to one of: {values}, or remove timeSlicingConfig",
                             values=Joined(INTERVALS))))

    # ---- MPS limits and the strategies mixed
    percentage = ".sharing.mpsConfig.defaultActiveThreadPercentage"

    def thread_percentage(c: str) -> str:
        return f"{params(c)}{percentage}"

    check("thread_percentage",
          lambda c: f"{own(c)} && {has_sharing(c)} && has({params(c)}.sharing.mpsConfig) && "
                    f"has({thread_percentage(c)}) && ({thread_percentage(c)} < 0 || {thread_percentage(c)} > 100)",
          lambda c, path: (msg("{path} is {value}", path=path(".opaque.parameters" + percentage),
                               value=Cel(f"string({thread_percentage(c)})")),
                           T("the driver accepts an active thread percentage from 0 to 100"),
                           T("use a percentage from 0 to 100")))
    mps_at = ".opaque.parameters.sharing.mpsConfig"
    check("time_slicing_with_mps",
          lambda c: f"{own(c)} && {has_sharing(c)} && {strategy_is(c, 'TimeSlicing')} && "
                    f"has({params(c)}.sharing.mpsConfig)",
          lambda c, path: (msg("{path} is set with strategy {strategy}", path=path(mps_at), strategy="TimeSlicing"),
                           If(f"{kind_of(c)} == 'GpuConfig'",
                              T("the driver refuses mpsConfig under TimeSlicing when it prepares the claim on the "
                                "node"),
                              T("the driver ignores mpsConfig under TimeSlicing: the MIG device is not shared by MPS")),
                           T("remove mpsConfig, or use strategy MPS")))
    ts_at = ".opaque.parameters.sharing.timeSlicingConfig"
    check("mps_with_time_slicing",
          lambda c: f"{own(c)} && {has_time_slicing(c)} && {strategy_is(c, 'MPS')}",
          lambda c, path: (msg("{path} is set with strategy {strategy}", path=path(ts_at), strategy="MPS"),
                           T("the driver refuses timeSlicingConfig under MPS when it prepares the claim on the node"),
                           T("remove timeSlicingConfig, or use strategy TimeSlicing")))

    # ---- ComputeDomain configs: the domain
    check("domain",
          lambda c: f"{own(c)} && {kind_of(c)} in {strings(COMPUTE_DOMAIN_KINDS)} && "
                    f"(!has({params(c)}.domainID) || {params(c)}.domainID == '')",
          lambda c, path: (If(f"has({params(c)}.domainID)",
                              msg("{path} is empty", path=path(".opaque.parameters.domainID")),
                              msg("{path} is missing", path=path(".opaque.parameters.domainID"))),
                           T("the driver refuses a ComputeDomain config without the domain it joins"),
                           T("set domainID to the ComputeDomain's UID, or use the ResourceClaimTemplate that the "
                             "ComputeDomain's controller writes")))

    # ---- a config of one device type applied by name to a request of another (the policy's DeviceClasses)
    _device_types(check, variables, policy, params, own)
    return variables, out


# Every name a config's `requests` may give, in the claim's order (_requests): each request, then
# `<request>/<alternative>` for its firstAvailable alternatives (names never hold a newline: DNS labels).
REQUEST_NAMES = ("size(variables.requests) == 0 ? [] : variables.requests.map(r, has(r.firstAvailable) && "
                 "size(r.firstAvailable) > 0 ? r.name + '\\n' + r.firstAvailable.map(a, r.name + '/' + a.name)"
                 ".join('\\n') : r.name).join('\\n').split('\\n')")


def _device_types(check: Callable[..., None], variables: list[dict[str, Any]], policy: Policy,
                  params: Callable[[str], str], own: Callable[[str], str]) -> None:
    """The device types each name in `requests` stands for, computed once, parallel to `request_names`:
    `|<driver>/<type>|...|` of its device requests' DeviceClasses (a request with alternatives: every
    alternative's), by the policy's classes."""
    flat = {name: f"{driver}/{t}" for driver, classes in _class_types(policy).items() for name, t in classes.items()}

    def type_of(cls: str) -> str:
        return f"({cls} in variables.class_types ? variables.class_types[{cls}] : '')"

    leaf_types = ("size(variables.requests) == 0 ? [] : variables.requests.map(r, has(r.firstAvailable) && "
                  f"size(r.firstAvailable) > 0 ? '|' + r.firstAvailable.map(a, {type_of('a.deviceClassName')})"
                  ".join('|') + '|\\n' + r.firstAvailable.map(a, '|' + "
                  f"{type_of('a.deviceClassName')} + '|').join('\\n') : "
                  f"'|' + (has(r.exactly) ? {type_of('r.exactly.deviceClassName')} : '') + '|')"
                  ".join('\\n').split('\\n')")
    variables.extend([
        {"name": "class_types", "expression": _cel_map(flat)},
        {"name": "wanted", "expression": _cel_map(KIND_DEVICE_TYPE)},
        {"name": "name_types", "expression": leaf_types},
    ])
    types = strings(DEVICE_TYPE_KIND)

    def mismatched(c: str, n: str) -> str:
        """CEL: the name `n` of the config `c`'s requests stands for a device of another type of its driver."""
        return (f"{n} in variables.request_names && {types}.exists(t, t != variables.wanted[{params(c)}.kind] && "
                f"variables.name_types[variables.request_names.indexOf({n})].contains("
                f"'|' + {c}.opaque.driver + '/' + t + '|'))")

    def bad(c: str, cls: str) -> str:
        """CEL: the class `cls` gives a device of the config's driver of another type than the config's."""
        t = type_of(cls)
        return f"({t}.startsWith({c}.opaque.driver + '/') && {t} != {c}.opaque.driver + '/' + " \
               f"variables.wanted[{params(c)}.kind])"

    c0 = "variables.device_type_c"
    n0 = f"{c0}.requests[variables.device_type_at]"
    # [leaf name, its class] of the first device request of that name whose class gives another type
    plain_leaf = (f"variables.requests.filter(r, r.name == {n0}).map(r, has(r.firstAvailable) && "
                  f"size(r.firstAvailable) > 0 ? r.firstAvailable.filter(a, {bad(c0, 'a.deviceClassName')})"
                  f".map(a, [a.name, a.deviceClassName])[0] : [r.name, r.exactly.deviceClassName])")
    alt_leaf = (f"variables.requests.filter(r, has(r.firstAvailable)).map(r, r.firstAvailable.filter(a, "
                f"r.name + '/' + a.name == {n0}).map(a, [a.name, a.deviceClassName])).filter(l, size(l) > 0)"
                f".map(l, l[0])")
    found, wanted = "variables.device_type_found", "variables.device_type_wanted"
    right = f"{_cel_map(DEVICE_TYPE_KIND)}[{found}]"

    def message(c: str, path: Callable[[str], Piece]) -> tuple[Piece, Piece, Piece]:
        at = cat(path(".requests["), Cel("string(variables.device_type_at)"), "]")
        kind = Cel(f"{params(c)}.kind")
        return (msg('{kind} ({path}) applies to request "{request}", whose DeviceClass "{device_class}" gives {type} '
                    "devices", kind=kind, path=at, request=Cel("variables.device_type_leaf[0]"),
                    device_class=Cel("variables.device_type_leaf[1]"), type=Cel(found)),
                msg("the driver applies {kind} only to {wanted} devices and fails the claim on the node", kind=kind,
                    wanted=Cel(wanted)),
                msg("use {right} for that request, or name a request of {wanted} devices", right=Cel(right),
                    wanted=Cel(wanted)))

    check("device_type", lambda c: f"{own(c)} && has({c}.requests) && {c}.requests.exists(n, {mismatched(c, 'n')})",
          message)
    variables.extend([
        {"name": "device_type_at", "expression": f"{c0}.requests.map(n, {mismatched(c0, 'n')}).indexOf(true)"},
        {"name": "device_type_leaf",
         "expression": f"variables.requests.exists(r, r.name == {n0}) ? ({plain_leaf})[0] : ({alt_leaf})[0]"},
        {"name": "device_type_found",
         "expression": "variables.class_types[variables.device_type_leaf[1]].split('/')[1]"},
        {"name": "device_type_wanted", "expression": f"variables.wanted[{params(c0)}.kind]"},
    ])


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
    in_tree=InTree(exported, covers_claim=claim_covered, order=6, cel_covered=cel_covered,
                   cel_validations=cel_validations))
