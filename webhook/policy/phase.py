"""Which admission phases a decision runs: the webhook's two endpoints run one each (/mutate, /validate);
`gpu-admission check` runs both, mutating first and validating the mutated object, as the apiserver does."""
from __future__ import annotations

from enum import Flag


class Phase(Flag):
    MUTATE = 1
    VALIDATE = 2
    BOTH = MUTATE | VALIDATE

    @property
    def endpoint(self) -> str:
        """The endpoint's name ("mutate", "validate"): its path, its metrics label and its log field."""
        return self.name.lower() if self.name else ""
