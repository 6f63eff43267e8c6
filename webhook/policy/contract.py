"""The one check contract: what a check applies to, and the one signature every check has.

A check is a module of `webhook/policy/checks` holding its `RULE` and, for what it applies to, a
function of (facts, context, policy) returning a list of Findings: `check` over a pod spec's GpuFacts (a
Pod's, or a controller's pod template's), `check_object` over a DRA object's ObjectFacts or an
infrastructure object's InfraFacts. `checks.REGISTRY` lists every check once per target
group, in the order their findings are reported; the engine runs each through the same guarded loop."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import ModuleType

from webhook.rules import Rule


class Target(enum.Enum):
    POD_SPEC = "pod spec"  # every pod-bearing kind, through its pod spec (GpuFacts)
    CLAIM = "claim"  # a ResourceClaim or ResourceClaimTemplate on its own (ObjectFacts)
    DEVICE_CLASS = "device class"  # a DeviceClass, or another kind of the alpha DRA API (ObjectFacts)
    # a controller's pod template (never a Pod: the controller's object was judged), through its GpuFacts
    TEMPLATE = "pod template"
    # GPU infrastructure: the GPU Operator's objects and Node updates (InfraFacts)
    INFRASTRUCTURE = "infrastructure"


POD_SPECS = frozenset({Target.POD_SPEC})
CLAIMS = frozenset({Target.CLAIM})
DRA_OBJECTS = frozenset({Target.CLAIM, Target.DEVICE_CLASS})
DEVICE_CLASSES = frozenset({Target.DEVICE_CLASS})
TEMPLATES = frozenset({Target.TEMPLATE})
INFRASTRUCTURE = frozenset({Target.INFRASTRUCTURE})


@dataclass(frozen=True, slots=True)
class Check:
    module: ModuleType
    applies_to: frozenset[Target]
    rule: Rule = field(init=False)
    # The module's function for the target, looked up on each call (a test may replace it).
    function: str = field(init=False)

    def __post_init__(self) -> None:
        pod = bool(self.applies_to & {Target.POD_SPEC, Target.TEMPLATE})
        if pod and len(self.applies_to) > 1:
            raise ValueError(f"{self.module.__name__}: pod specs and DRA objects have different facts")
        function = "check" if pod else "check_object"
        if not callable(getattr(self.module, function, None)):
            raise ValueError(f"{self.module.__name__} has no {function}(facts, context, policy)")
        object.__setattr__(self, "rule", self.module.RULE)
        object.__setattr__(self, "function", function)
