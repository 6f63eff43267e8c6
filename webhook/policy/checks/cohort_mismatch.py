from webhook.config.model import DEVICE_PLUGIN, DRA, Cohort, Policy
from webhook.policy.cohorts import INFERRED, CohortChoice
from webhook.policy.context import Context
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import names, quoted
from webhook.policy.results import Finding
from webhook.rules import Rule

RULE = Rule.COHORT_MISMATCH


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
        where = (f"the cohorts {names(quoted([c.name for c in admitted]))}, the only ones its node selection "
                 f"({choice.path}) admits")
        running = {c.mechanism for c in admitted}
        out = []
        if DEVICE_PLUGIN not in running and facts.device_plugin:
            out += _mechanism(facts, next((c for c in admitted if c.mechanism == DRA), admitted[0]), where, policy,
                              device_plugin=True)
        if DRA not in running and (facts.gpu_claims or facts.dra_resources):
            out += _mechanism(facts, next((c for c in admitted if c.mechanism == DEVICE_PLUGIN), admitted[0]), where,
                              policy, dra=True)
        return out
    if choice.source == INFERRED:
        return []
    where = f'cohort "{cohort.name}" (chosen by {choice.path})'
    if cohort.mechanism == DRA:
        return _mechanism(facts, cohort, where, policy, device_plugin=True) if facts.device_plugin else []
    if cohort.mechanism == DEVICE_PLUGIN:
        return _mechanism(facts, cohort, where, policy, dra=True) if facts.gpu_claims or facts.dra_resources else []
    return []


def _conflict(facts: GpuFacts, choice: CohortChoice, policy: Policy) -> list[Finding]:
    where = " and ".join(choice.paths) or choice.path
    if len(choice.conflict) == 1:
        named = policy.cohort(choice.conflict[0])
        assert named is not None  # conflicts name the policy's cohorts
        labels = ", ".join(f"{k}={v}" for k, v in named.node_labels.items())
        selector = facts.view.spec.get("nodeSelector")
        clash = [(k, v) for k, v in (selector.items() if type(selector) is dict else ())
                 if k in named.node_labels and named.node_labels[k] != v]
        rules_out = (f"also requires {clash[0][0]}={clash[0][1]}, while its nodes carry "
                     f"{clash[0][0]}={named.node_labels[clash[0][0]]}" if clash else
                     f"rules out its nodes, which carry {labels}")
        return [Finding(
            path=choice.path,
            what=f'node selection ({where}) names cohort "{named.name}" but {rules_out}',
            why="no node can satisfy both, so the pod never schedules",
            fix=f"select the cohort's nodes by their labels ({labels}) without contradicting them")]
    # Every term needs these cohorts' nodes at once (an OR of terms that admits any node is no conflict).
    return [Finding(
        path=choice.path,
        what=f"node selection ({where}) requires the nodes of the cohorts {names(quoted(choice.conflict))} at once",
        why=f"a node carries one value of {policy.allocation_label}, so no node satisfies it and the pod never "
            "schedules",
        fix=f"select the nodes of one cohort only (label {policy.allocation_label})")]


def _mechanism(facts: GpuFacts, cohort: Cohort, where: str, policy: Policy, *, device_plugin: bool = False,
               dra: bool = False) -> list[Finding]:
    """GPUs asked for by a mechanism that the cohort(s) the pod is bound for do not run; `cohort` gives the fix."""
    that = "those cohorts run" if where.startswith("the cohorts") else "that cohort runs"
    out = []
    if device_plugin:
        for use in facts.device_plugin:
            out.append(Finding(
                path=use.path,
                what=f"{use.container.label} requests {use.resource} ({use.path}) but the pod is bound for {where}",
                why=f"{that} the NVIDIA DRA driver, not the device plugin, so the resource is never offered there",
                fix=f"ask for the GPU with a ResourceClaimTemplate of a {cohort.driver or 'gpu.nvidia.com'} "
                    "DeviceClass "
                    f"and resources.claims{_other(policy, DEVICE_PLUGIN)}"))
    if dra:
        # the same fix for a claim and a DRA-served resource: the device plugin's resource, or a DRA cohort
        bound, plugin, request, other = (f"but the pod is bound for {where}", f"{that} the NVIDIA device plugin",
                                         f"request {cohort.gpu_resource()}", _other(policy, DRA))
        out += [Finding(path=claim.path, what=f'claim "{claim.name}" ({claim.path}, {claim.ref}) asks for GPUs through '
                        f"DRA {bound}", why=f"{plugin}, whose GPUs DRA cannot allocate",
                        fix=f"{request} in resources.limits instead of the claim{other}")
                for claim in facts.gpu_claims]
        out += [Finding(path=use.path, what=f"{use.container.label} requests {use.resource} ({use.path}), served by "
                        f'DRA DeviceClass "{use.device_class.name if use.device_class else "?"}", {bound}',
                        why=f"{plugin}, not the DRA driver", fix=f"{request} from the device plugin instead{other}")
                for use in facts.dra_resources]
    return out



def _other(policy: Policy, mechanism: str) -> str:
    """', or target the cohort "x"' naming the cohorts that run `mechanism`, if any."""
    running = [c.name for c in policy.cohorts if c.mechanism == mechanism]
    if not running:
        return ""
    return f", or target {'the cohort' if len(running) == 1 else 'one of the cohorts'} {names(quoted(running))}"
