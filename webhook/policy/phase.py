"""Which admission phases a decision runs: the webhook's two endpoints run one each (/mutate, /validate);
`gpu-admission check` runs both, mutating first and validating the mutated object, as the apiserver does."""
from __future__ import annotations

from enum import Enum


class Phase(Enum):
    MUTATE = ("mutate", True, False)
    VALIDATE = ("validate", False, True)
    BOTH = ("mutate+validate", True, True)

    def __init__(self, endpoint: str, mutates: bool, validates: bool):
        self.endpoint = endpoint  # an endpoint's name: its path, its metrics label and its log field
        # Plain attributes, not properties or Flag arithmetic: the engine reads them on every decision.
        self.mutates = mutates
        self.validates = validates
