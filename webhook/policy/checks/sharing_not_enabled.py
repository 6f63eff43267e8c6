"""sharing-not-enabled: GPU sharing asked for on a cohort that does not enable it.

- Device-plugin cohort without `timeSlicing` or `mps`: a container requests a `.shared` name.
- DRA cohort: a resolved GPU claim of the pod has an opaque `GpuConfig` or `MigDeviceConfig` of a GPU
  driver whose `sharing.strategy` (`TimeSlicing`, `MPS`) is not in the cohort's `sharingStrategies`
  (one finding per claim and config; a strategy the driver does not know is device-config's).
- A ResourceClaim or template on its own with such a config, against its cohort (the namespace's DRA
  cohort, else the only one)."""
from collections.abc import Iterator

from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, Policy
from webhook.objects.claims import ClaimSpec
from webhook.policy.context import Context
from webhook.policy.contract import CLAIMS, POD_SPECS, Check, Definition
from webhook.policy.dra import ObjectFacts
from webhook.policy.driver_configs import STRATEGIES
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, T, Text, names, who
from webhook.policy.results import Finding


def claim_sharing_problems(spec: ClaimSpec, cohort: Cohort, policy: Policy) -> Iterator[tuple[str, str]]:
    """(path, strategy) of opaque GPU configs asking for sharing that a DRA cohort does not enable. A strategy
    the driver does not know is device-config's finding."""
    for config in spec.configs:
        strategy = config.sharing_strategy
        if strategy in STRATEGIES and (config.driver in policy.gpu_drivers or config.driver is None) \
                and strategy not in cohort.sharing_strategies:
            yield config.path, strategy


def dra_fix(cohort: Cohort) -> Text:
    if cohort.sharing_strategies:
        return T("use {strategies} or remove the sharing config", strategies=names(cohort.sharing_strategies))
    return T("remove the sharing config (exclusive GPUs), or have the GPU owner enable the driver's sharing feature "
             "gate and list it in the cohort's sharingStrategies")


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    cohort = facts.choice.cohort
    if cohort is None:
        return []
    out = []
    if cohort.mechanism == DEVICE_PLUGIN and cohort.time_slicing is None and cohort.mps is None:
        for use in facts.device_plugin:
            if use.resource.endswith(".shared"):
                out.append(Finding(
                    path=use.path,
                    what=T('{container} requests the shared resource {resource} ({path}) on cohort "{cohort}"',
                           container=who(use.container), resource=use.resource, path=use.path, cohort=cohort.name),
                    why=T("the cohort does not enable time-slicing or MPS, so no node advertises shared replicas"),
                    fix=T("request nvidia.com/gpu (a whole GPU)")))
    elif cohort.mechanism == DRA:
        for claim in facts.gpu_claims:
            if claim.spec is None:  # a GPU claim was resolved
                continue
            for path, strategy in claim_sharing_problems(claim.spec, cohort, policy):
                out.append(Finding(
                    path=claim.path,
                    what=T('claim "{claim}" ({path}, {ref}) asks for {strategy} sharing ({config}) on cohort '
                           '"{cohort}"', claim=claim.name, path=claim.path, ref=claim.ref, strategy=strategy,
                           config=path, cohort=cohort.name),
                    why=T("{strategy} is an Alpha driver feature this cohort does not enable", strategy=strategy),
                    fix=dra_fix(cohort)))
    return out


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    """A GPU ResourceClaim or template on its own (bound for the namespace's DRA cohort)."""
    spec, cohort = facts.claim, facts.cohort
    if spec is None or cohort is None or not facts.gpu_leaves:
        return []
    return [Finding(
        path=path,
        what=T('the template asks for {strategy} sharing ({path}) on cohort "{cohort}"', strategy=strategy, path=path,
               cohort=cohort.name) if facts.word == "template" else
        T('the claim asks for {strategy} sharing ({path}) on cohort "{cohort}"', strategy=strategy, path=path,
          cohort=cohort.name),
        why=T("{strategy} is an Alpha driver feature this cohort does not enable", strategy=strategy),
        fix=dra_fix(cohort))
        for path, strategy in claim_sharing_problems(spec, cohort, policy)]


DEFINITION = Definition(
    "sharing-not-enabled",
    "GPU sharing (time-slicing, MPS) asked for on a cohort that does not enable it",
    "GPU sharing",
    __doc__,
    reason=N_(
        "GPU sharing exists only where the GPU owner turned it on: shared replicas are advertised only by nodes "
        "whose device plugin has a time-slicing or MPS config, and the DRA driver's sharing is an Alpha feature "
        "behind its own feature gate. Elsewhere the pod never schedules or its claim cannot be prepared."),
    checks=(
        Check(POD_SPECS, check),
        Check(CLAIMS, check_object, stage=2),  # what the cohort enables, after the shape
    ))
