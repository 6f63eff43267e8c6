"""The Grafana dashboard ConfigMap: found by the dashboards sidecar (its label), one JSON model whose every
query is scoped by the dashboard's namespace and job variables and reads a metric the webhook exports."""
from __future__ import annotations

import re

import pytest
import yaml

from tests.chart.conftest import NAMESPACE, render_values
from webhook.metrics import Metrics

from .conftest import dashboard_queries

pytestmark = pytest.mark.slow


def _config_map(values: dict) -> dict:
    text = render_values(values)["gpu-admission/templates/dashboard.yaml"]
    return yaml.safe_load(text)


def test_the_sidecar_finds_it_where_it_looks():
    default = _config_map({"grafanaDashboard": {"enabled": True}})
    assert default["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert default["metadata"]["namespace"] == NAMESPACE
    moved = _config_map({"grafanaDashboard": {"enabled": True, "namespace": "monitoring",
                                              "labels": {"grafana_dashboard": "gpu"},
                                              "annotations": {"grafana_folder": "Admission"}}})
    assert moved["metadata"]["namespace"] == "monitoring"
    assert moved["metadata"]["labels"]["grafana_dashboard"] == "gpu"
    assert moved["metadata"]["annotations"] == {"grafana_folder": "Admission"}


def test_every_panel_reads_the_chosen_data_source_namespace_and_job(dashboard):
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "job"} <= variables
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]
    for title, expr in dashboard_queries(dashboard):
        selectors = re.findall(r"\b(gpu_admission_\w+|up)\{([^}]*)\}", expr)
        assert selectors, (title, expr)
        for _, matchers in selectors:
            assert 'namespace="$namespace"' in matchers and 'job="$job"' in matchers, (title, expr)


def test_every_metric_the_dashboard_reads_is_exported(dashboard):
    """Names the webhook's registry declares."""
    exported = set()
    metrics = Metrics()
    metrics.certificate_in_use(0.0)
    for family in metrics.registry.collect():
        for suffix in ("", "_total", "_bucket", "_count", "_sum"):
            exported.add(family.name + suffix)
    read = {name for _, expr in dashboard_queries(dashboard) for name in re.findall(r"\b(gpu_admission_\w+)\{", expr)}
    assert read <= exported, read - exported
    assert len(read) > 10
