"""cohort-mismatch: a pod bound for a cohort that cannot give it the GPUs it asks for, or
for no node at all. Node selection is read as the scheduler reads it (required affinity an OR of terms,
each ANDed with nodeSelector; webhook/policy/cohorts.py):

- the selection is contradictory and names cohorts: two or more that every term needs at once, or one
  whose nodes another of its entries rules out (any pod, GPU or not);
- every term admits only the nodes of cohorts that do not run the pod's mechanism;
- the cohort chosen by node selection or by the namespace's default runs the other mechanism: a
  device-plugin resource bound for a DRA cohort, a GPU claim or DRA-served resource bound for a
  device-plugin cohort.

An inferred cohort (the only one running the pod's mechanism) never mismatches."""
from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, Policy
from webhook.policy.cohorts import INFERRED, CohortChoice
from webhook.policy.context import Context
from webhook.policy.contract import POD_SPECS, Check, Definition
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import N_, Arg, T, Text, names, quoted, who
from webhook.policy.results import Finding


def check(facts: GpuFacts, context: Context, policy: Policy) -> list[Finding]:
    choice = facts.choice
    if choice.conflict:
        return _conflict(facts, choice, policy)
    cohort = choice.cohort
    if cohort is None:
        # Several cohorts' nodes and no others: a mismatch only when none of them runs the pod's mechanism.
        admitted = [c for c in (policy.cohort(n) for n in choice.admitted) if c is not None]
        if not admitted or not facts.mechanisms:
            return []
        where = T("the cohorts {cohorts}, the only ones its node selection ({path}) admits",
                  cohorts=names(quoted([c.name for c in admitted])), path=choice.path)
        running = {c.mechanism for c in admitted}
        out = []
        if DEVICE_PLUGIN not in running and facts.device_plugin:
            out += _mechanism(facts, next((c for c in admitted if c.mechanism == DRA), admitted[0]), where, policy,
                              several=True, device_plugin=True)
        if DRA not in running and (facts.gpu_claims or facts.dra_resources):
            out += _mechanism(facts, next((c for c in admitted if c.mechanism == DEVICE_PLUGIN), admitted[0]), where,
                              policy, several=True, dra=True)
        return out
    if choice.source == INFERRED:
        return []
    where = T('cohort "{cohort}" (chosen by {path})', cohort=cohort.name, path=_origin(choice))
    if cohort.mechanism == DRA:
        return _mechanism(facts, cohort, where, policy, device_plugin=True) if facts.device_plugin else []
    if cohort.mechanism == DEVICE_PLUGIN:
        return _mechanism(facts, cohort, where, policy, dra=True) if facts.gpu_claims or facts.dra_resources else []
    return []


def _conflict(facts: GpuFacts, choice: CohortChoice, policy: Policy) -> list[Finding]:
    where = _origin(choice)
    if len(choice.conflict) == 1:
        named = policy.cohort(choice.conflict[0])
        assert named is not None  # conflicts name the policy's cohorts
        labels = ", ".join(f"{k}={v}" for k, v in named.node_labels.items())
        selector = facts.view.spec.get("nodeSelector")
        clash = [(k, v) for k, v in (selector.items() if type(selector) is dict else ())
                 if k in named.node_labels and named.node_labels[k] != v]
        what = T('node selection ({where}) names cohort "{cohort}" but also requires {wanted}, while its nodes '
                 "carry {carried}", where=where, cohort=named.name, wanted=f"{clash[0][0]}={clash[0][1]}",
                 carried=f"{clash[0][0]}={named.node_labels[clash[0][0]]}") if clash else \
            T('node selection ({where}) names cohort "{cohort}" but rules out its nodes, which carry {labels}',
              where=where, cohort=named.name, labels=labels)
        return [Finding(
            path=choice.path,
            what=what,
            why=T("no node can satisfy both, so the pod never schedules"),
            fix=T("select the cohort's nodes by their labels ({labels}) without contradicting them", labels=labels))]
    # Every term needs these cohorts' nodes at once (an OR of terms that admits any node is no conflict).
    return [Finding(
        path=choice.path,
        what=T("node selection ({where}) requires the nodes of the cohorts {cohorts} at once", where=where,
               cohorts=names(quoted(choice.conflict))),
        why=T("a node carries one value of {label}, so no node satisfies it and the pod never schedules",
              label=policy.allocation_label),
        fix=T("select the nodes of one cohort only (label {label})", label=policy.allocation_label))]


