"""The double-mechanism table (docs/rules/double-mechanism.md): failing cases beside their closest benign twins, each
checked by builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    IMEX_CLASS,
    IMEX_TEMPLATE,
    SEED_CLASSES,
    SEED_DOCS,
    SEED_JOBS,
    SEED_TEMPLATE,
    Table,
    cel_class,
    check_case,
    container,
    device_class,
    limit_and_claim,
    pod,
    pod_spec,
    template_claim,
    workload,
)

TABLE = Table("double-mechanism")
case = TABLE.case

case("double-mechanism-seed-plugin-smoke-job", SEED_JOBS["hybrid-gpu-plugin-smoke"], docs=SEED_DOCS,
     cohort="device-plugin")
case("double-mechanism-seed-dra-smoke-job", SEED_JOBS["hybrid-gpu-dra-smoke"], docs=SEED_DOCS, cohort="dra")
case("double-mechanism-gpu-limit-and-imex-channel-claim-pass",
     pod("nccl-test", pod_spec(container("nccl", gpus={"nvidia.com/gpu": 8}, claims=["channel"]),
                               cohort="device-plugin", claims=[template_claim("channel", "imex-channel")])),
     docs=[IMEX_CLASS, IMEX_TEMPLATE], cohort="device-plugin")
case("double-mechanism-dra-extended-resource-and-claim-pass",
     workload("Deployment", "vllm", pod_spec(
         container("server", gpus={"nvidia.com/gpu": 1}),
         container("embedder", claims=["gpu"]), cohort="dra", claims=[template_claim()])),
     docs=[*SEED_CLASSES, SEED_TEMPLATE, device_class("hybrid-gpu-extended", extended="nvidia.com/gpu")], cohort="dra")
case("double-mechanism-limit-and-claim-in-one-container",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)
case("double-mechanism-init-container-limit-main-claim",
     workload("Job", "finetune", pod_spec(
         container("finetune", claims=["gpu"]),
         init=[container("warmup-cache", gpus={"nvidia.com/gpu": 1})],
         cohort="dra", claims=[template_claim()])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     ("cohort-mismatch", "spec.template.spec.initContainers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort="dra")
case("double-mechanism-sidecar-limit-and-implicit-class-resource",
     workload("StatefulSet", "embeddings", pod_spec(
         container("server", gpus={"deviceclass.resource.kubernetes.io/hybrid-full-gpu": 1}),
         init=[container("metrics-agent", gpus={"nvidia.com/gpu": 1}, restart="Always")])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"),
     docs=SEED_CLASSES, cohort=None)
case("double-mechanism-action-warn",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}, claims=["gpu"]), claims=[template_claim()])),
     ("double-mechanism", "warn", "spec.containers[0].resources.limits"),
     docs=[*SEED_CLASSES, SEED_TEMPLATE], policy="actions")
# Class: messages say what is true.
case("double-mechanism-requests-only-and-claim",
     pod("train-7f", pod_spec(dict(container(claims=["gpu"], cpu=False), resources={
         "requests": {"nvidia.com/gpu": 1}, "claims": [{"name": "gpu"}]}), claims=[template_claim()])),
     ("double-mechanism", "spec.containers[0].resources.requests"), docs=[*SEED_CLASSES, SEED_TEMPLATE], cohort=None)

for _id, _expr, _gpu in [
    ("negated-driver-is-not-gpu-pass", '!(device.driver == "gpu.nvidia.com")', False),
    ("other-driver-is-not-gpu-pass", 'device.driver == "nic.example.com"', False),
    ("imex-channel-type-is-not-gpu-pass",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'", False),
    ("driver-on-the-right", '"gpu.nvidia.com" == device.driver', True),
    ("driver-in-list", 'device.driver in ["gpu.nvidia.com", "nic.example.com"]', True),
    ("gpu-or-nic", 'device.driver == "nic.example.com" || device.driver == "gpu.nvidia.com"', True),
    ("memory-quantity", 'device.driver == "gpu.nvidia.com" && '
                        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
    ("product-name-string-functions", "device.driver == 'gpu.nvidia.com' && "
                                      "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
                                      True),
]:
    _obj, _docs = limit_and_claim(cel_class("by-cel", _expr))
    case(f"double-mechanism-cel-{_id}", _obj,
         *([("double-mechanism", "spec.containers[0].resources.limits")] if _gpu else []), docs=_docs)

# Class: KEP-5004's implicit resource of a DeviceClass the policy lists, beside a device-plugin GPU, in a pod
# without claims: decided by the policy's classes alone (no documents given, as the webhook without lookups),
# the corner the in-tree policy decides (docs/rules/double-mechanism.md, "In-tree policy").
FULL = "deviceclass.resource.kubernetes.io/hybrid-full-gpu"
LARGE = "deviceclass.resource.kubernetes.io/hybrid-large-gpu"


def _requests(c, requests):
    """`c` with resources.requests (no limit: the implicit resources are native, overcommit is allowed)."""
    c["resources"]["requests"] = dict(requests)
    return c


case("double-mechanism-limit-and-listed-class-resource",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), cohort=None)
case("double-mechanism-limit-only-no-class-resource-pass",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1}))))
case("double-mechanism-listed-class-resource-only-pass",
     pod("train-7f", pod_spec(container(gpus={FULL: 1}))))
case("double-mechanism-limits-of-two-containers",
     workload("Deployment", "vllm", pod_spec(container("server", gpus={LARGE: 1}),
                                             container("exporter", gpus={"nvidia.com/gpu": 1}))),
     ("double-mechanism", "spec.template.spec.containers[1].resources.limits"), cohort=None)
case("double-mechanism-init-container-limit-and-main-class-resource",
     workload("Job", "finetune", pod_spec(container("finetune", gpus={FULL: 1}),
                                          init=[container("warmup-cache", gpus={"nvidia.com/gpu": 1})])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"), cohort=None)
case("double-mechanism-sidecar-limit-and-listed-class-resource",
     workload("StatefulSet", "embeddings", pod_spec(
         container("server", gpus={FULL: 1}),
         init=[container("metrics-agent", gpus={"nvidia.com/gpu": 1}, restart="Always")])),
     ("double-mechanism", "spec.template.spec.initContainers[0].resources.limits"), cohort=None)
case("double-mechanism-cronjob-mig-slice-and-class-resource",
     workload("CronJob", "nightly", pod_spec(container(gpus={"nvidia.com/mig-1g.5gb": 1, LARGE: 2}))),
     ("double-mechanism", "spec.jobTemplate.spec.template.spec.containers[0].resources.limits"), cohort=None)
case("double-mechanism-two-names-each-the-first-is-named",
     pod("train-7f", pod_spec(container(gpus={FULL: 1, LARGE: 1, "nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb": 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), cohort=None)
case("double-mechanism-class-resource-in-requests-only",
     pod("train-7f", pod_spec(_requests(container(gpus={"nvidia.com/gpu": 1}), {LARGE: 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), cohort=None)
case("double-mechanism-class-resource-zero-pass",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 0}))))
case("double-mechanism-non-gpu-listed-class-resource-pass",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1,
                                              "deviceclass.resource.kubernetes.io/imex.nvidia.com": 1}))))
case("double-mechanism-unlisted-class-resource-pass",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1,
                                              "deviceclass.resource.kubernetes.io/example-gpu": 1}))),
     ("unresolved-claim", "spec.containers[0].resources.limits"))
case("double-mechanism-listed-class-resource-action-warn",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}))),
     ("double-mechanism", "warn", "spec.containers[0].resources.limits"), policy="actions")
case("double-mechanism-listed-class-resource-dry-run",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), policy="dry-run", allowed=True)
case("double-mechanism-listed-class-resource-with-class-lookups",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), policy="class-lookups", cohort=None)
# a listed class serves nvidia.com/gpu through DRA: which mechanism the name means depends on the cohort
case("double-mechanism-mapped-name-unbound-and-class-resource",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}))),
     ("double-mechanism", "spec.containers[0].resources.limits"), policy="extended-class", cohort=None)
case("double-mechanism-mapped-name-on-dra-cohort-and-class-resource-pass",
     pod("train-7f", pod_spec(container(gpus={"nvidia.com/gpu": 1, FULL: 1}), cohort="dra")),
     policy="extended-class", cohort="dra")


@pytest.mark.parametrize("row", TABLE.params)
def test_double_mechanism(row, evaluate, golden):
    check_case(row, evaluate, golden)
