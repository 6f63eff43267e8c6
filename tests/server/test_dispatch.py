"""What no rule may block (docs/architecture.md, Never blocked), end to end: cleanup always goes through."""
from __future__ import annotations

import copy

import pytest

from webhook.admission import handlers
from webhook.admission.codec import AdmissionRequest

from .apiserver import shape

# A pod every enforcing rule set denies: it overrides CUDA_VISIBLE_DEVICES.
BAD_POD = shape({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "peek", "namespace": "ml", "labels": {"a": "1"}},
                 "spec": {"containers": [{"name": "c", "image": "cuda:12",
                                          "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3"}],
                                          "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": "ml"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                        "allocationMode": "All"}}]}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
              "spec": {"replicas": 1, "template": {"spec": copy.deepcopy(BAD_POD["spec"])}}}


def changed(obj, edit):
    new = copy.deepcopy(obj)
    edit(new)
    return new


def _meta(**fields):
    return lambda o: o["metadata"].update(fields)


NEVER_BLOCKED = [
    pytest.param(dict(obj=None, old=BAD_POD, operation="DELETE"), "DELETE is never blocked", id="delete-pod"),
    pytest.param(dict(obj=None, old=CLAIM, operation="DELETE"), "DELETE is never blocked", id="delete-claim"),
    pytest.param(dict(obj={"apiVersion": "v1", "kind": "PodExecOptions", "command": ["sh"]}, operation="CONNECT",
                      sub_resource="exec", kind={"group": "", "version": "v1", "kind": "PodExecOptions"},
                      resource="pods", namespace="ml"), "CONNECT is never blocked", id="connect-exec"),
    pytest.param(dict(obj=changed(BAD_POD, lambda o: o["status"].update(phase="Running")), old=BAD_POD,
                      operation="UPDATE", sub_resource="status"), "pods/status subresource", id="status-subresource"),
    pytest.param(dict(obj={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "peek", "namespace": "ml"},
                           "target": {"kind": "Node", "name": "gpu-1"}}, operation="CREATE", sub_resource="binding",
                      kind={"group": "", "version": "v1", "kind": "Binding"}, resource="pods"),
                 "pods/binding subresource", id="binding-subresource"),
    pytest.param(dict(obj={"apiVersion": "autoscaling/v1", "kind": "Scale",
                           "metadata": {"name": "d", "namespace": "ml"},
                           "spec": {"replicas": 0}}, old={"apiVersion": "autoscaling/v1", "kind": "Scale",
                                                          "metadata": {"name": "d", "namespace": "ml"},
                                                          "spec": {"replicas": 3}},
                      operation="UPDATE", sub_resource="scale", kind={"group": "autoscaling", "version": "v1",
                                                                      "kind": "Scale"}, resource="deployments"),
                 "deployments/scale subresource", id="scale-subresource"),
    pytest.param(dict(obj=changed(BAD_POD, lambda o: o["metadata"].update(finalizers=[])),
                      old=changed(BAD_POD, lambda o: o["metadata"].update(finalizers=["example.com/cleanup"])),
                      operation="UPDATE"), "only status or metadata", id="finalizer-removed"),
    pytest.param(dict(obj=changed(BAD_POD, _meta(labels={"a": "2"}, annotations={"note": "x"}, resourceVersion="9",
                                                 generation=2, managedFields=[{"manager": "kubectl"}])),
                      old=BAD_POD, operation="UPDATE"), "only status or metadata", id="labels-annotations"),
    pytest.param(dict(obj=changed(BAD_POD, lambda o: o["status"].update(phase="Succeeded")), old=BAD_POD,
                      operation="UPDATE"), "only status or metadata", id="status-in-main-resource"),
    pytest.param(dict(obj=changed(CLAIM, lambda o: o.update(status={"allocation": {"devices": {}}})), old=CLAIM,
                      operation="UPDATE"), "only status or metadata", id="claim-allocation"),
    pytest.param(dict(obj=changed(DEPLOYMENT, _meta(deletionTimestamp="2026-01-01T00:00:00Z")), old=DEPLOYMENT,
                      operation="UPDATE"), "only status or metadata", id="deletion-timestamp"),
    pytest.param(dict(obj=BAD_POD, old=BAD_POD, operation="UPDATE"), "only status or metadata", id="no-change"),
    # a workload whose template breaks a rule can still be scaled or paused: the rules read only the template
    pytest.param(dict(obj=changed(DEPLOYMENT, lambda o: o["spec"].update(replicas=5)), old=DEPLOYMENT,
                      operation="UPDATE"), "pod template unchanged", id="deployment-replicas"),
    pytest.param(dict(obj=changed(DEPLOYMENT, lambda o: o["spec"].update(paused=True)), old=DEPLOYMENT,
                      operation="UPDATE"), "pod template unchanged", id="deployment-paused"),
]


@pytest.mark.parametrize(("call", "reason"), NEVER_BLOCKED)
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_never_blocked(apiserver, caplog, call, reason, path):
    caplog.set_level("DEBUG", logger="gpu_admission")
    call = dict(call)
    answer = apiserver.send(path, apiserver.review(call.pop("obj"), **call))
    assert answer.allowed
    assert answer.warnings == [] and answer.annotations == {} and answer.patch is None
    (line,) = [r.fields for r in caplog.records if getattr(r, "fields", {}).get("event") == "admission"]
    assert reason in line["reason"]


