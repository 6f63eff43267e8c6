"""`nvidia-smi mig -lgip`: the GPU-instance profiles of each GPU and the most instances of each, which is the
table a cohort's `mig.profiles` holds (webhook.config.mig)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from webhook.config.mig import PROFILE_NAME
from webhook.host.nvsmi import ParseError

# "|   0  MIG 1g.18gb         19     7/7        16.00      No     16     1     0   |"
_ROW = re.compile(r"^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
                  r"(?P<memory>[\d.]+)\s")
# What nvidia-smi prints instead of a table: a GPU without MIG, or (older drivers) one with MIG disabled.
NO_TABLE = ("No MIG-supported devices found", "No MIG-enabled devices found")


@dataclass(frozen=True, slots=True)
class Profile:
    gpu: int
    name: str  # "1g.18gb", "1g.18gb+me"
    profile_id: int
    free: int
    total: int  # the most instances of this profile on one GPU
    memory_gib: float


def parse_lgip(text: str) -> tuple[Profile, ...]:
    """Every profile row. An empty result means nvidia-smi listed none (see `NO_TABLE`); text that is neither
    a table nor one of those messages raises ParseError."""
    rows = []
    for line in text.splitlines():
        if m := _ROW.match(line.strip()):
            rows.append(Profile(gpu=int(m["gpu"]), name=m["name"], profile_id=int(m["id"]), free=int(m["free"]),
                                total=int(m["total"]), memory_gib=float(m["memory"])))
    if not rows and not any(message in text for message in NO_TABLE):
        if "GPU instance profiles" not in text:
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            raise ParseError(f"not nvidia-smi mig -lgip output: {first[:100]!r}")
    return tuple(rows)


def tables(profiles: tuple[Profile, ...]) -> dict[int, dict[str, int]]:
    """GPU index -> {profile: most instances}, in nvidia-smi's order."""
    out: dict[int, dict[str, int]] = {}
    for p in profiles:
        out.setdefault(p.gpu, {})[p.name] = p.total
    return out


def policy_table(table: dict[str, int]) -> tuple[dict[str, int], tuple[str, ...]]:
    """The part of a GPU's table that a cohort's `mig.profiles` takes, and the profile names it cannot take."""
    kept = {name: n for name, n in table.items() if PROFILE_NAME.match(name)}
    return kept, tuple(name for name in table if name not in kept)
