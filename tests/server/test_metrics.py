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
    requests = Counter("gpu_admission_requests", "", ("endpoint", "kind", "result", "operation", "dry_run"),
                       registry=registry)
    latency = Histogram("gpu_admission_request_duration_seconds", "", ("endpoint", "kind"), buckets=LATENCY_BUCKETS,
                        registry=registry)
    for endpoint, kind, result, seconds in OBSERVED:
        kind = kind if kind in ("Pod", "Job") else "other"
        requests.labels(endpoint, kind, result, "other", "false").inc()
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
    assert ('gpu_admission_requests_total{dry_run="false",endpoint="validate",kind="Pod",operation="other",'
            'result="allowed"} 1.0') in exposed
    assert 'gpu_admission_request_duration_seconds_count{endpoint="validate",kind="Pod"} 1.0' in exposed


def test_request_labels_stay_a_bounded_set():
    """Whatever requests carry, each label takes values from a fixed set: the series count is bounded."""
    from webhook.metrics import OPERATIONS, OTHER
    from webhook.objects.kinds import BY_KIND

    metrics = Metrics()
    odd = ["", "Frobnicator", "pod", "x" * 300, "Pod\n", None]
    for endpoint in ("validate", "mutate"):
        for kind in [*BY_KIND, *odd]:
            for operation in [*OPERATIONS, "PATCH", "", None, "create"]:
                for dry_run in (True, False, "true", None):
                    metrics.observe_request(endpoint, kind, "allowed", 0.001, operation=operation, dry_run=dry_run)
    exposed = metrics.exposition().decode()
    series = [s for f in text_string_to_metric_families(exposed) for s in f.samples
              if s.name == "gpu_admission_requests_total"]
    assert {s.labels["kind"] for s in series} == set(BY_KIND) | {"other"}
    assert {s.labels["operation"] for s in series} == OPERATIONS | {OTHER}
    assert {s.labels["dry_run"] for s in series} == {"true", "false"}  # only a real true is true
    assert len(series) == 2 * (len(BY_KIND) + 1) * (len(OPERATIONS) + 1) * 2


def test_operation_and_dry_run_come_from_the_request(make_app):
    client = make_app().test_client()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    for operation, dry_run in (("CREATE", True), ("UPDATE", False)):
        request = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                   "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": operation,
                   "namespace": "ml", "name": "p", "userInfo": {"username": "u"}, "object": pod, "dryRun": dry_run}
        if operation == "UPDATE":
            request["oldObject"] = pod
        assert client.post("/validate", json={"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                              "request": request}).status_code == 200
    text = client.get("/metrics").get_data(as_text=True)
    assert 'gpu_admission_requests_total{dry_run="true",endpoint="validate",kind="Pod",operation="CREATE",' \
           'result="allowed"} 1.0' in text
    assert 'gpu_admission_requests_total{dry_run="false",endpoint="validate",kind="Pod",operation="UPDATE",' \
           'result="allowed"} 1.0' in text


def test_the_serving_certificates_expiry_is_a_metric(make_app, tmp_path):
    from cryptography import x509

    from webhook.tls import certs

    certs.write(certs.generate("gpu-admission", "gpu-admission", days=30), tmp_path / "tls")
    app = make_app(tls_cert=tmp_path / "tls" / "tls.crt", tls_key=tmp_path / "tls" / "tls.key")
    text = app.test_client().get("/metrics").get_data(as_text=True)
    not_after = x509.load_pem_x509_certificate((tmp_path / "tls" / "tls.crt").read_bytes()).not_valid_after_utc
    (value,) = [s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "gpu_admission_certificate_expiry_timestamp_seconds"]
    assert value == not_after.timestamp()


def test_no_certificate_no_expiry(make_app):
    text = make_app().test_client().get("/metrics").get_data(as_text=True)
    assert "gpu_admission_certificate_expiry_timestamp_seconds " not in text


def test_lookup_metrics_add_what_changed_and_stay_bounded():
    """Counters grow by the difference since the last flush (a new resolver after a reload starts again from
    its own zero); labels are the lookup kinds (the resolver's, a fixed table) and three verbs."""
    from webhook.lookups.cluster import KINDS, KindStats
    from webhook.lookups.informer import InformerStats
    from webhook.metrics import LOOKUP_VERBS

    def stats(n: int, *, synced: bool = True, error: str | None = None) -> dict:
        informer = InformerStats(synced, 3 * n, "1", n, n, 2 * n, error, n, n)
        return {kind: KindStats(kind, 10 * n, n, n, informer, n) for kind in KINDS}

    metrics = Metrics()
    for n in (1, 4, 4, 2, 5):  # 4 twice: nothing new; 2: a new resolver, counted from there
        metrics.lookup_stats(stats(n))
    metrics.lookup_stats(stats(5, error="forbidden"))
    text = metrics.exposition().decode()
    series = [s for f in text_string_to_metric_families(text) for s in f.samples
              if s.name.startswith("gpu_admission_lookup")]
    assert {s.labels["kind"] for s in series} == set(KINDS)
    assert {s.labels["verb"] for s in series if "verb" in s.labels} == set(LOOKUP_VERBS)
    kind = next(iter(KINDS))
    get = metrics.registry.get_sample_value
    assert get("gpu_admission_lookup_requests_total", {"kind": kind, "verb": "get"}) == 4 + 3  # 1 -> 4, then 2 -> 5
    assert get("gpu_admission_lookup_cache_total", {"kind": kind, "result": "hit"}) == 40 + 30
    assert get("gpu_admission_lookup_up", {"kind": kind}) == 0.0  # the last list or watch failed
    assert get("gpu_admission_lookup_objects", {"kind": kind}) == 15.0
