from webhook.config.model import Policy
from webhook.objects.access import as_str
from webhook.objects.kinds import LEGACY_DRA_VERSIONS
from webhook.policy.context import Context
from webhook.policy.dra import ObjectFacts
from webhook.policy.gpu import GpuFacts
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.LEGACY_API
WHY = "no Kubernetes 1.34+ cluster accepts this shape (it was removed with the alpha DRA API)"


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    if not facts.claims:
        return []
    return [
        Finding(
            path=f"{claim.path}.source",
            what=f'claim "{claim.name}" uses the source wrapper ({claim.path}.source)',
            why=WHY,
            fix="name resourceClaimTemplateName or resourceClaimName directly on the resourceClaims entry")
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
            what=f"apiVersion is {version}",
            why=WHY,
            fix="rewrite it for resource.k8s.io/v1 (requests[].exactly.deviceClassName, DeviceClass CEL selectors)"))
    if spec is not None and spec.legacy_class:
        path = f"{spec.path}.resourceClassName"
        out.append(Finding(
            path=path,
            what=f'the claim names ResourceClass "{spec.legacy_class}" ({path})',
            why=WHY,
            fix="use spec.devices.requests[].exactly.deviceClassName with a DeviceClass"))
    if info is not None and "spec.suitableNodes" in info.legacy_fields:
        out.append(Finding(
            path="spec.suitableNodes",
            what="the DeviceClass sets suitableNodes (spec.suitableNodes)",
            why=WHY,
            fix="remove it and constrain workloads with their own node selector or affinity"))
    return out
