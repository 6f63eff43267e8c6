from webhook.config.model import Policy
from webhook.objects.access import as_str
from webhook.objects.kinds import LEGACY_DRA_VERSIONS
from webhook.policy.context import Context
from webhook.policy.dra import ObjectFacts
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import T
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.LEGACY_API
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
