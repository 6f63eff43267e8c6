"""Prometheus metrics of one app: each app has its own registry (tests create many apps).

Under gunicorn with several workers, prometheus-client's multiprocess mode keeps each worker's values
in files under `Settings.metrics_dir`, and `/metrics` sums them, so whichever worker answers a
scrape reports the whole pod.

Requests are tallied in plain Python first and reach the registry at `flush()`: once a second from the
worker's flush thread, before every exposition and when the worker exits. A prometheus-client update
takes a lock and, in multiprocess mode, writes a memory-mapped file, three times per request (the
counter, the histogram's sum and bucket): several times what the tally costs (bench/README.md)."""
from __future__ import annotations

import threading
from bisect import bisect_left

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from webhook.objects.kinds import BY_KIND
from webhook.policy.results import Evaluation
from webhook.rules import Action
from webhook.version import package_version

# Fine at the bottom: a decision takes tens of microseconds, a whole request well under a millisecond.
# At the top, the webhook timeouts (1 to 5 s): the latency alert compares p99 with a share of them.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0)
OTHER_KIND = "other"  # any kind outside the handled table: label values stay a bounded set
OTHER = "other"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
LOOKUP_VERBS = ("list", "watch", "get")


class Metrics:
    def __init__(self, *, multiprocess_dir: str | None = None):
        self.registry = CollectorRegistry(auto_describe=True)
        self._multiprocess_dir = multiprocess_dir
        r = self.registry
        self.requests = Counter(
            "gpu_admission_requests", "Admission requests answered, by endpoint, kind, result (allowed, denied, "
            "invalid, error), operation (CREATE, UPDATE, DELETE, CONNECT, other) and the request's dryRun.",
            ("endpoint", "kind", "result", "operation", "dry_run"), registry=r)
        self.latency = Histogram(
            "gpu_admission_request_duration_seconds", "Time to answer an admission request, from the "
            "body read to the response built.", ("endpoint", "kind"), buckets=LATENCY_BUCKETS, registry=r)
        self.rule_results = Counter(
            "gpu_admission_rule_results", "Rule findings, by rule id, action and outcome (denied, warned, "
            "audited, patched, would-deny, would-patch).", ("rule", "action", "outcome"), registry=r)
        self.rule_errors = Counter(
            "gpu_admission_rule_errors", "Rules that raised while evaluating a request, by rule id and "
            "what their onError decided.", ("rule", "decision"), registry=r)
        self.policy_reloads = Counter(
            "gpu_admission_policy_reloads", "Reloads of the policy file, by result (success, failure).",
            ("result",), registry=r)
        # min over workers: 0 as soon as one worker refused the file on disk.
        self.policy_ok = Gauge(
            "gpu_admission_policy_reload_ok", "1 when the policy in force is the file on disk; 0 when the "
            "last reload was refused and the previous policy stays in force.", registry=r,
            multiprocess_mode="livemin")
        self.policy_loaded_at = Gauge(
            "gpu_admission_policy_loaded_timestamp_seconds", "When the policy in force was loaded.",
            registry=r, multiprocess_mode="livemax")
        # The usual `_build_info` pattern: a constant 1 whose labels say what runs.
        self.build_info = Gauge(
            "gpu_admission_build_info", "Always 1; the version label is the running package's version.",
            ("version",), registry=r, multiprocess_mode="livemax")
        self.build_info.labels(package_version()).set(1)
        self.certificate_expiry: Gauge | None = None  # registered once known: a 0 would read as expired
        self.lookup_requests = Counter(
            "gpu_admission_lookup_requests", "Requests of the cluster lookups to the API server, by kind and verb "
            "(list and watch: the informers; get: a name the cache did not hold).", ("kind", "verb"), registry=r)
        self.lookup_errors = Counter(
            "gpu_admission_lookup_errors", "Failed lookup requests, by kind and verb (get: lookups answered "
            "'unknown' for an API error, including while the API is held off as unreachable).", ("kind", "verb"),
            registry=r)
        self.lookup_cache = Counter(
            "gpu_admission_lookup_cache", "Lookups answered from the informer cache (hit) or not (miss).",
            ("kind", "result"), registry=r)
        self.lookup_synced = Gauge(
            "gpu_admission_lookup_synced", "1 once the kind's informer has listed it in every worker.", ("kind",),
            registry=r, multiprocess_mode="livemin")
        self.lookup_up = Gauge(
            "gpu_admission_lookup_up", "1 while the kind's informer is listed and watching; 0 while its list or "
            "watch fails (the cache then goes stale).", ("kind",), registry=r, multiprocess_mode="livemin")
        self.lookup_objects = Gauge(
            "gpu_admission_lookup_objects", "Objects the kind's informer holds.", ("kind",), registry=r,
            multiprocess_mode="livemax")
        self._sources: list = []  # callables run at flush: state held elsewhere, copied into the registry
        self._lookup_seen: dict[tuple[str, str, str], int] = {}  # counts already added, per (metric, kind, label)
        # (endpoint, kind, result, operation, dry_run) -> [count, sum of seconds, count per latency bucket (+Inf last)]
        self._tally: dict[tuple[str, str, str, str, str], list] = {}
        self._tally_lock = threading.Lock()  # the worker's threads tally at once; flush swaps the dict

    def observe_request(self, endpoint: str, kind: str, result: str, seconds: float, *, operation: str = "",
                        dry_run: bool = False) -> None:
        key = (endpoint, kind if kind in BY_KIND else OTHER_KIND, result,
               operation if operation in OPERATIONS else OTHER, "true" if dry_run is True else "false")
        bucket = bisect_left(LATENCY_BUCKETS, seconds)  # the first bound >= seconds, as Histogram.observe
        with self._tally_lock:
            tally = self._tally.get(key)
            if tally is None:
                tally = self._tally[key] = [0, 0.0, [0] * (len(LATENCY_BUCKETS) + 1)]
            tally[0] += 1
            tally[1] += seconds
            tally[2][bucket] += 1

    def add_source(self, source) -> None:
        """`source(metrics)` runs at every flush: it copies state kept elsewhere (the certificate in use,
        the lookups' counters) into the registry."""
        self._sources.append(source)

    def flush(self) -> None:
        """Move the tallied requests into the registry (and so, under gunicorn, into the worker's file)."""
        for source in self._sources:
            source(self)
        with self._tally_lock:
            tallies, self._tally = self._tally, {}
        for (endpoint, kind, result, operation, dry_run), (count, total, buckets) in tallies.items():
            self.requests.labels(endpoint, kind, result, operation, dry_run).inc(count)
            histogram = self.latency.labels(endpoint, kind)
            # prometheus-client observes one value at a time; these are the values observe() updates
            # (test_metrics compares the exposition of both ways).
            histogram._sum.inc(total)
            for value, n in zip(histogram._buckets, buckets):
                if n:
                    value.inc(n)

    def certificate_in_use(self, not_after: float | None) -> None:
        if not_after is None:
            return
        if self.certificate_expiry is None:
            # min over workers: the soonest expiry any worker serves.
            self.certificate_expiry = Gauge(
                "gpu_admission_certificate_expiry_timestamp_seconds", "When the serving certificate in use expires "
                "(its notAfter, unix time).", registry=self.registry, multiprocess_mode="livemin")
        self.certificate_expiry.set(not_after)

    def lookup_stats(self, stats) -> None:
        """Copy `ClusterResolver.stats()` (kind -> KindStats, cumulative) into the registry: counters grow
        by what changed since the last call."""
        for kind, s in stats.items():
            informer = s.informer
            counts = {
                (self.lookup_requests, "list"): informer.lists + informer.list_errors,
                (self.lookup_requests, "watch"): informer.watches,
                (self.lookup_requests, "get"): s.gets,
                (self.lookup_errors, "list"): informer.list_errors,
                (self.lookup_errors, "watch"): informer.watch_errors,
                (self.lookup_errors, "get"): s.errors,
                (self.lookup_cache, "hit"): s.hits,
                (self.lookup_cache, "miss"): s.misses,
            }
            for (counter, label), value in counts.items():
                key = (counter._name, kind, label)
                delta = value - self._lookup_seen.get(key, 0)
                if delta > 0:
                    counter.labels(kind, label).inc(delta)
                self._lookup_seen[key] = value
            self.lookup_synced.labels(kind).set(1 if informer.synced else 0)
            self.lookup_up.labels(kind).set(1 if informer.synced and informer.last_error is None else 0)
            self.lookup_objects.labels(kind).set(informer.objects)

    def observe_evaluation(self, evaluation: Evaluation) -> None:
        # validation findings from `violations`; mutations from `mutations`, which also holds those applied silently
        for v in evaluation.violations:
            if not v.rule.is_mutation:
                self.rule_results.labels(v.rule.value, v.action.value,
                                         outcome_label(False, v.action, evaluation.dry_run)).inc()
        for m in evaluation.mutations:
            self.rule_results.labels(m.rule.value, m.action.value, "patched" if m.applied else "would-patch").inc()
        for e in evaluation.errors:
            self.rule_errors.labels(e.rule.value, "deny" if e.denied else "allow").inc()

    def policy_loaded(self, loaded_at: float) -> None:
        self.policy_ok.set(1)
        self.policy_loaded_at.set(loaded_at)

    def policy_reloaded(self, ok: bool, loaded_at: float | None) -> None:
        self.policy_reloads.labels("success" if ok else "failure").inc()
        if ok and loaded_at is not None:
            self.policy_loaded(loaded_at)
        else:
            self.policy_ok.set(0)

    def exposition(self) -> bytes:
        self.flush()  # this worker's tallies; the others' are at most a flush interval old
        if self._multiprocess_dir is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self._multiprocess_dir)
        return generate_latest(registry)


def outcome_label(is_mutation: bool, action: Action, dry_run: bool) -> str:
    """What a finding did to the request, in the words of the metric's `outcome` label."""
    if is_mutation:
        return "patched" if action in (Action.ENFORCE, Action.WARN) and not dry_run else "would-patch"
    if action is Action.ENFORCE:
        return "would-deny" if dry_run else "denied"
    return "warned" if action is Action.WARN else "audited"
