"""What a developer sees: `kubectl apply` through the real apiserver and the chart's webhooks, its denial and
warnings compared with golden files, and the Pod as the apiserver stored it after our patch."""
from __future__ import annotations

import copy
import subprocess

import pytest
import yaml

from tests.e2e.conftest import CLI, REPO, wait_for

pytestmark = pytest.mark.e2e

GPU_POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda"},
    "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
}


def gpu_pod(namespace: str, name: str = "cuda", **container) -> dict:
    pod = copy.deepcopy(GPU_POD)
    pod["metadata"].update(name=name, namespace=namespace)
    pod["spec"]["containers"][0].update(container)
    return pod


def write(tmp_path, name: str, *docs: dict):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


@pytest.fixture(scope="module")
def golden_namespace(cluster, release):
    """A fixed name, so that the golden files can name it."""
    name = cluster.namespace("ml-golden")
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def test_denial_as_kubectl_prints_it(kubectl, golden_namespace, tmp_path, golden, webhook):
    pod = gpu_pod(golden_namespace, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    result = kubectl.apply_file(write(tmp_path, "pod.yaml", pod))
    assert result.returncode == 1
    assert result.stdout == ""
    golden(result.stderr, "denial-visible-devices")
    assert kubectl.run("get", "pod", "cuda", "-n", golden_namespace, check=False).returncode == 1


@pytest.fixture(scope="module")
def japanese_namespace(cluster, release):
    """A namespace whose messages the policy gives in Japanese (namespaceOverrides[].language), through a
    real `helm upgrade` of the chart; the release's values are restored after."""
    name = cluster.namespace("ml-golden-ja")
    release.upgrade({"policy": {"namespaceOverrides": [{"namespaces": [name], "language": "ja"}]}})
    yield name
    release.upgrade()
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", check=False)


def test_a_japanese_denial_as_kubectl_prints_it(kubectl, japanese_namespace, tmp_path, golden, webhook):
    """The same denial as above, in Japanese: rule id, path and names as they are, the Japanese docs page."""
    pod = gpu_pod(japanese_namespace, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    result = wait_for(lambda: (r := kubectl.apply_file(write(tmp_path, "pod.yaml", pod))).returncode == 1
                      and "[visible-devices-override]" in r.stderr and "対処" in r.stderr and r,
                      "the Japanese policy")
    assert result.stdout == ""
    golden(result.stderr, "denial-visible-devices-ja")
    assert "/docs/rules/ja/visible-devices-override.md" in result.stderr
    # its benign twin, in the same namespace, is created without a word
    twin = kubectl.apply_file(write(tmp_path, "twin.yaml", gpu_pod(japanese_namespace, name="cuda-twin")))
    assert (twin.returncode, twin.stdout, twin.stderr) == (0, "pod/cuda-twin created\n", "")


def test_japanese_warnings_fit_the_apiserver_s_budget(kubectl, japanese_namespace, tmp_path, webhook):
    """Many Japanese warnings (run-as-root warns by default): the real apiserver counts their runes
    (warning.go), so what the webhook keeps, more than 4096 bytes of them, reaches kubectl whole: none is cut
    to 256 runes, and the last line says how many more there were."""
    pod = gpu_pod(japanese_namespace, name="many-roots")
    pod["spec"]["nodeSelector"] = {"eks.amazonaws.com/compute-type": "hybrid",
                                   "workload.example.com/gpu-allocation": "device-plugin"}
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": "registry.example.invalid/tool:1",
                                  "securityContext": {"runAsUser": 0}} for i in range(40)]
    result = kubectl.apply_file(write(tmp_path, "pod.yaml", pod))
    assert result.returncode == 0, result.stderr
    warnings = [line[len("Warning: "):] for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    findings = [w for w in warnings if "[run-as-root]" in w and w.endswith("ja/run-as-root.md")]
    assert len(findings) >= 8 and sum(len(w.encode()) for w in findings) > 4096
    assert sum(len(w) for w in warnings) <= 4096
    assert all(w in findings or w.startswith(("gpu-admission: 表示しきれない警告", "... run-as-root の指摘"))
               for w in warnings), warnings
    assert warnings[-1].startswith(("gpu-admission: 表示しきれない警告があと ", "... run-as-root の指摘があと "))


def test_the_benign_twin_is_created(kubectl, golden_namespace, tmp_path, golden, webhook):
    result = kubectl.apply_file(write(tmp_path, "pod.yaml", gpu_pod(golden_namespace, name="cuda-twin")))
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("pod/cuda-twin created\n", "")


def test_warnings_as_kubectl_prints_them(kubectl, golden_namespace, tmp_path, golden, webhook):
    """A claim template the webhook cannot resolve (lookups off): admitted, with the warning kubectl prints."""
    pod = gpu_pod(golden_namespace, name="dra-unresolved")
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "single-large-gpu"}]
    pod["spec"]["nodeSelector"] = {"eks.amazonaws.com/compute-type": "hybrid",
                                   "workload.example.com/gpu-allocation": "dra"}
    result = kubectl.apply_file(write(tmp_path, "pod.yaml", pod))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "pod/dra-unresolved created\n"
    golden(result.stderr, "warnings-unresolved-claim")


def test_stored_pod_carries_the_patch_mutate_printed(kubectl, namespace, tmp_path, webhook):
    """The apiserver applied our JSON Patch: the stored Pod has every field `gpu-admission mutate` printed
    for the same manifest (the apiserver adds its defaults beside them)."""
    path = write(tmp_path, "pod.yaml", gpu_pod(namespace))
    mutated = yaml.safe_load(subprocess.run([*CLI, "mutate", str(path)], check=True, cwd=REPO,
                                            capture_output=True, text=True).stdout)
    kubectl.apply_file(path, check=True)
    stored = kubectl.json("get", "pod", "cuda", "-n", namespace)
    assert mutated["spec"]["runtimeClassName"] == stored["spec"]["runtimeClassName"] == "nvidia"
    assert_contains(stored["spec"], mutated["spec"], "spec")
    assert webhook.requests("mutate") > 0


def assert_contains(actual, expected, path: str) -> None:
    """Every field of `expected` is in `actual` with the same value; lists item by item, named items by name
    (the apiserver's defaults and its admission plugins add fields and items, never change ours)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key} missing from the stored object"
            assert_contains(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: {actual!r}"
        for item in expected:
            if isinstance(item, dict) and "name" in item:
                match = [a for a in actual if isinstance(a, dict) and a.get("name") == item["name"]]
                assert match, f"{path}: no item named {item['name']!r}"
                assert_contains(match[0], item, f"{path}[{item['name']}]")
            elif isinstance(item, dict):
                assert any(_contains(a, item) for a in actual), f"{path}: {item!r} not among {actual!r}"
            else:
                assert item in actual, f"{path}: {item!r} not among {actual!r}"
    else:
        assert str(actual) == str(expected), f"{path}: stored {actual!r}, mutate printed {expected!r}"


def _contains(actual, expected) -> bool:
    try:
        assert_contains(actual, expected, "")
    except AssertionError:
        return False
    return True
