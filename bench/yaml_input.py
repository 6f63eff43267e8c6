"""How much the C YAML loader saves `check` on large `helm template` output: NVIDIA's device
plugin chart (tests/data/fixtures/charts/nvidia-device-plugin, copied with its provenance) and this project's
chart, rendered by Helm (helm-python-sdk) and repeated to a few thousand
documents, read by libyaml's parser and by PyYAML's pure-Python one, measured in one run.

    .venv/bin/python bench/yaml_input.py [--copies N] [--rounds R]

Prints the best of R rounds for each loader and their ratio, for reading the documents alone and for
a whole `check -o json` of them (reading, evaluating, printing)."""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import helm_python
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from webhook import yamlread  # noqa: E402
from webhook.cli.main import main  # noqa: E402


def rendering(copies: int) -> str:
    charts = [(REPO / "tests" / "data" / "fixtures" / "charts" / "nvidia-device-plugin", {}),
              (REPO / "charts" / "gpu-admission", {"audit": {"enabled": True}})]
    one = ""
    for path, values in charts:
        manifests = helm_python.Chart.load(str(path)).render(values, name="bench", namespace="bench")
        one += "".join(f"---\n# Source: {p}\n{t.rstrip()}\n" for p, t in sorted(manifests.items())
                       if t.strip() and not p.endswith("NOTES.txt"))
    return one * copies


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def check(text: str) -> None:
    sys.stdin = io.StringIO(text)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["check", "-o", "json", "-"])


def main_() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    text = rendering(args.copies)
    documents = len(yamlread.load_all(text)[0])
    print(f"{documents} documents, {len(text) / 1e6:.1f} MB of helm template output")
    assert yamlread.FAST_LOADER is yaml.CSafeLoader, "PyYAML was built without libyaml"
    results = {}
    for name, loader in (("C (CSafeLoader)", yaml.CSafeLoader), ("pure Python (SafeLoader)", yaml.SafeLoader)):
        yamlread.FAST_LOADER = loader
        results[name] = (best(lambda: yamlread.load_all(text), args.rounds), best(lambda: check(text), args.rounds))
    print(f"{'loader':<26}{'read s':>9}{'check s':>10}")
    for name, (read, whole) in results.items():
        print(f"{name:<26}{read:>9.3f}{whole:>10.3f}")
    (c_read, c_check), (py_read, py_check) = results.values()
    print(f"ratio (pure Python / C): reading {py_read / c_read:.1f}x, whole check {py_check / c_check:.1f}x")


if __name__ == "__main__":
    main_()
