"""The policy configuration: the shipped default reproduces the seed, and every bad field is named."""
from __future__ import annotations

import textwrap

import pytest
import yaml

from webhook.config import ConfigError, default_policy, load_policy, parse_policy
from webhook.config.load import DEFAULT_PATH
from webhook.rules import DEFAULT_ACTIONS, Action, Rule


def test_default_reproduces_the_seed_cohorts():
    policy = default_policy()
    dp, dra = policy.cohorts
    assert (dp.name, dp.mechanism, dp.runtime_class_name, dp.mig_strategy) == ("device-plugin", "device-plugin",
                                                                               "nvidia", "none")
    assert dict(dp.node_labels) == {"eks.amazonaws.com/compute-type": "hybrid",
                                    "workload.example.com/gpu-allocation": "device-plugin"}
    assert dp.offered_resources() == {"nvidia.com/gpu"}
    assert dp.time_slicing is None and dp.mps is None
    assert [t.as_dict() for t in dp.tolerations] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                      "effect": "NoSchedule"}]
    assert (dra.name, dra.mechanism, dra.driver, dra.device_types, dra.max_devices_per_claim) == (
        "dra", "dra", "gpu.nvidia.com", ("gpu",), 8)
    assert dict(dra.node_labels)["workload.example.com/gpu-allocation"] == "dra"
    assert dra.sharing_strategies == ()
    assert set(policy.device_classes) == {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
                                          "hybrid-full-gpu", "hybrid-large-gpu", "imex.nvidia.com",
                                          "compute-domain-daemon.nvidia.com",
                                          "compute-domain-default-channel.nvidia.com"}
    # the NVIDIA DRA driver's own classes that are not GPUs are known, and known not to be GPUs
    assert [policy.selects_gpus(policy.device_classes[n]) for n in (
        "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com", "imex.nvidia.com",
        "compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com")] == [
        True, True, True, False, False, False]
    assert policy.device_classes["mig.nvidia.com"].device_type == "mig"
    assert policy.exempt_namespaces == {"kube-system", "gpu-system", "gpu-dra-system", "nvidia-device-plugin",
                                        "gpu-operator", "dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu"}
    assert policy.is_exempt("gpu-admission")  # the service's own namespace
    sec = policy.security
    assert (sec.run_as_non_root, sec.run_as_user, sec.seccomp_profile, sec.allow_privilege_escalation,
            sec.read_only_root_filesystem, sec.drop_capabilities) == (True, 65532, "RuntimeDefault", False, True,
                                                                      ("ALL",))
    assert dict(policy.actions) == DEFAULT_ACTIONS
    assert policy.actions[Rule.SHARED_CLAIM] is Action.WARN and policy.actions[Rule.DOUBLE_MECHANISM] is Action.ENFORCE
    assert policy.mode == "enforce"


def test_the_shipped_default_writes_out_the_model_s_defaults():
    """Defaults live in the model alone (webhook/config/model.py): the values the shipped default (and the chart's
    `policy:` value) writes out for its readers are those defaults, so it means the same without them."""
    doc = yaml.safe_load(DEFAULT_PATH.read_text())
    for key in ("mode", "serviceNamespace", "securityDefaults", "gpuDrivers", "exceptions", "namespaceCohorts",
                "namespaceOverrides", "rules"):
        del doc[key]
    for cohort in doc["cohorts"]:
        for key in ("runtimeClassName", "resources", "migStrategy", "driver", "deviceTypes", "maxDevicesPerClaim"):
            cohort.pop(key, None)
    assert parse_policy(yaml.safe_dump(doc)) == default_policy()