def _mechanism(facts: GpuFacts, cohort: Cohort, where: Text, policy: Policy, *, several: bool = False,
               device_plugin: bool = False, dra: bool = False) -> list[Finding]:
    """GPUs asked for by a mechanism that the cohort(s) the pod is bound for do not run (`several`: the pod is
    bound for several cohorts' nodes, `where` names them); `cohort` gives the fix."""
    out = []
    if device_plugin:
        for use in facts.device_plugin:
            out.append(Finding(
                path=use.path,
                what=T("{container} requests {resource} ({path}) but the pod is bound for {where}",
                       container=who(use.container), resource=use.resource, path=use.path, where=where),
                why=T("those cohorts run the DRA driver, which never offers the resource") if several else
                T("that cohort runs the DRA driver, which never offers the resource"),
                fix=T("ask for the GPU with a ResourceClaimTemplate of a {driver} DeviceClass and "
                      "resources.claims{other}", driver=cohort.driver or "gpu.nvidia.com",
                      other=_other(policy, DEVICE_PLUGIN))))
    if dra:
        # the same fix for a claim and a DRA-served resource: the device plugin's resource, or a DRA cohort
        resource, other = cohort.gpu_resource(), _other(policy, DRA)
        out += [Finding(path=claim.path,
                        what=T('claim "{claim}" ({path}, {ref}) asks for GPUs through DRA but the pod is bound for '
                               "{where}", claim=claim.name, path=claim.path, ref=claim.ref, where=where),
                        why=T("those cohorts run the NVIDIA device plugin, whose GPUs DRA cannot allocate") if several
                        else T("that cohort runs the NVIDIA device plugin, whose GPUs DRA cannot allocate"),
                        fix=T("request {resource} in resources.limits instead of the claim{other}", resource=resource,
                              other=other))
                for claim in facts.gpu_claims]
        out += [Finding(path=use.path,
                        what=T('{container} requests {resource} ({path}), served by DRA DeviceClass "{device_class}", '
                               "but the pod is bound for {where}", container=who(use.container),
                               resource=use.resource, path=use.path,
                               device_class=use.device_class.name if use.device_class else "?", where=where),
                        why=T("those cohorts run the NVIDIA device plugin, not the DRA driver") if several else
                        T("that cohort runs the NVIDIA device plugin, not the DRA driver"),
                        fix=T("request {resource} from the device plugin instead{other}", resource=resource,
                              other=other))
                for use in facts.dra_resources]
    return out



def _origin(choice: CohortChoice) -> Arg:
    """Where the choice comes from: its fields ("a and b"), or a namespace's default."""
    if choice.origin is not None:
        return choice.origin
    return names(choice.paths) if len(choice.paths) > 1 else choice.path


def _other(policy: Policy, mechanism: str) -> Arg:
    """', or target the cohort "x"' naming the cohorts that run `mechanism`, if any."""
    running = [c.name for c in policy.cohorts if c.mechanism == mechanism]
    if not running:
        return ""
    if len(running) == 1:
        return T(", or target the cohort {cohorts}", cohorts=names(quoted(running)))
    return T(", or target one of the cohorts {cohorts}", cohorts=names(quoted(running)))


DEFINITION = Definition(
    "cohort-mismatch",
    "the pod's GPU mechanism is not its target cohort's, or it targets two cohorts",
    "GPU allocation",
    __doc__,
    reason=N_(
        "Each GPU node belongs to one cohort, chosen by its node labels, and each cohort allocates GPUs one way. "
        "A pod sent to a cohort with the other mechanism's request stays Pending, and a node selection naming "
        "two cohorts matches no node."),
    checks=(
        Check(POD_SPECS, check),
    ))
