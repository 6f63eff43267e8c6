"""resource-not-offered: a GPU resource, DeviceClass or device type that the pod's
cohort does not offer, so it never schedules there.

- On a device-plugin cohort: each `nvidia.com/*` resource a container requests that the cohort does not
  advertise (its resources and extra resources, the names its time-slicing or MPS exposes, with
  `migStrategy: mixed` its MIG table's profiles); the message says why (renamed by sharing, MIG strategy,
  profile not in the table). `.shared` names on a cohort without sharing are sharing-not-enabled's.
- On a DRA cohort: each GPU request of a resolved claim, and each DRA-served extended resource, whose
  DeviceClass is not in the cohort's `deviceClasses`, selects another driver or a device type the cohort
  does not list, or a MIG profile its table lacks.
- A ResourceClaim or template on its own is checked against its cohort (the namespace's DRA cohort, else
  the only one)."""
import re
from collections.abc import Iterable

from webhook.config.mig import MIG_PROFILE_TABLES
from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, DeviceClassInfo, Policy
from webhook.objects.claims import DeviceRequest
from webhook.policy.context import Context
from webhook.policy.contract import CLAIMS, POD_SPECS, Check, Definition
from webhook.policy.dra import ObjectFacts
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, Arg, T, Text, names, quoted, who
from webhook.policy.results import Finding

MIG_PREFIX = "nvidia.com/mig-"


def class_problem(cohort: Cohort, info: DeviceClassInfo) -> Text | None:
    """Why a DRA cohort does not offer what a DeviceClass selects; None when it does."""
    if cohort.device_classes and info.name not in cohort.device_classes:
        listed = cohort.device_classes
        classes = names(quoted(listed))
        return T("the cohort offers only the DeviceClass {classes}", classes=classes) if len(listed) == 1 else \
            T("the cohort offers only the DeviceClasses {classes}", classes=classes)
    if info.driver and cohort.driver and info.driver != cohort.driver:
        return T("it selects devices of the driver {driver}; the cohort runs {cohort_driver}", driver=info.driver,
                 cohort_driver=cohort.driver)
    if cohort.device_types and info.device_type and info.device_type not in cohort.device_types:
        if cohort.device_types == ("gpu",):
            return T("it selects devices of type {type}; the cohort offers only type {types} (full GPUs)",
                     type=info.device_type, types=names(cohort.device_types))
        return T("it selects devices of type {type}; the cohort offers only type {types}", type=info.device_type,
                 types=names(cohort.device_types))
    return None


def _device_plugin(facts: GpuFacts, cohort: Cohort, policy: Policy) -> list[Finding]:
    offered = cohort.offered_resources()
    sharing = cohort.time_slicing is not None or cohort.mps is not None
    out = []
    for use in facts.device_plugin + facts.other_nvidia:
        name = use.resource
        if name in offered or (name.endswith(".shared") and not sharing):
            continue  # a shared name on a cohort without sharing is sharing-not-enabled's finding
        fix: Arg = T("request one of {resources}", resources=names(sorted(offered))) if offered else \
            T("target a cohort that offers it")
        renamed = [s for s in (cohort.time_slicing, cohort.mps) if s is not None and s.rename_by_default
                   and name in (r.name for r in s.resources)]
        unrenamed = [s for s in (cohort.time_slicing, cohort.mps) if s is not None and not s.rename_by_default
                     and name[: -len(".shared")] in (r.name for r in s.resources)] if name.endswith(".shared") else []
        if renamed:
            why = T("the cohort shares its GPUs (renameByDefault: true), so its nodes advertise {resource}.shared "
                    "instead of {resource} and the pod never schedules", resource=name)
            fix = T("request {resource}.shared: 1, or target a cohort with exclusive GPUs", resource=name)
        elif unrenamed:
            base = name[: -len(".shared")]
            why = T("the cohort shares its GPUs without renameByDefault, so its nodes advertise the shared replicas "
                    "as {resource}", resource=base)
            fix = T("request {resource}", resource=base)
        elif name.startswith(MIG_PREFIX):
            profile = name[len(MIG_PREFIX):]
            if cohort.mig_strategy == "none":
                why = T("this cohort runs migStrategy: none, so no node offers MIG resources and the pod never "
                        "schedules")
                fix = T("request {resource}, or have the GPU owner configure MIG geometry and migStrategy: mixed "
                        "first", resource=cohort.gpu_resource())
            elif cohort.mig_strategy == "single":
                why = T("with migStrategy: single the device plugin advertises MIG devices as nvidia.com/gpu")
                fix = T("request {resource}", resource=cohort.gpu_resource())
            else:
                table = ", ".join(f"{p}×{n}" for p, n in cohort.mig_profiles.items())
                why = T("profile {profile} is not in this cohort's MIG profile table ({table})", profile=profile,
                        table=table)
        else:
            why = T("no node of the cohort advertises it, so the pod never schedules")
        out.append(Finding(
            path=use.path,
            what=T('{container} requests {resource} ({path}) on cohort "{cohort}"', container=who(use.container),
                   resource=name, path=use.path, cohort=cohort.name),
            why=why,
            fix=fix))
    return out


_PROFILE_LITERAL = re.compile(r"\d+g\.\d+gb(?:\+me)?")
_KNOWN_PROFILES = tuple(dict.fromkeys(p for table in MIG_PROFILE_TABLES.values() for p in table))


