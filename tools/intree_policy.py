"""`make intree`, third file: what the chart's in-tree policies were exported from.

    python -m tools.intree_policy FILE

Writes, as JSON, the policy the chart renders with its default values, less what the export does not read
(the service's namespace, which the chart replaces by the release's, `lookups` and `inTree`), and
`language` where it is the default, English.
templates/intree.yaml compares a release's policy with it and refuses `inTree` where they differ: the
objects in files/intree/ say what the default policy says, and the webhook would skip rules that the
apiserver then decides differently from the release's policy."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import helm_python
import yaml

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "gpu-admission"
# Kept in step with templates/intree.yaml, which drops the same keys (and language: en) before comparing.
NOT_EXPORTED = ("serviceNamespace", "lookups", "inTree")


def exported_from() -> dict:
    manifests = helm_python.Chart.load(str(CHART)).render({}, name="gpu-admission", namespace="gpu-admission")
    for name, text in manifests.items():
        if not name.endswith(".yaml"):
            continue  # NOTES.txt
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "ConfigMap" and "policy.yaml" in (doc.get("data") or {}):
                policy = yaml.safe_load(doc["data"]["policy.yaml"])
                return {k: v for k, v in policy.items() if k not in NOT_EXPORTED
                        and not (k == "language" and v == "en")}
    raise SystemExit("the chart rendered no policy ConfigMap")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit("usage: python -m tools.intree_policy FILE")
    Path(argv[0]).write_text(json.dumps(exported_from(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
