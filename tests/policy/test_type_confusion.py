"""No check raises on a field of the wrong JSON type: hypothesis samples the space that
`python -m tests.policy.type_confusion` sweeps whole (tests/policy/type_confusion.py says why it matters)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.policy.type_confusion import confused, confusions, corpus, failure, field_paths, value_at


@st.composite
def confused_objects(draw):
    source, original = draw(st.sampled_from(corpus()))
    path = draw(st.sampled_from(list(field_paths(original))))
    value = draw(st.sampled_from(confusions(value_at(original, path))))
    return source, original, path, confused(original, path, value)


def test_the_corpus_holds_what_the_webhook_admits():
    kinds = {obj["kind"] for _, obj in corpus()}
    assert {"Pod", "Deployment", "DaemonSet", "Job", "CronJob", "ResourceClaim", "ResourceClaimTemplate",
            "DeviceClass", "ClusterPolicy", "GPUCluster", "NVIDIADriver"} <= kinds, kinds


@pytest.mark.parametrize("operation", [pytest.param(op, id=op.lower()) for op in ("CREATE", "UPDATE")])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=confused_objects())
def test_no_check_raises_on_a_field_of_another_type(case, operation):
    source, original, path, obj = case
    what = failure(source, obj, operation, original)
    assert what is None, f"{source} {'.'.join(map(str, path))} = {value_at(obj, path)!r}: {what}"


def _template_with_config_kind(kind):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind,
                    "sharing": {"strategy": "TimeSlicing"}}}}]}}}}


def _daemonset_owned_by(kind):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {
        "name": "d", "namespace": "default",
        "ownerReferences": [{"apiVersion": "nvidia.com/v1", "kind": kind, "name": "cluster-policy", "uid": "u"}]},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}}}


# Each raised before the sweep found it: a set's membership test hashes its key.
@pytest.mark.parametrize("obj", [
    pytest.param({"apiVersion": ["resource.nvidia.com/v1beta1"], "kind": "ComputeDomainClique",
                  "metadata": {"name": "x"}}, id="apiVersion-a-list"),
    pytest.param({"apiVersion": "resource.k8s.io/v1alpha2", "kind": {"ResourceClass": 1}, "metadata": {"name": "x"}},
                 id="kind-an-object"),
    pytest.param(_template_with_config_kind(["GpuConfig"]), id="opaque-parameters-kind-a-list"),
    pytest.param(_daemonset_owned_by({"kind": "ClusterPolicy"}), id="owner-reference-kind-an-object"),
])
def test_found_by_the_sweep(obj):
    assert failure("(none)", obj, "CREATE", obj) is None
