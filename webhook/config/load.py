"""Load the policy YAML. Its JSON Schema (policy.schema.json) is the one check of its structure: every field's
type, values and shape, and the cross-field rules a schema can say. The loader adds only what a schema cannot say
(a cohort name used twice, two cohorts selecting the same nodes, references to cohorts and DeviceClasses), then
builds the frozen model from the fields the document gives: every field it leaves out takes the model's default
(webhook/config/model.py). Every error names the field and the reason; a policy with any error is refused whole
(never half-loaded)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from webhook import yamlread
from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.config.model import (
    EMPTY,
    MECHANISM_DEFAULTS,
    SHARING_DEFAULTS,
    Cohort,
    DeviceClassInfo,
    Exception_,
    InTree,
    Lookups,
    NamespaceOverride,
    Policy,
    SecurityDefaults,
    SharedResource,
    Sharing,
    Toleration,
)
from webhook.config.overlay import SetError, apply_set, overlay_policy
from webhook.config.schema import schema_errors, type_of, without_nulls
from webhook.rules import DEFAULT_ACTIONS, Action, Rule

DEFAULT_PATH = Path(__file__).with_name("default.yaml")
MODES = {"enforce": "enforce", "audit": "audit", "dry-run": "audit"}


class ConfigError(ValueError):
    """The policy is invalid. `errors` lists every problem as `field.path: reason`."""

    def __init__(self, errors: list[str], source: str = "policy"):
        self.errors = errors
        self.source = source
        super().__init__(f"{source}: " + "; ".join(errors))


# ---------------------------------------------------------------- validation

def build_policy(data: Any, source: str = "policy") -> Policy:
    """Validate a parsed policy document, by the JSON Schema first, then by the checks that a schema cannot
    express; raise ConfigError listing every problem. Where the schema has refused a field, the other checks
    add nothing about it. A document that is not a mapping is read as an empty one after saying so."""
    document = data if isinstance(data, dict) else {}
    refused = schema_errors(data) + ([] if document is data else schema_errors(document))
    where = [_location(e) for e in refused]
    errors = refused + [e for e in _cross_field_errors(document, where)
                        if not any(_related(_location(e), w) for w in where)]
    if errors:
        raise ConfigError(errors, source)
    return _policy(without_nulls(document))


def _location(error: str) -> str:
    return error.split(": ", 1)[0]


def _inside(path: str, field: str) -> bool:
    """`path` is `field` or a field inside it (`cohorts[0].mig` in `cohorts[0]`)."""
    return path == field or (path.startswith(field) and path[len(field)] in ".[")


def _related(a: str, b: str) -> bool:
    return _inside(a, b) or _inside(b, a)


def _cross_field_errors(document: dict, refused: list[str]) -> Iterator[str]:
    """What a schema cannot say: between cohorts, and from a field to a cohort or DeviceClass listed elsewhere.
    Only the cohorts the schema accepted take part."""
    raw = document.get("cohorts")
    listed = raw if isinstance(raw, list) else []
    accepted = [(f"cohorts[{i}]", c) for i, c in enumerate(listed)
                if isinstance(c, dict) and not any(_inside(w, f"cohorts[{i}]") for w in refused)]
    names = [c["name"] for _, c in accepted]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        yield f"cohorts: cohort name {dup!r} is used twice"
    for i, (_, a) in enumerate(accepted):
        for _, b in accepted[i + 1:]:
            if a["nodeLabels"] == b["nodeLabels"]:
                yield (f"cohorts: cohorts {a['name']!r} and {b['name']!r} select the same nodes; "
                       "each GPU node belongs to exactly one cohort")
    namespace_cohorts = document.get("namespaceCohorts")
    for ns, cohort in (namespace_cohorts.items() if isinstance(namespace_cohorts, dict) else ()):
        if cohort not in names:
            known = ", ".join(str(c["name"]) for c in listed if isinstance(c, dict) and c.get("name"))
            yield f"namespaceCohorts.{ns}: unknown cohort {cohort!r}; cohorts are {known or 'none'}"
    classes = document.get("deviceClasses")
    class_names = {c["name"] for c in (classes if isinstance(classes, list) else ())
                   if isinstance(c, dict) and isinstance(c.get("name"), str)}
    for path, c in accepted:
        for cls in c.get("deviceClasses") or ():
            if cls not in class_names:
                yield f"{path}.deviceClasses: unknown DeviceClass {cls!r}; list it under deviceClasses"


# ---------------------------------------------------------------- the model, from a document the schema accepted

# A model's fields by document key: (the field's name, its value from the key's).
Fields = Mapping[str, tuple[str, Callable[[Any], Any]]]


def _given(data: dict, fields: Fields) -> dict[str, Any]:
    """The model's keyword arguments for the document keys `data` has: `fields` maps a key to the model's field
    and the conversion of its value. A key left out is left to the model's default."""
    return {field: convert(data[key]) for key, (field, convert) in fields.items() if key in data}


