"""`make intree`: the chart's in-tree policies, the shipped default policy's export.

    python -m tools.intree_policy DIR

Writes DIR/validation.yaml and DIR/mutation.yaml (the ValidatingAdmissionPolicies and the
MutatingAdmissionPolicies, with their bindings) and DIR/policy.json (the policy they were exported from,
less what the export does not read), all three from the policy the chart renders with its default values,
through webhook.intree.chart.chart_values: the one function `gpu-admission export --chart-values` writes a
release's own policy's export with. templates/intree.yaml compares a release's policy with policy.json and
refuses `inTree` where they differ: the objects say what the default policy says, and the webhook would
skip rules that the apiserver then decides differently from the release's policy."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import helm_python
import yaml

from webhook.cli.export import dump_yaml
from webhook.config.load import build_policy
from webhook.intree.chart import chart_values
from webhook.intree.mutations import NEWEST

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "gpu-admission"
# The namespace the files' bindings leave out; templates/intree.yaml replaces it by the release's.
NAMESPACE = "gpu-admission"


def default_document() -> dict:
    """The policy document the chart renders with its default values."""
    manifests = helm_python.Chart.load(str(CHART)).render({}, name="gpu-admission", namespace=NAMESPACE)
    for name, text in manifests.items():
        if not name.endswith(".yaml"):
            continue  # NOTES.txt
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "ConfigMap" and "policy.yaml" in (doc.get("data") or {}):
                return yaml.safe_load(doc["data"]["policy.yaml"])
    raise SystemExit("the chart rendered no policy ConfigMap")


def files() -> dict[str, str]:
    """File name -> text, as `make intree` writes them."""
    document = default_document()
    policy = build_policy(document, "the chart's default policy")
    exported = chart_values(document, policy, NEWEST)["inTree"]["exported"]
    return {"validation.yaml": dump_yaml(exported["validation"]), "mutation.yaml": dump_yaml(exported["mutation"]),
            "policy.json": json.dumps(exported["policy"], indent=1, sort_keys=True) + "\n"}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit("usage: python -m tools.intree_policy DIR")
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files().items():
        (out / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
