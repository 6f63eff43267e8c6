"""`host check` as a whole: every check's findings in the registry's order, their messages (golden files, English
and Japanese), each GPU checked on its own, the language chosen. Each check's own table is test_<check>.py."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tests.host.checks import test_driver_branch, test_mig_profiles, test_runtime_handler
from tests.host.checks.support import findings, policy_with, statuses
from tests.host.conftest import HOST_H200
from webhook.host.checks import CHECKS, HostCheckId, Status, verdict

# The tables' rows whose whole reports are golden files (tests/golden/host/<id>.txt and ja/<id>.txt).
GOLDEN = ["dra-fit", "device-plugin-fit", "dra-driver-560", "device-plugin-no-handler", "mixed-a100-table-on-h200",
          "device-plugin-no-containerd-config"]
ROWS = {row[0]: row for table in (test_driver_branch, test_runtime_handler, test_mig_profiles) for row in table.CASES}


def test_the_registry_holds_each_check_once():
    assert sorted(c.id.value for c in CHECKS) == sorted(i.value for i in HostCheckId)


@pytest.mark.parametrize("cohort", ["device-plugin", "dra"])
def test_the_lent_host_as_captured_cannot_be_told_fit(cohort):
    """It has no toolkit, no containerd and no CDI: unknown or not fit, never fit."""
    found = findings(HOST_H200, cohort)
    assert verdict(found) is not Status.PASS
    assert statuses(found, HostCheckId.TOOLKIT) == [Status.UNKNOWN]
    assert all(s is Status.PASS for s in statuses(found, HostCheckId.DRIVER) + statuses(found, HostCheckId.MIG_MODE))


@pytest.mark.parametrize("case", GOLDEN)
def test_messages(host_dir, golden_host, case):
    _, cohort, fields, host, *_ = ROWS[case]
    found = findings(host_dir(**host), cohort, policy_with(cohort, **fields) if fields else None)
    golden_host([f"{f.status.value} {f.message}" for f in found], case)


def test_each_gpu_is_checked(host_dir):
    """Two GPUs, one with MIG on: the device-plugin cohort (migStrategy none) fails that one only."""
    from tests.host.test_parsers import V12_TWO_GPUS
    found = findings(host_dir(files={"nvidia-smi-q.xml": V12_TWO_GPUS}), "device-plugin")
    mig = [(f.status, f.subject) for f in found if f.check is HostCheckId.MIG_MODE]
    assert mig == [(Status.FAIL, "GPU 1 (NVIDIA A100-SXM4-40GB)"), (Status.PASS, "host")]
    assert "GPU 0: no MIG" in next(f.what for f in found if f.check is HostCheckId.MIG_MODE and f.status is Status.PASS)
    # the CDI spec names one GPU by index, the host has two
    assert statuses(findings(host_dir(files={"nvidia-smi-q.xml": V12_TWO_GPUS}), "dra"),
                    HostCheckId.CDI_SPEC) == [Status.FAIL]


@pytest.mark.parametrize("case", GOLDEN)
def test_messages_in_japanese(host_dir, golden_host, case):
    """The same findings (checks, statuses, subjects, docs links) as in English, their texts in Japanese."""
    _, cohort, fields, host, *_ = ROWS[case]
    folder = host_dir(**host)
    policy = policy_with(cohort, **fields) if fields else None
    english = findings(folder, cohort, policy)
    found = findings(folder, cohort, policy, language="ja")
    assert [(f.check, f.status, f.subject, f.docs) for f in found] == [(f.check, f.status, f.subject, f.docs)
                                                                       for f in english]
    for f, e in zip(found, english):
        assert f.message.startswith(f"{f.subject}: ") and f.message.endswith(f"[{f.check.value}] {f.docs}")
        if f.status is not Status.PASS:
            assert "。対処: " in f.message and f.message != e.message
    golden_host([f"{f.status.value} {f.message}" for f in found], f"ja/{case}")


def test_the_policy_language_decides_without_an_argument(host_dir):
    folder = host_dir()
    policy = replace(policy_with("dra"), language="ja")
    assert "コホート" in " ".join(f.message for f in findings(folder, "dra", policy))
    assert "コホート" not in " ".join(f.message for f in findings(folder, "dra", policy, language="en"))
