"""A real Prometheus (Debian's package) scrapes a real webhook server (gunicorn, TLS, two workers, as deployed)
under a little admission traffic, with the chart's rules loaded: every dashboard query and every alert
expression is evaluated through Prometheus' HTTP API. Each must parse; the main panels must return data; a
healthy server raises no alert but the one its own invalid requests earn."""
from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.chart.conftest import NAMESPACE, RELEASE
from tests.server.apiserver import ApiServer
from tests.server.test_gunicorn import POD, SERVER_NAME, deployed  # noqa: F401 (the fixture)
from tests.support import free_port

from .conftest import alert_rules, binary, dashboard_queries

pytestmark = pytest.mark.slow
# Panels the traffic below must fill (the others need lookups on).
MAIN_PANELS = {"Versions running", "Replicas answering scrapes", "Certificate expires in",
               "Policy in force is the file on disk",
               "Policy loaded", "Requests by result", "Requests by endpoint and operation", "Denials by rule",
               "Patches by rule", "Latency", "Errors"}
VARIABLES = {"$namespace": NAMESPACE, "$job": RELEASE}
DEADLINE = 40.0  # seconds for Prometheus to start, scrape and have every main panel filled


class Prometheus:
    def __init__(self, url: str):
        self.url = url

    def get(self, path: str, **params: str) -> dict:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
            return json.loads(response.read())

    def query(self, expr: str) -> dict:
        """/api/v1/query; an expression that does not parse is a 400 with its error."""
        try:
            return self.get("/api/v1/query", query=expr)
        except urllib.error.HTTPError as err:
            return json.loads(err.read())


@pytest.fixture
def prometheus(deployed, tmp_path, rule_groups):  # noqa: F811
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups, sort_keys=False))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": [str(tmp_path / "rules.yaml")],
        "scrape_configs": [{
            "job_name": RELEASE, "scheme": "https",  # as a ServiceMonitor names the job: the Service
            "tls_config": {"ca_file": str(deployed.ca), "server_name": SERVER_NAME},
            "static_configs": [{"targets": [f"127.0.0.1:{deployed.port}"], "labels": {"namespace": NAMESPACE}}],
        }],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen([binary("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
                             "--storage.tsdb.retention.time=1h", "--log.level=warn"],
                            stdout=log, stderr=log, cwd=tmp_path)
    server = Prometheus(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:
                    if response.status == 200:  # "Prometheus Server is Ready."
                        break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "Prometheus did not get ready in 20 s"
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _traffic(deployed, stop: threading.Event) -> None:  # noqa: F811
    conn = deployed.connection()
    api = ApiServer(conn.transport)
    try:
        while not stop.is_set():
            api.admit(POD)  # /mutate (patched), then /validate (denied: visible-devices-override)
            conn.transport("/validate?timeout=10s", b"{}", {"Content-Type": "application/json"})  # invalid
            stop.wait(0.2)
    finally:
        conn.close()


def test_dashboard_and_alerts_on_a_real_prometheus(deployed, prometheus, dashboard, rule_groups):  # noqa: F811
    stop = threading.Event()
    sender = threading.Thread(target=_traffic, args=(deployed, stop), daemon=True)
    sender.start()
    try:
        queries = []
        for title, expr in dashboard_queries(dashboard):
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append((title, expr))
        deadline = time.monotonic() + DEADLINE
        while True:
            answers = {(title, expr): prometheus.query(expr) for title, expr in queries}
            filled = {title for (title, _),
                      a in answers.items() if a.get("status") == "success" and a["data"]["result"]}
            empty = MAIN_PANELS - filled  # a panel shows data when one of its queries returns some
            if not empty or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        stop.set()
        sender.join(10)
    broken = {expr: a.get("error") for (_, expr), a in answers.items() if a.get("status") != "success"}
    assert broken == {}, "dashboard queries Prometheus refuses"
    assert empty == set(), "main panels without data"
    assert MAIN_PANELS <= {title for title, _ in queries}

    # the dashboard's variables: label_values() over what Prometheus holds
    assert NAMESPACE in prometheus.get("/api/v1/label/namespace/values",
                                       **{"match[]": "gpu_admission_requests_total"})["data"]
    # every alert expression parses and evaluates; the rule groups load with no error
    for name, rule in alert_rules(rule_groups).items():
        answer = prometheus.query(rule["expr"])
        assert answer.get("status") == "success", (name, answer.get("error"))
    loaded = prometheus.get("/api/v1/rules")["data"]["groups"]
    states = {r["name"]: r for g in loaded for r in g["rules"]}
    assert set(states) == set(alert_rules(rule_groups))
    assert {n: r.get("lastError") for n, r in states.items() if r["health"] != "ok"} == {}
    # healthy: nothing pending or firing but the errors the invalid requests above earn
    active = {a["labels"]["alertname"] for a in prometheus.get("/api/v1/alerts")["data"]["alerts"]}
    assert active <= {"GpuAdmissionRequestErrors"}
    # the certificate panel shows the served certificate's days left
    (days,) = answers[next(k for k in answers if k[0] == "Certificate expires in")]["data"]["result"]
    assert 360 < float(days["value"][1]) <= 365  # certs.generate's serving certificate: 365 days
