"""claim-shape: GPU claims that the scheduler must not be asked for. On a ResourceClaim or
ResourceClaimTemplate, for each request (and `firstAvailable` alternative) whose DeviceClass is a GPU
driver's:

- `allocationMode: All` (every GPU of a node, however many there are);
- a `count` above the cohort's `maxDevicesPerClaim`, or, when no single request is over it, the claim's
  total above it (a `firstAvailable` request counts its largest alternative);
- `adminAccess: true` outside the cohort's `adminAccessNamespaces` (access to GPUs in use by others);

and for every request, GPU or not, in the `v1`/`v1beta2` shape with neither `exactly` nor
`firstAvailable`. The claim's cohort is its namespace's DRA cohort, else the policy's only one; with none,
the count is not checked."""
from webhook.config.model import Policy
from webhook.policy.context import Context
from webhook.policy.contract import CLAIMS, Check, Definition
from webhook.policy.dra import ObjectFacts
from webhook.policy.messages import N_, T
from webhook.policy.results import Finding


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    """A GPU ResourceClaim or template, or one with a request that says nothing of what it asks for."""
    spec, gpu_leaves, cohort = facts.claim, facts.gpu_leaves, facts.cohort
    if spec is None or not (gpu_leaves or any(not r.has_shape for r in spec.requests)):
        return []
    namespace = facts.namespace
    out: list[Finding] = []
    limit = cohort.max_devices_per_claim if cohort is not None else None
    cohort_name = cohort.name if cohort is not None else ""  # named only where the cohort sets a limit
    admins = cohort.admin_access_namespaces if cohort is not None else ()
    per_request: dict[str, int] = {}  # firstAvailable alternatives count once: the largest
    over = False
    for leaf in gpu_leaves:
        if leaf.allocation_mode == "All":
            path = f"{leaf.path}.allocationMode"
            out.append(Finding(
                path=path,
                what=T('request "{request}" sets allocationMode: All ({path})', request=leaf.name, path=path),
                why=T("it takes every matching GPU on a node, however many the node has"),
                fix=T("use allocationMode: ExactCount with a count")))
            continue
        key = leaf.path.split(".firstAvailable[")[0]
        per_request[key] = max(per_request.get(key, 0), leaf.count)
        if limit is not None and leaf.count > limit:
            over = True
            path = f"{leaf.path}.count"
            out.append(Finding(
                path=path,
                what=T('request "{request}" asks for {count} GPUs ({path})', request=leaf.name, count=leaf.count,
                       path=path),
                why=T('cohort "{cohort}" allows at most {limit} devices per claim', cohort=cohort_name, limit=limit),
                fix=T("ask for {limit} or fewer", limit=limit)))
        if leaf.admin_access and namespace not in admins:
            path = f"{leaf.path}.adminAccess"
            out.append(Finding(
                path=path,
                what=T('request "{request}" sets adminAccess: true ({path})', request=leaf.name, path=path),
                why=T('namespace "{namespace}" may not use admin access, which reaches GPUs of other workloads',
                      namespace=namespace),
                fix=T("remove adminAccess, or have the GPU owner list the namespace in the cohort's "
                      "adminAccessNamespaces")))
    total = sum(per_request.values())
    if limit is not None and not over and total > limit:
        path = f"{spec.path}.devices.requests"
        out.append(Finding(
            path=path,
            what=T("the claim's requests ask for {count} GPUs in all ({path})", count=total, path=path),
            why=T('cohort "{cohort}" allows at most {limit} devices per claim', cohort=cohort_name, limit=limit),
            fix=T("ask for fewer, or split the work")))
    for req in spec.requests:
        if not req.has_shape:
            out.append(Finding(
                path=req.path,
                what=T('request "{request}" ({path}) has neither exactly nor firstAvailable', request=req.name,
                       path=req.path),
                why=T("a resource.k8s.io/v1 request must say what it asks for"),
                fix=T("put deviceClassName, allocationMode and count under exactly (or list firstAvailable "
                      "alternatives)")))
    return out


DEFINITION = Definition(
    "claim-shape",
    "GPU claims with allocationMode All, too many devices, adminAccess, or no exactly/firstAvailable",
    "DRA claims",
    __doc__,
    reason=N_(
        "allocationMode All takes every matching GPU of a node, large counts monopolise nodes, and adminAccess "
        "reaches devices already allocated to other workloads; a resource.k8s.io/v1 request must also say what "
        "it asks for under exactly or firstAvailable."),
    checks=(
        Check(CLAIMS, check_object, stage=1),  # a DRA object's shape, after its API
    ))
