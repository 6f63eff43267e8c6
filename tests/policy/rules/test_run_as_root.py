"""The run-as-root table (docs/rules/run-as-root.md): failing cases beside their closest benign twins, each checked by
builders.check_case (findings, verdict, cohort, golden messages) and, by test_rules.py, again in the
apiserver's shape."""
from __future__ import annotations

import pytest

from tests.policy.builders import (
    CONTAINER_SC,
    POLICIES,
    SEED_CLASSES,
    SEED_TEMPLATE,
    Table,
    check_case,
    container,
    facts_of,
    pod,
    pod_spec,
    template_claim,
    workload,
)
from webhook.policy.checks import run_as_root
from webhook.policy.messages import render

TABLE = Table("run-as-root")
case = TABLE.case

case("run-as-root-hardened-pass",
     workload("StatefulSet", "vector-db",
              pod_spec(container("db", gpus={"nvidia.com/gpu": 1}), cohort="device-plugin")))
case("run-as-root-cpu-pod-as-root-pass",
     pod("build", pod_spec(container("kaniko", sc={}), sc={"runAsUser": 0})), cohort=None)
case("run-as-root-exception-by-name-pass",
     pod("nsight-profile-1", pod_spec(container("nsight", gpus={"nvidia.com/gpu": 1}, sc={
         **CONTAINER_SC, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}), cohort="device-plugin"),
         namespace="perf"), policy="exceptions")
case("run-as-root-pod-run-as-user-zero",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}), cohort="device-plugin",
                                sc={"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}})),
     ("run-as-root", "spec.securityContext.runAsUser"))
case("run-as-root-template-run-as-non-root-false",
     workload("Job", "train", pod_spec(container("train", claims=["gpu"]), cohort="dra", claims=[template_claim()],
                                       sc={"runAsNonRoot": False})),
     ("run-as-root", "spec.template.spec.securityContext.runAsNonRoot"), docs=[*SEED_CLASSES, SEED_TEMPLATE])
case("run-as-root-container-escalation-and-capabilities",
     pod("profiler", pod_spec(container(gpus={"nvidia.com/gpu": 1}), container("nsight", sc={
         "allowPrivilegeEscalation": True, "capabilities": {"add": ["SYS_ADMIN", "SYS_PTRACE"]}}),
         cohort="device-plugin")),
     ("run-as-root", "spec.containers[1].securityContext.allowPrivilegeEscalation"),
     ("run-as-root", "spec.containers[1].securityContext.capabilities.add"))
case("run-as-root-exception-name-in-other-namespace",
     pod("nsight-profile-1", pod_spec(container("nsight", gpus={"nvidia.com/gpu": 1}, sc={
         **CONTAINER_SC, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}), cohort="device-plugin")),
     ("run-as-root", "spec.containers[0].securityContext.capabilities.add"), policy="exceptions")
case("run-as-root-action-enforce",
     pod("cuda-smoke", pod_spec(container(gpus={"nvidia.com/gpu": 1}, sc={**CONTAINER_SC, "runAsUser": 0}),
                                cohort="device-plugin")),
     ("run-as-root", "enforce", "spec.containers[0].securityContext.runAsUser"), policy="actions")


@pytest.mark.parametrize("row", TABLE.params)
def test_run_as_root(row, evaluate, golden):
    check_case(row, evaluate, golden)


def test_check_reports_only_a_cohort_bound_pod():
    policy = POLICIES["default"]
    root = container(sc={"runAsUser": 0})
    bound = pod("train", pod_spec(root, cohort="device-plugin"))
    (finding,) = run_as_root.check(*facts_of(bound, policy), policy)
    assert finding.path == "spec.containers[0].securityContext.runAsUser"
    assert render(finding.what).endswith(f"({finding.path})")
    assert run_as_root.check(*facts_of(pod("train", pod_spec(root)), policy), policy) == []
