"""One definition per rule, in its own module: every rule id has exactly one, in the module of
webhook/policy/checks (validation) or webhook/policy/mutations (mutation) named for it, opening with the
rule's spec; every list of rules is derived from them: the rule-id table (webhook/rules.py, written by `make
schema`), the engine's checks and mutations, the in-tree coverage; the engine runs every check (pod spec's or
DRA object's) through the same guarded loop, so a check that raises is answered per its onError."""
from __future__ import annotations

import dataclasses
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys

import pytest

from tests.support import REPO
from tools import rule_ids
from webhook.config import default_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.evaluation import evaluate_object
from webhook.intree.export import export
from webhook.intree.mutations import export_mutations
from webhook.lookups.base import NoLookups
from webhook.policy import checks, coverage, mutations
from webhook.policy.cel import Validation, lit
from webhook.policy.cel.text import Cel
from webhook.policy.checks import claim_shape, legacy_api, run_as_root, shared_claim, visible_devices_override
from webhook.policy.contract import CLAIMS, POD_SPECS, Check, Definition, InTree, Mutator, Target, always
from webhook.policy.definitions import BY_RULE, CHECKS, DEFINITIONS, MUTATIONS, PACKAGES, _definition
from webhook.policy.mutations import default_runtime_class
from webhook.policy.pinning import is_pinned
from webhook.rules import DEFAULT_ACTIONS, VALIDATIONS, Action, Rule

ALPHA_CLASS = {"apiVersion": "resource.k8s.io/v1alpha2", "kind": "ResourceClass",
               "metadata": {"name": "gpu"}, "driverName": "gpu.nvidia.com"}
DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "old"},
                "spec": {"selectors": [], "suitableNodes": {"nodeSelectorTerms": []}}}
CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ml"},
         "spec": {"devices": {"requests": [{"name": "gpu"}]}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
       "spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]}]}}


def _modules(package) -> set[str]:
    return {m.name for m in pkgutil.iter_modules(package.__path__)}


def test_every_rule_is_one_module_named_for_its_id_holding_its_definition():
    assert _modules(checks) == {r.value.replace("-", "_") for r in VALIDATIONS}
    assert _modules(mutations) == {r.value.replace("-", "_") for r in Rule if r.is_mutation}
    assert [d.rule for d in DEFINITIONS] == list(Rule)
    for d in DEFINITIONS:
        package = mutations if d.rule.is_mutation else checks
        module = __import__(f"{package.__name__}.{d.rule.value.replace('-', '_')}", fromlist=["DEFINITION"])
        assert module.DEFINITION is d and d.spec == module.__doc__
        assert d.spec.startswith(f"{d.rule.value}: ")
        for check in d.checks:
            assert check.run.__module__ == module.__name__


def test_the_lists_of_rules_are_the_definitions():
    assert dict(BY_RULE) == {d.rule: d for d in DEFINITIONS}
    assert {d.rule for d in MUTATIONS} == {r for r in Rule if r.is_mutation}
    assert all(d.mutation is not None and not d.checks for d in MUTATIONS)
    assert all(d.checks and d.mutation is None for d in DEFINITIONS if not d.rule.is_mutation)
    assert DEFAULT_ACTIONS == {d.rule: d.default for d in DEFINITIONS}
    assert [(r.value, r.default, r.is_mutation) for r in Rule] == [(d.id, d.default, d.mutates) for d in DEFINITIONS]


# ------------------------------------------------------------------------------------ the rule-id table

TABLE = REPO / "webhook" / "rules.py"


def test_the_rule_id_table_is_written_from_the_definitions():
    text = TABLE.read_text(encoding="utf-8")
    assert rule_ids.table(rule_ids.definitions(), text) == text, "run `make schema`"


def test_a_definition_the_table_does_not_say_is_refused_until_make_schema(monkeypatch):
    assert _definition(Rule.SHARED_CLAIM) is shared_claim.DEFINITION
    enforced = dataclasses.replace(shared_claim.DEFINITION, default=Action.ENFORCE)  # the table says warn
    monkeypatch.setattr(shared_claim, "DEFINITION", enforced)
    with pytest.raises(ImportError, match="run `make schema`"):
        _definition(Rule.SHARED_CLAIM)


def _new(rule_id: str, default: Action = Action.ENFORCE, mutation: bool = False) -> Definition:
    if mutation:
        return Definition(rule_id, "s", "c", f"{rule_id}: x", default, mutation=Mutator(lambda *a: []))
    checked = (Check(POD_SPECS, legacy_api.check),)
    return Definition(rule_id, "s", "c", f"{rule_id}: x", default, reason="r", checks=checked)


def _ids(text: str) -> list[str]:
    return re.findall(r'^    [A-Z_]+ = "([a-z-]+)"', text, re.M)


def test_a_new_rule_is_read_before_its_id_is_in_the_table_and_comes_last_of_its_kind():
    new = _new("new-check", Action.AUDIT)
    with pytest.raises(ValueError, match="new-check"):
        new.rule  # noqa: B018  (not in the table until `make schema` writes it)
    found = [*DEFINITIONS, _new("new-mutation", mutation=True), new]
    text = rule_ids.table(found, TABLE.read_text(encoding="utf-8"))
    ids = [r.value for r in Rule]
    validations = ids[:len(VALIDATIONS)]
    assert _ids(text) == [*validations, "new-check", *ids[len(VALIDATIONS):], "new-mutation"]
    assert '    NEW_CHECK = "new-check", Action.AUDIT\n' in text
    assert '    NEW_MUTATION = "new-mutation", Action.ENFORCE, MUTATION\n' in text
    namespace: dict = {}
    exec(compile(text, "rules.py", "exec"), namespace)  # the table as written imports and runs
    assert namespace["DEFAULT_ACTIONS"][namespace["Rule"]("new-check")] is Action.AUDIT
    assert namespace["Rule"]("new-mutation") in namespace["MUTATIONS"]


def test_the_table_keeps_its_order_drops_a_removed_rule_and_reads_through_merge_conflicts():
    text = TABLE.read_text(encoding="utf-8")
    kept = [d for d in DEFINITIONS if d.id != "shared-claim"]
    assert _ids(rule_ids.table(kept, text)) == [d.id for d in kept]
    # two branches each added a rule: the conflicted table's ids are all read, in order
    conflicted = text.replace('    DEFAULT_RUNTIME_CLASS = ', '<<<<<<< ours\n    A_RULE = "a-rule"\n=======\n'
                              '    B_RULE = "b-rule"\n>>>>>>> theirs\n    DEFAULT_RUNTIME_CLASS = ')
    both = [*DEFINITIONS, _new("b-rule"), _new("a-rule")]
    assert _ids(rule_ids.table(both, conflicted)) == [*(r.value for r in VALIDATIONS), "a-rule", "b-rule",
                                                       *(r.value for r in Rule if r.is_mutation)]
    # with no table at all, the ids in alphabetical order, validations first
    assert _ids(rule_ids.table(both, "")) == sorted(d.id for d in both if not d.mutates) + sorted(
        d.id for d in both if d.mutates)



def test_make_schema_writes_a_conflicted_table_again(tmp_path):
    """A merge leaves the table with conflict markers, which Python cannot import; the generator takes them out
    before importing the package, then writes the table from the definitions (an id with no module goes)."""
    for part in ("webhook", "tools"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    table = tmp_path / "webhook" / "rules.py"
    original = table.read_text(encoding="utf-8")
    line = '    ALLOCATION_OWNER = "allocation-owner"\n'
    table.write_text(original.replace(line, f'<<<<<<< HEAD\n{line}=======\n{line}    GONE_RULE = "gone-rule"\n'
                                            '>>>>>>> other-branch\n'), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "tools.rule_ids", "webhook/rules.py"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert table.read_text(encoding="utf-8") == original

# ------------------------------------------------------------------------------------ the in-tree coverage

def test_the_in_tree_tables_are_the_definitions_in_tree_exports():
    in_tree = {d.rule: d.in_tree for d in DEFINITIONS if d.in_tree is not None}
    assert dict(coverage.IN_TREE) == in_tree
    assert dict(coverage.COVERED) == {r: t.covers for r, t in in_tree.items() if t.covers}
    assert dict(coverage.CLAIMS_COVERED) == {r: t.covers_claim for r, t in in_tree.items() if t.covers_claim}
    # the order `export` writes the policies in
    assert [r.value for r in coverage.EXPORTED] == ["visible-devices-override", "device-access-bypass", "run-as-root",
                                                    "runtime-class-conflict", "double-mechanism", "device-config"]
    assert [r.value for r in coverage.MUTATED] == ["default-runtime-class", "default-security-context"]
    for d in DEFINITIONS:  # each rule's coverage is in its own module, or the pinning every pinned rule shares
        if d.in_tree is not None:
            module = f"{PACKAGES[d.mutates]}.{d.id.replace('-', '_')}"
            for f in (d.in_tree.exported, d.in_tree.covers, d.in_tree.covers_claim, d.in_tree.cohorts):
                assert f is None or f is always or f.__module__ in (module, "webhook.policy.pinning")


# What a validation's and a mutation's in-tree export write their CEL with (the real ones: the rule's module's)
VALIDATION_CEL = {"cel_covered": run_as_root.DEFINITION.in_tree.cel_covered,
                  "cel_validations": run_as_root.DEFINITION.in_tree.cel_validations}
MUTATION_CEL = {"cel_patch": default_runtime_class.DEFINITION.in_tree.cel_patch}


def test_an_in_tree_export_covers_pod_specs_or_claims_and_names_a_mutation_s_cohorts():
    InTree(always, covers=is_pinned, **VALIDATION_CEL)
    with pytest.raises(ValueError, match="pod specs or claims"):
        InTree(always, **VALIDATION_CEL)
    with pytest.raises(ValueError, match="pod specs or claims"):
        InTree(always, covers=is_pinned, covers_claim=lambda spec, policy: True, **VALIDATION_CEL)
    checked = (Check(POD_SPECS, legacy_api.check),)
    with pytest.raises(ValueError, match="names its cohorts"):
        Definition("x", "s", "c", "x: y", reason="r", checks=checked,
                   in_tree=InTree(always, covers=is_pinned, cohorts=lambda policy: (), **MUTATION_CEL))
    with pytest.raises(ValueError, match="names its cohorts"):
        Definition("x", "s", "c", "x: y", mutation=Mutator(lambda *a: []),
                   in_tree=InTree(always, covers=is_pinned, **VALIDATION_CEL))


@pytest.mark.parametrize("cel", [
    pytest.param({}, id="none"),
    pytest.param({"cel_covered": VALIDATION_CEL["cel_covered"]}, id="coverage-alone"),
    pytest.param({"cel_validations": VALIDATION_CEL["cel_validations"]}, id="validations-alone"),
    pytest.param({"cel_covered": VALIDATION_CEL["cel_covered"], **MUTATION_CEL}, id="coverage-and-patch"),
    pytest.param({**VALIDATION_CEL, **MUTATION_CEL}, id="both"),
])
def test_an_in_tree_export_says_its_policy_in_cel(cel):
    """A validation's export writes its coverage and validations, a mutation's its patch: nothing else."""
    for cohorts, fitting in ((None, VALIDATION_CEL), (lambda policy: (), MUTATION_CEL)):
        InTree(always, covers=is_pinned, cohorts=cohorts, **fitting)
        with pytest.raises(ValueError, match="says its policy in CEL"):
            InTree(always, covers=is_pinned, cohorts=cohorts, **cel)


def test_every_exported_rule_s_policy_is_written_from_its_definition(monkeypatch):
    """`export` writes each exported rule's CEL from its definition's in-tree export, which its own module defines:
    with every rule's CEL writers replaced by ones that write the rule's id, each policy says its own rule's id and
    nothing else (webhook/intree chooses no rule's CEL by name)."""
    for d in DEFINITIONS:
        if d.in_tree is not None:
            module = f"{PACKAGES[d.mutates]}.{d.id.replace('-', '_')}"
            writers = (d.in_tree.cel_patch,) if d.mutates else (d.in_tree.cel_covered, d.in_tree.cel_validations)
            for f in writers:  # its own module's, or what every pinned rule's coverage shares
                assert f is not None and f.__module__ in (module, "webhook.policy.cel.pods")
    for rule, in_tree in list(coverage.IN_TREE.items()):
        marker = lit(rule.value)
        if rule.is_mutation:
            marked = dataclasses.replace(in_tree, cel_patch=lambda policy, m=marker: ([], m))
        else:
            marked = dataclasses.replace(
                in_tree, cel_covered=lambda shape, policy, m=marker: m,
                cel_validations=lambda shape, policy, lines, m=marker: (
                    [], [Validation(m, lines.line(Cel(m), "", ""))]))
        monkeypatch.setitem(coverage.IN_TREE, rule, marked)
    policy = default_policy()
    objects = export(policy) + export_mutations(policy)
    policies = [o for o in objects if o["kind"].endswith("Policy")]
    assert {o["metadata"]["labels"]["gpu-admission.io/rule"] for o in policies} == \
        {r.value for r in coverage.exported_rules(policy) | coverage.mutated_rules(policy)}
    for o in policies:
        marker, spec = lit(o["metadata"]["labels"]["gpu-admission.io/rule"]), o["spec"]
        if o["kind"] == "MutatingAdmissionPolicy":
            assert [m["jsonPatch"]["expression"] for m in spec["mutations"]] == [marker]
        else:
            assert {"name": "covered", "expression": marker} in spec["variables"]
            assert [v["expression"] for v in spec["validations"]] == [f"!variables.covered || {marker}"]
            assert marker in spec["validations"][0]["messageExpression"]


# The order findings are reported in (and so the order of a decision's messages), per target, and the order
# mutations run in (each reads what the earlier ones set; the patch lists their edits in that order).
ORDER = {
    Target.POD_SPEC: ["double-mechanism", "cohort-mismatch", "resource-not-offered", "shared-request-count",
                      "shared-exclusive-mix", "sharing-not-enabled", "shared-claim", "visible-devices-override",
                      "device-access-bypass", "runtime-class-conflict", "run-as-root", "legacy-api",
                      "unresolved-claim", "unsatisfiable-request"],
    Target.CLAIM: ["legacy-api", "claim-shape", "device-config", "sharing-not-enabled", "resource-not-offered"],
    Target.DEVICE_CLASS: ["legacy-api", "allocation-owner"],
    Target.TEMPLATE: ["allocation-owner"],
    Target.INFRASTRUCTURE: ["allocation-owner"],
}


MUTATION_ORDER = ["default-placement", "default-runtime-class", "default-security-context", "hide-gpus"]
PINNED = {*MUTATION_ORDER, *(i for ids in ORDER.values() for i in ids)}


def test_the_checks_of_each_target_and_the_mutations_run_in_their_order():
    # the rules pinned here keep their order; one added since comes where its stage and its id's place put it
    assert {t: [r.value for r, _ in CHECKS[t] if r.value in PINNED] for t in Target} == ORDER
    assert [d.rule.value for d in MUTATIONS if d.rule.value in PINNED] == MUTATION_ORDER
    ids = list(Rule)
    for t in Target:
        assert list(CHECKS[t]) == sorted(CHECKS[t], key=lambda rc: (rc[1].stage, ids.index(rc[0])))
    assert list(MUTATIONS) == sorted(MUTATIONS, key=lambda d: (d.mutation.stage, ids.index(d.rule)))


@pytest.mark.parametrize("rule, check", [pytest.param(r, c, id=f"{r.value}-{t.name}") for t in Target
                                         for r, c in CHECKS[t]])
def test_every_check_has_the_one_signature(rule, check):
    assert list(inspect.signature(check.run).parameters) == ["facts", "context", "policy"]


def test_a_check_for_pod_specs_and_dra_objects_at_once_is_refused():
    with pytest.raises(ValueError, match="different facts"):
        Check(POD_SPECS | CLAIMS, legacy_api.check)


def test_a_definition_must_match_its_kind_give_its_reason_and_open_with_its_spec():
    checked = (Check(POD_SPECS, legacy_api.check),)
    mutator = Mutator(lambda *a: [])
    benign = Definition("legacy-api", "s", "c", "legacy-api: x", reason="r", checks=checked)  # the benign twin
    assert benign.rule is Rule.LEGACY_API and not benign.mutates and benign.default is Action.ENFORCE
    assert Definition("hide-gpus", "s", "c", "hide-gpus: x", mutation=mutator).mutates
    with pytest.raises(ValueError, match="a validation rule has checks"):
        Definition("legacy-api", "s", "c", "legacy-api: x", reason="r")
    with pytest.raises(ValueError, match="a validation rule has checks"):
        Definition("hide-gpus", "s", "c", "hide-gpus: x", checks=checked, mutation=mutator)
    with pytest.raises(ValueError, match="reason in full"):
        Definition("legacy-api", "s", "c", "legacy-api: x", checks=checked)
    with pytest.raises(ValueError, match="reason in full"):
        Definition("hide-gpus", "s", "c", "hide-gpus: x", reason="r", mutation=mutator)
    with pytest.raises(ValueError, match="docstring"):
        Definition("legacy-api", "s", "c", None, reason="r", checks=checked)
    with pytest.raises(ValueError, match="docstring"):
        Definition("legacy-api", "s", "c", "claim-shape: x", reason="r", checks=checked)


def _policy(on_error: str, rule: Rule):
    if on_error == "default":
        return default_policy()
    text = DEFAULT_PATH.read_text()
    assert "rules: {}" in text
    return parse_policy(text.replace("rules: {}", f"rules: {{{rule.value}: {{action: enforce, onError: deny}}}}"))


def _broken(*args, **kwargs):
    raise KeyError("boom")


@pytest.mark.parametrize(("module", "target", "obj"), [
    pytest.param(legacy_api, Target.DEVICE_CLASS, ALPHA_CLASS, id="legacy-api-on-an-alpha-kind"),
    pytest.param(legacy_api, Target.DEVICE_CLASS, DEVICE_CLASS, id="legacy-api-on-a-device-class"),
    pytest.param(claim_shape, Target.CLAIM, CLAIM, id="claim-shape-on-a-claim"),
    pytest.param(visible_devices_override, Target.POD_SPEC, POD, id="visible-devices-override-on-a-pod"),
])
@pytest.mark.parametrize("on_error", ["default", "deny"])
def test_a_check_that_raises_is_recorded_and_answered_per_its_on_error(monkeypatch, module, target, obj, on_error):
    policy = _policy(on_error, module.DEFINITION.rule)
    before = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    assert not before.errors and any(v.rule is module.DEFINITION.rule for v in before.violations)
    (check,) = [c for c in module.DEFINITION.checks if target in c.applies_to]
    monkeypatch.setattr(check, "run", _broken)
    ev = evaluate_object(obj, policy=policy, resolver=NoLookups(), namespace="ml")
    (error,) = ev.errors
    assert error.rule is module.DEFINITION.rule and error.error.startswith("KeyError")
    assert error.denied is (on_error == "deny")
    if on_error == "deny":
        assert not ev.allowed
    # the other checks still ran: nothing of the broken rule, the rest as before
    assert list(ev.violations) == [v for v in before.violations if v.rule is not module.DEFINITION.rule]
