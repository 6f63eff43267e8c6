"""Class: lists and kinds as the API returns them. Items of a typed list take the list's kind (`PodList` ->
Pod, `JobList` -> Job), a plain `List`'s keep their own; kinds are matched with their API group, so another
project's `Job` is skipped with the reason, never read as a batch/v1 Job."""
from __future__ import annotations

import json

import pytest

from webhook.cli.inputs import read_inputs
from webhook.config import default_policy
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver

OVERRIDE = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]


def spec(env=None):
    c = {"name": "trainer", "image": "registry.example.invalid/cuda:12", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if env:
        c["env"] = env
    return {"containers": [c]}


def api_pod(name, env=None):
    """A Pod as the API lists it inside a PodList: no kind, no apiVersion."""
    return {"metadata": {"name": name, "namespace": "ai"}, "spec": spec(env)}


def job_body(name, env=None):
    return {"metadata": {"name": name, "namespace": "ai"},
            "spec": {"template": {"spec": {**spec(env), "restartPolicy": "Never"}}}}


def evaluate_file(tmp_path, doc):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    inputs = read_inputs([str(path)])
    policy = default_policy()
    resolver = BundleResolver([d.obj for d in inputs.documents])
    return inputs, [evaluate_object(d.obj, policy=policy, resolver=resolver, namespace="ai") for d in inputs.documents]


@pytest.mark.parametrize("doc, expected", [
    pytest.param({"apiVersion": "v1", "kind": "PodList", "items": [api_pod("ok"), api_pod("bad", OVERRIDE)]},
                 [("Pod", "ok", True), ("Pod", "bad", False)], id="pod-list-items-are-pods"),
    pytest.param({"apiVersion": "batch/v1", "kind": "JobList", "items": [job_body("ok"), job_body("bad", OVERRIDE)]},
                 [("Job", "ok", True), ("Job", "bad", False)], id="job-list-items-are-jobs"),
    pytest.param({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", **api_pod("bad", OVERRIDE)},
        {"apiVersion": "batch/v1", "kind": "Job", **job_body("ok")}]},
        [("Pod", "bad", False), ("Job", "ok", True)], id="list-items-keep-their-own-kinds"),
    pytest.param({"apiVersion": "v1", "kind": "PodList", "items": [
        {"apiVersion": "v1", "kind": "Pod", **api_pod("bad", OVERRIDE)}]},
        [("Pod", "bad", False)], id="typed-list-item-with-its-own-kind"),
])
def test_list_items(tmp_path, doc, expected):
    inputs, evaluations = evaluate_file(tmp_path, doc)
    assert inputs.errors == ()
    assert [(e.kind, e.name, e.allowed) for e in evaluations] == expected
    assert all(e.skipped is None for e in evaluations)


def test_list_item_without_kind_is_an_error_naming_it(tmp_path):
    inputs, _ = evaluate_file(tmp_path, {"apiVersion": "v1", "kind": "List", "items": [api_pod("no-kind")]})
    assert inputs.documents == ()
    assert [e.split(": ", 1)[1] for e in inputs.errors] == [
        "document 1, item 0: has no kind (items of a List keep their own)"]


def test_typed_list_item_is_never_modified_in_place(tmp_path):
    item = api_pod("ok")
    inputs = read_inputs([str(_write(tmp_path, {"apiVersion": "v1", "kind": "PodList", "items": [item]}))])
    assert inputs.documents[0].obj == {"apiVersion": "v1", "kind": "Pod", **item}


def _write(tmp_path, doc):
    path = tmp_path / "list.json"
    path.write_text(json.dumps(doc))
    return path


VOLCANO_JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "mpi", "namespace": "ai"},
               "spec": {"minAvailable": 1,
                        "tasks": [{"name": "worker", "replicas": 1, "template": {"spec": spec(OVERRIDE)}}]}}


@pytest.mark.parametrize("obj, skipped", [
    pytest.param(VOLCANO_JOB, "kind Job of API group batch.volcano.sh is not the batch Job gpu-admission handles",
                 id="volcano-job"),
    pytest.param({**VOLCANO_JOB, "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"},
                 "kind PyTorchJob is not one gpu-admission handles", id="kubeflow-pytorch-job"),
    pytest.param({**VOLCANO_JOB, "apiVersion": "ray.io/v1", "kind": "RayJob"},
                 "kind RayJob is not one gpu-admission handles", id="ray-job"),
    pytest.param({**VOLCANO_JOB, "apiVersion": "example.com/v1", "kind": "Pod"},
                 "kind Pod of API group example.com is not the core Pod gpu-admission handles",
                 id="pod-of-another-group"),
    # benign twins: the kinds gpu-admission does handle, matched with their group, are evaluated
    pytest.param({"apiVersion": "batch/v1", "kind": "Job", **job_body("bad", OVERRIDE)}, None, id="batch-v1-job"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", **api_pod("bad", OVERRIDE)}, None, id="core-pod"),
    pytest.param({"kind": "Pod", **api_pod("bad", OVERRIDE)}, None, id="pod-without-api-version"),
])
def test_kinds_are_matched_with_their_api_group(obj, skipped):
    ev = evaluate_object(obj, policy=default_policy(), resolver=BundleResolver([obj]), namespace="ai")
    assert ev.skipped == skipped
    assert ev.allowed is (skipped is not None)  # the evaluated ones set CUDA_VISIBLE_DEVICES: denied
