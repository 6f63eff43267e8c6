"""The fields an apiserver of a given Kubernetes version, with its feature gates, stores: `check
--kubernetes-version` reads the documents as that cluster would keep them, so that its verdicts are the
webhook's there. A field of a feature gate that is off is dropped by the apiserver on create (the API's
strategy clears disabled fields), and the webhook then never sees it.

Only the gated fields that change a verdict are listed: a DeviceClass's `spec.extendedResourceName`
(KEP-5004, DRAExtendedResource: alpha in 1.34 and 1.35, off by default; beta and on from 1.36; GA in 1.37).
Without it a plain `nvidia.com/gpu` limit is the device plugin's, never DRA's."""
from __future__ import annotations

import argparse
import copy
from collections.abc import Iterable
from dataclasses import dataclass

# gate -> the first minor version of Kubernetes 1.x where it is on by default
GATES = {"DRAExtendedResource": 36}
OLDEST, NEWEST = 34, 37


@dataclass(frozen=True, slots=True)
class Field:
    kind: str
    path: tuple[str, ...]
    gate: str


FIELDS = (Field("DeviceClass", ("spec", "extendedResourceName"), "DRAExtendedResource"),)


def kubernetes_version(text: str) -> int:
    """`1.34` (or `v1.34.2`) -> 34, for the versions the project supports."""
    major, dot, minor = text.removeprefix("v").partition(".")
    minor = minor.split(".")[0]
    if not (major == "1" and dot and minor.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Kubernetes version such as 1.34")
    if not OLDEST <= int(minor) <= NEWEST:
        raise argparse.ArgumentTypeError(f"{text}: supported are 1.{OLDEST} to 1.{NEWEST}")
    return int(minor)


def feature_gates(text: str) -> dict[str, bool]:
    """`DRAExtendedResource=true,Other=false`, as kube-apiserver's --feature-gates; only the gates listed
    in GATES are accepted (another gate changes nothing that check reads)."""
    out = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = item.partition("=")
        if not eq or value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"{item!r}: expected NAME=true or NAME=false")
        if name not in GATES:
            raise argparse.ArgumentTypeError(f"{name}: not a gate check reads (known: {', '.join(sorted(GATES))})")
        out[name] = value.lower() == "true"
    return out


def enabled(minor: int, gates: dict[str, bool]) -> dict[str, bool]:
    return {gate: gates.get(gate, minor >= since) for gate, since in GATES.items()}


def as_stored(objects: Iterable[dict], minor: int | None, gates: dict[str, bool]) -> list[tuple[dict, list[str]]]:
    """Each object as that apiserver would store it, with the dotted paths it dropped. Without a version,
    every field counts (the newest API)."""
    on = enabled(NEWEST if minor is None else minor, gates)
    out = []
    for obj in objects:
        dropped: list[str] = []
        for f in FIELDS:
            if on[f.gate] or obj.get("kind") != f.kind:
                continue
            found: object = obj
            for key in f.path[:-1]:
                found = found.get(key) if isinstance(found, dict) else None
            if isinstance(found, dict) and f.path[-1] in found:
                if not dropped:
                    obj = copy.deepcopy(obj)
                parent = obj
                for key in f.path[:-1]:
                    parent = parent[key]
                del parent[f.path[-1]]
                dropped.append(".".join(f.path))
        out.append((obj, dropped))
    return out
