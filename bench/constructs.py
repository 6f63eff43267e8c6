"""What CPython charges for the constructs the policy's hot path is written with, in instructions (valgrind's
callgrind): each construct run 1,000 times in a loop of its own, an empty loop subtracted. Read with
bench/README.md (issue 30): which way of writing a step of the decision costs less.

    .venv/bin/python bench/constructs.py   # needs valgrind
"""
from __future__ import annotations

import gc
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TURNS = 1000
CONSTRUCTS = {
    "empty loop": "pass",
    "function call, no argument": "f0()",
    "function call, three arguments": "f3(a, b, c)",
    "method call": "o.m(a)",
    "lambda (a closure)": "g = lambda: a + x",
    "functools.partial": "g = partial(f3, a, b)",
    "dict of three keys": "d = {'op': 'add', 'path': a, 'value': b}",
    "f-string of two parts": "s = f'{a}/{b}'",
    "dict get, a 4-tuple key built": "tk.get(('spec', 'containers', 0, 'securityContext'))",
    "dict get, a str key": "sk.get('securityContext')",
    "any() over a generator of three": "any(v == 3 for v in l3)",
    "list comprehension of three": "[v for v in l3]",
    "slotted dataclass, six fields": "C6(1, 2, 3, 4, 5, 6)",
    "frozen slotted dataclass, four fields": "F4(1, 2, 3, 4)",
    "named tuple, four fields": "NT(1, 2, 3, 4)",
    "copy of a 17-key dict": "dd.copy()",
    "sorted(keys, key=list(d).index), 3 of 17": "sorted(ch, key=list(dd).index)",
    "enum member read from its class": "Action.WARN",
    "plain class attribute": "P.X",
    "module global": "WARN",
}
SETUP = '''
from collections import namedtuple
from dataclasses import dataclass
from functools import partial
from webhook.rules import Action

def f0(): return None
def f3(a, b, c): return None
class O:
    def m(self, a): return a
class P:
    X = 1
o, a, b, c, x = O(), "abc", "def", 1, 2
tk = {("spec", "containers", 0, "securityContext"): 1}
sk = {"securityContext": 1, "env": 2}
l3 = [1, 2, 3]
@dataclass(slots=True)
class C6:
    a: int; b: int; c: int; d: int; e: int; f: int
@dataclass(frozen=True, slots=True)
class F4:
    a: int; b: int; c: int; d: int
NT = namedtuple("NT", "a b c d")
dd = {f"key{i}": i for i in range(17)}
ch = {"key3": 1, "key12": 2, "key7": 3}
WARN = Action.WARN
'''


def run() -> None:
    """Each construct's loop between two time.sleep(0) calls: a callgrind part of its own."""
    scope: dict = {}
    exec(SETUP, scope)
    loops = []
    for statement in CONSTRUCTS.values():
        exec(f"def loop():\n    for _ in range({TURNS}):\n        {statement}\n", scope)
        loops.append(scope["loop"])
    for loop in loops:
        loop()  # warm up (specialisation)
    gc.disable()
    for loop in loops:
        time.sleep(0)
        loop()
    time.sleep(0)


def main() -> None:
    if sys.argv[1:] == ["--run"]:
        return run()
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/constructs.py needs valgrind (apt-get install -y valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--run"], check=True, capture_output=True,
                       env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
        parts = []
        for f in sorted(Path(tmp).glob("cg.out.*"), key=lambda f: int(f.name.rsplit(".", 1)[1])):
            found = re.search(r"^(?:summary|totals): (\d+)", f.read_text(), re.M)
            parts.append(int(found.group(1)) if found else 0)
    empty = parts[1] / TURNS  # parts: imports and warm-up, then one per construct
    print(f"{'construct':<45} {'instructions':>12}   (CPython {sys.version.split()[0]}, callgrind, {TURNS} turns)")
    for i, name in enumerate(CONSTRUCTS):
        print(f"{name:<45} {parts[1 + i] / TURNS - empty:>12,.0f}")


if __name__ == "__main__":
    main()
