"""Instructions per decision (valgrind --tool=callgrind), the stable figure for comparing two builds of the
policy on one machine: wall-clock times on a shared machine move by more than the changes measured.

    .venv/bin/python bench/instructions.py [--low 200] [--high 1200]

Runs bench/decision.py's scenarios under callgrind twice, with `--low` and `--high` rounds of each, and
prints (Ir(high) - Ir(low)) / (high - low): start-up, imports and warm-up cancel out."""
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
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                        str(HERE / "decision.py"), "--only", scenario, "--rounds", str(rounds), "--no-warmup"],
                       check=True, capture_output=True)
        match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if not match:
            raise SystemExit(f"no instruction total in the callgrind output of {scenario}")
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=1200)
    args = parser.parse_args()
    print(f"{'scenario':<10} {'instructions per decision':>26}   (callgrind, {args.high} - {args.low} rounds)")
    for scenario in SCENARIOS:
        per = (total_ir(scenario, args.high) - total_ir(scenario, args.low)) / (args.high - args.low)
        print(f"{scenario:<10} {per:>26,.0f}")


if __name__ == "__main__":
    main()
