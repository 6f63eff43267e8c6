"""Median decision time of the policy engine for a typical 2-container GPU pod, as the apiserver sends it
(tests/data/pods/apiserver-gpu-pod.json: defaults filled in, service account token volume, tolerations).

    .venv/bin/python bench/decision.py [--rounds N]
    .venv/bin/python bench/decision.py --instructions [--rounds 2000]   # needs valgrind
    .venv/bin/python bench/decision.py --in-tree [--instructions]       # inTree.validation on

Prints, per scenario, the median and p99 over N rounds of: validation of all rules (the /validate
handler's work), mutation with the JSON patch (/mutate), both (what `check` does), and jsonpatch's own
make_patch on the same pair for comparison.

`--instructions` prints instead each scenario's instructions per call, counted by valgrind's callgrind
(steady where times on a shared machine move by half): the scenario is run N times and 0 times in
separate processes under callgrind, and the difference is divided by N.

`--bytecodes` prints each scenario's Python bytecodes and Python calls for one call (after two warm-up calls),
counted by a trace function: exact and repeatable, in seconds and without valgrind, where callgrind's counts of
one tree move by about 1,500 instructions from run to run; it does not see the work done in C (orjson,
dict and regex internals), so a change to how much C work a call does shows only in `--instructions`.

`--collector-off` (with `--instructions`) disables the garbage collector in the counted processes after their
warm-up call: with it on, a collection that one of the two processes meets and the other not moves a count by
tens of thousands of instructions a call at a few hundred rounds.

`--instructions --one-process` runs every scenario in one process under callgrind (`--dump-before=time_sleep`
puts each scenario's calls in a part of its own, an empty loop of as many turns is subtracted), after two warm-up
calls each and with the collector off: the imports are counted once instead of twice per scenario.

`--instructions --one-process --pieces` counts, the same way, the pieces of the decision one at a time on the
same pod (the pod view, the context, the GPU facts, the four mutations with their Draft, the JSON patch, the
mutated pod's view and facts derived, the checks on the pod and on the mutated pod): where mutate + validate
spends what validate does not.

`--capacity` runs instead the scenarios of unsatisfiable-request's cost: the same pod, and a DRA pod
using the seed's template, with the Node and ResourceSlice lookups off and on. "On" is a ClusterResolver
whose informers hold the cluster of tests/data/inventory (six Nodes, the H200 and MIG slices), set as
their state after a list (no apiserver, so the counts are steady): a warm cache, as the webhook's after
its first decision since the caches last changed.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonpatch
import yaml

from webhook.config import default_policy
from webhook.config.model import InTree, Lookups
from webhook.evaluation import evaluate_object
from webhook.lookups.base import NoLookups
from webhook.lookups.cluster import ClusterResolver
from webhook.lookups.informer import object_key
from webhook.policy.phase import Phase

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
    parser.add_argument("--rounds", type=int, default=None, help="calls per scenario (20000; 2000 with --instructions)")
    parser.add_argument("--instructions", action="store_true", help="instructions per call, counted by callgrind")
    parser.add_argument("--capacity", action="store_true",
                        help="the Node/ResourceSlice lookups' cost (unsatisfiable-request): off against on, warm")
    parser.add_argument("--in-tree", action="store_true",
                        help="the default scenarios with the policy's inTree.validation on (the exported rules "
                             "lifted for the objects their in-tree policies cover)")
    parser.add_argument("--bytecodes", action="store_true",
                        help="Python bytecodes and calls per call, counted by a trace function (exact, no valgrind)")
    parser.add_argument("--collector-off", action="store_true",
                        help="with --instructions: the counted processes run with the garbage collector disabled after "
                             "their warm-up call (as --capacity always does), so that a collection met by one process "
                             "and not the other does not move the count")
    parser.add_argument("--one-process", action="store_true",
                        help="with --instructions: all scenarios in one process under callgrind, each scenario's calls "
                             "dumped as one part (--dump-before=time_sleep), the collector off: the imports are "
                             "counted once, not twice per scenario (minutes, not an hour, on a loaded machine)")
    parser.add_argument("--pieces", action="store_true",
                        help="with --instructions --one-process: the decision's pieces one at a time (view, context, "
                             "facts, mutations, patch, the mutated pod's view and facts, the checks)")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # one scenario, --rounds times, nothing printed
    parser.add_argument("--run-parts", action="store_true", help=argparse.SUPPRESS)  # run_parts
    args = parser.parse_args()
    global SCENARIOS
    if args.capacity:
        SCENARIOS = "capacity"
    elif args.pieces:
        SCENARIOS = "pieces"
    elif args.in_tree:
        SCENARIOS = "in-tree"
    if args.instructions and args.one_process:
        return count_instructions_in_parts(args.rounds or 200)
    if args.instructions:
        return count_instructions(args.rounds or 2000, args.capacity, args.collector_off)
    scenarios = make_scenarios()
    if args.bytecodes:
        print(f"{'scenario':<40} {'bytecodes/call':>15} {'calls/call':>11}   ({POD.name})")
        for name, fn in scenarios.items():
            ops, calls = count_bytecodes(fn)
            print(f"{name:<40} {ops:>15,} {calls:>11,}")
        return
    if args.run_parts:
        return run_parts(scenarios, args.rounds)
    if args.run:
        fn = scenarios[args.run]
        if args.capacity or args.collector_off:
            # No collection while counting: one that the longer process meets and the shorter not would
            # outweigh the difference being counted (a first count moved by 40,000 instructions a call).
            fn()
            gc.collect()
            gc.disable()
        for _ in range(args.rounds):
            fn()
        return
    rounds = args.rounds or 20000
    print(f"{'scenario':<40} {'median µs':>10} {'p99 µs':>10}   ({rounds} rounds, {POD.name})")
    for name, fn in scenarios.items():
        median, p99 = measure(fn, rounds)
        print(f"{name:<40} {median:>10.1f} {p99:>10.1f}")


SCENARIOS = "default"
REPO = POD.parents[3]
INVENTORY = REPO / "tests" / "data" / "inventory"
SEED_DRA = REPO / "tests" / "data" / "seed" / "dra-manifests.yaml"


def _warm(lookups, documents) -> ClusterResolver:
    """A ClusterResolver whose enabled informers hold `documents` as after their first list."""
    resolver = ClusterResolver(lookups, None, start=False)  # type: ignore[arg-type]  # never asks the API
    for slot in resolver._slots.values():
        kind = slot.kind
        store = {object_key(d): kind.transform(d) for d in documents if d.get("kind") == kind.resource.kind}
        slot.informer._store = store
        slot.informer.generation = 1
        slot.informer.synced.set()
    return resolver


def make_capacity_scenarios() -> dict:
    pod = json.loads(POD.read_text())
    dra_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm", "namespace": "ai-workloads"},
               "spec": {"containers": [{"name": "server", "image": "registry.example.invalid/llm",
                                        "resources": {"claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-large-gpu"}]}}
    documents = [d for d in yaml.safe_load_all(SEED_DRA.read_text()) if d]
    documents += yaml.safe_load((INVENTORY / "nodes.yaml").read_text())["items"]
    documents += [yaml.safe_load((INVENTORY / f).read_text())
                  for f in ("nvidia-dra-h200.yaml", "nvidia-dra-h200-mig.yaml")]
    claims = Lookups(resource_claims=True, device_classes=True)
    both = dataclasses.replace(claims, nodes=True, resource_slices=True)
    policy = default_policy()
    off, on = _warm(claims, documents), _warm(both, documents)
    on_policy = dataclasses.replace(policy, lookups=both)
    assert on.inventory() is not None and on.inventory() is on.inventory()
    out = {}
    for name, obj in (("gpu pod", pod), ("dra pod", dra_pod)):
        for verb, kwargs in (("validate", {"mutate": False}), ("mutate+validate", {})):
            out[f"{name} {verb}, capacity off"] = (
                lambda o=obj, k=kwargs: evaluate_object(o, policy=policy, resolver=off, **k))
            out[f"{name} {verb}, capacity on"] = (
                lambda o=obj, k=kwargs: evaluate_object(o, policy=on_policy, resolver=on, **k))
    return out


def make_pieces() -> dict:
    """The decision's pieces on the bench pod, each called alone on inputs made once (what the engine passes
    from one to the next)."""
    from webhook.evaluation.context import build_context
    from webhook.objects.podspec import pod_view, revised_view
    from webhook.policy import engine
    from webhook.policy.contract import Target
    from webhook.policy.draft import Draft
    from webhook.policy.gpu import analyse, revised
    from webhook.policy.patch import make_patch

    pod = json.loads(POD.read_text())
    policy, resolver = default_policy(), NoLookups()
    namespace = pod["metadata"]["namespace"]
    view = pod_view(pod, "Pod", namespace)
    assert view is not None
    context = build_context(pod, "Pod", namespace, policy=policy, resolver=resolver, view=view)
    facts = analyse(view, policy, context)
    plan = engine._plan(policy, namespace)
    checks = plan.checks[Target.POD_SPEC]

    def mutations() -> Draft:
        draft = Draft(pod)
        for planned in plan.mutations:  # (rule, mutator, ...), as in the engines before this one
            planned[1].mutate(draft, facts, policy, context)
        return draft

    mutated = mutations().root
    new_view = revised_view(view, mutated)
    new_facts = revised(facts, new_view, policy, context)
    return {
        "pod view": lambda: pod_view(pod, "Pod", namespace),
        "context": lambda: build_context(pod, "Pod", namespace, policy=policy, resolver=resolver, view=view),
        "GPU facts (analyse)": lambda: analyse(view, policy, context),
        "checks": lambda: engine._run_checks(checks, facts, context, policy, frozenset(), []),
        "mutations (Draft included)": mutations,
        "JSON patch": lambda: make_patch(pod, mutated),
        "mutated pod's view (revised_view)": lambda: revised_view(view, mutated),
        "mutated pod's facts (revised)": lambda: revised(facts, new_view, policy, context),
        "checks of the mutated pod": lambda: engine._run_checks(checks, new_facts, context, policy, frozenset(), []),
    }


def make_scenarios() -> dict:
    if SCENARIOS == "capacity":
        return make_capacity_scenarios()
    if SCENARIOS == "pieces":
        return make_pieces()
    pod = json.loads(POD.read_text())
    policy = default_policy()
    if SCENARIOS == "in-tree":
        policy = dataclasses.replace(policy, in_tree=InTree(validation=True))
    resolver = NoLookups()
    mutated = evaluate_object(pod, policy=policy, resolver=resolver, phases=Phase.MUTATE).mutated
    return {
        "validate (all rules)": lambda: evaluate_object(pod, policy=policy, resolver=resolver, phases=Phase.VALIDATE),
        "mutate (+ JSON patch)": lambda: evaluate_object(pod, policy=policy, resolver=resolver, phases=Phase.MUTATE),
        "mutate + validate mutated": lambda: evaluate_object(pod, policy=policy, resolver=resolver),
        "jsonpatch.make_patch alone": lambda: jsonpatch.make_patch(pod, mutated),
    }


def _callgrind_total(scenario: str, rounds: int, out: Path, capacity: bool = False, collector_off: bool = False) -> int:
    """Instructions of one process that runs `scenario` `rounds` times (after one warm-up call, so that
    imports and first-call caches count in both runs alike)."""
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                    "--run", scenario, "--rounds", str(rounds), *(["--capacity"] if capacity else []),
                    *(["--in-tree"] if SCENARIOS == "in-tree" else []),
                    *(["--pieces"] if SCENARIOS == "pieces" else []),
                    *(["--collector-off"] if collector_off else [])],
                   check=True, capture_output=True,
                   env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(POD.parents[3])})
    summary = re.search(r"^summary: (\d+)", out.read_text(), re.M)
    assert summary, f"no summary in {out}"
    return int(summary.group(1))


def count_bytecodes(fn) -> tuple[int, int]:
    """(Python bytecodes executed, Python functions called) by one call of `fn`, after two warm-up calls."""
    fn()
    fn()
    counts = [0, 0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[0] += 1
        elif event == "call":
            counts[1] += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return counts[0], counts[1]


PARTED = ("validate (all rules)", "mutate (+ JSON patch)", "mutate + validate mutated")


def _parted(scenarios: dict) -> tuple[str, ...]:
    return tuple(scenarios) if SCENARIOS == "pieces" else PARTED


def run_parts(scenarios: dict, rounds: int) -> None:
    """Each scenario's `rounds` calls between two time.sleep(0) calls, then as many turns of an empty loop
    (the loop's and the boundary's own cost, subtracted): under callgrind's --dump-before=time_sleep each
    lands in a part of its own. After two warm-up calls of each, with the collector off."""
    parted = _parted(scenarios)
    for name in parted:
        scenarios[name]()
        scenarios[name]()
    gc.collect()
    gc.disable()
    for name in parted:
        fn = scenarios[name]
        time.sleep(0)
        for _ in range(rounds):
            fn()
        time.sleep(0)
        for _ in range(rounds):
            pass
    time.sleep(0)


def count_instructions_in_parts(rounds: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install -y valgrind)")
    print(f"{'scenario':<40} {'instructions/call':>18}   (callgrind, one process, {rounds} calls each, collector off, "
          f"{POD.name})")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=time_sleep", f"--callgrind-out-file={out}",
                        sys.executable, __file__, "--run-parts", "--rounds", str(rounds),
                        *(["--in-tree"] if SCENARIOS == "in-tree" else []),
                        *(["--pieces"] if SCENARIOS == "pieces" else [])],
                       check=True, capture_output=True,
                       env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(POD.parents[3])})
        parts = []
        for f in sorted(Path(tmp).glob("cg.out.*"), key=lambda f: int(f.name.rsplit(".", 1)[1])):
            found = re.search(r"^(?:summary|totals): (\d+)", f.read_text(), re.M)
            parts.append(int(found.group(1)) if found else 0)
    # parts: imports and warm-up, then per scenario its calls and the empty loop
    for i, name in enumerate(_parted(make_scenarios())):
        calls, empty = parts[1 + 2 * i], parts[2 + 2 * i]
        print(f"{name:<40} {(calls - empty) / rounds:>18,.0f}")


def count_instructions(rounds: int, capacity: bool = False, collector_off: bool = False) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install -y valgrind)")
    print(f"{'scenario':<40} {'instructions/call':>18}   (callgrind, {rounds} calls minus 1, {POD.name})")
    with tempfile.TemporaryDirectory() as tmp:
        for name in make_scenarios():
            many = _callgrind_total(name, rounds + 1, Path(tmp) / "many.out", capacity, collector_off)
            one = _callgrind_total(name, 1, Path(tmp) / "one.out", capacity, collector_off)
            print(f"{name:<40} {(many - one) / rounds:>18,.0f}")


if __name__ == "__main__":
    main()
