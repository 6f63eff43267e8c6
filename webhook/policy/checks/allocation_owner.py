"""allocation-owner: one allocation owner per GPU. A node's GPUs are advertised by the standalone device
plugin, the standalone DRA driver, or the GPU Operator (ClusterPolicy: device plugin; GPUCluster: DRA),
never by two. Judged where the owners are declared: a controller's pod template that runs an owner
(`check`), the GPU Operator's objects, Node updates and DeviceClasses (`check_object`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.objects.access import as_dict, as_list, as_str
from webhook.objects.owners import owners
from webhook.policy.cohorts import AFFINITY_PATH, node_selection
from webhook.policy.context import Context
from webhook.policy.contract import DEVICE_CLASSES, INFRASTRUCTURE, TEMPLATES, Check, Definition
from webhook.policy.dra import ObjectFacts
from webhook.policy.gpu import GpuFacts
from webhook.policy.infra import InfraFacts, is_gpu_pod, labels_of, node_cohort, pod_name
from webhook.policy.messages import N_, Arg, T, Text, lookup_reason, names, quoted
from webhook.policy.results import Finding
from webhook.rule_id import Action

GPU_CLUSTER_NAME = "gpu-cluster"  # the Operator's GPUCluster is a singleton of this name
MPS_CAPABLE = "nvidia.com/mps.capable"
OPERATOR_KINDS = frozenset({"ClusterPolicy", "GPUCluster", "NVIDIADriver"})
MAX_NAMED_PODS = 5

WHY = T("a second allocation owner advertises the same GPUs twice")
MECHANISM_WORDS: Mapping[str, Text] = {DEVICE_PLUGIN: T("the NVIDIA device plugin"), "dra": T("the NVIDIA DRA driver")}


def _operated(obj: Mapping[str, Any]) -> bool:
    """Created by the GPU Operator for one of its objects: the Operator places its operands by its own node
    labels (nvidia.com/gpu.deploy.*), and its ClusterPolicy/GPUCluster is what this rule judges instead."""
    for ref in as_list(as_dict(obj.get("metadata")).get("ownerReferences")):
        ref = as_dict(ref)
        if (as_str(ref.get("apiVersion")) or "").startswith("nvidia.com/") \
                and as_str(ref.get("kind")) in OPERATOR_KINDS:
            return True
    return False


def _labels(cohort: Cohort) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(cohort.node_labels.items()))


def _confine(own: list[Cohort], admitted: frozenset[str], path: str) -> Arg:
    if not own:
        return T("no cohort of the policy runs this mechanism: remove the owner, or declare its cohort in the policy")
    chosen = [c for c in own if c.name in admitted] or own
    if len(chosen) == 1:
        return T('add the cohort "{cohort}"\'s node labels to {path} ({labels})', cohort=chosen[0].name, path=path,
                 labels=_labels(chosen[0]))
    return T("add one cohort's node labels to {path} (one of {cohorts})", path=path,
             cohorts=names(quoted(c.name for c in chosen)))


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    view = facts.view
    found = owners(view.spec, view.prefix)
    if not found or _operated(view.obj):
        return []
    out = []
    spec = view.spec
    admitted, open_ = node_selection(spec, policy)
    required = as_dict(as_dict(as_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    path = f"{view.prefix}.{AFFINITY_PATH}" if "nodeSelectorTerms" in required and not spec.get("nodeSelector") \
        else f"{view.prefix}.nodeSelector"
    owner = found[0]
    mechanism = MECHANISM_WORDS[owner.mechanism]
    own = [c for c in policy.cohorts if c.mechanism == owner.mechanism]
    others = [c.name for c in policy.cohorts if c.name in admitted and c.mechanism != owner.mechanism]
    args: dict[str, Arg] = {"container": owner.container, "program": owner.program, "mechanism": mechanism,
                            "path": path, "cohorts": names(quoted(others))}
    what = None
    if others and open_:
        what = T('container "{container}" runs {mechanism} ({program}), and its node selection ({path}) admits the '
                 "cohort {cohorts}, which the other mechanism owns, and GPU nodes of no cohort", **args)
    elif others:
        what = T('container "{container}" runs {mechanism} ({program}), and its node selection ({path}) admits the '
                 "cohort {cohorts}, which the other mechanism owns", **args)
    elif open_:
        what = T('container "{container}" runs {mechanism} ({program}), and its node selection ({path}) admits GPU '
                 "nodes of no cohort (another manager's nodes among them)", **args)
    if what is not None:
        out.append(Finding(path=path, what=what, why=WHY, fix=_confine(own, admitted, f"{view.prefix}.nodeSelector")))
    # An Operator that already runs this mechanism: a standalone release beside it is a second owner.
    if owner.mechanism == DEVICE_PLUGIN:
        running = [o for o in _listed(context, "clusterpolicies") if _plugin_enabled(o)]
        kind = "ClusterPolicy"
    else:
        running = list(_listed(context, "gpuclusters"))
        kind = "GPUCluster"
    if running:
        owner_path = owner.path
        out.append(Finding(
            path=owner_path,
            what=T('container "{container}" ({path}) runs {mechanism} beside the GPU Operator\'s {kind} "{name}", '
                   "which runs it already", container=owner.container, path=owner_path, mechanism=mechanism,
                   kind=kind, name=_name(running[0])),
            why=WHY,
            fix=T("leave the mechanism to the GPU Operator and uninstall this release, or remove the {kind}",
                  kind=kind)))
    return out


def _listed(context: Context, plural: str) -> tuple[Mapping[str, Any], ...]:
    """The Operator's objects of `plural` known to exist; none where the lookup cannot tell (CRDs not served,
    lookups off): then the rule says nothing."""
    found = context.operator.get(plural)
    if found is None or not found.found or type(found.value) is not tuple:
        return ()
    return tuple(o for o in found.value if type(o) is dict)


def _name(obj: Mapping[str, Any]) -> str:
    return as_str(as_dict(obj.get("metadata")).get("name")) or "?"


def _enabled(section: object, default: bool) -> bool:
    value = as_dict(section).get("enabled")
    return value if type(value) is bool else default


def _plugin_enabled(cluster_policy: Mapping[str, Any]) -> bool:
    """ClusterPolicy's device plugin: on unless `spec.devicePlugin.enabled` is false."""
    return _enabled(as_dict(cluster_policy.get("spec")).get("devicePlugin"), True)


