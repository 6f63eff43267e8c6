"""The fake apiserver speaks the API as the official client expects: its typed APIs, its Watch helper and
its exceptions work against it unchanged (so what the lookups are tested against is the real protocol)."""
from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s
from kubernetes import watch

from webhook.lookups.apiserver import ApiError, get, send
from webhook.lookups.kubeconfig import load_api_client
from webhook.lookups.resources import DEVICE_CLASSES, RESOURCE_CLAIM_TEMPLATES

from .conftest import seed_text, write_kubeconfig


def test_the_typed_client_lists_and_reads_what_the_fake_serves(fake_api, api_client):
    fake_api.load(seed_text("dra-manifests.yaml"))
    fake_api.load(seed_text("smoke-jobs.yaml"))
    templates = k8s.ResourceV1Api(api_client).list_namespaced_resource_claim_template("ai-workloads")
    assert [t.metadata.name for t in templates.items] == ["single-large-gpu"]
    assert templates.metadata.resource_version == fake_api.resource_version
    job = k8s.BatchV1Api(api_client).read_namespaced_job("hybrid-gpu-dra-smoke", "ai-workloads")
    assert job.spec.template.spec.resource_claims[0].resource_claim_template_name == "single-large-gpu"


def test_the_watch_helper_streams_events_and_bookmarks(fake_api, api_client):
    fake_api.load(seed_text("dra-manifests.yaml"))
    api = k8s.ResourceV1Api(api_client)
    listed = api.list_device_class()
    fake_api.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "new"}, "spec": {}})
    w = watch.Watch()
    seen = []
    for event in w.stream(api.list_device_class, allow_watch_bookmarks=True,
                          resource_version=listed.metadata.resource_version, timeout_seconds=5):
        seen.append((event["type"], event["raw_object"]["metadata"].get("name")))
        if event["type"] == "ADDED":
            fake_api.bookmark()
        else:
            w.stop()
    assert seen == [("ADDED", "new"), ("BOOKMARK", None)]
    assert w.resource_version == fake_api.resource_version


def test_an_expired_watch_raises_410_in_the_official_client(fake_api, api_client):
    fake_api.load(seed_text("dra-manifests.yaml"))
    old = fake_api.resource_version
    fake_api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "a"}})
    fake_api.compact()
    with pytest.raises(k8s.ApiException) as caught:
        for _ in watch.Watch().stream(k8s.ResourceV1Api(api_client).list_device_class, resource_version=old,
                                      timeout_seconds=5):
            pass
    assert caught.value.status == 410 and "too old resource version" in caught.value.reason


@pytest.mark.parametrize("call, status, reason", [
    pytest.param(lambda c: get(c, RESOURCE_CLAIM_TEMPLATES, "ai-workloads", "missing", timeout=2), 404,
                 "not found", id="404-status"),
    pytest.param(lambda c: send(c, "GET", "/apis/resource.k8s.io/v1beta9/deviceclasses", timeout=2), 404,
                 "the API server does not serve this resource", id="404-unrouted"),
    pytest.param(lambda c: send(c, "POST", DEVICE_CLASSES.path(), timeout=2, body={
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "hybrid-full-gpu"}}),
        409, 'API error 409: deviceclasses.resource.k8s.io "hybrid-full-gpu" already exists', id="409-exists"),
])
def test_error_answers_carry_status_bodies(fake_api, api_client, call, status, reason):
    fake_api.load(seed_text("dra-manifests.yaml"))
    with pytest.raises(ApiError) as caught:
        call(api_client)
    assert caught.value.status == status and caught.value.describe() == reason


def test_a_wrong_token_is_unauthorized(fake_api, certs, tmp_path):
    path = write_kubeconfig(tmp_path / "kc", server=fake_api.url, ca_file=certs.ca_file, token="wrong")
    with load_api_client(str(path)) as client, pytest.raises(ApiError) as caught:
        get(client, DEVICE_CLASSES, None, "x", timeout=2)
    assert caught.value.status == 401 and caught.value.describe() == "API error 401: Unauthorized"


def test_pods_come_back_shaped_by_the_apiserver(fake_api, api_client):
    fake_api.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
                    "spec": {"containers": [{"name": "c", "image": "x",
                                             "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})
    raw = k8s.CoreV1Api(api_client).read_namespaced_pod("p", "a", _preload_content=False)
    pod = json.loads(raw.data)
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"},
                                                         "requests": {"nvidia.com/gpu": "1"}}
    assert pod["spec"]["securityContext"] == {} and pod["metadata"]["resourceVersion"] == fake_api.resource_version