EVALUATED = [
    pytest.param(dict(obj=BAD_POD, operation="CREATE"), id="create"),
    pytest.param(dict(obj=BAD_POD, operation="CREATE", dry_run=True), id="create-dry-run-request"),
    pytest.param(dict(obj=changed(BAD_POD, lambda o: o["spec"]["containers"][0].update(image="cuda:13")),
                      old=BAD_POD, operation="UPDATE"), id="spec-update"),
    pytest.param(dict(obj=changed(BAD_POD, lambda o: o["spec"].update(ephemeralContainers=[
        {"name": "debug", "image": "busybox", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}])),
        old=BAD_POD, operation="UPDATE", sub_resource="ephemeralcontainers"), id="ephemeral-containers"),
    pytest.param(dict(obj=changed(DEPLOYMENT, lambda o: o["spec"]["template"]["spec"]["containers"][0].update(
        image="cuda:13")), old=DEPLOYMENT, operation="UPDATE"), id="deployment-template-update"),
]


@pytest.mark.parametrize("call", EVALUATED)
def test_evaluated_and_denied(apiserver, call):
    call = dict(call)
    answer = apiserver.send("/validate", apiserver.review(call.pop("obj"), **call))
    assert not answer.allowed
    assert "[visible-devices-override]" in answer.message


def test_a_metadata_update_that_adds_a_device_annotation_is_evaluated(apiserver):
    """CDI/NRI annotations grant devices to a pod whose containers have not started yet."""
    clean = shape({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    sneaky = changed(clean, _meta(annotations={"cdi.k8s.io/devices": "nvidia.com/gpu=all"}))
    answer = apiserver.send("/validate", apiserver.review(sneaky, old=clean, operation="UPDATE"))
    assert not answer.allowed and "[device-access-bypass]" in answer.message
    benign = changed(clean, _meta(annotations={"example.com/note": "x"}))
    assert apiserver.send("/validate", apiserver.review(benign, old=clean, operation="UPDATE")).allowed


@pytest.mark.parametrize("namespace",
                         ["kube-system", "gpu-system", "gpu-dra-system", "gpu-admission", "nvidia-device-plugin",
                                       "gpu-operator", "dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu"])
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_exempt_namespaces_are_allowed_untouched(apiserver, namespace, path):
    pod = changed(BAD_POD, _meta(namespace=namespace))
    answer = apiserver.send(path, apiserver.review(pod, namespace=namespace))
    assert answer.allowed and answer.patch is None and answer.warnings == []


@pytest.mark.parametrize(("request_", "blocked"), [
    pytest.param({"operation": "CREATE", "resource": {"group": "", "resource": "pods"}}, False, id="create"),
    pytest.param({"operation": "CREATE", "resource": {"group": "", "resource": "pods"},
                  "subResource": "ephemeralcontainers"},
                 False, id="ephemeralcontainers"),
    pytest.param({"operation": "UPDATE", "resource": {"group": "", "resource": "pods"}, "subResource": "resize"},
                 True, id="resize"),
    pytest.param({"operation": "UPDATE", "resource": {"group": "apps", "resource": "pods"},
                  "subResource": "ephemeralcontainers"}, True, id="same-name-other-group"),
])
def test_only_the_listed_subresources_are_evaluated(request_, blocked):
    request = AdmissionRequest(uid="u", kind="Pod", group=request_["resource"]["group"],
                               resource=request_["resource"]["resource"], operation=request_["operation"],
                               sub_resource=request_.get("subResource", ""), object={}, old_object={"spec": {"x": 1}})
    assert bool(handlers.never_blocked(request)) is blocked


GOOD_GPU_POD = shape({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
                      "spec": {"runtimeClassName": "nvidia",
                               "containers": [{"name": "c", "image": "cuda:12",
                                               "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
CUDA_DEBUG = {"name": "debugger-x7k2p", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
              "targetContainerName": "c"}


def _debugged(pod, container=CUDA_DEBUG):
    return changed(pod, lambda o: o["spec"].setdefault("ephemeralContainers", []).append(copy.deepcopy(container)))


def test_kubectl_debug_container_gets_hide_gpus_and_only_it_is_judged(apiserver):
    """UPDATE of pods/ephemeralcontainers through the webhook app: /mutate hides the node's GPUs from the
    added container only; /validate judges that container, not what the pod was admitted with."""
    new = _debugged(GOOD_GPU_POD)
    answer = apiserver.send("/mutate", apiserver.review(new, old=GOOD_GPU_POD, operation="UPDATE",
                                                        sub_resource="ephemeralcontainers"))
    assert answer.allowed
    assert answer.patch == [{"op": "add", "path": "/spec/ephemeralContainers/0/env",
                             "value": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]
    # a benign debug container beside a finding the pod already had (admitted before the policy): allowed
    answer = apiserver.send("/validate", apiserver.review(_debugged(BAD_POD), old=BAD_POD, operation="UPDATE",
                                                          sub_resource="ephemeralcontainers"))
    assert answer.allowed
    # kubectl debug --profile=sysadmin in a GPU pod: privileged, so it sees every GPU: denied
    sysadmin = _debugged(GOOD_GPU_POD, {**CUDA_DEBUG, "securityContext": {"privileged": True}})
    answer = apiserver.send("/validate", apiserver.review(sysadmin, old=GOOD_GPU_POD, operation="UPDATE",
                                                          sub_resource="ephemeralcontainers"))
    assert not answer.allowed and "[device-access-bypass]" in answer.message
    assert "spec.ephemeralContainers[0].securityContext.privileged" in answer.message
