from functools import partial

from webhook.config.model import DEVICE_PLUGIN, Policy
from webhook.objects.access import as_dict, as_list
from webhook.objects.podspec import Container
from webhook.policy.context import Context
from webhook.policy.draft import Draft
from webhook.policy.gpu import GpuFacts
from webhook.policy.messages import Said, T, Text, who
from webhook.rules import Rule

RULE = Rule.HIDE_GPUS
VARIABLE = "NVIDIA_VISIBLE_DEVICES"


def mutate(draft: Draft, facts: GpuFacts, policy: Policy, context: Context | None = None,
           ephemeral: frozenset[str] | None = None) -> list[tuple[str, Said]]:
    """On pod CREATE: the containers and init containers that request no GPU. On an UPDATE of
    pods/ephemeralcontainers: the ephemeral containers it adds (`ephemeral`), which never request one; a
    CUDA image's ENV would otherwise give a debug container NVIDIA_VISIBLE_DEVICES=all."""
    runtime = as_dict(draft.root.get("spec")).get("runtimeClassName")  # after default-runtime-class
    if runtime is None or not any(c.mechanism == DEVICE_PLUGIN and c.runtime_class_name == runtime
                                  for c in policy.cohorts):
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
        if any(as_dict(e).get("name") == VARIABLE for e in env):
            continue
        index = c.position
        draft.node("spec", c.section, index, "env", create=list).append({"name": VARIABLE, "value": "void"})
        records.append((f"spec.{c.section}[{index}].env",
                        partial(_said, c, str(runtime))))
    return records


def _said(container: Container, runtime: str) -> Text:
    return T('{variable}=void on {container}, which requests no GPU, under the "{runtime}" runtime', variable=VARIABLE,
             container=who(container), runtime=runtime)
