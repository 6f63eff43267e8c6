"""Class: DeviceClass CEL selectors are evaluated (cel-expr-python, the Kubernetes DRA CEL environment and
library functions) against probe devices shaped as the NVIDIA DRA driver publishes them, not pattern-matched.
A selector that does not compile or whose verdict on GPUs depends on what no probe shows reads as unknown."""
from __future__ import annotations

from pathlib import Path

import pytest

from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.objects.selectors import ClassSelectors, milli
from webhook.policy.context import device_class_info

GPU = "gpu.nvidia.com"
UNKNOWN = "unknown"


def device_class(*expressions, name="c"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


# (selectors, (driver, device type) or UNKNOWN, whether the class gives GPUs)
TABLE = [
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"],
                 (GPU, "gpu"), True, id="nvidia-gpu-class"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"],
                 (GPU, "mig"), True, id="nvidia-mig-class"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"],
                 (GPU, "vfio"), True, id="nvidia-vfio-class"),
    pytest.param(["device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type "
                  "== "
                  "'channel' && device.attributes['compute-domain.nvidia.com'].id == 0"],
                 ("compute-domain.nvidia.com", "channel"), False, id="compute-domain-default-channel"),
    pytest.param(["device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type "
                  "== 'daemon'"],
                 ("compute-domain.nvidia.com", "daemon"), False, id="compute-domain-daemon"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'"],
                 (GPU, "imex-channel"), False, id="legacy-imex-channel-of-the-gpu-driver"),
    pytest.param(['!(device.driver == "gpu.nvidia.com")'], (None, None), False, id="negated-driver"),
    pytest.param(['device.driver != "gpu.nvidia.com"'], (None, None), False, id="not-equal-driver"),
    pytest.param(['"gpu.nvidia.com" == device.driver'], (GPU, None), True, id="driver-on-the-right"),
    pytest.param(['device.driver in ["gpu.nvidia.com"]'], (GPU, None), True, id="driver-in-list"),
    pytest.param(['device.driver == "nic.example.com" || device.driver == "gpu.nvidia.com"'], (GPU, None), True,
                 id="or-of-a-gpu-and-another-driver"),
    pytest.param(['device.driver == "nic.example.com"'], (None, None), False, id="another-driver"),
    pytest.param(['device.driver.startsWith("gpu.nvidia")'], (GPU, None), True, id="string-function"),
    pytest.param(["device.driver == 'gpu.nvidia.com'", "device.attributes['gpu.nvidia.com'].type == 'gpu'"],
                 (GPU, "gpu"), True, id="two-selectors-anded"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type in ['gpu', 'mig']"],
                 (GPU, None), True, id="type-in-list"),
    pytest.param(['device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && '
                  'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))'], (GPU, "gpu"), True,
                 id="seed-large-gpu-quantity"),
    pytest.param(['device.driver == "gpu.nvidia.com" && '
                  'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'],
                 (GPU, None), True, id="compare-to-quantity-large-gpus-and-a-7g-mig"),
    pytest.param(['device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" && '
                  'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'], (GPU, "gpu"), True,
                 id="compare-to-quantity-full-gpus"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName.lowerAscii()"
                  ".matches('^nvidia h(100|200)')"], (GPU, None), True, id="product-name-regex-full-and-mig"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
                  "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'"], (GPU, "mig"), True, id="mig-profile"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].cudaComputeCapability"
                  ".isGreaterThan(semver('8.9.0'))"], (GPU, None), True, id="semver-compute-capability"),
    pytest.param(["device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'"], (GPU, None), True,
                 id="standard-attribute-domain"),
    pytest.param([], (GPU, None), True, id="no-selector-selects-everything"),
    # unknown: never GPU nor not-GPU
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'Quadro RTX "
                  "8000'"],
                 UNKNOWN, None, id="product-no-probe-shows"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].addressingMode == 'HMM'"],
                 UNKNOWN, None, id="attribute-no-probe-has"),
    pytest.param(["device.driver == 'gpu.nvidia.com' && url('https://x').getHost() == 'x'"], UNKNOWN, None,
                 id="function-the-runtime-lacks"),
    pytest.param(["device.driver == "], UNKNOWN, None, id="syntax-error"),
    pytest.param(["device.driver"], UNKNOWN, None, id="not-a-bool"),
    pytest.param(["device.attributes['dra.example.com'].model == 'x'"], UNKNOWN, None, id="unguarded-foreign-domain"),
]


@pytest.mark.parametrize("expressions, expected, gpu", TABLE)
def test_selectors_are_evaluated(expressions, expected, gpu):
    policy = default_policy()
    info = device_class_info(device_class(*expressions), policy)
    if expected == UNKNOWN:
        assert info.unknown and (info.driver, info.device_type) == (None, None)
    else:
        assert info.unknown is None
        assert (info.driver, info.device_type) == expected
        assert policy.selects_gpus(info) is gpu


