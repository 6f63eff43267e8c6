"""`gpu-admission audit`'s cohort report against a live API (tests/cluster/fakeapi.py): the seed's cohorts'
Nodes and the DRA driver's ResourceSlices as the cluster has them agree with the policy; each disagreement
(two owners, the wrong owner, sharing or MIG the cohort does not declare, a GPU node of no cohort, a cohort
with no node) is a cluster-scoped allocation-owner result for its Node, in the table, JSON and reports."""
from __future__ import annotations

import copy
import json

import pytest
import yaml

from tests.support import DATA
from webhook.audit.cohorts import build
from webhook.config import default_policy

NODES = yaml.safe_load((DATA / "inventory" / "nodes.yaml").read_text(encoding="utf-8"))["items"]
SLICE = yaml.safe_load((DATA / "inventory" / "nvidia-dra-h200.yaml").read_text(encoding="utf-8"))
ALLOC = "workload.example.com/gpu-allocation"


def _node(name: str) -> dict:
    return copy.deepcopy(next(n for n in NODES if n["metadata"]["name"] == name))


def _slice_for(node: str) -> dict:
    s = copy.deepcopy(SLICE if SLICE.get("kind") == "ResourceSlice" else SLICE["items"][0])
    s["metadata"]["name"] = f"{node}-gpu.nvidia.com"
    s["spec"]["nodeName"] = node
    s["spec"]["pool"]["name"] = node
    return s


def _healthy(fake_api) -> None:
    for node in NODES:
        fake_api.apply(copy.deepcopy(node))
    for name in ("hybrid-dra-h200-0", "hybrid-dra-h200-mig"):
        fake_api.apply(_slice_for(name))


def _cohort_results(out: str) -> dict[str, list[tuple[str, str]]]:
    return {r["name"]: [(v["action"], v["path"]) for v in r["violations"]] for r in json.loads(out)
            if r["kind"] in ("Node", "Cohort")}


def test_the_seed_s_cohorts_agree_with_the_cluster(fake_api, audit):
    _healthy(fake_api)
    rc, out, _ = audit("-o", "json")
    assert rc == 0
    results = _cohort_results(out)
    # every GPU node is reported, none disagrees; the CPU node is not a GPU node
    assert results == {n: [] for n in ("hybrid-dp-0", "hybrid-dp-1", "hybrid-dp-reserved", "hybrid-dra-h200-0",
                                       "hybrid-dra-h200-mig")}


# id: (change to the healthy cluster, {node or cohort: [(action, path)]})
DISAGREEMENTS = {
    "two-owners": (lambda api: api.apply(_slice_for("hybrid-dp-0")),
                   {"hybrid-dp-0": [("enforce", "status.allocatable"), ("enforce", "spec.nodeName")]}),
    "device-plugin-on-dra-node": (
        lambda api: api.apply({**_node("hybrid-dra-h200-0"), "status": {"allocatable": {"nvidia.com/gpu": "1"}}}),
        {"hybrid-dra-h200-0": [("enforce", "status.allocatable"), ("enforce", "status.allocatable")]}),
    "time-slicing-not-declared": (
        lambda api: api.apply(_labelled("hybrid-dp-1", {"nvidia.com/gpu.sharing-strategy": "time-slicing",
                                                        "nvidia.com/gpu.replicas": "4"})),
        {"hybrid-dp-1": [("enforce", 'metadata.labels["nvidia.com/gpu.sharing-strategy"]')]}),
    "mig-under-mig-strategy-none": (
        lambda api: api.apply({**_node("hybrid-dp-1"), "status": {"allocatable": {"nvidia.com/mig-1g.18gb": "7"}}}),
        {"hybrid-dp-1": [("enforce", "status.allocatable")]}),
    "gpu-node-of-no-cohort": (
        lambda api: api.apply(_labelled("hybrid-dp-1", {ALLOC: "legacy"})),
        {"hybrid-dp-1": [("enforce", "metadata.labels")]}),
}


def _labelled(name: str, labels: dict) -> dict:
    node = _node(name)
    node["metadata"]["labels"].update(labels)
    return node


