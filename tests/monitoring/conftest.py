"""The chart's PrometheusRule and Grafana dashboard, proved with Debian's `prometheus` package (`.ci/run`
installs it): promtool for the rules, a real Prometheus for every query. Missing binaries fail the tests
with how to install them; they never skip."""
from __future__ import annotations

import json
import shutil

import pytest
import yaml

from tests.chart.conftest import NAMESPACE, RELEASE, render_values

VALUES = {"prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}}
SELECTOR_LABELS = {"job": RELEASE, "namespace": NAMESPACE}  # what the default selector matches


def binary(name: str) -> str:
    found = shutil.which(name)
    assert found, (f"{name} is not installed: it comes with Debian's prometheus package "
                   "(`apt-get install prometheus`; .ci/run installs it when missing)")
    return found


def _objects(values: dict) -> list[dict]:
    return [doc for path, text in render_values(values).items() if not path.endswith("NOTES.txt")
            for doc in yaml.safe_load_all(text) if doc]


@pytest.fixture(scope="session")
def rule_groups() -> dict:
    """The rendered PrometheusRule's spec: a Prometheus rules file as is ({groups: [...]})."""
    (rule,) = [o for o in _objects(VALUES) if o["kind"] == "PrometheusRule"]
    return rule["spec"]


@pytest.fixture(scope="session")
def dashboard() -> dict:
    (config_map,) = [o for o in _objects(VALUES)
                     if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard")]
    return json.loads(config_map["data"]["gpu-admission.json"])


def alert_rules(groups: dict) -> dict[str, dict]:
    return {r["alert"]: r for g in groups["groups"] for r in g["rules"] if "alert" in r}


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, expr) of every target of every panel."""
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]
