"""The webhook's answer in one process, warm and as a loaded server runs it: with the caches emptied
before the call.

    .venv/bin/python bench/cold.py [--evict-mb 8] [--rounds 300]      # about 30 s

In a loaded server the CPUs run the other workers, the load generator and the kernel between two
requests of a worker, and what a request touches has left the caches when it runs: its code costs
several times its warm time. Sweeping a few MB of memory between calls reproduces that in one
process, in seconds and without a load generator, so a change to the request path can be judged
before bench/load.py. Each stage below includes the ones above it (a request's stages share what they
touch, so each is timed from the start); the column after it is what it adds."""
from __future__ import annotations

import argparse
import io
import statistics
import time

import orjson
from load import review_body  # bench/load.py, beside this script: the AdmissionReview both benches send

from webhook.admission import codec, handlers
from webhook.app import create_app, runtime
from webhook.policy.phase import Phase
from webhook.settings import Settings


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evict-mb", type=int, default=8, help="memory swept between calls (default 8 MB)")
    ap.add_argument("--rounds", type=int, default=300, help="calls per stage (default 300)")
    args = ap.parse_args(argv)
    body = review_body()
    app = create_app(Settings(log_level="warning"))
    admission = runtime(app).admission
    policy, resolver = admission.store.policy, admission.resolver
    wsgi = app.wsgi_app

    def decode():
        orjson.loads(body)

    def parse():
        codec.parse(body)

    def decide():
        handlers.handle(codec.parse(body), Phase.VALIDATE, policy=policy, resolver=resolver)

    def answer():
        admission.answer(Phase.VALIDATE, body)

    def whole():  # what gunicorn calls: the WSGI app with a request's environ
        wsgi({"PATH_INFO": "/validate", "REQUEST_METHOD": "POST", "CONTENT_TYPE": "application/json",
              "CONTENT_LENGTH": str(len(body)), "QUERY_STRING": "timeout=10s", "wsgi.input": io.BytesIO(body)},
             lambda status, headers: None)

    stages = {"decode (orjson)": decode, "+ review checks": parse, "+ decision": decide,
              "+ metrics, log, answer": answer, "+ WSGI layer": whole}
    sweep = bytearray(args.evict_mb << 20)

    def evict():
        for i in range(0, len(sweep), 64):  # one write per cache line
            sweep[i] = (sweep[i] + 1) & 255

    def timed(fn) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    warm: dict[str, list[float]] = {name: [] for name in stages}
    evicted: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(args.rounds):
        for name, fn in stages.items():  # interleaved, so that the machine's noise hits every stage alike
            fn()  # brings in what the call touches
            warm[name].append(timed(fn))
            evict()
            evicted[name].append(timed(fn))
    print(f"median µs per call; evicted: {args.evict_mb} MB swept before the call")
    print(f"{'stage':<26}{'warm':>8}{'adds':>7}{'evicted':>10}{'adds':>7}")
    last_warm = last_evicted = 0.0
    for name in stages:
        w, e = statistics.median(warm[name]) * 1e6, statistics.median(evicted[name]) * 1e6
        print(f"{name:<26}{w:>8.1f}{w - last_warm:>7.1f}{e:>10.1f}{e - last_evicted:>7.1f}")
        last_warm, last_evicted = w, e


if __name__ == "__main__":
    main()
