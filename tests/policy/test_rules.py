"""Across the rule tables (tests/policy/rules/test_<rule>.py): every row again in the shape the apiserver
sends (quantities as strings, defaults filled in) with the same verdict, the tables' coverage of kinds,
container sections and actions, case ids and golden files, and the shipped policy's defaults."""
from __future__ import annotations

import re

import pytest

from tests.policy.builders import _POD_SPEC_PATHS, POLICIES, SEED_DOCS, all_cases, all_tables, apiserver_shaped
from tests.support import GOLDEN_RULES, H200_LGIP
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.rules import DEFAULT_ACTIONS, Action, Rule

CASES = all_cases()


@pytest.mark.parametrize("row", [pytest.param(c, id=c.id) for c in CASES])
def test_rule_apiserver_shape_same_verdict(row, evaluate):
    """What the CLI reads as written (integers, fields absent) and what the apiserver sends (strings, defaults)
    get one verdict: the same findings, actions, paths and messages."""
    policy = POLICIES[row.policy]
    shaped = apiserver_shaped(row.obj)
    written = evaluate(row.obj, policy=policy, docs=row.docs, user=row.user, namespace=row.namespace)
    served = evaluate(shaped, policy=policy, docs=[apiserver_shaped(d) for d in row.docs], user=row.user,
                      namespace=row.namespace)
    assert [(v.rule, v.action, v.path, v.message) for v in served.violations] == \
        [(v.rule, v.action, v.path, v.message) for v in written.violations]
    assert (served.allowed, served.cohort, served.errors) == (written.allowed, written.cohort, written.errors)


def test_seed_manifests_pass_under_default_policy(evaluate):
    """The seed's DeviceClasses, template and both smoke Jobs, applied together, draw no finding at all."""
    policy = POLICIES["default"]
    verdicts = {}
    for doc in SEED_DOCS:
        ev = evaluate(doc, policy=policy, docs=SEED_DOCS)
        verdicts[(doc["kind"], doc["metadata"]["name"])] = (ev.allowed, ev.violations, ev.errors, ev.cohort)
    assert verdicts == {
        ("DeviceClass", "hybrid-full-gpu"): (True, (), (), None),
        ("DeviceClass", "hybrid-large-gpu"): (True, (), (), None),
        ("ResourceClaimTemplate", "single-large-gpu"): (True, (), (), "dra"),
        ("Job", "hybrid-gpu-plugin-smoke"): (True, (), (), "device-plugin"),
        ("Job", "hybrid-gpu-dra-smoke"): (True, (), (), "dra"),
    }


def test_every_rule_has_a_table_with_passing_and_failing_cases():
    for rule, table in all_tables().items():
        failing = [c.id for c in table.cases if any(r is rule for r, _, _ in c.findings)]
        passing = [c.id for c in table.cases if not any(r is rule for r, _, _ in c.findings)]
        assert passing and failing, f"{rule.value}: passing {passing}, failing {failing}"


def test_cases_cover_every_kind_container_section_and_action():
    kinds, sections, actions = set(), set(), set()
    for c in CASES:
        obj, policy = c.obj, POLICIES[c.policy]
        kinds.add(obj["kind"])
        if obj["kind"] in _POD_SPEC_PATHS:
            spec = obj
            for key in _POD_SPEC_PATHS[obj["kind"]]:
                spec = spec[key]
            sections.update(s for s in ("initContainers", "ephemeralContainers") if spec.get(s))
            if any(c.get("restartPolicy") == "Always" for c in spec.get("initContainers", [])):
                sections.add("sidecar")
        actions.update((a or policy.actions[r]) for r, a, _ in c.findings)
    assert kinds >= {*_POD_SPEC_PATHS, "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
    assert sections == {"initContainers", "ephemeralContainers", "sidecar"}
    assert actions == {Action.ENFORCE, Action.WARN, Action.AUDIT}


def test_case_ids_are_unique_and_every_golden_file_has_a_case_with_messages():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids)
    orphans = sorted(p.name for p in GOLDEN_RULES.glob("*.txt") if p.stem not in set(ids))
    assert orphans == []
    # the Japanese goldens are the same cases'
    japanese = {p.stem for p in (GOLDEN_RULES / "ja").glob("*.txt")}
    assert japanese == {p.stem for p in GOLDEN_RULES.glob("*.txt")}
    assert [p.name for p in GOLDEN_RULES.glob("*.txt") if not p.read_text(encoding="utf-8")] == []


def test_the_shipped_policy_gives_every_rule_its_default_action():
    # The defaults themselves are webhook/rules.py's; tests/test_rule_docs.py holds each rule's page to them.
    assert {r: POLICIES["default"].actions[r] for r in Rule} == DEFAULT_ACTIONS


def test_h200_profile_table_is_the_real_hosts():
    """The H200 MIG table the policy ships is the one `nvidia-smi mig -lgip` printed on a real H200 host."""
    rows = re.findall(r"MIG\s+(\S+)\s+\d+\s+\d+/(\d+)", H200_LGIP.read_text(encoding="utf-8"))
    assert rows, f"no profile rows in {H200_LGIP}"
    assert {name: int(total) for name, total in rows} == dict(MIG_PROFILE_TABLES["H200-141GB"])
    profiles = POLICIES["mig-mixed-h200"].cohort("device-plugin").mig_profiles
    assert dict(profiles) == dict(MIG_PROFILE_TABLES["H200-141GB"])
