"""Median decision time of the policy engine for a typical 2-container GPU pod, as the apiserver sends it
(tests/data/pods/apiserver-gpu-pod.json: defaults filled in, service account token volume, tolerations).

    .venv/bin/python bench/decision.py [--rounds N]

Prints, per scenario, the median and p99 over N rounds of: validation of all rules (the /validate
handler's work), mutation with the JSON patch (/mutate), both (what `check` does), and jsonpatch's own
make_patch on the same pair for comparison."""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jsonpatch

from webhook.config import default_policy
from webhook.handlers.evaluate import evaluate_object
from webhook.lookups.base import NoLookups

POD = Path(__file__).resolve().parents[1] / "tests" / "data" / "pods" / "apiserver-gpu-pod.json"


def measure(fn, rounds: int) -> tuple[float, float]:
    for _ in range(min(rounds // 10, 500)):
        fn()  # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return statistics.median(times) / 1000, times[int(len(times) * 0.99) - 1] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20000)
    parser.add_argument("--only", default="", help="run the scenarios whose name contains this text (for "
                        "instruction counts: valgrind --tool=callgrind at two --rounds, the difference per round)")
    args = parser.parse_args()
    pod = json.loads(POD.read_text())
    policy = default_policy()
    resolver = NoLookups()
    mutated = evaluate_object(pod, policy=policy, resolver=resolver, validate=False).mutated
    scenarios = {
        "validate (all rules)": lambda: evaluate_object(pod, policy=policy, resolver=resolver, mutate=False),
        "mutate (+ JSON patch)": lambda: evaluate_object(pod, policy=policy, resolver=resolver, validate=False),
        "mutate + validate mutated": lambda: evaluate_object(pod, policy=policy, resolver=resolver),
        "jsonpatch.make_patch alone": lambda: jsonpatch.make_patch(pod, mutated),
    }
    print(f"{'scenario':<28} {'median µs':>10} {'p99 µs':>10}   ({args.rounds} rounds, {POD.name})")
    for name, fn in scenarios.items():
        if args.only not in name:
            continue
        median, p99 = measure(fn, args.rounds)
        print(f"{name:<28} {median:>10.1f} {p99:>10.1f}")


if __name__ == "__main__":
    main()
