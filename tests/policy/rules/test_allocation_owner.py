"""The allocation-owner table (docs/rules/allocation-owner.md): failing cases beside their closest benign twins,
each checked by builders.check_case (findings, verdict, golden messages) and, by test_rules.py, again in the
apiserver's shape. Node updates (which need the object before the update) are the table at the end."""
from __future__ import annotations

import copy

import pytest

from tests.policy.builders import (
    DP_NODES,
    DRA_NODES,
    GPU_TOLERATION,
    HYBRID,
    POLICIES,
    Table,
    check_case,
    container,
    device_class,
    in_japanese,
    meta,
    pod,
    pod_spec,
)
from tests.policy.conftest import evaluate_docs
from webhook.rules import Action, Rule

TABLE = Table("allocation-owner")
case = TABLE.case

PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
DRA_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0"
GPU_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In",
                           "values": ["true"]}]},
    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}}
SOCKETS = {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}}
PLUGINS = {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/plugins"}}
REGISTRY = {"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}}


def daemon_set(name, namespace, spec, *, owner_refs=None):
    m = meta(name, namespace)
    if owner_refs:
        m["ownerReferences"] = owner_refs
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": m, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def plugin_container(name="nvidia-device-plugin-ctr", *, image=PLUGIN_IMAGE, command=("nvidia-device-plugin",),
                     args=None, mounts=True):
    c: dict = {"name": name, "image": image}
    if command:
        c["command"] = list(command)
    if args:
        c["args"] = list(args)
    if mounts:
        c["volumeMounts"] = [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"}]
    return c


def plugin_spec(*containers, node_selector=None, affinity=None, volumes=(SOCKETS,)):
    spec: dict = {"priorityClassName": "system-node-critical", "containers": list(containers) or [plugin_container()],
                  "volumes": list(volumes), "tolerations": copy.deepcopy(GPU_TOLERATION)}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


def kubelet_plugin(script="gpu-kubelet-plugin -v $(LOG_VERBOSITY)", *, image=DRA_IMAGE, node_selector=None,
                   affinity=None):
    c = {"name": "gpus", "image": image, "command": ["bash", "-c"], "args": [script],
         "securityContext": {"privileged": True},
         "volumeMounts": [{"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
                          {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins",
                           "mountPropagation": "Bidirectional"}]}
    return plugin_spec(c, node_selector=node_selector, affinity=affinity, volumes=(REGISTRY, PLUGINS))


def operator_object(kind, name, spec, api=None):
    api = api or ("nvidia.com/v1" if kind == "ClusterPolicy" else "nvidia.com/v1alpha1")
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec}


CLUSTER_POLICY = operator_object("ClusterPolicy", "cluster-policy", {"devicePlugin": {"enabled": True}})
GPU_CLUSTER = operator_object("GPUCluster", "gpu-cluster", {"draDriver": {"gpus": {"kubeletPlugin": {}}}})
DEFAULT_DRIVER = operator_object("NVIDIADriver", "default", {"default": True, "driverType": "gpu"})
H200_DRIVER = operator_object("NVIDIADriver", "h200", {"driverType": "gpu",
                                                       "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}})
OPERATED = [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy", "uid": "0",
             "controller": True}]
DS_SELECTOR = "spec.template.spec.nodeSelector"
DS_AFFINITY = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

# Class: a DaemonSet that runs an allocation owner, by node selection. The seed's values confine each owner to
# its cohort (nodeSelector ANDed with the chart's GPU-discovery affinity).
case("allocation-owner-device-plugin-confined-to-its-cohort-pass",
     daemon_set("hybrid-gpu-plugin", "gpu-system", plugin_spec(node_selector=dict(DP_NODES), affinity=GPU_AFFINITY)))
case("allocation-owner-device-plugin-on-every-gpu-node",
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(affinity=GPU_AFFINITY)),
     ("allocation-owner", DS_AFFINITY))
case("allocation-owner-device-plugin-selector-admits-dra-cohort",
     # the allocation label's value of the other cohort: the DRA nodes get a second owner
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(node_selector=dict(DRA_NODES))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-device-plugin-hybrid-only",
     # every hybrid node: both cohorts' and nodes of neither
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(node_selector=dict(HYBRID))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-static-manifest-without-selector",
     # NVIDIA's static manifest as published: kube-system is exempt, and allocation-owner still applies there
     daemon_set("nvidia-device-plugin-daemonset", "kube-system", plugin_spec(plugin_container(command=()))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-static-manifest-with-cohort-selector-pass",
     daemon_set("nvidia-device-plugin-daemonset", "kube-system",
                plugin_spec(plugin_container(command=()), node_selector=dict(DP_NODES))))
case("allocation-owner-dra-kubelet-plugin-on-every-gpu-node",
     daemon_set("dra-driver-nvidia-gpu-kubelet-plugin", "gpu-dra-system", kubelet_plugin(affinity=GPU_AFFINITY)),
     ("allocation-owner", DS_AFFINITY))
case("allocation-owner-dra-kubelet-plugin-confined-pass",
     daemon_set("dra-driver-nvidia-gpu-kubelet-plugin", "gpu-dra-system",
                kubelet_plugin(node_selector=dict(DRA_NODES), affinity=GPU_AFFINITY)))
case("allocation-owner-dra-kubelet-plugin-in-device-plugin-cohort",
     daemon_set("dra-driver-nvidia-gpu-kubelet-plugin", "gpu-dra-system", kubelet_plugin(node_selector=dict(DP_NODES))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-owner-in-ordinary-namespace",
     # outside the exempt namespaces every other rule applies too (the socket hostPath)
     daemon_set("nvidia-device-plugin", "team-infra", plugin_spec(node_selector=dict(HYBRID))),
     ("allocation-owner", DS_SELECTOR), ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"))
case("allocation-owner-action-audit",
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(node_selector=dict(DRA_NODES))),
     ("allocation-owner", "audit", DS_SELECTOR), policy="owner-audit")
case("allocation-owner-exception-by-name-pass",
     # config-owned exceptions lift the rule, in exempt namespaces too (a planned migration)
     daemon_set("migrate-plugin", "gpu-system", plugin_spec(node_selector=dict(HYBRID))), policy="owner-exception")
case("allocation-owner-exception-other-name",
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(node_selector=dict(HYBRID))),
     ("allocation-owner", DS_SELECTOR), policy="owner-exception")
# Class: recognised by what runs: never GFD, DCGM exporter, the MPS control daemon, the validator; unknown
# images, shells and DaemonSets without selectors are not owners.
case("allocation-owner-gfd-same-image-pass",
     daemon_set("gpu-feature-discovery", "gpu-system", plugin_spec(plugin_container(
         "gpu-feature-discovery", command=("/usr/bin/gpu-feature-discovery",), mounts=False), volumes=())))
case("allocation-owner-mps-control-daemon-pass",
     daemon_set("nvidia-device-plugin-mps-control-daemon", "gpu-system", plugin_spec(plugin_container(
         "mps-control-daemon-ctr", command=("mps-control-daemon",), mounts=False), volumes=())))
case("allocation-owner-dcgm-exporter-pass",
     daemon_set("dcgm-exporter", "gpu-operator", plugin_spec(
         {"name": "exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.1-4.8.0-distroless",
          "volumeMounts": [{"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources"}]},
         volumes=({"name": "pod-resources", "hostPath": {"path": "/var/lib/kubelet/pod-resources"}},))))
case("allocation-owner-validator-pass",
     daemon_set("nvidia-operator-validator", "gpu-operator", plugin_spec(
         {"name": "plugin-validation", "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0",
          "command": ["sh", "-c"], "args": ["nvidia-validator"]}, volumes=())))
case("allocation-owner-compute-domain-plugin-pass",
     daemon_set("compute-domain-kubelet-plugin", "gpu-dra-system",
                kubelet_plugin("compute-domain-kubelet-plugin -v 4")))
case("allocation-owner-other-vendor-device-plugin-pass",
     # a device plugin, not NVIDIA's: the socket directory alone does not make an owner of GPUs
     daemon_set("sriov-device-plugin", "net-system", plugin_spec(plugin_container(
         "kube-sriovdp", image="ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.7.0",
         command=("/usr/bin/sriovdp",)))),
     ("device-access-bypass", "spec.template.spec.volumes[0].hostPath.path"))
case("allocation-owner-plugin-by-image-and-socket",
     # no command, arguments given: the image and the socket directory it mounts say it is the plugin
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(plugin_container(
         command=(), args=("--fail-on-init-error=false",)))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-plugin-image-without-socket-pass",
     daemon_set("plugin-image-tool", "gpu-system", plugin_spec(plugin_container(
         command=(), args=("--version",), mounts=False), volumes=())))
case("allocation-owner-shell-script-starts-plugin",
     daemon_set("nvidia-device-plugin", "gpu-system", plugin_spec(plugin_container(
         command=("/bin/bash", "-c"), args=("exec /usr/bin/nvidia-device-plugin --mig-strategy=none",)))),
     ("allocation-owner", DS_SELECTOR))
case("allocation-owner-ordinary-daemon-set-pass",
     daemon_set("log-agent", "logging", {"containers": [{"name": "agent", "image": "fluent/fluent-bit:3.0"}]}))
case("allocation-owner-odd-shapes-pass",
     # no containers, a command that is not a list, a volume without a name
     daemon_set("odd", "gpu-system", {"containers": [{"name": "x", "image": PLUGIN_IMAGE, "command": "nvidia"},
                                                     {"image": 7}], "volumes": [{"hostPath": {}}],
                                      "nodeSelector": "x"}))
case("allocation-owner-operator-operand-pass",
     # the GPU Operator's own device plugin: placed by the Operator's labels, judged through its ClusterPolicy
     daemon_set("nvidia-device-plugin-daemonset", "gpu-operator", plugin_spec(
         node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"}), owner_refs=OPERATED))
case("allocation-owner-pod-of-the-daemon-set-pass",
     # a DaemonSet's pod is placed on one node by the controller; the DaemonSet was judged
     pod("nvidia-device-plugin-x7k2p", plugin_spec(), namespace="gpu-system"))
# Class: a standalone owner beside the GPU Operator running the same mechanism (objects given with it, or
# lookups); where the Operator's CRDs are absent nothing is known and nothing is said.
case("allocation-owner-standalone-dra-beside-gpu-cluster",
     daemon_set("dra-driver-nvidia-gpu-kubelet-plugin", "gpu-dra-system",
                kubelet_plugin(node_selector=dict(DRA_NODES))),
     ("allocation-owner", "spec.template.spec.containers[0]"), docs=[GPU_CLUSTER])
case("allocation-owner-standalone-plugin-beside-cluster-policy",
     daemon_set("hybrid-gpu-plugin", "gpu-system", plugin_spec(node_selector=dict(DP_NODES))),
     ("allocation-owner", "spec.template.spec.containers[0]"), docs=[CLUSTER_POLICY])
case("allocation-owner-standalone-plugin-beside-cluster-policy-without-plugin-pass",
     daemon_set("hybrid-gpu-plugin", "gpu-system", plugin_spec(node_selector=dict(DP_NODES))),
     docs=[operator_object("ClusterPolicy", "cluster-policy", {"devicePlugin": {"enabled": False}})])
# Class: the GPU Operator's objects.
case("allocation-owner-gpu-cluster-pass", GPU_CLUSTER)
case("allocation-owner-gpu-cluster-misnamed",
     operator_object("GPUCluster", "hybrid", {"draDriver": {}}), ("allocation-owner", "metadata.name"))
case("allocation-owner-gpu-cluster-beside-cluster-policy",
     GPU_CLUSTER, ("allocation-owner", "spec"), docs=[CLUSTER_POLICY])
case("allocation-owner-cluster-policy-pass", CLUSTER_POLICY)
case("allocation-owner-cluster-policy-beside-gpu-cluster",
     CLUSTER_POLICY, ("allocation-owner", "spec"), docs=[GPU_CLUSTER])
case("allocation-owner-cluster-policy-plugin-and-dra",
     operator_object("ClusterPolicy", "cluster-policy", {"devicePlugin": {}, "draDriver": {"enabled": True}}),
     ("allocation-owner", "spec.draDriver"))
case("allocation-owner-cluster-policy-dra-without-plugin-pass",
     operator_object("ClusterPolicy", "cluster-policy",
                     {"devicePlugin": {"enabled": False}, "draDriver": {"enabled": True}}))
case("allocation-owner-malformed-operator-objects-pass",
     operator_object("ClusterPolicy", "cluster-policy", {"devicePlugin": "yes", "draDriver": ["x"]}),
     docs=[{"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {}, "spec": 3},
           {"apiVersion": "example.com/v1", "kind": "GPUCluster", "metadata": {"name": "gpu-cluster"}}])
case("allocation-owner-nvidia-drivers-disjoint-pass",
     H200_DRIVER, docs=[DEFAULT_DRIVER, operator_object("NVIDIADriver", "a100", {
         "nodeSelector": {"nvidia.com/gpu.product": "A100-SXM4-40GB"}})])
case("allocation-owner-nvidia-drivers-overlap",
     operator_object("NVIDIADriver", "hybrid", {"nodeSelector": {"eks.amazonaws.com/compute-type": "hybrid"}}),
     ("allocation-owner", "spec.nodeSelector"), docs=[H200_DRIVER, DEFAULT_DRIVER])
case("allocation-owner-two-default-nvidia-drivers",
     operator_object("NVIDIADriver", "default-2", {"default": True}), ("allocation-owner", "spec.default"),
     docs=[DEFAULT_DRIVER])
# Class: DeviceClasses that map the same extended resource (KEP-5004 serves one of them).
case("allocation-owner-device-class-extended-pass",
     device_class("gpu.nvidia.com", extended="nvidia.com/gpu"), docs=[device_class("hybrid-full-gpu")])
case("allocation-owner-device-class-extended-twice",
     device_class("hybrid-gpu-extended", extended="nvidia.com/gpu"), ("allocation-owner", "spec.extendedResourceName"),
     docs=[device_class("gpu.nvidia.com", extended="nvidia.com/gpu")])

case("allocation-owner-device-class-extended-twice-whatever-it-selects",
     # what the classes select does not matter: both map the name
     device_class("owner-second", driver="example.com", device_type=None, extended="example.com/owned-gpu"),
     ("allocation-owner", "spec.extendedResourceName"),
     docs=[device_class("owner-first", driver="example.com", device_type=None, extended="example.com/owned-gpu")])


@pytest.mark.parametrize("row", TABLE.params)
def test_allocation_owner(row, evaluate, golden):
    check_case(row, evaluate, golden)


# ------------------------------------------------------------------------------ Node updates (warn)

def node(name, labels, *, allocatable=None):
    n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)},
         "status": {"allocatable": allocatable or {"cpu": "128", "nvidia.com/gpu": "8"}}}
    return n


GPU_POD = pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin", nodeName="gpu-7"))
CPU_POD = pod("web-1", pod_spec(container("web"), nodeName="gpu-7"), namespace="web")
TO_DRA = {**HYBRID, "workload.example.com/gpu-allocation": "dra"}

NODE_CASES = [
    # (id, old labels, new labels, documents, expected (path, message start) or None)
    ("allocation-owner-node-moves-cohort-under-gpu-pods", DP_NODES, TO_DRA, [GPU_POD, CPU_POD], "metadata.labels"),
    ("allocation-owner-node-moves-cohort-without-gpu-pods-pass", DP_NODES, TO_DRA, [CPU_POD], None),
    ("allocation-owner-node-leaves-cohort-under-gpu-pods", DP_NODES, HYBRID, [GPU_POD], "metadata.labels"),
    ("allocation-owner-node-joins-cohort-pass", HYBRID, DP_NODES, [GPU_POD], None),
    ("allocation-owner-node-other-label-pass", DP_NODES, {**DP_NODES, "rack": "r7"}, [GPU_POD], None),
    ("allocation-owner-node-mps-capable-in-cohort-without-mps", DP_NODES,
     {**DP_NODES, "nvidia.com/mps.capable": "true"}, [GPU_POD], 'metadata.labels["nvidia.com/mps.capable"]'),
    ("allocation-owner-node-mps-capable-off-cohort-pass", HYBRID, {**HYBRID, "nvidia.com/mps.capable": "true"},
     [], None),
]


def _node_eval(old_labels, new_labels, docs, policy):
    from webhook.evaluation import evaluate_object
    from webhook.lookups.bundle import BundleResolver

    old, new = node("gpu-7", old_labels), node("gpu-7", new_labels)
    return evaluate_object(new, policy=policy, resolver=BundleResolver([new, *docs]), operation="UPDATE",
                           namespace="", old=old)


@pytest.mark.parametrize("case_id, old, new, docs, path", [pytest.param(*c, id=c[0]) for c in NODE_CASES])
def test_node_updates(case_id, old, new, docs, path, golden):
    policy = POLICIES["default"]
    ev = _node_eval(old, new, docs, policy)
    assert ev.errors == ()
    assert ev.allowed  # a warning at most, whatever the rule's action
    assert [(v.rule, v.action, v.path) for v in ev.violations] == \
        ([(Rule.ALLOCATION_OWNER, Action.WARN, path)] if path else [])
    for v in ev.violations:
        assert v.message.startswith('node "gpu-7": ') and path in v.message
        assert '"ai-workloads/train-7f"' in v.message and "web-1" not in v.message
    golden([v.message for v in ev.violations], f"node/{case_id}")
    ja = _node_eval(old, new, docs, in_japanese(policy))
    assert [(v.rule, v.action, v.path) for v in ja.violations] == [(v.rule, v.action, v.path) for v in ev.violations]
    golden([v.message for v in ja.violations], f"ja/node/{case_id}")


def test_node_move_without_pod_lookups_warns_that_it_cannot_tell():
    from webhook.evaluation import evaluate_object
    from webhook.lookups.base import NoLookups

    ev = evaluate_object(node("gpu-7", TO_DRA), policy=POLICIES["default"], resolver=NoLookups(), operation="UPDATE",
                         namespace="", old=node("gpu-7", DP_NODES))
    assert [(v.action, v.path) for v in ev.violations] == [(Action.WARN, "metadata.labels")]
    assert "could not be told (cluster lookups are off)" in ev.violations[0].message


def test_exempt_namespace_costs_nothing_for_daemon_sets_without_owner():
    """In an exempt namespace a DaemonSet that runs no owner is skipped before any lookup, as before."""
    ev = evaluate_docs(daemon_set("log-agent", "kube-system", {"containers": [{"name": "a", "image": "x"}]}),
                       policy=POLICIES["default"])
    assert ev.skipped == 'namespace "kube-system" is exempt'