def mig_problem(cohort: Cohort, info: DeviceClassInfo, leaf: DeviceRequest,
                policy: Policy) -> tuple[Text, Text] | None:
    """Why a DRA cohort's GPUs cannot host the MIG profile a request selects (by the NVIDIA driver's `profile`
    attribute, in the request's or the class's CEL selectors); None when one profile of the cohort's table
    may match, or when the selectors read more than the profile."""
    if info.device_type != "mig" or not cohort.mig_profiles or cohort.mechanism != DRA:
        return None
    expressions = (*(info.selectors or ()), *leaf.selectors)
    if not expressions:
        return None
    table = tuple(cohort.mig_profiles)
    named = tuple(p for e in expressions for p in _PROFILE_LITERAL.findall(e))
    others = tuple(p for p in dict.fromkeys((*named, *_KNOWN_PROFILES)) if p not in cohort.mig_profiles)
    verdicts = policy.class_selectors.mig_profiles(info.driver or cohort.driver or "gpu.nvidia.com", expressions,
                                                   table + others)
    if any(v is not False for v in verdicts[:len(table)]):
        return None
    asked = [p for p, v in zip(others, verdicts[len(table):]) if v is True]
    if not asked:
        return None
    table_text = ", ".join(f"{p}×{n}" for p, n in cohort.mig_profiles.items())
    return (T("it selects the MIG profile {profiles}, which no GPU of the cohort's model can host (its MIG profile "
              "table: {table})", profiles=names(asked), table=table_text),
            T("select a profile of the cohort's table, e.g. {profile}", profile=table[0]))


def unoffered(leaves: Iterable[DeviceRequest], cohort: Cohort, context: Context,
              policy: Policy) -> list[tuple[DeviceRequest, DeviceClassInfo, Text, Text | None]]:
    """(leaf, DeviceClass, why, fix or None) for each GPU request leaf the cohort does not offer. Of a request's
    firstAvailable alternatives only one has to be offered: the scheduler takes the first the node has."""
    problems = []
    offered_requests = set()
    for leaf in leaves:
        info = context.device_class(leaf.device_class)
        why = class_problem(cohort, info) if info else None
        fix = None
        if info is not None and why is None and (mig := mig_problem(cohort, info, leaf, policy)) is not None:
            why, fix = mig
        if info is None or why is None:
            offered_requests.add(leaf.path.split(".firstAvailable[")[0])
        else:
            problems.append((leaf, info, why, fix))
    return [(leaf, info, why, fix) for leaf, info, why, fix in problems
            if leaf.path.split(".firstAvailable[")[0] not in offered_requests]


def _example(cohort: Cohort) -> str:
    return cohort.device_classes[0] if cohort.device_classes else cohort.driver or "gpu.nvidia.com"


def check_object(facts: ObjectFacts, context: Context, policy: Policy) -> list[Finding]:
    """A GPU ResourceClaim or template on its own (bound for the namespace's DRA cohort)."""
    cohort = facts.cohort
    if cohort is None or not facts.gpu_leaves:
        return []
    return [Finding(
        path=f"{leaf.path}.deviceClassName",
        what=T('request "{request}" asks for DeviceClass "{device_class}" ({path}) on cohort "{cohort}"',
               request=leaf.name, device_class=info.name, path=f"{leaf.path}.deviceClassName", cohort=cohort.name),
        why=why,
        fix=fix or T("use a DeviceClass the cohort offers, e.g. {example}", example=_example(cohort)))
        for leaf, info, why, fix in unoffered(facts.gpu_leaves, cohort, context, policy)]


def _dra(facts: GpuFacts, cohort: Cohort, context: Context, policy: Policy) -> list[Finding]:
    out = []
    for claim in facts.gpu_claims:
        template = claim.ref_kind == "ResourceClaimTemplate"
        for req, info, problem, fix in unoffered(claim.gpu_requests, cohort, context, policy):
            args: dict[str, Arg] = {"claim": claim.name, "path": claim.path, "ref": claim.ref_name or "",
                                    "request": req.name, "request_path": req.path, "device_class": info.name,
                                    "cohort": cohort.name}
            out.append(Finding(
                path=claim.path,
                what=T('claim "{claim}" ({path}) uses template "{ref}", whose request "{request}" ({request_path}) '
                       'asks for DeviceClass "{device_class}" on cohort "{cohort}"', **args) if template else
                T('claim "{claim}" ({path}) uses ResourceClaim "{ref}", whose request "{request}" ({request_path}) '
                  'asks for DeviceClass "{device_class}" on cohort "{cohort}"', **args),
                why=problem,
                fix=fix or T("use a DeviceClass the cohort offers, e.g. {example}", example=_example(cohort))))
    for use in facts.dra_resources:
        assert use.device_class is not None  # DRA serves it
        why = class_problem(cohort, use.device_class)
        if why:
            out.append(Finding(
                path=use.path,
                what=T('{container} requests {resource} ({path}), DeviceClass "{device_class}", on cohort "{cohort}"',
                       container=who(use.container), resource=use.resource, path=use.path,
                       device_class=use.device_class.name, cohort=cohort.name),
                why=why,
                fix=T("request a DeviceClass the cohort offers")))
    return out


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    cohort = facts.choice.cohort
    if cohort is None:
        return []
    if cohort.mechanism == DEVICE_PLUGIN:
        return _device_plugin(facts, cohort, policy)
    if cohort.mechanism == DRA:
        return _dra(facts, cohort, context, policy)
    return []


DEFINITION = Definition(
    "resource-not-offered",
    "a GPU resource, DeviceClass or device type that the target cohort does not offer",
    "GPU allocation",
    __doc__,
    reason=N_(
        "A pod that asks for something its cohort's nodes never advertise is admitted and then stays Pending "
        "for ever: MIG resources without MIG geometry and a matching migStrategy, a MIG profile the GPU model "
        "cannot host, a device type the cohort's DeviceClasses exclude, a shared resource under another name."),
    checks=(
        Check(POD_SPECS, check),
        Check(CLAIMS, check_object, stage=3),  # what the cohort offers, last
    ))
