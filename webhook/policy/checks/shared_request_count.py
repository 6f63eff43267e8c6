"""shared-request-count: more than 1 of a shared GPU resource in one container.
Replicas of a time-sliced or MPS GPU are slices of one device, so two of them give no more compute and
the device plugin refuses them where the cohort says so: on a device-plugin cohort whose `timeSlicing`
sets `failRequestsGreaterThanOne: true`, or whose `mps` does not set it to false, a container that
requests more than 1 of a name its sharing exposes (with `.shared` appended under `renameByDefault`).
One finding per container and resource."""
from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T, Text, who
from webhook.policy.results import Finding


def failing_shared_names(cohort: Cohort) -> dict[str, Text]:
    """Shared resource name -> "time-sliced" | "MPS", for sharing that fails requests above 1."""
    out = {}
    for sharing, word in ((cohort.time_slicing, T("time-sliced")), (cohort.mps, T("MPS"))):
        if sharing is not None and sharing.fail_requests_greater_than_one:
            for name in sharing.exposed_names():
                out[name] = word
    return out


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    cohort = facts.choice.cohort
    if cohort is None or cohort.mechanism != DEVICE_PLUGIN or not facts.device_plugin:
        return []
    several = [use for use in facts.device_plugin if use.amount > 1]
    if not several:
        return []
    failing = failing_shared_names(cohort)
    out = []
    for use in several:
        word = failing.get(use.resource)
        if word:
            out.append(Finding(
                path=use.path,
                what=T("{container} requests {amount} of the {sharing} resource {resource} ({path})",
                       container=who(use.container), amount=f"{use.amount:g}", sharing=word, resource=use.resource,
                       path=use.path),
                why=T('cohort "{cohort}" fails a request for more than one shared replica on the node, after '
                      "admission", cohort=cohort.name),
                fix=T("request {resource}: 1", resource=use.resource)))
    return out


DEFINITION = Definition(
    "shared-request-count",
    "more than 1 of a shared (time-sliced or MPS) GPU resource in one container",
    "GPU sharing",
    __doc__,
    reason=N_(
        "The device plugin refuses more than one shared (time-sliced or MPS) replica per container only at "
        "allocation time on the node, with UnexpectedAdmissionError long after admission; more replicas buy "
        "neither memory nor proportional compute."),
    checks=(
        Check(POD_SPECS, check),
    ))