def _dra_enabled(cluster_policy: Mapping[str, Any]) -> bool:
    """A DRA driver switched on in a ClusterPolicy (`spec.draDriver.enabled` or its `gpus.enabled`). Operator
    26.7's ClusterPolicy has no such field (its DRA workflow is the GPUCluster) and the apiserver prunes it;
    manifests for Operators that carry it are read here."""
    dra = as_dict(as_dict(cluster_policy.get("spec")).get("draDriver"))
    return bool(dra) and (_enabled(dra, False) or _enabled(dra.get("gpus"), False))


def check_object(facts: ObjectFacts | InfraFacts, context: Context, policy: Policy) -> list[Finding]:
    if isinstance(facts, ObjectFacts):
        return _device_class(facts, context)
    kind = facts.kind
    if kind == "GPUCluster":
        return _gpu_cluster(facts, context)
    if kind == "ClusterPolicy":
        return _cluster_policy(facts, context)
    if kind == "NVIDIADriver":
        return _nvidia_driver(facts, context)
    if kind == "Node":
        return _node(facts, context, policy)
    return []


def _others(context: Context, plural: str, name: str) -> list[Mapping[str, Any]]:
    return [o for o in _listed(context, plural) if _name(o) != name]


def _gpu_cluster(facts: InfraFacts, context: Context) -> list[Finding]:
    out = []
    if facts.name != GPU_CLUSTER_NAME:
        out.append(Finding(
            path="metadata.name",
            what=T('the GPUCluster is named "{name}" (metadata.name)', name=facts.name),
            why=T("the GPU Operator runs one GPUCluster, a singleton named gpu-cluster, and ignores any other"),
            fix=T('name it "{name}"', name=GPU_CLUSTER_NAME)))
    policies = _listed(context, "clusterpolicies")
    if policies:
        out.append(Finding(
            path="spec",
            what=T('the ClusterPolicy "{name}" exists, so this GPUCluster (spec) would be a second GPU Operator '
                   "workflow", name=_name(policies[0])),
            why=T("ClusterPolicy (device plugin) and GPUCluster (DRA) cannot coexist in one cluster"),
            fix=T("remove the ClusterPolicy first, or keep the device-plugin workflow")))
    return out


