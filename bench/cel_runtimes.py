"""CEL runtimes from PyPI compared on real DeviceClass selectors: correctness (the Kubernetes verdict on each
probe device) and cost (microseconds per evaluation of a compiled selector, and per compilation).

    .venv/bin/pip install '.[bench]'   # cel-python and common-expression-language, beside the policy's runtime
    .venv/bin/python bench/cel_runtimes.py [--rounds N]

Each runtime gets the same Kubernetes library functions the policy declares (quantity() and compareTo /
isGreaterThan on quantities as thousandths, semver(), lowerAscii()) where it lets Python add functions; the
expected verdicts are Kubernetes': True, False, or an error (no such key, unknown function)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webhook.objects.selectors import _device, _semver_key, milli

ERR = "error"
GIB = 2**30
H100 = _device("gpu.nvidia.com", {"type": "gpu", "productName": "NVIDIA H100 80GB HBM3", "driverVersion": "570.124.6"},
               {"memory": 80 * GIB})
A100_MIG = _device("gpu.nvidia.com", {"type": "mig", "productName": "NVIDIA A100-SXM4-40GB", "profile": "1g.5gb",
                                      "driverVersion": "570.124.6"}, {"memory": 5 * GIB})
CHANNEL = _device("compute-domain.nvidia.com", {"type": "channel", "id": 0}, {})
NIC = _device("nic.example.com", {"model": "x"}, {})
DEVICES = (H100, A100_MIG, CHANNEL, NIC)

# (selector, Kubernetes' verdict on H100, A100 MIG, IMEX channel, a NIC)
SELECTORS = [
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
     (True, False, False, False)),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
     (False, True, False, False)),
    ("device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' "
     "&& device.attributes['compute-domain.nvidia.com'].id == 0", (False, False, True, False)),
    ('!(device.driver == "gpu.nvidia.com")', (False, False, True, True)),
    ('"gpu.nvidia.com" == device.driver', (True, True, False, False)),
    ('device.driver in ["gpu.nvidia.com", "nic.example.com"]', (True, True, False, True)),
    ('device.driver == "nic.example.com" || device.driver == "gpu.nvidia.com"', (True, True, False, True)),
    ('device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && '
     'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))', (True, False, False, False)),
    ('device.driver == "gpu.nvidia.com" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
     (True, False, False, False)),
    ("device.driver == 'gpu.nvidia.com' && "
     "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
     (True, False, False, False)),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA A100')",
     (False, True, False, False)),
    ("device.driver == 'gpu.nvidia.com' && "
     "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))",
     (True, True, False, False)),
    ("device.attributes['gpu.nvidia.com'].type == 'gpu'", (True, False, ERR, ERR)),  # unguarded: no such key
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
     (ERR, True, False, False)),
    # Kubernetes has a URL library; a runtime without it must not read the class as GPU or not-GPU
    ("device.driver == 'gpu.nvidia.com' && url('https://x').getHost() == 'x'", (True, True, False, False)),
]


def _cmp(a, b):
    return (a > b) - (a < b)


def _ver(fn):
    return lambda a, b: fn(_cmp(_semver_key(str(a)), _semver_key(str(b))))


class CelExprPython:
    """cel-expr-python: Google's binding of cel-cpp (what webhook/objects/selectors.py uses)."""

    name = "cel-expr-python"

    def __init__(self):
        from webhook.objects.selectors import ClassSelectors
        self.env = ClassSelectors(["gpu.nvidia.com"])._environment()
        from cel_expr_python import cel
        self.cel = cel

    def compile(self, text):
        return self.env.compile(text)

    def run(self, program, device):
        value = program.eval(data={"device": device})
        return ERR if value.type() == self.cel.Type.ERROR else value.value()


class CelPython:
    """cel-python (module celpy): pure Python."""

    name = "cel-python"

    def __init__(self):
        import celpy
        from celpy import celtypes
        self.celpy, self.types = celpy, celtypes
        self.env = celpy.Environment()
        self.functions = {
            "quantity": lambda s: celtypes.IntType(milli(str(s))),
            "semver": lambda s: celtypes.StringType(s),
            "compareTo": lambda a, b: celtypes.IntType(_cmp(a, b)),
            "isGreaterThan": lambda a, b: celtypes.BoolType(
                _ver(lambda c: c > 0)(a, b) if isinstance(a, str) else a > b),
            "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
        }

    def compile(self, text):
        return self.env.program(self.env.compile(text), functions=self.functions)

    def run(self, program, device):
        try:
            value = program.evaluate({"device": self.celpy.json_to_cel(device)})
        except Exception:
            return ERR
        return ERR if isinstance(value, Exception) else bool(value) if isinstance(value, self.types.BoolType) else value


class CommonExpressionLanguage:
    """common-expression-language: Python bindings of the Rust cel crate."""

    name = "common-expression-language"

    def __init__(self):
        import cel
        self.cel = cel
        self.context = cel.Context()
        self.context.add_function("quantity", lambda s: milli(s))
        self.context.add_function("semver", lambda s: s)
        self.context.add_function("compareTo", lambda a, b: _cmp(a, b))
        self.context.add_function("isGreaterThan",
                                  lambda a, b: _ver(lambda c: c > 0)(a, b) if isinstance(a, str) else a > b)
        self.context.add_function("lowerAscii", lambda s: s.lower())

    def compile(self, text):
        return self.cel.compile(text)

    def run(self, program, device):
        self.context.add_variable("device", device)  # replaces the previous device
        try:
            return program.execute(self.context)
        except Exception:
            return ERR


def measure(runtime, rounds):
    right, wrong = 0, []
    programs = []
    t0 = time.perf_counter()
    for text, _ in SELECTORS:
        try:
            programs.append(runtime.compile(text))
        except Exception:
            programs.append(None)
    compile_us = (time.perf_counter() - t0) / len(SELECTORS) * 1e6
    for (text, expected), program in zip(SELECTORS, programs):
        got = tuple(ERR if program is None else runtime.run(program, d) for d in DEVICES)
        if got == expected:
            right += 1
        else:
            wrong.append((text[:70], got, expected))
    ok = [p for p in programs if p is not None]
    t0 = time.perf_counter()
    for _ in range(rounds):
        for p in ok:
            runtime.run(p, H100)
    eval_us = (time.perf_counter() - t0) / (rounds * len(ok)) * 1e6 if ok else float("nan")
    return right, wrong, compile_us, eval_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--verbose", action="store_true", help="list every selector a runtime gets wrong")
    args = parser.parse_args()
    print(f"{'runtime':<28} {'correct':>9} {'µs/compile':>11} {'µs/eval':>9}   ({len(SELECTORS)} selectors x "
          f"{len(DEVICES)} devices)")
    for cls in (CelExprPython, CelPython, CommonExpressionLanguage):
        try:
            runtime = cls()
        except ImportError:
            print(f"{cls.name:<28} not installed (pip install '.[bench]')")
            continue
        right, wrong, compile_us, eval_us = measure(runtime, args.rounds)
        print(f"{cls.name:<28} {right:>4}/{len(SELECTORS):<4} {compile_us:>11.1f} {eval_us:>9.1f}")
        if args.verbose:
            for text, got, expected in wrong:
                print(f"    {text}: got {got}, Kubernetes gives {expected}")


if __name__ == "__main__":
    main()
