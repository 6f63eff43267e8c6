"""Exponential backoff with jitter, as client-go's reflector uses between failed list/watch attempts
(so that many webhook replicas do not hammer a recovering apiserver in step)."""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.5  # each delay is stretched by up to this fraction, at random

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The pause before retry number `attempt` (0 for the first retry)."""
        base = min(self.maximum, self.initial * self.factor ** min(attempt, 64))
        return base * (1.0 + self.jitter * (rng or random).random())
