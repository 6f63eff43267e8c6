"""hide-gpus: `NVIDIA_VISIBLE_DEVICES=void` in the env of each container that gets no GPU, in a
pod under a device-plugin cohort's RuntimeClass. CUDA base images set `NVIDIA_VISIBLE_DEVICES=all`, which
the NVIDIA container toolkit reads as the device list: a sidecar built on one would see every GPU of the
node without asking for one. The pod spec's variable takes precedence over the image's, and `void` makes
the toolkit inject nothing. Containers that set the variable themselves are left alone. On a `kubectl
debug` update (pods/ephemeralcontainers), the ephemeral containers it adds, which never get a GPU."""
from functools import partial

from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.objects.access import as_dict, as_list
from webhook.objects.podspec import Container
from webhook.policy.context import Context
from webhook.policy.contract import Definition, Mutator
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T, Text, who

VARIABLE = "NVIDIA_VISIBLE_DEVICES"


def mutate(draft: Draft, facts: GpuFacts, policy: Policy, context: Context | None = None,
           ephemeral: frozenset[str] | None = None) -> list[tuple[str, Said]]:
    """On pod CREATE: the containers and init containers that request no GPU. On an UPDATE of
    pods/ephemeralcontainers: the ephemeral containers it adds (`ephemeral`), which never request one; a
    CUDA image's ENV would otherwise give a debug container NVIDIA_VISIBLE_DEVICES=all."""
    runtime = as_dict(draft.root.get("spec")).get("runtimeClassName")  # after default-runtime-class
    if type(runtime) is not str or runtime not in policy.derived(_device_plugin_runtimes):
        return []
    gpu = facts.gpu_containers()
    records: list[tuple[str, Said]] = []
    for c in facts.view.containers:
        if ephemeral is None:
            if c.section == "ephemeralContainers" or c.name in gpu:
                continue
        elif c.section != "ephemeralContainers" or c.name not in ephemeral:
            continue
        env = as_list(c.raw.get("env"))
        if env and any(as_dict(e).get("name") == VARIABLE for e in env):
            continue
        index = c.position
        draft.node("spec", c.section, index, "env", create=list).append({"name": VARIABLE, "value": "void"})
        records.append((f"spec.{c.section}[{index}].env",
                        partial(_said, c, str(runtime))))
    return records


def _device_plugin_runtimes(policy: Policy) -> frozenset[str]:
    """The RuntimeClasses of the device-plugin cohorts: those whose NVIDIA runtime reads the variable."""
    return frozenset(c.runtime_class_name for c in policy.cohorts if c.mechanism == DEVICE_PLUGIN and
                     c.runtime_class_name)


def debug(draft: Draft, facts: GpuFacts, policy: Policy, context: Context,
          added: frozenset[str]) -> list[tuple[str, Said]]:
    """A `kubectl debug` update: the ephemeral containers it adds (`added`)."""
    return mutate(draft, facts, policy, context, ephemeral=added)


def _said(container: Container, runtime: str) -> Text:
    return T('{variable}=void on {container}, which requests no GPU, under the "{runtime}" runtime', variable=VARIABLE,
             container=who(container), runtime=runtime)


DEFINITION = Definition(
    "hide-gpus",
    "sets NVIDIA_VISIBLE_DEVICES=void on non-GPU containers of pods under the nvidia runtime",
    "GPU device access",
    __doc__,
    mutation=Mutator(mutate, debug=debug, stage=2))  # after default-runtime-class, whose RuntimeClass it reads