def _cluster_policy(facts: InfraFacts, context: Context) -> list[Finding]:
    out = []
    if _plugin_enabled(facts.obj) and _dra_enabled(facts.obj):
        out.append(Finding(
            path="spec.draDriver",
            what=T("the ClusterPolicy enables both the device plugin (spec.devicePlugin) and the DRA driver "
                   "(spec.draDriver)"),
            why=WHY,
            fix=T("disable one of them (spec.devicePlugin.enabled: false, or the DRA driver), or use a GPUCluster "
                  "for DRA")))
    clusters = _listed(context, "gpuclusters")
    if clusters:
        out.append(Finding(
            path="spec",
            what=T('the GPUCluster "{name}" exists, so this ClusterPolicy (spec) would be a second GPU Operator '
                   "workflow", name=_name(clusters[0])),
            why=T("ClusterPolicy (device plugin) and GPUCluster (DRA) cannot coexist in one cluster"),
            fix=T("remove the GPUCluster first, or keep the DRA workflow")))
    return out


def _selector(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """An NVIDIADriver's nodeSelector; None for the default driver (it takes the nodes no other selects)."""
    spec = as_dict(obj.get("spec"))
    if spec.get("default") is True:
        return None
    return {k: v for k, v in as_dict(spec.get("nodeSelector")).items() if type(k) is str and type(v) is str}


def _overlap(a: dict[str, str] | None, b: dict[str, str] | None) -> bool:
    """Some node can match both: two defaults, or two selectors that give no key two values."""
    if a is None or b is None:
        return a is None and b is None
    return all(b[k] == v for k, v in a.items() if k in b)


def _nvidia_driver(facts: InfraFacts, context: Context) -> list[Finding]:
    mine = _selector(facts.obj)
    clashing = [o for o in _others(context, "nvidiadrivers", facts.name) if _overlap(mine, _selector(o))]
    if not clashing:
        return []
    path = "spec.default" if mine is None else "spec.nodeSelector"
    return [Finding(
        path=path,
        what=T("its node selection ({path}) overlaps that of the NVIDIADriver {others}", path=path,
               others=names(quoted(_name(o) for o in clashing))),
        why=T("a node matched by two NVIDIADrivers gets two driver installs fighting over it"),
        fix=T("give each NVIDIADriver a nodeSelector that no other matches (a label value of its own)"))]


def _device_class(facts: ObjectFacts, context: Context) -> list[Finding]:
    info = facts.device_class
    if info is None or not info.extended_resource_name:
        return []
    name, resource = info.name, info.extended_resource_name
    listed = {_name(o): as_str(as_dict(o.get("spec")).get("extendedResourceName"))
              for o in _listed(context, "deviceclasses")}
    # the cluster's (or the given) classes, then the policy's list for those not among them
    mapping = {**{n: c.extended_resource_name for n, c in context.classes.items()}, **listed}
    others = sorted(n for n, mapped in mapping.items() if n != name and mapped == resource)
    if not others:
        return []
    return [Finding(
        path="spec.extendedResourceName",
        what=T("it maps {resource} (spec.extendedResourceName), as the DeviceClass {others} does already",
               resource=info.extended_resource_name, others=names(quoted(others))),
        why=T("the scheduler serves an extended resource from one DeviceClass only"),
        fix=T("map each extended resource from one DeviceClass; remove spec.extendedResourceName here or there"))]


def _node(facts: InfraFacts, context: Context, policy: Policy) -> list[Finding]:
    if facts.old is None:
        return []
    new, old = labels_of(facts.obj), labels_of(facts.old)
    was, now = node_cohort(old, policy), node_cohort(new, policy)
    out = []
    moved = was is not None and now is not was
    mps = new.get(MPS_CAPABLE) == "true" and old.get(MPS_CAPABLE) != "true" and now is not None \
        and now.mps is None and now.mechanism == DEVICE_PLUGIN
    if not (moved or mps):
        return []
    pods, unknown = _bound(context)
    if moved and (pods or unknown):
        assert was is not None
        args: dict[str, Arg] = {"old": was.name, "new": now.name if now else "", "pods": _pods(pods),
                                "reason": lookup_reason(unknown)}
        what = (T('its labels (metadata.labels) move it from the cohort "{old}" to "{new}" while the GPU pods '
                  "{pods} are bound to it", **args) if now and pods else
                T('its labels (metadata.labels) take it out of the cohort "{old}" while the GPU pods {pods} are bound '
                  "to it", **args) if pods else
                T('its labels (metadata.labels) move it out of the cohort "{old}"; whether GPU pods are bound to it '
                  "could not be told ({reason})", **args))
        out.append(Finding(
            path="metadata.labels", what=what,
            why=T("the pods keep the GPUs the old cohort's owner gave them while the new cohort's owner advertises "
                  "the same GPUs"),
            fix=T("drain the node (kubectl drain) before changing its cohort labels"), cap=Action.WARN))
    if mps:
        assert now is not None
        out.append(Finding(
            path=f'metadata.labels["{MPS_CAPABLE}"]',
            what=T('it is labelled {label}=true (metadata.labels["{label}"]) in the cohort "{cohort}", which '
                   "declares no MPS{bound}", label=MPS_CAPABLE, cohort=now.name,
                   bound=T("; GPU pods bound to it: {pods}", pods=_pods(pods)) if pods else ""),
            why=T("the device plugin chart starts its MPS control daemon on such nodes, a second owner of their GPUs"),
            fix=T("remove the label, or move the node to a cohort that declares MPS"), cap=Action.WARN))
    return out


def _bound(context: Context) -> tuple[list[str], str]:
    """(GPU pods bound to the node, why that could not be told or "")."""
    found = context.node_pods
    if found is None:
        return [], ""
    if not found.found:
        return [], found.reason or "not resolved"
    return sorted(pod_name(p) for p in found.value or () if type(p) is dict and is_gpu_pod(p)), ""


def _pods(pods: list[str]) -> Arg:
    shown = quoted(pods[:MAX_NAMED_PODS])
    if len(pods) > MAX_NAMED_PODS:
        return T("{pods} and {count} more", pods=", ".join(shown), count=len(pods) - MAX_NAMED_PODS)
    return names(shown)


DEFINITION = Definition(
    "allocation-owner",
    "GPU infrastructure that gives a node a second allocation owner: owner DaemonSets reaching another "
    "cohort, GPU Operator objects that clash, DeviceClasses sharing an extended resource, nodes moved "
    "between cohorts",
    "GPU infrastructure",
    __doc__,
    reason=N_(
        "Every other rule trusts the policy's picture of the cohorts: each GPU node has exactly one allocation "
        "owner. A second owner reaching the same nodes advertises the same GPUs twice, pods get GPUs that "
        "another owner also hands out, and NVIDIA's charts and the GPU Operator refuse it only after the fact."),
    checks=(
        Check(TEMPLATES, check),
        Check(DEVICE_CLASSES, check_object),
        Check(INFRASTRUCTURE, check_object),
    ))
