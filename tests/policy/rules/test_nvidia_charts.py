"""NVIDIA's own charts (tests/data/fixtures/charts/nvidia-device-plugin, dra-driver-nvidia-gpu; PROVENANCE.md names
repository and commit), rendered by real Helm (helm-python-sdk) into the namespaces the guide installs them
in: with the guide's values each owner is confined to its cohort and the whole release passes; with the
charts' defaults, or a selector that also reaches the other cohort, allocation-owner denies the owner
DaemonSet, naming the cohort and the selector to add, and nothing else of the release."""
from __future__ import annotations

import copy

import helm_python
import pytest
import yaml

from tests.policy.builders import POLICIES, apiserver_shaped
from tests.support import DATA
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.rules import Rule

CHARTS = DATA / "fixtures" / "charts"
VALUES = DATA / "helm-values"  # the guide's values for the two charts (PROVENANCE.md)
DEVICE_PLUGIN = "nvidia-device-plugin"
DRA = "dra-driver-nvidia-gpu"
DP_VALUES = yaml.safe_load((VALUES / "device-plugin-values.yaml").read_text(encoding="utf-8"))
DRA_VALUES = yaml.safe_load((VALUES / "dra-values.yaml").read_text(encoding="utf-8"))
ALLOC = "workload.example.com/gpu-allocation"


def render(chart: str, values: dict, namespace: str) -> list[dict]:
    """`helm template` of the chart, as `helm install --namespace` would apply it."""
    manifests = helm_python.Chart.load(str(CHARTS / chart)).render(copy.deepcopy(values), name="hybrid",
                                                                   namespace=namespace)
    return [d for text in manifests.values() for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _with(values: dict, path: tuple[str, ...], value) -> dict:
    out = copy.deepcopy(values)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


DP_DS = "hybrid-nvidia-device-plugin"
MPS_DS = "hybrid-nvidia-device-plugin-mps-control-daemon"
GFD_DS = "hybrid-nvidia-device-plugin-gpu-feature-discovery"
DRA_DS = "dra-driver-nvidia-gpu-kubelet-plugin"
AFFINITY = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
SELECTOR = "spec.template.spec.nodeSelector"

# id: (chart, values, namespace, {DaemonSet name: [(path, cohort the message names)]} for the denied ones)
RENDERS = {
    # the guide's install: each owner on its cohort, the MPS control daemon only where mps.capable (no owner)
    "device-plugin-guide-values": (DEVICE_PLUGIN, DP_VALUES, "gpu-system", {}),
    "dra-driver-guide-values": (DRA, DRA_VALUES, "gpu-dra-system", {}),
    # the guide's values with GFD switched on: GFD shares the plugin's image and is no owner
    "device-plugin-guide-values-with-gfd": (DEVICE_PLUGIN, _with(DP_VALUES, ("gfd", "enabled"), True), "gpu-system",
                                            {}),
    # the charts' own defaults: the GPU-discovery affinity alone reaches every GPU node, the other cohort's too
    "device-plugin-defaults": (DEVICE_PLUGIN, {}, "nvidia-device-plugin", {DP_DS: [(AFFINITY, "dra")]}),
    "dra-driver-defaults": (DRA, {"gpuResourcesEnabledOverride": True}, "dra-driver-nvidia-gpu",
                            {DRA_DS: [(AFFINITY, "device-plugin")]}),
    # overlapping selectors: the hybrid label alone, or the other cohort's allocation label
    "device-plugin-hybrid-only": (DEVICE_PLUGIN, _with(DP_VALUES, ("nodeSelector",),
                                                       {"eks.amazonaws.com/compute-type": "hybrid"}),
                                  "gpu-system", {DP_DS: [(SELECTOR, "dra")]}),
    "device-plugin-on-dra-nodes": (DEVICE_PLUGIN, _with(DP_VALUES, ("nodeSelector", ALLOC), "dra"), "gpu-system",
                                   {DP_DS: [(SELECTOR, "dra")]}),
    "dra-driver-on-device-plugin-nodes": (DRA, _with(DRA_VALUES, ("kubeletPlugin", "nodeSelector", ALLOC),
                                                     "device-plugin"), "gpu-dra-system",
                                          {DRA_DS: [(SELECTOR, "device-plugin")]}),
}


def _without_nulls(value):
    """What the apiserver stores of a rendered `field: null` (GFD's `initContainers:` with nothing under it)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _verdicts(docs: list[dict], namespace: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    resolver = BundleResolver(docs, default_namespace=namespace)
    out = {}
    for doc in docs:
        ev = evaluate_object(doc, policy=POLICIES["default"], resolver=resolver, namespace=namespace)
        assert ev.errors == ()
        out[(doc["kind"], doc["metadata"]["name"])] = [(v.rule.value, v.path, v.message) for v in ev.violations]
    return out


@pytest.mark.parametrize("chart, values, namespace, denied", [pytest.param(*r, id=i) for i, r in RENDERS.items()])
def test_nvidia_chart_renders(chart, values, namespace, denied):
    docs = render(chart, values, namespace)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    if chart == DEVICE_PLUGIN:
        # the chart renders more than one DaemonSet: the MPS control daemon is always there, GFD when enabled
        assert ("DaemonSet", DP_DS) in kinds and ("DaemonSet", MPS_DS) in kinds
        assert (("DaemonSet", GFD_DS) in kinds) is bool(values.get("gfd", {}).get("enabled"))
    else:
        assert ("DaemonSet", DRA_DS) in kinds
    verdicts = _verdicts(docs, namespace)
    found = {name: [(path, message) for rule, path, message in findings if rule == Rule.ALLOCATION_OWNER.value]
             for (kind, name), findings in verdicts.items() if findings}
    assert {n: [p for p, _ in f] for n, f in found.items()} == {n: [p for p, _ in f] for n, f in denied.items()}
    for name, expected in denied.items():
        for (_, message), (_, cohort) in zip(found[name], expected):
            assert f'admits the cohort "{cohort}"' in message
            assert f"add the cohort \"{'device-plugin' if chart == DEVICE_PLUGIN else 'dra'}\"'s node labels " \
                   f"to {SELECTOR}" in message
    # the same release as the apiserver hands it over (nulls dropped, defaults filled in): the same verdicts
    assert _verdicts([apiserver_shaped(_without_nulls(d)) for d in docs], namespace) == verdicts


def test_the_guide_s_charts_installed_together_pass():
    """Both releases of the guide, and the DRA chart's DeviceClasses, as one cluster's infrastructure."""
    docs = render(DEVICE_PLUGIN, DP_VALUES, "gpu-system") + render(DRA, DRA_VALUES, "gpu-dra-system")
    resolver = BundleResolver(docs)
    for doc in docs:
        namespace = doc["metadata"].get("namespace", "")
        ev = evaluate_object(doc, policy=POLICIES["default"], resolver=resolver, namespace=namespace)
        assert (ev.errors, ev.violations) == ((), ()), doc["metadata"]["name"]
