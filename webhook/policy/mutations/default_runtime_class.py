"""default-runtime-class: the device-plugin cohort's RuntimeClass on GPU pods that set none. With RuntimeClass
lookups on, only one the cluster has: a pod given a RuntimeClass that does not exist is refused by the
apiserver (`pod rejected: RuntimeClass "nvidia" not found`), so the mutation is withheld and said instead."""
from webhook.config.model import DEVICE_PLUGIN, Cohort, Policy
from webhook.objects.podspec import PodView
from webhook.policy.cel import add, lit
from webhook.policy.cel.pods import all_containers, device_plugin_gpu, pin
from webhook.policy.context import Context
from webhook.policy.contract import Definition, InTree, Mutator, Variables
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T
from webhook.policy.pinning import pinnable, pinned
from webhook.policy.results import Finding

PATH = "spec.runtimeClassName"


def _wanted(facts: GpuFacts) -> Cohort | None:
    cohort = facts.choice.cohort
    if cohort is None or cohort.mechanism != DEVICE_PLUGIN or not facts.device_plugin:
        return None
    if facts.view.spec.get("runtimeClassName") is not None or not cohort.runtime_class_name:
        return None
    return cohort


def missing(cohort: Cohort, context: Context | None) -> bool:
    """The cluster is known to lack the cohort's RuntimeClass."""
    known = context.runtime_classes if context is not None else None
    return known is not None and cohort.runtime_class_name not in known


def mutate(draft: Draft, facts: GpuFacts, policy: Policy, context: Context | None = None) -> list[tuple[str, Said]]:
    # _wanted and missing, inline: this runs on every GPU pod's /mutate, where two calls cost 0.4 % of the decision
    cohort = facts.choice.cohort
    if cohort is None or cohort.mechanism != DEVICE_PLUGIN or not facts.device_plugin or \
            facts.view.spec.get("runtimeClassName") is not None or not cohort.runtime_class_name:
        return []
    if context is not None and context.runtime_classes is not None and \
            cohort.runtime_class_name not in context.runtime_classes:
        return []  # the cluster lacks it: withheld, and said (withheld())
    draft.node("spec")["runtimeClassName"] = cohort.runtime_class_name
    return [(PATH, lambda: T('runtimeClassName "{runtime}" of cohort "{cohort}"',
                             runtime=str(cohort.runtime_class_name), cohort=cohort.name))]


def absent_finding(cohort: Cohort, path: str = PATH) -> Finding:
    return Finding(
        path=path,
        what=T('RuntimeClass "{runtime}" of cohort "{cohort}" does not exist in the cluster, so {path} is not set',
               runtime=str(cohort.runtime_class_name), cohort=cohort.name, path=path),
        why=T('a pod that names a missing RuntimeClass is refused (RuntimeClass "{runtime}" not found), and GPU '
              "containers without the NVIDIA runtime may not see their GPUs", runtime=str(cohort.runtime_class_name)),
        fix=T('create RuntimeClass "{runtime}" (handler {runtime}, as the GPU Operator and the device plugin\'s '
              "chart install it), or set the cohort's runtimeClassName to one that exists (none where CDI or NRI "
              "injects the devices)", runtime=str(cohort.runtime_class_name)))


def withheld(facts: GpuFacts, policy: Policy, context: Context | None) -> list[Finding]:
    """What the mutation would have set but did not: the cohort's RuntimeClass is missing from the cluster
    (known only with RuntimeClass lookups on; tested first, as this runs on every /mutate)."""
    if context is None or context.runtime_classes is None:
        return []
    cohort = _wanted(facts)
    return [absent_finding(cohort)] if cohort is not None and missing(cohort, context) else []


# ----------------------------------------------------------------------------------- its in-tree export's coverage

def cohorts(policy: Policy) -> tuple[Cohort, ...]:
    """The pinnable cohorts whose Pods its in-tree policy decides (a device-plugin cohort without a RuntimeClass
    would have it write a null)."""
    return tuple(c for c in pinnable(policy) if _writable(c))


def _writable(c: Cohort) -> bool:
    """Its Pods get a RuntimeClass the policy can write: any cohort but a device-plugin one without one."""
    return c.mechanism != DEVICE_PLUGIN or c.runtime_class_name is not None


def exported(policy: Policy) -> bool:
    return any(c.mechanism == DEVICE_PLUGIN for c in cohorts(policy))


def covers(view: PodView, policy: Policy) -> bool:
    """Pinned, and not to a device-plugin cohort without a RuntimeClass."""
    c = pinned(view, policy)
    return c is not None and _writable(c)


# -------------------------------------------------------------------------------- its in-tree export, in CEL

def cel_patch(policy: Policy) -> tuple[Variables, str]:
    """mutate as a JSONPatch of a Pod pinned to one of `cohorts`: its cohort's RuntimeClass, where the pod sets
    none and asks for a device plugin's GPU."""
    s = "object.spec"
    chain = "".join(f"({pin(c, s, policy)}) ? {lit(c.runtime_class_name or '')} : "
                    for c in policy.derived(cohorts) if c.mechanism == DEVICE_PLUGIN)
    variables = [{"name": "runtimeClass", "expression": chain + "''"}, all_containers(s)]
    return variables, (f"!has({s}.runtimeClassName) && variables.runtimeClass != '' && {device_plugin_gpu()} ? "
                       f"[{add(lit('/spec/runtimeClassName'), 'variables.runtimeClass')}] : []")


DEFINITION = Definition(
    "default-runtime-class",
    "adds the device-plugin cohort's runtimeClassName to GPU pods that set none",
    "GPU runtime and security",
    __doc__,
    mutation=Mutator(mutate, withheld=withheld, stage=1),
    in_tree=InTree(exported, covers=covers, cohorts=cohorts, cel_patch=cel_patch))
