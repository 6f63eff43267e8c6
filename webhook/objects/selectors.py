"""What a DeviceClass selects, decided by evaluating its CEL selectors the way the scheduler does (the
Kubernetes DRA CEL environment: `device.driver`, `device.attributes[domain]`, `device.capacity[domain]`,
quantity() and semver()) against probe devices shaped like those the NVIDIA DRA driver publishes.

The runtime is cel-expr-python, Google's Python binding of cel-cpp (bench/README.md compares it with
cel-python and common-expression-language). A selector that does not compile here, or whose verdict on a
GPU depends on something no probe shows, reads as unknown: never as "GPU" nor as "not GPU"."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_strings

from webhook.objects.access import as_dict, as_list, as_str

# Device types of the NVIDIA GPU driver that are GPUs (or slices of one); its other types are not.
GPU_DEVICE_TYPES = ("gpu", "mig", "vfio")
NON_GPU_DEVICE_TYPES = frozenset({"imex-channel"})
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
STANDARD_DOMAIN = "resource.kubernetes.io"
_OTHER_DRIVER = "other-driver.example.invalid"  # stands for every driver no probe names
_CACHE_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class Selection:
    """The verdict on one DeviceClass's selectors."""

    driver: str | None  # the GPU driver it selects, else the one other driver it selects, else None
    device_type: str | None  # its one device type among those selected, else None
    unknown: str | None = None  # why no verdict is possible (unresolved-claim), else None


# ---------------------------------------------------------------------------------------------- quantities

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")
_SCALE = {None: 1, "n": 10**-9, "u": 10**-6, "m": 10**-3, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_INT64 = 2**63 - 1


@lru_cache(maxsize=4096)  # a cluster's devices repeat a few capacities (a 5,000-node snapshot: one per model)
def milli(text: str) -> int:
    """A Kubernetes quantity in thousandths (the finest unit a selector compares), as CEL's int."""
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"quantities must match the regular expression of resource.Quantity: {text!r}")
    number, exponent, suffix = m.groups()
    value = Fraction(number) * (Fraction(10) ** int(exponent[1:]) if exponent else Fraction(_SCALE[suffix])) * 1000
    out = int(value) if value >= 0 else -int(-value)
    if abs(out) > _INT64:
        raise ValueError(f"quantity {text!r} is out of range")
    return out


_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def _semver_key(text: str) -> tuple[int, int, int, int]:
    m = _SEMVER.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a semantic version")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if "-" in text.split("+")[0] else 1


def _semver(text: str) -> str:
    _semver_key(text)
    return text


