"""The infrastructure webhook's matchConditions (rule allocation-owner), evaluated with CEL semantics
(tests/chart/cel.py) on the objects the apiserver would send: NVIDIA's owner DaemonSets, the GPU Operator's
objects and Node updates that change a cohort's label reach it; ordinary DaemonSets, GFD, the MPS control
daemon, node status updates and other label changes never do. Everything the engine denies or warns about
for this rule reaches some webhook."""
from __future__ import annotations

import copy
import sys

import pytest

from tests.policy.builders import ALLOC, DP_NODES, RULE_TESTS, apiserver_shaped
from webhook.config import parse_policy
from webhook.evaluation import evaluate_object
from webhook.lookups.bundle import BundleResolver
from webhook.objects.owners import OWNER_IMAGES, OWNER_PROGRAMS
from webhook.rules import Rule

from .conftest import rendered_set
from .test_match_conditions import decide

pytestmark = pytest.mark.slow

HOOK = "infrastructure.validate.gpu-admission.io"
if str(RULE_TESTS) not in sys.path:
    sys.path.insert(0, str(RULE_TESTS))
import test_allocation_owner as table  # noqa: E402  (a rule table: tests/policy/rules is not a package)
import test_nvidia_charts as charts  # noqa: E402


def _decisions(obj, **kw):
    return decide(rendered_set("default"), obj, namespace=obj["metadata"].get("namespace", ""), **kw)


@pytest.mark.parametrize("render_id", ["device-plugin-guide-values", "device-plugin-guide-values-with-gfd",
                                       "device-plugin-defaults", "dra-driver-guide-values", "dra-driver-defaults"])
def test_nvidia_owner_daemon_sets_reach_it_and_their_other_daemon_sets_do_not(render_id):
    chart, values, namespace, _ = charts.RENDERS[render_id]
    for doc in charts.render(chart, values, namespace):
        if doc["kind"] != "DaemonSet":
            continue
        doc = apiserver_shaped(charts._without_nulls(doc))
        owner = doc["metadata"]["name"] in (charts.DP_DS, charts.DRA_DS)
        assert _decisions(doc) == {HOOK: "call" if owner else "skip"}, doc["metadata"]["name"]


ORDINARY = [
    ("kube-proxy", {"containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.34.2",
                                    "command": ["kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]}]}),
    ("ebs-csi-node", {"containers": [{"name": "node", "image": "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.40",
                                      "args": ["node", "--endpoint=unix:/csi/csi.sock"],
                                      "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"}]}],
                      "volumes": [{"name": "plugin-dir",
                                   "hostPath": {"path": "/var/lib/kubelet/plugins/ebs.csi.aws.com/"}}]}),
    ("aws-node", {"initContainers": [{"name": "init", "image": "amazon-k8s-cni-init:v1.19"}],
                  "containers": [{"name": "aws-node", "image": "amazon-k8s-cni:v1.19"}]}),
]


@pytest.mark.parametrize("name, spec", [pytest.param(n, s, id=n) for n, s in ORDINARY])
def test_ordinary_daemon_sets_in_exempt_namespaces_never_reach_it(name, spec):
    ds = apiserver_shaped(table.daemon_set(name, "kube-system", copy.deepcopy(spec)))
    assert _decisions(ds) == {HOOK: "skip"}
    assert _decisions(ds, operation="UPDATE", old=ds) == {HOOK: "skip"}


def test_the_conditions_name_every_owner_the_engine_recognises():
    (hook,) = [h for _, h in rendered_set("default").webhooks() if h["name"] == HOOK]
    expression = hook["matchConditions"][0]["expression"]
    for image in OWNER_IMAGES:
        assert any(f"c.image.contains('{part}')" in expression for part in (image, "k8s-dra-driver")), image
    for program in OWNER_PROGRAMS:
        assert f"w.contains('{program}')" in expression


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {
    "name": "hybrid-dp-0", "labels": {**DP_NODES, "kubernetes.io/hostname": "hybrid-dp-0",
                                      "nvidia.com/gpu.product": "NVIDIA-H200"},
    "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]}}


def _node(change) -> dict:
    new = copy.deepcopy(NODE)
    change(new)
    return new


NODE_UPDATES = {
    # id: (change, reaches the webhook)
    "cohort-label-changes": (lambda n: n["metadata"]["labels"].update({ALLOC: "dra"}), True),
    "cohort-label-removed": (lambda n: n["metadata"]["labels"].pop(ALLOC), True),
    "mps-capable-added": (lambda n: n["metadata"]["labels"].update({"nvidia.com/mps.capable": "true"}), True),
    "gfd-label-changes": (lambda n: n["metadata"]["labels"].update({"nvidia.com/gpu.count": "8"}), False),
    "annotation-changes": (lambda n: n["metadata"]["annotations"].update({"x": "y"}), False),
    "status-changes": (lambda n: n["status"]["conditions"][0].update({"status": "False"}), False),
    "taint-added": (lambda n: n["spec"]["taints"].append({"key": "maintenance", "effect": "NoSchedule"}), False),
    "labels-removed-entirely": (lambda n: n["metadata"].pop("labels"), True),
}


@pytest.mark.parametrize("change, reaches", [pytest.param(*v, id=k) for k, v in NODE_UPDATES.items()])
def test_node_updates_reach_it_only_when_a_label_it_reads_changes(change, reaches):
    assert _decisions(_node(change), operation="UPDATE", old=NODE) == {HOOK: "call" if reaches else "skip"}
    # and the reverse update
    assert _decisions(NODE, operation="UPDATE", old=_node(change)) == {HOOK: "call" if reaches else "skip"}


def test_node_creates_never_reach_it():
    assert _decisions(NODE) == {}


@pytest.mark.parametrize("row", [pytest.param(c, id=c.id) for c in table.TABLE.cases
                                 if any(r is Rule.ALLOCATION_OWNER for r, _, _ in c.findings)])
def test_every_allocation_owner_finding_reaches_a_webhook(row):
    """As the apiserver would send it: the case's object reaches a webhook that evaluates it."""
    obj = apiserver_shaped(row.obj)
    policy = parse_policy(rendered_set("default").policy_text())
    ev = evaluate_object(obj, policy=policy, resolver=BundleResolver([obj, *row.docs]),
                         namespace=obj["metadata"].get("namespace", ""))
    assert any(v.rule is Rule.ALLOCATION_OWNER for v in ev.violations)
    decisions = decide(rendered_set("default"), obj, namespace=obj["metadata"].get("namespace", ""))
    assert "call" in decisions.values(), decisions


def test_platform_device_annotations_reach_the_pod_webhooks_as_the_policy_lists_them():
    from webhook.config.model import DEFAULT_PLATFORM_DEVICE_ANNOTATIONS

    (hook,) = [h for _, h in rendered_set("default").webhooks() if h["name"] == "pods.validate.gpu-admission.io"]
    conditions = " ".join(c["expression"] for c in hook["matchConditions"])
    for prefix in DEFAULT_PLATFORM_DEVICE_ANNOTATIONS:
        assert f"k.startsWith('{prefix}')" in conditions
