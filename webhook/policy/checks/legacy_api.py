"""legacy-api: DRA shapes that no Kubernetes 1.34+ cluster accepts, said before the apiserver
refuses them or a controller's pods never start:

- an object's `apiVersion` is `resource.k8s.io/v1alpha2` or `v1alpha3`;
- a ResourceClaim or ResourceClaimTemplate names a `resourceClassName` (the v1alpha2 model);
- a DeviceClass sets `spec.suitableNodes`;
- a pod's `resourceClaims[]` entry uses the `source:` wrapper (one finding per entry)."""
from webhook.config.model import Policy
from webhook.objects.access import as_str
from webhook.objects.kinds import LEGACY_DRA_VERSIONS
from webhook.policy.context import Context
from webhook.policy.contract import DRA_OBJECTS, POD_SPECS, Check, Definition
from webhook.policy.dra import ObjectFacts
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T
from webhook.policy.results import Finding

WHY = T("no Kubernetes 1.34+ cluster accepts this shape")


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.claims:
        return []
    return [
        Finding(
            path=f"{claim.path}.source",
            what=T('claim "{claim}" uses the source wrapper ({path})', claim=claim.name, path=f"{claim.path}.source"),
            why=WHY,
            fix=T("name resourceClaimTemplateName or resourceClaimName directly on the resourceClaims entry"))
        for claim in facts.claims
        if claim.legacy_source
    ]


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    """A DRA object: an alpha API version, a v1alpha2 resourceClassName, a DeviceClass's suitableNodes."""
    obj, spec, info = facts.obj, facts.claim, facts.device_class
    out = []
    version = as_str(obj.get("apiVersion")) or ""
    if version in LEGACY_DRA_VERSIONS:
        out.append(Finding(
            path="apiVersion",
            what=T("apiVersion is {version}", version=version),
            why=WHY,
            fix=T("rewrite it for resource.k8s.io/v1 (requests[].exactly.deviceClassName, DeviceClass CEL selectors)")))
    if spec is not None and spec.legacy_class:
        path = f"{spec.path}.resourceClassName"
        out.append(Finding(
            path=path,
            what=T('the claim names ResourceClass "{name}" ({path})', name=spec.legacy_class, path=path),
            why=WHY,
            fix=T("use spec.devices.requests[].exactly.deviceClassName with a DeviceClass")))
    if info is not None and "spec.suitableNodes" in info.legacy_fields:
        out.append(Finding(
            path="spec.suitableNodes",
            what=T("the DeviceClass sets suitableNodes (spec.suitableNodes)"),
            why=WHY,
            fix=T("remove it and constrain workloads with their own node selector or affinity")))
    return out


DEFINITION = Definition(
    "legacy-api",
    "DRA shapes that no Kubernetes 1.34+ cluster accepts",
    "DRA claims",
    __doc__,
    reason=N_(
        "Dynamic Resource Allocation changed shape several times before resource.k8s.io/v1; forms from older "
        "guides (the alpha API, suitableNodes, the source wrapper) are rejected or misread by every Kubernetes "
        "1.34+ apiserver."),
    checks=(
        Check(POD_SPECS, check),
        Check(DRA_OBJECTS, check_object),  # a DRA object's API before anything else of it (stage 0)
    ))