def _compare(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _functions() -> list[Any]:
    """The Kubernetes CEL library functions DRA selectors use. Quantities are ints (thousandths), versions
    strings: a selector that is well-typed in Kubernetes means the same here."""
    T = cel.Type
    Q, S, I, B, D = T.INT, T.STRING, T.INT, T.BOOL, T.DOUBLE

    def ver(fn: Callable[[int], bool]) -> Callable[[str, str], bool]:
        return lambda a, b: fn(_compare(_semver_key(a), _semver_key(b)))

    def decl(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member, impl=impl)
                                       for oid, ret, params, member, impl in overloads])

    return [
        decl("quantity", ("quantity_string", Q, [S], False, milli)),
        decl("isQuantity", ("is_quantity_string", B, [S], False, lambda s: bool(_QUANTITY.match(s)))),
        decl("semver", ("semver_string", S, [S], False, _semver)),
        decl("isSemver", ("is_semver_string", B, [S], False, lambda s: bool(_SEMVER.match(s)))),
        decl("compareTo", ("quantity_compareTo", I, [Q, Q], True, _compare),
             ("semver_compareTo", I, [S, S], True, lambda a, b: _compare(_semver_key(a), _semver_key(b)))),
        decl("isGreaterThan", ("quantity_isGreaterThan", B, [Q, Q], True, lambda a, b: a > b),
             ("semver_isGreaterThan", B, [S, S], True, ver(lambda c: c > 0))),
        decl("isLessThan", ("quantity_isLessThan", B, [Q, Q], True, lambda a, b: a < b),
             ("semver_isLessThan", B, [S, S], True, ver(lambda c: c < 0))),
        decl("add", ("quantity_add", Q, [Q, Q], True, lambda a, b: a + b)),
        decl("sub", ("quantity_sub", Q, [Q, Q], True, lambda a, b: a - b)),
        decl("asInteger", ("quantity_asInteger", I, [Q], True, lambda a: a // 1000)),
        decl("asApproximateFloat", ("quantity_asApproximateFloat", D, [Q], True, lambda a: a / 1000)),
        decl("isInteger", ("quantity_isInteger", B, [Q], True, lambda a: a % 1000 == 0)),
        decl("sign", ("quantity_sign", I, [Q], True, lambda a: _compare(a, 0))),
        decl("major", ("semver_major", I, [S], True, lambda a: _semver_key(a)[0])),
        decl("minor", ("semver_minor", I, [S], True, lambda a: _semver_key(a)[1])),
        decl("patch", ("semver_patch", I, [S], True, lambda a: _semver_key(a)[2])),
    ]


# ---------------------------------------------------------------------------------------------- probes

_GIB, _MIB = 2**30, 2**20
# (productName, architecture, cudaComputeCapability, memory bytes): GPUs the NVIDIA DRA driver reports
_GPUS = (
    ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559 * _MIB),
    ("NVIDIA H200", "Hopper", "9.0.0", 143771 * _MIB),
    ("NVIDIA H100 NVL", "Hopper", "9.0.0", 95830 * _MIB),
    ("NVIDIA GH200 480GB", "Hopper", "9.0.0", 97871 * _MIB),
    ("NVIDIA B200", "Blackwell", "10.0.0", 183359 * _MIB),
    ("NVIDIA GB200", "Blackwell", "10.0.0", 189471 * _MIB),
    ("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40960 * _MIB),
    ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 81920 * _MIB),
    ("NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", 81920 * _MIB),
    ("NVIDIA A10G", "Ampere", "8.6.0", 23028 * _MIB),
    ("NVIDIA L40S", "Ada Lovelace", "8.9.0", 46068 * _MIB),
    ("NVIDIA L40", "Ada Lovelace", "8.9.0", 46068 * _MIB),
    ("NVIDIA L4", "Ada Lovelace", "8.9.0", 23034 * _MIB),
    ("NVIDIA RTX A6000", "Ampere", "8.6.0", 49140 * _MIB),
    ("Tesla T4", "Turing", "7.5.0", 15360 * _MIB),
    ("Tesla V100-SXM2-16GB", "Volta", "7.0.0", 16384 * _MIB),
)
# (parent productName, profile, memory, multiprocessors, copyEngines, decoders, encoders, jpeg, ofa)
_MIGS = (
    ("NVIDIA A100-SXM4-40GB", "1g.5gb", 4864 * _MIB, 14, 1, 0, 0, 0, 0),
    ("NVIDIA A100-SXM4-40GB", "3g.20gb", 19968 * _MIB, 42, 3, 2, 0, 0, 0),
    ("NVIDIA H100 80GB HBM3", "1g.10gb", 9856 * _MIB, 16, 1, 1, 0, 1, 0),
    ("NVIDIA H200", "1g.18gb", 16384 * _MIB, 16, 1, 1, 0, 1, 0),
    ("NVIDIA H200", "3g.71gb", 71424 * _MIB, 60, 3, 3, 0, 3, 0),
    ("NVIDIA H200", "7g.141gb", 143104 * _MIB, 132, 8, 7, 0, 7, 1),
)
_VERSIONS = {"driverVersion": "570.124.6", "cudaDriverVersion": "12.8.0"}


def _gpu_probes(driver: str) -> Iterable[tuple[str, dict[str, Any]]]:
    for i, (product, arch, cc, memory) in enumerate(_GPUS):
        yield "gpu", _device(driver, {
            "type": "gpu", "uuid": f"GPU-4f1e2d3c-0000-4000-8000-{i:012d}", "productName": product, "brand": "Nvidia",
            "architecture": arch, "cudaComputeCapability": cc, **_VERSIONS, "index": 0, "minor": 0,
            "pcieBusID": f"0000:{i + 0x10:02x}:00.0"}, {"memory": memory},
            {"pcieRoot": "pci0000:00", "numaNode": 0})
    for i, (product, profile, memory, sms, ce, dec, enc, jpg, ofa) in enumerate(_MIGS):
        arch, cc = next((a, c) for p, a, c, _ in _GPUS if p == product)
        yield "mig", _device(driver, {
            "type": "mig", "uuid": f"MIG-4f1e2d3c-0000-4000-8000-{i:012d}",
            "parentUUID": "GPU-4f1e2d3c-0000-4000-8000-0",
            "profile": profile, "productName": product, "brand": "Nvidia", "architecture": arch,
            "cudaComputeCapability": cc, **_VERSIONS, "index": 0, "parentIndex": 0, "parentMinor": 0,
            "pcieBusID": "0000:10:00.0"},
            {"memory": memory, "multiprocessors": sms, "copyEngines": ce, "decoders": dec, "encoders": enc,
             "jpegEngines": jpg, "ofaEngines": ofa}, {"pcieRoot": "pci0000:00", "numaNode": 0})
    for i, (product, _, _, memory) in enumerate(_GPUS[:4]):
        yield "vfio", _device(driver, {
            "type": "vfio", "uuid": f"GPU-4f1e2d3c-0000-4000-8000-{i:012d}", "deviceID": "0x2330", "vendorID": "0x10de",
            "productName": product, "iommuFDEnabled": False, "pcieBusID": f"0000:{i + 0x10:02x}:00.0"},
            {"addressableMemory": memory}, {"pcieRoot": "pci0000:00"})
    yield "imex-channel", _device(driver, {"type": "imex-channel", "channel": 0}, {})


def _other_probes() -> Iterable[tuple[str, str, dict[str, Any]]]:
    for kind in ("channel", "daemon"):
        yield COMPUTE_DOMAIN_DRIVER, kind, _device(COMPUTE_DOMAIN_DRIVER, {"type": kind, "id": 0}, {})
    yield "imex.nvidia.com", "imex-daemon", _device("imex.nvidia.com", {"type": "imex-daemon", "id": 0}, {})
    yield _OTHER_DRIVER, "", _device(_OTHER_DRIVER, {}, {})


def _device(driver: str, attributes: dict[str, Any], capacity: dict[str, Any],
            standard: dict[str, Any] | None = None) -> dict[str, Any]:
    """A device as the CEL environment shows it: attributes and capacity keyed by domain (the driver's
    own names are in the driver's domain), quantities in thousandths."""
    return {"driver": driver, "allowMultipleAllocations": False,
            "attributes": {driver: attributes, **({STANDARD_DOMAIN: standard} if standard else {})},
            "capacity": {driver: {k: v * 1000 for k, v in capacity.items()}}}


def _minimal(driver: str, device_type: str) -> dict[str, Any]:
    """Only what makes the device what it is: a selector false here is false for every such device, one
    that fails here reads something else (product, memory) that the realistic probes may not show."""
    return _device(driver, {"type": device_type} if device_type else {}, {})


# ---------------------------------------------------------------------------------------------- evaluation

def selector_texts(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The CEL expressions of a DeviceClass (`spec.selectors`) or of a device request's `selectors`
    (pass the request, or its `exactly`, as {"spec": ...})."""
    return tuple(e for e in (as_str(as_dict(as_dict(s).get("cel")).get("expression"))
                             for s in as_list(as_dict(obj.get("spec")).get("selectors"))) if e is not None)


def evaluate(program: Any, device: Mapping[str, Any]) -> bool | str:
    """A compiled selector on one device: its verdict, or the runtime's error (the scheduler counts a
    device whose selector errs as not matching it)."""
    value = program.eval(data={"device": device})
    if value.type() == cel.Type.BOOL:
        return value.value() is True
    if value.type() == cel.Type.ERROR:
        return _first_line(value.value())
    return f"a selector gives a {value.type().name()}, not a bool"


class ClassSelectors:
    """Evaluates DeviceClass selectors for one policy (its GPU drivers), caching each verdict by the
    selectors' text: the same class content always gets the same verdict."""

    def __init__(self, gpu_drivers: Iterable[str]) -> None:
        self.gpu_drivers = tuple(sorted(gpu_drivers))
        self._env: Any = None
        self._cache: dict[tuple[str, ...], Selection] = {}
        self._programs: dict[str, Any] = {}
        self._profiles: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[bool | None, ...]] = {}
        groups: list[tuple[str, str, bool, list[dict[str, Any]]]] = []  # driver, type, is a GPU, probes (minimal first)
        for driver in self.gpu_drivers:
            by_type: dict[str, list[dict[str, Any]]] = {}
            for device_type, probe in _gpu_probes(driver):
                by_type.setdefault(device_type, [_minimal(driver, device_type)]).append(probe)
            groups += [(driver, t, t in GPU_DEVICE_TYPES, probes) for t, probes in by_type.items()]
        for driver, device_type, probe in _other_probes():
            groups.append((driver, device_type, False, [_minimal(driver, device_type), probe]))
        self._groups = tuple(groups)

    def _environment(self) -> Any:
        if self._env is None:  # built on first use: most decisions never meet a DeviceClass object
            self._env = cel.NewEnv(variables={"device": cel.Type.DYN}, extensions=[ext_strings.ExtStrings()],
                                   functions=_functions())
        return self._env

    def program(self, text: str) -> Any:
        """One selector compiled once (None when it does not compile: the apiserver refuses it)."""
        try:
            return self._programs[text]
        except KeyError:
            pass
        try:
            program = self._environment().compile(text)
        except Exception:  # the runtime's parse and check errors
            program = None
        if len(self._programs) >= _CACHE_LIMIT:
            self._programs.clear()
        self._programs[text] = program
        return program

    def mig_profiles(self, driver: str, expressions: tuple[str, ...],
                     profiles: tuple[str, ...]) -> tuple[bool | None, ...]:
        """For each MIG profile, whether every selector accepts a MIG device of `driver` with that profile and
        nothing else: True, False, or None where the verdict reads more than the device's type and profile
        (or a selector does not compile). Cached by the selectors' text and the profiles."""
        key = (driver, expressions, profiles)
        found = self._profiles.get(key)
        if found is None:
            programs = [self.program(e) for e in expressions]
            verdicts: list[bool | None] = []
            for profile in profiles:
                if any(p is None for p in programs):
                    verdicts.append(None)
                    continue
                verdict = _all(programs, _device(driver, {"type": "mig", "profile": profile}, {}))
                verdicts.append(verdict if type(verdict) is bool else None)
            if len(self._profiles) >= _CACHE_LIMIT:
                self._profiles.clear()
            found = self._profiles[key] = tuple(verdicts)
        return found

    def selection(self, obj: dict[str, Any]) -> Selection:
        expressions = selector_texts(obj)
        found = self._cache.get(expressions)
        if found is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            found = self._cache[expressions] = self._evaluate(expressions)
        return found

    def _evaluate(self, expressions: tuple[str, ...]) -> Selection:
        if not expressions:
            # No selector: the class selects every device of every driver, GPUs among them.
            return Selection(self.gpu_drivers[0] if self.gpu_drivers else None, None)
        env = self._environment()
        programs = []
        for i, text in enumerate(expressions):
            try:
                programs.append(env.compile(text))
            except Exception as exc:  # the runtime's parse and check errors
                return Selection(None, None, f"its CEL selector {i + 1} does not compile: {_first_line(exc)}")
        selected: list[tuple[str, str, bool]] = []
        unknown: list[str] = []
        for driver, device_type, gpu, probes in self._groups:
            verdicts = [_all(programs, probe) for probe in probes]
            if True in verdicts:
                selected.append((driver, device_type, gpu))
            elif gpu and verdicts[0] is not False:
                unknown.append(verdicts[0] if isinstance(verdicts[0], str) else "no probe matched")
        gpus = [(d, t) for d, t, g in selected if g]
        if gpus:
            types = {t for _, t in gpus}
            return Selection(gpus[0][0], types.pop() if len(types) == 1 else None)
        if unknown:
            return Selection(None, None, "whether its selectors pick GPUs depends on the nodes' devices: "
                                         f"{unknown[0]}")
        others = {(d, t) for d, t, _ in selected if d != _OTHER_DRIVER}
        drivers = {d for d, _ in others}
        only = drivers.pop() if len(drivers) == 1 else None
        types = {t for d, t in others if d == only}
        return Selection(only, types.pop() if only and len(types) == 1 else None)


def _all(programs: list[Any], probe: dict[str, Any]) -> bool | str:
    """True when every selector accepts the probe, False when one rejects it, else the first error."""
    error: str | None = None
    for program in programs:
        value = program.eval(data={"device": probe})
        if value.type() == cel.Type.BOOL:
            if value.value() is False:
                return False
        elif error is None:
            error = _first_line(value.value()) if value.type() == cel.Type.ERROR else \
                f"a selector gives a {value.type().name()}, not a bool"
    return error if error is not None else True


def _first_line(exc: object) -> str:
    """The runtime's message, without cel-cpp's status code, position and container."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    text = re.sub(r"^[A-Z_]+: (ERROR: <input>:\d+:\d+: )?", "", lines[0])
    text = re.sub(r" \(in container ''\)|\s*\[[A-Z_]+\]$", "", text)
    missing = re.fullmatch(r'Key not found in map : "(.*)"', text)
    return (f'it selects by "{missing.group(1)}" and matches none of the NVIDIA devices gpu-admission knows'
            if missing else text[:160])
