"""One table, two consumers: each row's overlays (and --set values) given to the Helm chart as its
`policy:` value, rendered by real Helm, and to `gpu-admission check --config ... --set ...`; the
policy the chart writes into its ConfigMap and the one the CLI runs must be the same document, and
load (or be refused) alike. Maps merge, lists and scalars are replaced, null drops a key."""
from __future__ import annotations

import dataclasses

import helm_python
import pytest
import yaml

from webhook.config import ConfigError
from webhook.config.load import DEFAULT_PATH, build_policy, load_layers, merged_document
from webhook.config.overlay import apply_set, merge_maps

from .conftest import NAMESPACE

ONE_COHORT = [{"name": "h200", "mechanism": "dra", "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H200"}}]

# id: (overlay files, --set expressions, the field both refuse, or None when the result loads)
ROWS = {
    "nothing": ([], [], None),
    "empty-file": ([{}], [], None),
    "scalar-replaced": ([{"mode": "audit"}], [], None),
    "nested-map-merged": ([{"securityDefaults": {"runAsUser": 1000}}], [], None),
    "list-replaced": ([{"cohorts": ONE_COHORT, "deviceClasses": []}], [], None),
    "list-of-strings-replaced": ([{"exemptNamespaces": ["kube-system", "nvidia-device-plugin"]}], [], None),
    "null-drops-a-list": ([{"deviceClasses": None}], [], None),
    "null-drops-a-nested-key": ([{"securityDefaults": {"readOnlyRootFilesystem": None}}], [], None),
    "new-keys-added": ([{"lookups": {"resourceClaims": True, "timeoutSeconds": 0.5},
                         "namespaceCohorts": {"training": "dra"}}], [], None),
    "later-file-wins": ([{"mode": "audit", "rules": {"shared-claim": "enforce"}},
                         {"mode": "enforce", "rules": {"run-as-root": "audit"}}], [], None),
    "later-null-removes-earlier": ([{"namespaceCohorts": {"training": "dra"}}, {"namespaceCohorts": None}], [], None),
    "set-scalar": ([], ["mode=dry-run"], None),
    "set-nested": ([{"mode": "audit"}], ["securityDefaults.runAsUser=1000", "namespaceCohorts.ml=dra"], None),
    "set-null-drops": ([{"mode": "audit"}], ["mode=null"], None),
    "set-over-file": ([{"rules": {"shared-claim": "warn"}}], ["rules.shared-claim=enforce"], None),
    # Helm keeps a null the default has no key for; the loader refuses it in both.
    "null-for-a-key-the-default-lacks": ([{"rules": {"shared-claim": None}}], [], "rules.shared-claim"),
    "invalid-value": ([{"mode": "sometimes"}], [], "mode"),
    "set-invalid-value": ([], ["cohorts=none"], "cohorts"),
}


def _chart_values(overlays: list[dict], sets: list[str]) -> dict:
    """What `helm install -f a.yaml -f b.yaml --set policy.x=y` hands the chart: the files merged
    (Helm's mergeMaps), then the --set values as Helm's own parser reads them."""
    values: dict = {}
    for layer in overlays:
        values = merge_maps(values, {"policy": layer})
    for expression in sets:
        values = merge_maps(values, helm_python.parse_set_string(f"policy.{expression}"))
    return values


def _normalised_cli(document: dict) -> dict:
    """The CLI's document with what the chart always sets: serviceNamespace, every lookup as a
    boolean, exemptNamespaces as a list, rule actions spelt out."""
    out = dict(document, serviceNamespace=NAMESPACE, exemptNamespaces=document.get("exemptNamespaces") or [])
    lookups = dict(document.get("lookups") or {})
    for key in ("resourceClaims", "deviceClasses", "namespaces", "configMaps", "secrets", "nodes", "resourceSlices",
                "runtimeClasses", "nodePools", "gpuOperator", "pods"):
        lookups[key] = lookups.get(key) is True
    out["lookups"] = lookups
    out["rules"] = {k: ("off" if v is False else v) for k, v in (document.get("rules") or {}).items()}
    out.setdefault("namespaceOverrides", [])
    return out


@pytest.mark.parametrize("overlays, sets, refused", [pytest.param(*row, id=name) for name, row in ROWS.items()])
def test_the_chart_and_the_cli_merge_overlays_alike(render, tmp_path, overlays, sets, refused):
    files = []
    for i, layer in enumerate(overlays):
        files.append(tmp_path / f"overlay-{i}.yaml")
        files[-1].write_text(yaml.safe_dump(layer))
    if refused:
        with pytest.raises(ConfigError) as from_cli:
            load_layers(files, sets)
        assert any(e.startswith(f"{refused}: ") for e in from_cli.value.errors), from_cli.value.errors
        with pytest.raises(helm_python.HelmValuesError) as from_chart:  # values.schema.json refuses it
            render(_chart_values(overlays, sets))
        assert f"/policy/{refused.replace('.', '/')}" in str(from_chart.value)
        return
    cli = merged_document(files, sets)
    chart = render(_chart_values(overlays, sets)).policy()
    assert chart == _normalised_cli(cli)
    # The policy the CLI runs is the chart's but for the namespace the chart sets.
    assert dataclasses.replace(load_layers(files, sets), service_namespace=NAMESPACE) == build_policy(chart)


def test_set_edits_a_list_element_in_place():
    """Unlike Helm's --set (which would replace the whole list with one partial element), a list index
    edits the merged document's element: the one-off override CI needs."""
    document = yaml.safe_load(DEFAULT_PATH.read_text())
    edited = apply_set(document, "cohorts[0].migStrategy=mixed")
    assert edited["cohorts"][0]["migStrategy"] == "mixed"
    assert edited["cohorts"][0]["name"] == "device-plugin" and len(edited["cohorts"]) == 2
    assert document["cohorts"][0]["migStrategy"] == "none"  # the input is not modified
    labels = apply_set(document, r"cohorts[1].nodeLabels.example\.com/pool=a")["cohorts"][1]["nodeLabels"]
    assert labels["example.com/pool"] == "a" and "workload.example.com/gpu-allocation" in labels


@pytest.mark.parametrize("expression, message", [
    pytest.param("cohorts[5].name=x", "cohorts[5] is not an element of a list", id="index-past-the-end"),
    pytest.param("mode.sub=x", "mode is not a mapping", id="into-a-scalar"),
    pytest.param("cohorts.name=x", "cohorts is not a mapping", id="key-of-a-list"),
    pytest.param("mode", "expected path=value", id="no-value"),
    pytest.param("=x", "not a path", id="no-path"),
])
def test_set_errors_name_the_expression(expression, message):
    with pytest.raises(ConfigError) as err:
        load_layers([], [expression])
    assert message in err.value.errors[0] and err.value.errors[0].startswith("--set ")
