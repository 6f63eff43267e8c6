"""Instructions per decision (valgrind --tool=callgrind), the stable figure for comparing two builds of the
policy on one machine: wall-clock times on a shared machine move by more than the changes measured.

    .venv/bin/python bench/instructions.py [--low 200] [--high 1200]

Runs bench/decision.py's scenarios (validate, mutate, both) under callgrind twice, with `--low` and `--high`
rounds of each, and prints (Ir(high) - Ir(low)) / (high - low): start-up, imports and warm-up cancel out."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = ("validate", "mutate", "both")


def total_ir(scenario: str, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                        "--run", scenario, "--rounds", str(rounds)], check=True, capture_output=True)
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if not match:
            raise SystemExit(f"no instruction total in the callgrind output of {scenario}")
        return int(match.group(1))


def run(scenario: str, rounds: int) -> None:
    """One scenario of bench/decision.py, `rounds` times, in this (callgrind's) process."""
    import json

    sys.path.insert(0, str(HERE.parent))
    from webhook.config import default_policy
    from webhook.handlers.evaluate import evaluate_object
    from webhook.lookups.base import NoLookups

    pod = json.loads((HERE.parent / "tests" / "data" / "pods" / "apiserver-gpu-pod.json").read_text())
    policy, resolver = default_policy(), NoLookups()
    flags = {"validate": {"mutate": False}, "mutate": {"validate": False}, "both": {}}[scenario]
    for _ in range(rounds):
        evaluate_object(pod, policy=policy, resolver=resolver, **flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=1200)
    parser.add_argument("--run", choices=SCENARIOS, help=argparse.SUPPRESS)  # inside callgrind
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        return run(args.run, args.rounds)
    print(f"{'scenario':<10} {'instructions per decision':>26}   (callgrind, {args.high} - {args.low} rounds)")
    for scenario in SCENARIOS:
        per = (total_ir(scenario, args.high) - total_ir(scenario, args.low)) / (args.high - args.low)
        print(f"{scenario:<10} {per:>26,.0f}")


if __name__ == "__main__":
    main()