def test_load_policy_reads_a_file(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(DEFAULT_PATH.read_text().replace("mode: enforce", "mode: dry-run"))
    assert load_policy(path).mode == "audit"  # dry-run is an alias of audit


BASE = yaml.safe_load(DEFAULT_PATH.read_text())


def _with(**changes) -> str:
    doc = yaml.safe_load(DEFAULT_PATH.read_text())
    for dotted, value in changes.items():
        node = doc
        keys = dotted.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("text, expected", [
    pytest.param(_with(mode="strict"), "mode: must be one of enforce, audit, dry-run, not 'strict'", id="mode"),
    pytest.param(_with(bogus=1), "bogus: unknown field", id="unknown-top-field"),
    pytest.param(_with(cohorts__0__timeSlicing={"resources": [{"name": "nvidia.com/gpu", "replicas": 1}]}),
                 "cohorts[0].timeSlicing.resources[0].replicas: must be >= 2", id="replicas"),
    pytest.param(_with(cohorts__1__runtimeClassName="nvidia"),
                 "cohorts[1].runtimeClassName: applies only to mechanism device-plugin", id="dp-field-on-dra"),
    pytest.param(_with(cohorts__0__maxDevicesPerClaim=4),
                 "cohorts[0].maxDevicesPerClaim: applies only to mechanism dra", id="dra-field-on-dp"),
    pytest.param(_with(cohorts__0__mechanism="mig"),
                 "cohorts[0].mechanism: must be one of device-plugin, dra, not 'mig'", id="mechanism"),
    pytest.param(_with(cohorts__0__migStrategy="mixed"),
                 "cohorts[0].mig: migStrategy mixed needs the GPU model's profile table (mig.model or mig.profiles)",
                 id="mig-without-table"),
    pytest.param(_with(cohorts__1__mig={"profiles": {"1g.5gb": 0}}),
                 "cohorts[1].mig.profiles.1g.5gb: must be an instance count >= 1", id="dra-mig-count"),
    pytest.param(_with(cohorts__0__mig={"model": "A100-80GB"}),
                 "cohorts[0].mig.model: must be one of A100-40GB, H200-141GB, not 'A100-80GB'", id="mig-model"),
    pytest.param(_with(cohorts__1__nodeLabels={"eks.amazonaws.com/compute-type": "hybrid",
                                               "workload.example.com/gpu-allocation": "device-plugin"}),
                 "cohorts: cohorts 'device-plugin' and 'dra' select the same nodes; each GPU node belongs to exactly "
                 "one cohort",
                 id="same-nodes"),
    pytest.param(_with(cohorts__1__name="device-plugin"), "cohorts: cohort name 'device-plugin' is used twice",
                 id="dup-name"),
    pytest.param(_with(cohorts__0__nodeLabels={"gpu": True}),
                 "cohorts[0].nodeLabels.gpu: True is not a valid label value (quote numbers and booleans)",
                 id="label-bool"),
    pytest.param(_with(rules={"double-mechanism": "block"}),
                 "rules.double-mechanism: must be an action or a mapping with action and onError (enforce, warn, "
                 "audit, off), not 'block'",
                 id="action"),
    pytest.param(_with(rules={"no-such-rule": "warn"}), "rules.no-such-rule: unknown rule; rules are double-mechanism",
                 id="unknown-rule"),
    pytest.param(_with(rules={"double-mechanism": {"action": "warn", "onError": "explode"}}),
                 "rules.double-mechanism.onError: must be one of allow, deny, not 'explode'", id="on-error"),
    pytest.param(_with(namespaceCohorts={"ai": "gpu"}),
                 "namespaceCohorts.ai: unknown cohort 'gpu'; cohorts are device-plugin, dra", id="namespace-cohort"),
    pytest.param(_with(exceptions=[{"name": "kai", "rules": ["visible-devices-override"]}]),
                 "exceptions[0]: must select something", id="exception-selects-nothing"),
    pytest.param(_with(exceptions=[{"schedulerNames": ["kai-scheduler"], "rules": ["nope"]}]),
                 "exceptions[0].rules[0]: unknown rule 'nope'", id="exception-rule"),
    pytest.param(_with(lookups={"resourceClaims": "yes"}), "lookups.resourceClaims: must be a boolean, not a string",
                 id="lookup-type"),
    pytest.param(_with(lookups={"timeoutSeconds": 30}),
                 "lookups.timeoutSeconds: must be > 0 and <= 5 (the webhook's own timeout)", id="lookup-timeout"),
    pytest.param(_with(securityDefaults={"runAsUser": 0}),
                 "securityDefaults.runAsUser: 0 contradicts runAsNonRoot: true",
                 id="root-default"),
    pytest.param(_with(cohorts__1__deviceClasses=["no-such-class"]),
                 "cohorts[1].deviceClasses: unknown DeviceClass 'no-such-class'; list it under deviceClasses",
                 id="class"),
    pytest.param(_with(cohorts=[]), "cohorts: must list at least one cohort", id="no-cohorts"),
    pytest.param("cohorts: [", "not valid YAML at line 1", id="yaml"),
    pytest.param("- a\n- b\n", "policy: must be a mapping, not a list", id="not-a-mapping"),
])
def test_invalid_policy_names_the_field(text, expected):
    with pytest.raises(ConfigError) as err:
        parse_policy(text)
    assert any(e.startswith(expected) for e in err.value.errors), err.value.errors


def test_every_error_is_reported_at_once():
    text = _with(mode="x", bogus=1, rules={"double-mechanism": "block"})
    with pytest.raises(ConfigError) as err:
        parse_policy(text)
    assert len(err.value.errors) == 3


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_policy(tmp_path / "absent.yaml")
    assert "cannot read" in err.value.errors[0]


def test_custom_cohorts_sharing_and_mig():
    policy = parse_policy(textwrap.dedent("""
        cohorts:
          - name: shared
            mechanism: device-plugin
            nodeLabels: {workload.example.com/gpu-allocation: shared}
            timeSlicing:
              renameByDefault: true
              failRequestsGreaterThanOne: true
              resources: [{name: nvidia.com/gpu, replicas: 4}]
          - name: mig
            mechanism: device-plugin
            manager: gpu-operator-clusterpolicy
            nodeLabels: {workload.example.com/gpu-allocation: mig}
            migStrategy: mixed
            mig: {model: H200-141GB}
          - name: dra
            mechanism: dra
            manager: gpu-operator-gpucluster
            nodeLabels: {workload.example.com/gpu-allocation: dra}
            sharingStrategies: [TimeSlicing]
            deviceTypes: [gpu, mig]
            mig: {model: H200-141GB}
        rules:
          shared-claim: {action: enforce, onError: deny}
        """))
    shared, mig, dra = policy.cohorts
    assert shared.offered_resources() == {"nvidia.com/gpu.shared"}  # renamed: advertised instead of nvidia.com/gpu
    assert "nvidia.com/mig-1g.18gb" in mig.offered_resources() and "nvidia.com/mig-7g.141gb" in mig.offered_resources()
    assert not any("+" in r or r.endswith(".me") for r in mig.offered_resources())  # +me is advertised as 1g.18gb
    assert dra.sharing_strategies == ("TimeSlicing",)
    # a DRA cohort's MIG profile table: what resource-not-offered holds a claim's MIG profile against
    assert dra.mig_profiles["1g.18gb+me"] == 1 and "1g.5gb" not in dra.mig_profiles
    assert policy.on_error[Rule.SHARED_CLAIM] == "deny" and policy.actions[Rule.SHARED_CLAIM] is Action.ENFORCE


def test_manager_must_match_mechanism():
    with pytest.raises(ConfigError) as err:
        parse_policy("cohorts: [{name: a, mechanism: dra, manager: gpu-operator-clusterpolicy, nodeLabels: {a: b}}]")
    assert err.value.errors == ["cohorts[0].manager: gpu-operator-clusterpolicy runs the device-plugin mechanism, not "
                                "dra"]


def test_error_names_the_cohort_by_its_index_in_the_document():
    text = _with(cohorts__0__mechanism="mig", cohorts__1__deviceClasses=["no-such-class"])
    with pytest.raises(ConfigError) as err:
        parse_policy(text)
    expected = "cohorts[1].deviceClasses: unknown DeviceClass 'no-such-class'; list it under deviceClasses"
    assert expected in err.value.errors


def test_null_security_default_is_not_set():
    policy = parse_policy(_with(securityDefaults={"readOnlyRootFilesystem": None, "dropCapabilities": None}))
    assert policy.security.read_only_root_filesystem is None and policy.security.drop_capabilities == ()
    assert policy.security.run_as_user == 65532  # absent fields keep the shipped default


def test_unquoted_off_is_the_off_action():
    policy = parse_policy(DEFAULT_PATH.read_text().replace("rules: {}",
                                                           "rules:\n  shared-claim: off\n  run-as-root: {action: off}"))
    assert policy.actions[Rule.SHARED_CLAIM] is Action.OFF and policy.actions[Rule.RUN_AS_ROOT] is Action.OFF
