from webhook.config.model import DEVICE_PLUGIN
from webhook.objects.access import as_dict, as_list
from webhook.rules import Rule

RULE = Rule.HIDE_GPUS
VARIABLE = "NVIDIA_VISIBLE_DEVICES"


def mutate(draft, facts, policy):
    runtime = as_dict(draft.root.get("spec")).get("runtimeClassName")  # after default-runtime-class
    if runtime is None or not any(c.mechanism == DEVICE_PLUGIN and c.runtime_class_name == runtime
                                  for c in policy.cohorts):
        return []
    gpu = facts.gpu_containers()
    records = []
    for c in facts.view.containers:
        if c.section == "ephemeralContainers" or c.name in gpu:
            continue
        env = as_list(c.raw.get("env"))
        if any(as_dict(e).get("name") == VARIABLE for e in env):
            continue
        index = c.position
        draft.node("spec", c.section, index, "env", create=list).append({"name": VARIABLE, "value": "void"})
        records.append((f"spec.{c.section}[{index}].env", f"{VARIABLE}=void on {c.label}, which requests no GPU, "
                        f'under the "{runtime}" runtime'))
    return records
