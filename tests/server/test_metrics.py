"""Request metrics are tallied, then flushed into prometheus-client: the exposition must be exactly what
observing each request directly would have given."""
from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from webhook.metrics import LATENCY_BUCKETS, Metrics

# Bucket bounds themselves (le is inclusive), values between them, one beyond the last, an unknown kind.
OBSERVED = [("validate", "Pod", "allowed", s) for s in (0.00004, 0.0001, 0.00011, 0.00025, 0.003, 0.0031, 7.0)] + [
    ("mutate", "Pod", "allowed", 0.0002), ("validate", "Job", "denied", 0.001), ("validate", "", "invalid", 0.00001),
    ("validate", "Frobnicator", "allowed", 0.02)]


def _samples(text: str, prefix: str) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name.startswith(prefix) and not s.name.endswith("_created")}


def _expected() -> str:
    """The same observations made one at a time, the way prometheus-client is meant to be fed."""
    registry = CollectorRegistry()
    requests = Counter("gpu_admission_requests", "", ("endpoint", "kind", "result"), registry=registry)
    latency = Histogram("gpu_admission_request_duration_seconds", "", ("endpoint", "kind"), buckets=LATENCY_BUCKETS,
                        registry=registry)
    for endpoint, kind, result, seconds in OBSERVED:
        kind = kind if kind in ("Pod", "Job") else "other"
        requests.labels(endpoint, kind, result).inc()
        latency.labels(endpoint, kind).observe(seconds)
    return generate_latest(registry).decode()


@pytest.mark.parametrize("flushes", [pytest.param(1, id="one-flush"), pytest.param(3, id="flushed-along-the-way")])
def test_tallied_requests_expose_as_if_observed_one_by_one(flushes):
    metrics = Metrics()
    for i, observation in enumerate(OBSERVED):
        metrics.observe_request(*observation)
        if flushes > 1 and i % 4 == 0:
            metrics.flush()
    exposed = metrics.exposition().decode()  # flushes what is left
    for prefix in ("gpu_admission_requests", "gpu_admission_request_duration_seconds"):
        assert _samples(exposed, prefix) == _samples(_expected(), prefix)
    assert _samples(exposed, "gpu_admission_requests_total")  # not vacuous


def test_nothing_is_counted_twice():
    metrics = Metrics()
    metrics.observe_request("validate", "Pod", "allowed", 0.0003)
    metrics.flush()
    metrics.flush()
    exposed = metrics.exposition().decode()
    assert 'gpu_admission_requests_total{endpoint="validate",kind="Pod",result="allowed"} 1.0' in exposed
    assert 'gpu_admission_request_duration_seconds_count{endpoint="validate",kind="Pod"} 1.0' in exposed
