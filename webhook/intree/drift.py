"""What differs between the exported objects and those a cluster holds (`gpu-admission export --check`).
The apiserver fills defaults in (namespaceSelector {}, objectSelector {}, ...): a live object agrees when
every field the export writes has the exported value; it drifts when one differs or is missing. The
app.kubernetes.io/managed-by label is not compared: Helm writes its own (Helm) over the export's."""
from __future__ import annotations

from typing import Any

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"


def _differences(want: Any, have: Any, path: str) -> list[str]:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path or '(object)'}: is not a mapping"]
        out = []
        for k, v in want.items():
            sub = f"{path}.{k}" if path else k
            if k not in have:
                out.append(f"{sub}: missing")
            else:
                out.extend(_differences(v, have[k], sub))
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return [f"{path}: differs"]
        out = []
        for i, (w, h) in enumerate(zip(want, have)):
            out.extend(_differences(w, h, f"{path}[{i}]"))
        return out
    return [] if want == have else [f"{path}: differs"]


def drift(exported: list[dict[str, Any]], live: list[dict[str, Any]]) -> list[str]:
    """One line per drifted object: missing from the cluster, different there, or left over (labelled as
    ours but no longer exported)."""
    have = {(o["kind"], o["metadata"]["name"]): o for o in live}
    out = []
    wanted = set()
    for obj in exported:
        key = (obj["kind"], obj["metadata"]["name"])
        wanted.add(key)
        found = have.get(key)
        if found is None:
            out.append(f"{key[0]} {key[1]}: not in the cluster")
            continue
        labels = {k: v for k, v in obj["metadata"]["labels"].items() if k != MANAGED_BY_KEY}
        diffs = _differences({"metadata": {"labels": labels}, "spec": obj["spec"]},
                             {"metadata": found.get("metadata", {}), "spec": found.get("spec", {})}, "")
        if diffs:
            out.append(f"{key[0]} {key[1]}: differs ({', '.join(diffs[:5])}{', ...' if len(diffs) > 5 else ''})")
    for key in sorted(set(have) - wanted):
        out.append(f"{key[0]} {key[1]}: in the cluster, no longer exported")
    return out
