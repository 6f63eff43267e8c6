"""default-runtime-class never sets a RuntimeClass the cluster lacks: with RuntimeClasses known (lookups on, or
a snapshot given to the CLI), a missing one is withheld and warned about, naming it and the fix; one that
exists is set; unknown (lookups off) is set as before."""
from __future__ import annotations

import pytest

from tests.policy.builders import POLICIES, container, pod, pod_spec
from webhook.rules import Action, Rule


def runtime_class(name):
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name}


def gpu_pod():
    return pod("train", pod_spec(container("trainer", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                                 runtimeClassName=None))


@pytest.mark.parametrize(("docs", "set_it", "warned"), [
    pytest.param([runtime_class("nvidia"), runtime_class("crun")], True, False, id="exists"),
    pytest.param([runtime_class("crun")], False, True, id="missing"),
    pytest.param([], True, False, id="not-looked-up"),
])
def test_the_runtime_class_is_set_only_where_it_exists(docs, set_it, warned, evaluate):
    ev = evaluate(gpu_pod(), policy=POLICIES["default"], docs=docs)
    paths = [op["path"] for op in ev.patch]
    assert ("/spec/runtimeClassName" in paths) is set_it
    said = [v for v in ev.violations if v.rule is Rule.DEFAULT_RUNTIME_CLASS]
    assert bool(said) is warned
    if warned:
        (v,) = said
        assert v.action is Action.WARN and v.path == "spec.runtimeClassName"
        assert 'RuntimeClass "nvidia"' in v.message and 'create RuntimeClass "nvidia"' in v.message
        assert ev.allowed


def test_a_pod_with_its_own_runtime_class_is_left_alone(evaluate):
    obj = gpu_pod()
    obj["spec"]["runtimeClassName"] = "nvidia-cdi"
    ev = evaluate(obj, policy=POLICIES["default"], docs=[runtime_class("crun")])
    assert not [v for v in ev.violations if v.rule is Rule.DEFAULT_RUNTIME_CLASS]