def _same(value: Any) -> Any:
    return value


def _strings(value: list) -> tuple[str, ...]:
    return tuple(value)


def _labels(value: dict) -> MappingProxyType:
    return MappingProxyType(dict(value))


def _action(value: Any) -> Action:
    return Action.OFF if value is False else Action(value)  # YAML 1.1 (PyYAML, Helm) reads an unquoted `off` as false


def _settings(value: dict) -> dict[Rule, dict[str, Any]]:
    """Each rule's setting: an action, or a mapping with action and onError."""
    return {Rule(k): _given(v, RULE_SETTING_FIELDS) if isinstance(v, dict) else {"action": _action(v)}
            for k, v in value.items()}


def _actions(value: dict) -> dict[Rule, Action]:
    return {rule: setting["action"] for rule, setting in _settings(value).items() if "action" in setting}


def _on_error(value: dict) -> MappingProxyType:
    return MappingProxyType({rule: s["on_error"] for rule, s in _settings(value).items() if "on_error" in s})


def _toleration(value: dict) -> Toleration:
    return Toleration(**_given(value, TOLERATION_FIELDS))


def _sharing(kind: str) -> Callable[[dict], Sharing]:
    def build(value: dict) -> Sharing:
        return Sharing(**{**SHARING_DEFAULTS[kind], **_given(value, SHARING_FIELDS)})
    return build


def _mig_profiles(value: dict) -> MappingProxyType:
    return MappingProxyType(dict(_given(value, MIG_FIELDS)["table"]))  # the schema holds it to model or profiles


def _allocatable(value: dict) -> MappingProxyType:
    return _given(value, AUTOSCALING_FIELDS).get("allocatable", EMPTY)


def _cohort(value: dict) -> Cohort:
    given = _given(value, COHORT_FIELDS)
    if "autoscaling" in value:  # an autoscaler adds the cohort's nodes
        given["autoscaled"] = True
    return Cohort(**{**MECHANISM_DEFAULTS[value["mechanism"]], **given})


def _security(value: dict) -> SecurityDefaults:
    # absent: the default; an explicit null: this default is not set at all (no capability dropped)
    given = _given(value, SECURITY_FIELDS)
    if given.get("drop_capabilities", ()) is None:
        given["drop_capabilities"] = ()
    return SecurityDefaults(**given)


def _device_classes(value: list) -> MappingProxyType:
    return MappingProxyType({c["name"]: DeviceClassInfo(**_given(c, DEVICE_CLASS_FIELDS)) for c in value})


def _exceptions(value: list) -> tuple[Exception_, ...]:
    return tuple(Exception_(**{"name": f"exceptions[{i}]", **_given(e, EXCEPTION_FIELDS)}) for i, e in enumerate(value))


def _override(value: dict) -> NamespaceOverride:
    return NamespaceOverride(**_given(value, OVERRIDE_FIELDS))


