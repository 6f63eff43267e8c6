"""Load and validate the policy YAML. Every error names the field and the reason; a policy with any
error is refused whole (never half-loaded)."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from webhook import yamlread
from webhook.config.mig import MIG_PROFILE_TABLES, PROFILE_NAME
from webhook.config.model import (
    DEVICE_PLUGIN,
    DRA,
    MECHANISMS,
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
from webhook.config.schema import schema_errors
from webhook.locale import LANGUAGES
from webhook.rules import DEFAULT_ACTIONS, Action, Rule
from webhook.version import docs_base_url

DEFAULT_PATH = Path(__file__).with_name("default.yaml")

DEFAULT_VISIBLE_DEVICE_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "CUDA_MPS_PIPE_DIRECTORY",
    "GPU_DEVICE_ORDINAL",
)
# GKE's device injection: the runtime mounts the host paths listed in `devices.gke.io/container.<name>`
# into that container (GPUDirect-TCPX manifests use it for /dev/nvidia*), outside any allocation.
DEFAULT_PLATFORM_DEVICE_ANNOTATIONS = ("devices.gke.io/container.",)
MODES = {"enforce": "enforce", "audit": "audit", "dry-run": "audit"}
MANAGERS = {"standalone": None, "gpu-operator-clusterpolicy": DEVICE_PLUGIN, "gpu-operator-gpucluster": DRA}
MIG_STRATEGIES = ("none", "single", "mixed")
DRA_SHARING = ("TimeSlicing", "MPS")
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_RESOURCE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class ConfigError(ValueError):
    """The policy is invalid. `errors` lists every problem as `field.path: reason`."""

    def __init__(self, errors: list[str], source: str = "policy"):
        self.errors = errors
        self.source = source
        super().__init__(f"{source}: " + "; ".join(errors))


class _Fields:
    """Reads one YAML mapping, recording errors with the field path, and flags unknown keys."""

    def __init__(self, data: Any, path: str, errors: list[str]):
        self.path = path
        self.errors = errors
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.error("", f"must be a mapping, not {_type(data)}")
            data = {}
        self.data = data
        self.seen: set[str] = set()

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, reason: str) -> None:
        where = self.sub(key) if key else (self.path or "policy")
        self.errors.append(f"{where}: {reason}")

    def get(self, key: str, kind: type | tuple, default: Any = None, check: Callable[[Any], str | None] | None = None):
        self.seen.add(key)
        if key not in self.data or self.data[key] is None:
            return default
        value = self.data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) and kind is not bool:
            self.error(key, f"must be {_kind_name(kind)}, not a boolean")
            return default
        if not isinstance(value, kind):
            self.error(key, f"must be {_kind_name(kind)}, not {_type(value)}")
            return default
        if check is not None:
            problem = check(value)
            if problem:
                self.error(key, problem)
                return default
        return value

    def strings(self, key: str, check: Callable[[str], str | None] | None = None, default=()) -> tuple[str, ...]:
        items = self.get(key, list, None)
        if items is None:
            return tuple(default)
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item:
                self.errors.append(f"{self.sub(key)}[{i}]: must be a non-empty string, not {_type(item)}")
                continue
            problem = check(item) if check else None
            if problem:
                self.errors.append(f"{self.sub(key)}[{i}]: {problem}")
                continue
            out.append(item)
        return tuple(out)

    def mappings(self, key: str) -> list[tuple[str, Any]]:
        items = self.get(key, list, [])
        return [(f"{self.sub(key)}[{i}]", item) for i, item in enumerate(items)]

    def done(self) -> None:
        for key in sorted(set(self.data) - self.seen, key=str):
            self.error(str(key), "unknown field")


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(
        type(value), type(value).__name__
    )


def _kind_name(kind: type | tuple) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a mapping"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _one_of(choices) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}, not {v!r}"


def _at_least(n: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= n else f"must be >= {n}"


def _pattern(regex: re.Pattern, what: str) -> Callable[[str], str | None]:
    return lambda v: None if regex.match(v) else f"{v!r} is not a valid {what}"


def _rule_ids(values: tuple[str, ...], path: str, errors: list[str]) -> frozenset[Rule]:
    out = set()
    for i, v in enumerate(values):
        try:
            out.add(Rule(v))
        except ValueError:
            errors.append(f"{path}[{i}]: unknown rule {v!r}; rules are {', '.join(r.value for r in Rule)}")
    return frozenset(out)


def _actions(data: Any, path: str, errors: list[str], with_on_error: bool):
    f = _Fields(data, path, errors)
    actions: dict[Rule, Action] = {}
    on_error: dict[Rule, str] = {}
    for key in list(f.data):
        f.seen.add(key)
        try:
            rule = Rule(key)
        except ValueError:
            f.error(str(key), f"unknown rule; rules are {', '.join(r.value for r in Rule)}")
            continue
        value = f.data[key]
        if isinstance(value, dict) and with_on_error:
            g = _Fields(value, f.sub(key), errors)
            action = "off" if g.data.get("action") is False else g.get("action", str, None,
                                                                       _one_of([a.value for a in Action]))
            g.seen.add("action")
            err = g.get("onError", str, None, _one_of(["allow", "deny"]))
            g.done()
            if action:
                actions[rule] = Action(action)
            if err:
                on_error[rule] = err
        elif isinstance(value, str) and value in {a.value for a in Action}:
            actions[rule] = Action(value)
        elif value is False:  # YAML 1.1 (PyYAML, Helm) reads an unquoted `off` as false
            actions[rule] = Action.OFF
        else:
            hint = "an action" + (" or a mapping with action and onError" if with_on_error else "")
            f.error(str(key), f"must be {hint} (enforce, warn, audit, off), not {value!r}")
    return actions, on_error


def _toleration(data: Any, path: str, errors: list[str]) -> Toleration | None:
    f = _Fields(data, path, errors)
    key = f.get("key", str)
    op = f.get("operator", str, "Equal", _one_of(TOLERATION_OPERATORS))
    value = f.get("value", str)
    effect = f.get("effect", str, None, _one_of(TAINT_EFFECTS))
    f.done()
    if op == "Exists" and value:
        f.error("value", "must be empty when operator is Exists")
    if op == "Equal" and not key:
        f.error("key", "is required when operator is Equal")
    return Toleration(key=key, operator=op, value=value, effect=effect)


def _sharing(data: Any, path: str, errors: list[str], *, kind: str) -> Sharing | None:
    if data is None:
        return None
    f = _Fields(data, path, errors)
    resources = []
    for rpath, item in f.mappings("resources"):
        g = _Fields(item, rpath, errors)
        name = g.get("name", str, None, _pattern(_RESOURCE_NAME, "resource name"))
        replicas = g.get("replicas", int, None, _at_least(2))
        g.done()
        if name is None:
            g.error("name", "is required")
        if "replicas" not in g.data:
            g.error("replicas", "is required")
        if name and replicas:
            resources.append(SharedResource(name, replicas))
    if not f.data.get("resources"):
        f.error("resources", f"must list at least one resource to share by {kind}")
    rename = f.get("renameByDefault", bool, False)
    # The device plugin always fails MPS requests for more than one replica.
    fail = f.get("failRequestsGreaterThanOne", bool, kind == "MPS")
    f.done()
    return Sharing(tuple(resources), rename_by_default=rename, fail_requests_greater_than_one=fail)


def _mig_profiles(f: _Fields, errors: list[str]) -> dict[str, int]:
    raw = f.get("mig", dict, None)
    if raw is None:
        return {}
    g = _Fields(raw, f.sub("mig"), errors)
    model = g.get("model", str, None, _one_of(sorted(MIG_PROFILE_TABLES)))
    profiles = g.get("profiles", dict, None)
    g.done()
    if model and profiles:
        g.error("", "give either model or profiles, not both")
    if model:
        return dict(MIG_PROFILE_TABLES[model])
    out = {}
    for name, count in (profiles or {}).items():
        if not isinstance(name, str) or not PROFILE_NAME.match(name):
            errors.append(f"{g.sub('profiles')}.{name}: not a MIG profile name like 1g.5gb")
        elif not isinstance(count, int) or isinstance(count, bool) or count < 1:
            errors.append(f"{g.sub('profiles')}.{name}: must be an instance count >= 1")
        else:
            out[name] = count
    if not out:
        g.error("", "must name a GPU model (one of " + ", ".join(sorted(MIG_PROFILE_TABLES)) + ") or list profiles")
    return out


def _cohort(data: Any, path: str, errors: list[str]) -> Cohort | None:
    f = _Fields(data, path, errors)
    start = len(errors)
    name = f.get("name", str, None, _pattern(_DNS_LABEL, "cohort name (lower-case DNS label)"))
    if "name" not in f.data:
        f.error("name", "is required")
    mechanism = f.get("mechanism", str, None, _one_of(MECHANISMS))
    if "mechanism" not in f.data:
        f.error("mechanism", f"is required ({' or '.join(MECHANISMS)})")
    manager = f.get("manager", str, "standalone", _one_of(list(MANAGERS)))
    if mechanism and MANAGERS.get(manager) not in (None, mechanism):
        f.error("manager", f"{manager} runs the {MANAGERS[manager]} mechanism, not {mechanism}")
    labels = f.get("nodeLabels", dict, {})
    for k, v in labels.items():
        if not isinstance(k, str) or not _LABEL_KEY.match(k):
            errors.append(f"{f.sub('nodeLabels')}: {k!r} is not a valid label key")
        elif not isinstance(v, str) or not _LABEL_VALUE.match(v):
            errors.append(f"{f.sub('nodeLabels')}.{k}: {v!r} is not a valid label value (quote numbers and booleans)")
    if not labels:
        f.error("nodeLabels", "must select the cohort's nodes with at least one label")
    tolerations = tuple(t for p, d in f.mappings("tolerations") if (t := _toleration(d, p, errors)))
    autoscaling = f.get("autoscaling", dict)

    # `mig` (the GPU model's profile table) is both mechanisms': the device plugin advertises its profiles, the DRA
    # driver publishes MIG devices of them
    dp_fields = ("runtimeClassName", "resources", "extraResources", "migStrategy", "timeSlicing", "mps")
    dra_fields = ("driver", "deviceTypes", "deviceClasses", "maxDevicesPerClaim", "sharingStrategies",
                  "adminAccessNamespaces")
    wrong = dra_fields if mechanism == DEVICE_PLUGIN else dp_fields if mechanism == DRA else ()
    for key in wrong:
        if key in f.data:
            f.error(key, f"applies only to mechanism {DRA if mechanism == DEVICE_PLUGIN else DEVICE_PLUGIN}")
            f.seen.add(key)

    kwargs: dict[str, Any] = {}
    if mechanism == DEVICE_PLUGIN:
        kwargs["runtime_class_name"] = f.get("runtimeClassName", str, "nvidia",
                                             _pattern(_DNS_SUBDOMAIN, "RuntimeClass name"))
        kwargs["resources"] = f.strings("resources", _pattern(_RESOURCE_NAME, "resource name"), ("nvidia.com/gpu",))
        kwargs["extra_resources"] = f.strings("extraResources", _pattern(_RESOURCE_NAME, "resource name"))
        strategy = f.get("migStrategy", str, "none", _one_of(MIG_STRATEGIES))
        kwargs["mig_strategy"] = strategy
        profiles = _mig_profiles(f, errors)
        if strategy != "none" and not profiles:
            f.error("mig", f"migStrategy {strategy} needs the GPU model's profile table (mig.model or mig.profiles)")
        kwargs["mig_profiles"] = MappingProxyType(profiles)
        kwargs["time_slicing"] = _sharing(f.get("timeSlicing", dict), f.sub("timeSlicing"), errors, kind="time-slicing")
        kwargs["mps"] = _sharing(f.get("mps", dict), f.sub("mps"), errors, kind="MPS")
        if kwargs["time_slicing"] and kwargs["mps"]:
            f.error("mps", "a cohort shares GPUs by time-slicing or by MPS, not both")
    elif mechanism == DRA:
        kwargs["driver"] = f.get("driver", str, "gpu.nvidia.com", _pattern(_DNS_SUBDOMAIN, "driver name"))
        kwargs["device_types"] = f.strings("deviceTypes", None, ("gpu",))
        kwargs["device_classes"] = f.strings("deviceClasses", _pattern(_DNS_SUBDOMAIN, "DeviceClass name"))
        kwargs["max_devices_per_claim"] = f.get("maxDevicesPerClaim", int, 8, _at_least(1))
        kwargs["sharing_strategies"] = f.strings("sharingStrategies", _one_of(DRA_SHARING))
        kwargs["admin_access_namespaces"] = f.strings("adminAccessNamespaces", _pattern(_DNS_LABEL, "namespace"))
        kwargs["mig_profiles"] = MappingProxyType(_mig_profiles(f, errors))
    if autoscaling is not None:
        kwargs["autoscaled"] = True
        kwargs["autoscaled_allocatable"] = MappingProxyType(_autoscaling(autoscaling, f.sub("autoscaling"), errors))
    f.done()
    if len(errors) > start or not name or not mechanism:
        return None
    return Cohort(
        name=name,
        mechanism=mechanism,
        manager=manager,
        node_labels=MappingProxyType(dict(labels)),
        tolerations=tolerations,
        **kwargs,
    )


def _autoscaling(data: dict, path: str, errors: list[str]) -> dict[str, float]:
    """`autoscaling.allocatable`: the most of each extended resource one node the autoscaler adds can have."""
    f = _Fields(data, path, errors)
    out: dict[str, float] = {}
    for key, value in f.get("allocatable", dict, {}).items():
        if not isinstance(key, str) or not _RESOURCE_NAME.match(key):
            errors.append(f"{f.sub('allocatable')}: {key!r} is not an extended resource name")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            errors.append(f"{f.sub('allocatable')}.{key}: must be a count >= 0")
        else:
            out[key] = float(value)
    f.done()
    return out


def _security(data: Any, errors: list[str]) -> SecurityDefaults:
    f = _Fields(data, "securityDefaults", errors)
    d = SecurityDefaults()

    def field(key, kind, default, check=None):
        # absent: the shipped default; an explicit null: this default is not set at all
        return None if key in f.data and f.data[key] is None else f.get(key, kind, default, check)

    out = SecurityDefaults(
        run_as_non_root=field("runAsNonRoot", bool, d.run_as_non_root),
        run_as_user=field("runAsUser", int, d.run_as_user, _at_least(0)),
        seccomp_profile=field("seccompProfile", str, d.seccomp_profile, _one_of(["RuntimeDefault", "Unconfined"])),
        allow_privilege_escalation=field("allowPrivilegeEscalation", bool, d.allow_privilege_escalation),
        read_only_root_filesystem=field("readOnlyRootFilesystem", bool, d.read_only_root_filesystem),
        drop_capabilities=() if "dropCapabilities" in f.data and f.data["dropCapabilities"] is None
        else f.strings("dropCapabilities", None, d.drop_capabilities),
    )
    f.seen.update(f.data)
    f.done()
    if out.run_as_non_root and out.run_as_user == 0:
        f.error("runAsUser", "0 contradicts runAsNonRoot: true")
    return out


def _device_class(data: Any, path: str, errors: list[str]) -> DeviceClassInfo | None:
    f = _Fields(data, path, errors)
    name = f.get("name", str, None, _pattern(_DNS_SUBDOMAIN, "DeviceClass name"))
    if "name" not in f.data:
        f.error("name", "is required")
    info = DeviceClassInfo(
        name=name or "",
        driver=f.get("driver", str, None, _pattern(_DNS_SUBDOMAIN, "driver name")),
        device_type=f.get("deviceType", str),
        extended_resource_name=f.get("extendedResourceName", str, None, _pattern(_RESOURCE_NAME, "resource name")),
    )
    f.done()
    return info if name else None


def _exception(data: Any, path: str, errors: list[str]) -> Exception_ | None:
    f = _Fields(data, path, errors)
    name = f.get("name", str, path)
    rules = _rule_ids(f.strings("rules"), f.sub("rules"), errors)
    if not rules:
        f.error("rules", "must name the rules the exception lifts")
    sa_check = lambda v: None if re.match(r"^[a-z0-9-]+/[a-z0-9.-]+$", v) else f"{v!r} must be namespace/name"
    exc = Exception_(
        name=name,
        rules=rules,
        namespaces=f.strings("namespaces"),
        names=f.strings("names"),
        service_accounts=f.strings("serviceAccounts", sa_check),
        users=f.strings("users"),
        groups=f.strings("groups"),
        scheduler_names=f.strings("schedulerNames"),
    )
    f.done()
    if not any((exc.namespaces, exc.names, exc.service_accounts, exc.users, exc.groups, exc.scheduler_names)):
        f.error("", "must select something (namespaces, names, serviceAccounts, users, groups or schedulerNames); "
                "an exception for everything is `rules: {<id>: off}`")
    return exc if rules else None


def _lookups(data: Any, errors: list[str]) -> Lookups:
    f = _Fields(data, "lookups", errors)
    out = Lookups(
        resource_claims=f.get("resourceClaims", bool, False),
        device_classes=f.get("deviceClasses", bool, False),
        namespaces=f.get("namespaces", bool, False),
        config_maps=f.get("configMaps", bool, False),
        secrets=f.get("secrets", bool, False),
        nodes=f.get("nodes", bool, False),
        resource_slices=f.get("resourceSlices", bool, False),
        runtime_classes=f.get("runtimeClasses", bool, False),
        node_pools=f.get("nodePools", bool, False),
        gpu_operator=f.get("gpuOperator", bool, False),
        pods=f.get("pods", bool, False),
        timeout_seconds=f.get("timeoutSeconds", float, 1.0,
                              lambda v: None if 0 < v <= 5 else "must be > 0 and <= 5 (the webhook's own timeout)"),
    )
    f.done()
    return out


def _in_tree(data: Any, errors: list[str]) -> InTree:
    f = _Fields(data, "inTree", errors)
    out = InTree(validation=f.get("validation", bool, False), mutation=f.get("mutation", bool, False))
    f.done()
    return out


def _location(error: str) -> str:
    return error.split(": ", 1)[0]


def _related(a: str, b: str) -> bool:
    """One field path is the other or inside it (`cohorts[0]` and `cohorts[0].mig`)."""
    short, long = sorted((a, b), key=len)
    return long == short or (long.startswith(short) and long[len(short)] in ".[")


def build_policy(data: Any, source: str = "policy") -> Policy:
    """Validate a parsed policy document, by the JSON Schema first, then by the checks that a schema
    cannot express (names used twice, references to cohorts and classes); raise ConfigError listing
    every problem. Where the schema has refused a field, the other checks add nothing about it."""
    structural = schema_errors(data)
    try:
        policy = _build_policy(data, source)
    except ConfigError as exc:
        if not structural:
            raise
        others = [e for e in exc.errors if not any(_related(_location(e), _location(s)) for s in structural)]
        raise ConfigError(structural + others, source) from None
    if structural:
        raise ConfigError(structural, source)
    return policy


def _build_policy(data: Any, source: str) -> Policy:
    errors: list[str] = []
    top = _Fields(data, "", errors)
    mode = top.get("mode", str, "enforce", _one_of(list(MODES)))
    indexed = [(p, c) for p, d in top.mappings("cohorts") if (c := _cohort(d, p, errors))]
    cohorts = [c for _, c in indexed]
    if "cohorts" in top.data and not top.data.get("cohorts"):
        top.error("cohorts", "must list at least one cohort")
    names = [c.name for c in cohorts]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        top.error("cohorts", f"cohort name {dup!r} is used twice")
    for i, a in enumerate(cohorts):
        for b in cohorts[i + 1:]:
            if dict(a.node_labels) == dict(b.node_labels):
                top.error("cohorts", f"cohorts {a.name!r} and {b.name!r} select the same nodes; "
                          "each GPU node belongs to exactly one cohort")

    actions, on_error = _actions(top.get("rules", dict, {}), "rules", errors, with_on_error=True)
    overrides = []
    for path, item in top.mappings("namespaceOverrides"):
        f = _Fields(item, path, errors)
        nss = f.strings("namespaces", _pattern(_DNS_LABEL, "namespace"))
        if not nss:
            f.error("namespaces", "must list at least one namespace")
        o_mode = f.get("mode", str, None, _one_of(list(MODES)))
        o_actions, _ = _actions(f.get("rules", dict, {}), f.sub("rules"), errors, with_on_error=False)
        o_language = f.get("language", str, None, _one_of(list(LANGUAGES)))
        f.done()
        overrides.append(NamespaceOverride(nss, MODES.get(o_mode) if o_mode else None, MappingProxyType(o_actions),
                                           o_language))

    ns_cohorts = top.get("namespaceCohorts", dict, {})
    for ns, cohort in ns_cohorts.items():
        if cohort not in names:
            listed = [d.get("name") for _, d in top.mappings("cohorts") if isinstance(d, dict) and d.get("name")]
            errors.append(f"namespaceCohorts.{ns}: unknown cohort {cohort!r}; cohorts are "
                          f"{', '.join(map(str, listed)) or 'none'}")

    classes: dict[str, DeviceClassInfo] = {}
    for path, item in top.mappings("deviceClasses"):
        info = _device_class(item, path, errors)
        if info:
            classes[info.name] = info
    for path, c in indexed:
        for cls in c.device_classes:
            if cls not in classes:
                errors.append(f"{path}.deviceClasses: unknown DeviceClass {cls!r}; "
                              "list it under deviceClasses")

    variables = top.strings("visibleDeviceVariables",
                            _pattern(re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$"), "variable name"),
                            DEFAULT_VISIBLE_DEVICE_VARIABLES)
    platform = top.strings("platformDeviceAnnotations",
                           _pattern(re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)[-A-Za-z0-9_.]*$"),
                                    "annotation key prefix"),
                           DEFAULT_PLATFORM_DEVICE_ANNOTATIONS)
    policy = Policy(
        cohorts=tuple(cohorts),
        mode=MODES.get(mode, "enforce"),
        language=top.get("language", str, "en", _one_of(list(LANGUAGES))),
        docs_base_url=top.get("docsBaseUrl", str, docs_base_url()).rstrip("/"),
        service_namespace=top.get("serviceNamespace", str, "gpu-admission", _pattern(_DNS_LABEL, "namespace")),
        exempt_namespaces=frozenset(top.strings("exemptNamespaces", _pattern(_DNS_LABEL, "namespace"))),
        actions=MappingProxyType({**DEFAULT_ACTIONS, **actions}),
        on_error=MappingProxyType(on_error),
        namespace_overrides=tuple(overrides),
        namespace_cohorts=MappingProxyType(dict(ns_cohorts)),
        exceptions=tuple(e for p, d in top.mappings("exceptions") if (e := _exception(d, p, errors))),
        security=_security(top.get("securityDefaults", dict), errors),
        gpu_drivers=frozenset(top.strings("gpuDrivers", _pattern(_DNS_SUBDOMAIN, "driver name"), ("gpu.nvidia.com",))),
        device_classes=MappingProxyType(classes),
        visible_device_variables=frozenset(variables),
        platform_device_annotations=tuple(platform),
        exclusive_label=top.get("exclusiveLabel", str, "workload.example.com/gpu-exclusive",
                                _pattern(_LABEL_KEY, "label key")),
        allocation_label=top.get("allocationLabel", str, "workload.example.com/gpu-allocation",
                                 _pattern(_LABEL_KEY, "label key")),
        lookups=_lookups(top.get("lookups", dict), errors),
        in_tree=_in_tree(top.get("inTree", dict), errors),
    )
    if "cohorts" not in top.data:
        top.error("cohorts", "is required")
    top.done()
    if errors:
        raise ConfigError(errors, source)
    return policy


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
        raise ConfigError([f"policy: must be a mapping, not {_type(data)}"], str(path))
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