# The DeviceClasses the NVIDIA DRA driver's chart installs (kubernetes-sigs/dra-driver-nvidia-gpu,
# deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*.yaml), written here as that chart renders them:
# by driver and the `type` attribute the driver publishes. The chart's own templates are to come through the
# shared fixtures; until then these stand in for them.
NVIDIA_DRIVER_CLASSES = [
    pytest.param("gpu.nvidia.com",
                 "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
                 id="gpu"),
    pytest.param("mig.nvidia.com",
                 "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
                 id="mig"),
    pytest.param("vfio.gpu.nvidia.com",
                 "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'", id="vfio"),
    pytest.param("compute-domain-daemon.nvidia.com", "device.driver == 'compute-domain.nvidia.com' && "
                 "device.attributes['compute-domain.nvidia.com'].type == 'daemon'", id="compute-domain-daemon"),
    pytest.param("compute-domain-default-channel.nvidia.com", "device.driver == 'compute-domain.nvidia.com' && "
                 "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
                 "device.attributes['compute-domain.nvidia.com'].id == 0", id="compute-domain-default-channel"),
    # the IMEX channel class of the driver's releases before ComputeDomains, published by the GPU driver
    pytest.param("imex.nvidia.com",
                 "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'",
                 id="legacy-imex-channel"),
]


@pytest.mark.parametrize("name, expression", NVIDIA_DRIVER_CLASSES)
def test_the_nvidia_driver_s_own_classes(name, expression):
    """The DeviceClasses the NVIDIA DRA driver installs read as the shipped policy lists them; only the GPU
    driver's gpu, mig and vfio classes select GPUs."""
    policy = default_policy()
    info, known = device_class_info(device_class(expression, name=name), policy), policy.device_classes[name]
    assert (info.driver, info.device_type, info.unknown) == (known.driver, known.device_type, None)
    assert policy.selects_gpus(info) is (name in ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"))


def test_every_nvidia_driver_class_the_policy_lists_is_in_the_table():
    policy = default_policy()
    nvidia = {n for n, c in policy.device_classes.items()
              if c.driver.endswith(".nvidia.com") and n.endswith("nvidia.com")}
    assert {p.values[0] for p in NVIDIA_DRIVER_CLASSES} == nvidia


def test_the_policy_s_entry_vouches_for_a_class_the_runtime_cannot_read():
    policy = default_policy()
    unreadable = device_class("device.driver == 'gpu.nvidia.com' && url('x').getHost() == 'x'", name="hybrid-full-gpu")
    info = device_class_info(unreadable, policy, policy.device_classes["hybrid-full-gpu"])
    assert (info.driver, info.device_type, info.unknown) == (GPU, "gpu", None)


def test_verdicts_are_cached_per_policy_by_content():
    policy = default_policy()
    selectors = policy.class_selectors
    calls = []
    original = selectors._evaluate
    selectors._evaluate = lambda e: calls.append(e) or original(e)
    try:
        a = device_class("device.driver == 'gpu.nvidia.com'", name="a")
        for _ in range(3):
            device_class_info(a, policy)
        device_class_info(device_class("device.driver == 'gpu.nvidia.com'", name="b"), policy)  # same content
        device_class_info(device_class("device.driver == 'x.example.com'", name="a"), policy)  # new content
    finally:
        del selectors._evaluate
    assert len(calls) == 2
    # another policy (other GPU drivers) has its own evaluator: its verdicts never mix with these
    other = parse_policy(DEFAULT_PATH.read_text().replace("gpuDrivers: [gpu.nvidia.com]",
                                                          "gpuDrivers: [gpu.nvidia.com, gpu.example.com]"))
    assert other.class_selectors is not policy.class_selectors
    cls = device_class("device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].type == 'gpu'")
    assert other.selects_gpus(device_class_info(cls, other))
    assert not policy.selects_gpus(device_class_info(cls, policy))


@pytest.mark.parametrize("text, value", [
    ("40Gi", 40 * 2**30 * 1000), ("1", 1000), ("500m", 500), ("1.5k", 1_500_000), ("2e3", 2_000_000), ("-1", -1000),
])
def test_quantities(text, value):
    assert milli(text) == value


def test_no_module_state_in_the_selector_module():
    """Caches live on the policy's evaluator, never in module globals (issue 15)."""
    source = Path(ClassSelectors.__module__.replace(".", "/") + ".py")
    text = (Path(__file__).resolve().parents[3] / source).read_text()
    assert "global " not in text and "_cache: dict" not in text.split("class ClassSelectors")[0]