def _policy(document: dict) -> Policy:
    given = _given(document, POLICY_FIELDS)
    if "rules" in document:  # the document's actions over each rule's default, and what a rule's error means
        given["actions"] = MappingProxyType({**DEFAULT_ACTIONS, **given["actions"]})
        given["on_error"] = _on_error(document["rules"])
    return Policy(**given)


# Document key -> (the model's field, its value from the key's): every key the schema allows, each read here.
TOLERATION_FIELDS: Fields = {
    "key": ("key", _same), "operator": ("operator", _same), "value": ("value", _same), "effect": ("effect", _same),
}
RULE_SETTING_FIELDS: Fields = {"action": ("action", _action), "onError": ("on_error", _same)}
SHARED_RESOURCE_FIELDS: Fields = {"name": ("name", _same), "replicas": ("replicas", _same)}
SHARING_FIELDS: Fields = {
    "resources": ("resources", lambda v: tuple(SharedResource(**_given(r, SHARED_RESOURCE_FIELDS)) for r in v)),
    "renameByDefault": ("rename_by_default", _same),
    "failRequestsGreaterThanOne": ("fail_requests_greater_than_one", _same),
}
MIG_FIELDS: Fields = {"model": ("table", MIG_PROFILE_TABLES.__getitem__), "profiles": ("table", _same)}
AUTOSCALING_FIELDS: Fields = {
    "allocatable": ("allocatable", lambda v: MappingProxyType({k: float(n) for k, n in v.items()})),
}
COHORT_FIELDS: Fields = {
    "name": ("name", _same), "mechanism": ("mechanism", _same), "manager": ("manager", _same),
    "nodeLabels": ("node_labels", _labels), "tolerations": ("tolerations", lambda v: tuple(map(_toleration, v))),
    "runtimeClassName": ("runtime_class_name", _same), "resources": ("resources", _strings),
    "extraResources": ("extra_resources", _strings), "migStrategy": ("mig_strategy", _same),
    "mig": ("mig_profiles", _mig_profiles), "timeSlicing": ("time_slicing", _sharing("timeSlicing")),
    "mps": ("mps", _sharing("mps")), "driver": ("driver", _same), "deviceTypes": ("device_types", _strings),
    "deviceClasses": ("device_classes", _strings), "maxDevicesPerClaim": ("max_devices_per_claim", _same),
    "sharingStrategies": ("sharing_strategies", _strings),
    "adminAccessNamespaces": ("admin_access_namespaces", _strings),
    "autoscaling": ("autoscaled_allocatable", _allocatable),
}
SECURITY_FIELDS: Fields = {
    "runAsNonRoot": ("run_as_non_root", _same), "runAsUser": ("run_as_user", _same),
    "seccompProfile": ("seccomp_profile", _same), "allowPrivilegeEscalation": ("allow_privilege_escalation", _same),
    "readOnlyRootFilesystem": ("read_only_root_filesystem", _same),
    "dropCapabilities": ("drop_capabilities", lambda v: None if v is None else tuple(v)),
}
DEVICE_CLASS_FIELDS: Fields = {
    "name": ("name", _same), "driver": ("driver", _same), "deviceType": ("device_type", _same),
    "extendedResourceName": ("extended_resource_name", _same),
}
EXCEPTION_FIELDS: Fields = {
    "name": ("name", _same), "rules": ("rules", lambda v: frozenset(map(Rule, v))),
    "namespaces": ("namespaces", _strings), "names": ("names", _strings),
    "serviceAccounts": ("service_accounts", _strings), "users": ("users", _strings), "groups": ("groups", _strings),
    "schedulerNames": ("scheduler_names", _strings),
}
OVERRIDE_FIELDS: Fields = {
    "namespaces": ("namespaces", _strings), "mode": ("mode", MODES.__getitem__),
    "rules": ("actions", lambda v: MappingProxyType(_actions(v))), "language": ("language", _same),
}
LOOKUP_FIELDS: Fields = {
    "resourceClaims": ("resource_claims", _same), "deviceClasses": ("device_classes", _same),
    "namespaces": ("namespaces", _same), "configMaps": ("config_maps", _same), "secrets": ("secrets", _same),
    "nodes": ("nodes", _same), "resourceSlices": ("resource_slices", _same),
    "runtimeClasses": ("runtime_classes", _same), "nodePools": ("node_pools", _same),
    "gpuOperator": ("gpu_operator", _same), "pods": ("pods", _same),
    "timeoutSeconds": ("timeout_seconds", float),
}
IN_TREE_FIELDS: Fields = {"validation": ("validation", _same), "mutation": ("mutation", _same)}
POLICY_FIELDS: Fields = {
    "mode": ("mode", MODES.__getitem__), "language": ("language", _same),
    "docsBaseUrl": ("docs_base_url", lambda v: v.rstrip("/")), "serviceNamespace": ("service_namespace", _same),
    "exemptNamespaces": ("exempt_namespaces", frozenset), "rules": ("actions", _actions),
    "namespaceOverrides": ("namespace_overrides", lambda v: tuple(map(_override, v))),
    "namespaceCohorts": ("namespace_cohorts", _labels), "exceptions": ("exceptions", _exceptions),
    "securityDefaults": ("security", _security), "gpuDrivers": ("gpu_drivers", frozenset),
    "deviceClasses": ("device_classes", _device_classes), "cohorts": ("cohorts", lambda v: tuple(map(_cohort, v))),
    "visibleDeviceVariables": ("visible_device_variables", frozenset),
    "platformDeviceAnnotations": ("platform_device_annotations", _strings),
    "exclusiveLabel": ("exclusive_label", _same), "allocationLabel": ("allocation_label", _same),
    "lookups": ("lookups", lambda v: Lookups(**_given(v, LOOKUP_FIELDS))),
    "inTree": ("in_tree", lambda v: InTree(**_given(v, IN_TREE_FIELDS))),
}