@pytest.mark.parametrize("change, expected", [pytest.param(*v, id=k) for k, v in DISAGREEMENTS.items()])
def test_each_disagreement_is_a_result_for_its_node(fake_api, audit, change, expected):
    _healthy(fake_api)
    change(fake_api)
    rc, out, _ = audit("-o", "json")
    assert rc == 1  # a disagreement at enforce counts as a denial
    found = {k: v for k, v in _cohort_results(out).items() if v}
    assert found == expected
    for r in json.loads(out):
        if r["kind"] == "Node" and r["violations"]:
            assert r["allowed"] is False and r["source"]["resource"] == "nodes"
            assert all(v["rule"] == "allocation-owner" and v["message"].startswith(f'node "{r["name"]}": ')
                       for v in r["violations"])


def test_a_cohort_with_no_node_warns_and_fails_only_on_warn(fake_api, audit):
    for node in NODES:
        if node["metadata"]["labels"].get(ALLOC) != "dra":
            fake_api.apply(copy.deepcopy(node))
    rc, out, _ = audit("-o", "json")
    assert rc == 0
    assert _cohort_results(out)["dra"] == [("warn", 'cohorts[name="dra"].nodeLabels')]
    assert audit("-o", "json", "--fail-on-warn")[0] == 1


def test_the_table_shows_each_gpu_node_with_its_cohort_and_owners(fake_api, audit):
    _healthy(fake_api)
    fake_api.apply(_slice_for("hybrid-dp-0"))
    rc, out, _ = audit()
    assert rc == 1
    lines = out.splitlines()
    start = lines.index("GPU nodes and their cohorts:")
    assert lines[start + 1].split() == ["NODE", "COHORT", "OWNERS", "GFD", "LABELS", "DISAGREES"]
    rows = {line.split()[0]: line for line in lines[start + 2:]}
    assert rows["hybrid-dp-0"].split()[1:4] == ["device-plugin", "device-plugin,", "dra"]
    assert rows["hybrid-dra-h200-0"].split()[1:3] == ["dra", "dra"]
    assert "cpu-0" not in rows
    assert any(line.startswith("allocation-owner") and "Node/hybrid-dp-0" in line for line in lines)


def test_cluster_scoped_node_results_in_policy_reports(fake_api, audit):
    _healthy(fake_api)
    fake_api.apply(_slice_for("hybrid-dp-0"))
    rc, out, _ = audit("-o", "policyreport")
    reports = [d for d in yaml.safe_load_all(out) if d]
    (cluster,) = [r for r in reports if r["kind"] == "ClusterPolicyReport"]
    nodes = [r for r in cluster["results"] if r["resources"][0]["kind"] == "Node"]
    assert {(r["resources"][0]["name"], r["result"]) for r in nodes if r["result"] != "pass"} == {
        ("hybrid-dp-0", "fail")}
    assert {r["resources"][0]["name"] for r in nodes} >= {"hybrid-dp-1", "hybrid-dra-h200-0"}


def test_nodes_that_cannot_be_listed_leave_the_report_out(fake_api, audit):
    _healthy(fake_api)
    fake_api.fail(403, resource="nodes")
    rc, out, err = audit("-o", "json")
    assert "cannot list nodes" in err
    assert not [r for r in json.loads(out) if r["kind"] == "Node" and "violations" in r and r["name"]]


def test_without_slices_no_dra_owner_is_judged():
    """ResourceSlices not listable: DRA owners are unknown, so a DRA node shows none and nothing is said of it."""
    report = build(NODES, None, default_policy())
    rows = {r.name: r for r in report.nodes}
    assert rows["hybrid-dra-h200-0"].owners == [] and rows["hybrid-dra-h200-0"].problems == []
    assert rows["hybrid-dp-0"].owners == ["device-plugin"]


def test_odd_nodes_and_slices_do_not_crash():
    report = build([{"metadata": {"name": "x", "labels": "nope"}, "status": {"allocatable": []}}, {}, 7],
                   [{"spec": {"nodeName": 3}}, "slice"], default_policy())
    assert report.nodes == [] and report.empty == []
