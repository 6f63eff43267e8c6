"""The webhook's informers (webhook/lookups/informer.py) against a real kube-apiserver's watch: BOOKMARKs
carry its resourceVersion past writes of other kinds without a re-list (etcd's progress notifications keep
the watch cache's version current, as on clusters that set them); after etcd
compacts past the informer's resourceVersion (and the apiserver's watch cache starts afresh, as after an
apiserver restart) the watch answers 410 Gone, and the informer lists again: a delete made meanwhile, which
no watch event will ever report, is gone from its cache, and new objects reach it. Its own
control plane: the apiserver is restarted here."""
from __future__ import annotations

import base64
import json

import pytest

from tests.e2e import cluster as clusterlib
from tests.e2e.conftest import Kubectl, wait_for
from webhook.lookups.informer import Informer, InformerSettings
from webhook.lookups.kubeconfig import load_api_client
from webhook.lookups.resources import RESOURCE_CLAIM_TEMPLATES

pytestmark = pytest.mark.e2e


def claim_template(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com"}}]}}}}


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    with clusterlib.Cluster(tmp_path_factory.mktemp("informer-cluster")) as running:
        yield running


def test_bookmarks_then_410_gone_after_compaction_and_a_fresh_list(own_cluster):
    kubectl = Kubectl(own_cluster.kubectl, own_cluster.kubeconfig)
    kubectl.create(claim_template("before"))
    informer = Informer(load_api_client(str(own_cluster.kubeconfig)), RESOURCE_CLAIM_TEMPLATES,
                        transform=lambda obj: obj["metadata"]["name"], settings=InformerSettings(watch_seconds=4))
    informer.start()
    try:
        assert informer.synced.wait(30)
        assert informer.values() == ["before"] and informer.lists == 1
        listed_at = int(informer.resource_version)
        # other kinds move the etcd revision on; only BOOKMARKs can carry the informer's version past them
        for i in range(3):
            kubectl.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": f"c{i}", "namespace": "default"}})
        moved = int(kubectl.json("get", "configmap", "c2", "-n", "default")["metadata"]["resourceVersion"])
        wait_for(lambda: int(informer.resource_version) >= moved, "a BOOKMARK past the ConfigMaps", timeout=60)
        assert informer.lists == 1 and int(informer.resource_version) > listed_at
        def delete_while_away_and_compact():
            # "before" deleted in etcd itself while the apiserver is down: only a fresh list can reveal it
            b64 = lambda raw: base64.b64encode(raw).decode()
            keys = own_cluster.etcd("kv/range", {"key": b64(b"/registry/"), "range_end": b64(b"/registry0"),
                                                 "keys_only": True})["kvs"]
            (stored,) = [k["key"] for k in keys if base64.b64decode(k["key"]).endswith(
                b"resourceclaimtemplates/default/before")]
            assert own_cluster.etcd("kv/deleterange", {"key": stored})["deleted"] == "1"
            key = b64(b"/e2e/advance")
            for _ in range(3):
                own_cluster.etcd("kv/put", {"key": key, "value": key})
            revision = int(own_cluster.etcd("kv/range", {"key": key})["header"]["revision"])
            assert revision > int(informer.resource_version)
            own_cluster.etcd("kv/compaction", {"revision": revision, "physical": True})

        stale = informer.resource_version
        own_cluster.restart_apiserver(between=delete_while_away_and_compact)
        # what the informer's next watch is answered: the real apiserver's 410 for that version
        raw = kubectl.run("get", "--raw", f"/apis/resource.k8s.io/v1/resourceclaimtemplates?watch=1&"
                          f"resourceVersion={stale}&timeoutSeconds=2&allowWatchBookmarks=true").stdout
        event = json.loads(raw.splitlines()[0])
        assert event["type"] == "ERROR" and event["object"]["code"] == 410, raw
        wait_for(lambda: informer.lists >= 2, "the re-list after 410 Gone", timeout=90)
        kubectl.create(claim_template("after"))
        wait_for(lambda: informer.values() == ["after"], "the cache without the deleted template, with the new one")
    finally:
        informer.stop()