# ---------------------------------------------------------------- reading files

def _yaml(text: str, source: str) -> Any:
    try:
        return yamlread.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError([f"not valid YAML{where}: {getattr(exc, 'problem', None) or exc}"], source) from None


def parse_policy(text: str, source: str = "policy") -> Policy:
    return build_policy(_yaml(text, source), source)


def _read(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"cannot read: {exc.strerror or exc}"], str(p)) from None
    except UnicodeDecodeError:
        raise ConfigError(["not UTF-8 text"], str(p)) from None


def load_policy(path: str | Path | None = None) -> Policy:
    """Load a complete policy file, or the shipped default when `path` is None."""
    p = Path(path) if path is not None else DEFAULT_PATH
    return parse_policy(_read(p), str(p))


def read_document(path: str | Path) -> dict:
    """A policy file as a mapping (an empty file is an empty overlay)."""
    data = _yaml(_read(Path(path)), str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError([f"policy: must be a mapping, not {type_of(data)}"], str(path))
    return data


def merged_document(overlays: Sequence[str | Path] = (), sets: Sequence[str] = (), *,
                    base: str | Path | None = None) -> dict:
    """`overlays` merged over `base` (the shipped default) as the chart merges its `policy:` value,
    then each `path=value` of `sets`: the document `load_layers` validates."""
    document = read_document(Path(base) if base is not None else DEFAULT_PATH)
    document = overlay_policy(document, [read_document(p) for p in overlays])
    for expression in sets:
        try:
            document = apply_set(document, expression)
        except SetError as exc:
            raise ConfigError([f"--set {exc}"], "policy") from None
    return document


def load_layers(overlays: Sequence[str | Path] = (), sets: Sequence[str] = (), *,
                base: str | Path | None = None) -> Policy:
    """The policy the CLI runs: `merged_document`, validated as one document."""
    names = [str(base) if base is not None else "the shipped default"] + [str(p) for p in overlays] + (
        ["--set"] if sets else [])
    return build_policy(merged_document(overlays, sets, base=base), " + ".join(names))


def default_policy() -> Policy:
    return load_policy(None)
